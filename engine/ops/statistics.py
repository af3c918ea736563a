"""Spread statistics as composites: ``var`` and ``std`` (numpy's, with ``ddof``; the
Array API's ``correction`` is the same number). Made of ``mean``, ``sub``, ``mul`` and
``sum``, so their gradients (``2 (x - mean) / (n - ddof)``) and tracing come with them.

Example:
    >>> import engine as en
    >>> float(en.var(en.tensor([1.0, 2.0, 3.0, 4.0]), ddof=1))
    1.6666666666666667
"""
from .. import dtypes
from ..errors import ShapeError
from . import complex_parts, creation, elementwise, reduce, shape_ops
from .subgradients import root_with_zero_subgradient
from .cumulative import as_tensor, user_axes


def _ddof(ddof, correction):
    if correction is not None:
        if ddof not in (0, None) and ddof != correction:
            raise ShapeError(f"var: ddof={ddof} and correction={correction} disagree; pass one")
        return correction
    return ddof or 0


def var(x, axis=None, ddof=0, keepdims=False, dtype=None, correction=None):
    """The variance over ``axis`` (all axes when None): the mean squared deviation,
    divided by ``n - ddof`` instead of ``n`` (``np.var``; by 0 where ``ddof >= n``, as
    numpy clamps it). Integer and bool inputs give float64; a complex input gives
    the real variance ``mean(|x - mean(x)|^2)`` in the real dtype of its precision.

    Example:
        >>> import engine as en
        >>> en.var(en.tensor([[1.0, 3.0], [2.0, 6.0]]), axis=1).numpy()
        array([1., 4.])
    """
    x = as_tensor(x)
    if dtype is not None:
        x = creation.cast(x, dtype)
    elif x.dtype not in dtypes.INEXACT:
        x = creation.cast(x, dtypes.float64)
    ddof = _ddof(ddof, correction)
    if isinstance(axis, list):
        axis = tuple(axis)
    axes = user_axes(axis, x.ndim, "var")
    centered = x - reduce.mean(x, axis=axis, keepdims=True)
    if x.dtype in dtypes.COMPLEX:   # |z|^2, real: numpy's var of complex input
        re, im = complex_parts.real(centered), complex_parts.imag(centered)
        squares = re * re + im * im
    else:
        squares = centered * centered
    total = reduce.sum(squares, axis=axis, keepdims=keepdims)
    # numpy divides by max(n - ddof, 0): inf (nan for a zero total) past the count,
    # never a negative variance.
    if any(x.shape[a] is None for a in axes):
        n = shape_ops.count(x, axes, dtype=total.dtype)
        return elementwise.div(total, elementwise.maximum(n - ddof, 0))
    n = 1
    for a in axes:
        n *= x.shape[a]
    return elementwise.div(total, max(n - ddof, 0))


def std(x, axis=None, ddof=0, keepdims=False, dtype=None, correction=None):
    """The standard deviation, ``sqrt(var(...))`` (``np.std``). Where it is 0 (a
    constant input) its gradient is 0, a subgradient, as in PyTorch; the square
    root's own derivative there is infinite.

    Example:
        >>> import engine as en
        >>> float(en.std(en.tensor([1.0, 3.0])))
        1.0
    """
    return root_with_zero_subgradient(var(x, axis, ddof, keepdims, dtype, correction))


__all__ = ["var", "std"]
