"""Weighted means and second moments as composites: ``average``, ``ptp``, ``cov`` and
``corrcoef``, numpy's, made of sums, products and ``matmul`` (so they differentiate
and trace like their parts).

Example:
    >>> import engine as en
    >>> float(en.average(en.tensor([1.0, 2.0, 4.0]), weights=en.tensor([1.0, 1.0, 2.0])))
    2.75
"""
import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, ShapeError
from ..modes import current_mode
from . import compare, complex_parts, creation, elementwise, join, linalg, reduce, shape_ops
from .manipulation import diagonal
from ._args import at_user_line
from .cumulative import as_tensor, user_axes
from .subgradients import root_with_zero_subgradient

__all__ = ["average", "ptp", "cov", "corrcoef"]


def _float_dtype(*ts):
    dt = np.result_type(*[np.dtype(t.dtype) for t in ts])
    return dt if dt.kind in "fc" else np.result_type(dt, np.float64)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The weighted mean over ``axis`` (``np.average``): ``sum(a * w) / sum(w)``; with
    ``returned`` also the sum of the weights, broadcast to the result's shape. 1-D
    ``weights`` go along the one ``axis``. Zero total weight raises eagerly (numpy's
    ZeroDivisionError); in a traced function it gives NaN or inf.

    Example:
        >>> import engine as en
        >>> en.average(en.tensor([[1.0, 3.0], [2.0, 6.0]]), axis=1,
        ...            weights=en.tensor([3.0, 1.0])).tolist()
        [1.5, 3.0]
    """
    x = as_tensor(a)
    axes = user_axes(axis, x.ndim, "average")
    if isinstance(axis, list):
        axis = tuple(axis)
    if weights is None:
        avg = reduce.mean(x, axis=axis, keepdims=keepdims)
        count = x.size // max(avg.size, 1) if avg.size else 0
        scale = creation.zeros_like(avg) + count if returned else None
        return (avg, scale) if returned else avg
    w = as_tensor(weights)
    if tuple(w.shape) != tuple(x.shape):
        if axis is None:
            raise ShapeError(f"average: axis must be given when the weights' shape "
                             f"{tuple(w.shape)} differs from the input's {tuple(x.shape)}"
                             f"{at_user_line()}")
        if len(axes) != w.ndim or tuple(w.shape) != tuple(x.shape[i] for i in axes):
            raise ShapeError(f"average: weights of shape {tuple(w.shape)} must have the "
                             f"input's shape {tuple(x.shape)} or the shape of the reduced "
                             f"axes {tuple(x.shape[i] for i in axes)}{at_user_line()}")
        order = np.argsort(axes)   # numpy lines the weights' axes up with sorted(axes)
        w = shape_ops.transpose(w, tuple(int(i) for i in order)) if w.ndim > 1 else w
        w = shape_ops.reshape(w, tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim)))
    dt = _float_dtype(x, w)
    w = creation.cast(w, dt)
    total_weight = reduce.sum(shape_ops.broadcast_to(w, tuple(x.shape)), axis=axis,
                              keepdims=keepdims)
    if current_mode().is_concrete and bool(np.any(np.asarray(
            compare.equal(total_weight, 0).numpy()))):
        raise InvalidArgumentError(f"average: the weights sum to zero, so the average is "
                                   f"undefined{at_user_line()}")
    avg = reduce.sum(creation.cast(x, dt) * w, axis=axis, keepdims=keepdims) / total_weight
    if returned:
        return avg, shape_ops.broadcast_to(total_weight, tuple(avg.shape))
    return avg


def ptp(a, axis=None, keepdims=False):
    """The range ``max - min`` over ``axis`` (``np.ptp``, "peak to peak").

    Example:
        >>> import engine as en
        >>> en.ptp(en.tensor([[4, 9], [2, 3]]), axis=1).tolist()
        [5, 1]
    """
    x = as_tensor(a)
    if isinstance(axis, list):
        axis = tuple(axis)
    user_axes(axis, x.ndim, "ptp")
    return reduce.max(x, axis=axis, keepdims=keepdims) - reduce.min(x, axis=axis,
                                                                    keepdims=keepdims)


def _variables(m, y, rowvar, dtype, name):
    """The observations as a 2-D tensor, one row per variable (numpy's ``cov`` layout)."""
    x = as_tensor(m)
    if x.ndim > 2:
        raise ShapeError(f"{name}: m has more than 2 dimensions, shape {tuple(x.shape)}"
                         f"{at_user_line()}")
    parts = [x]
    if y is not None:
        y = as_tensor(y)
        if y.ndim > 2:
            raise ShapeError(f"{name}: y has more than 2 dimensions, shape {tuple(y.shape)}"
                             f"{at_user_line()}")
        parts.append(y)
    if dtype is None:   # numpy's: at least float64
        dtype = np.result_type(*[np.dtype(p.dtype) for p in parts], np.float64)
    rows = []
    for p in parts:
        p = shape_ops.reshape(p, (1, -1) if p.ndim < 2 else tuple(p.shape))
        if not rowvar and p.shape[0] != 1:
            p = shape_ops.transpose(p, (1, 0))
        rows.append(creation.cast(p, dtype))
    if len(rows) > 1 and rows[0].shape[1] != rows[1].shape[1]:
        raise ShapeError(f"{name}: m and y hold {rows[0].shape[1]} and {rows[1].shape[1]} "
                         f"observations; they must match{at_user_line()}")
    return join.concat(rows, axis=0) if len(rows) > 1 else rows[0], x


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """The covariance matrix of the variables in the rows of ``m`` (columns when
    ``rowvar`` is False), with ``y``'s variables appended, like ``np.cov``: normalized
    by ``N - 1`` (``N`` with ``bias``, ``N - ddof`` with ``ddof``), with frequency
    (``fweights``) and observation (``aweights``) weights. One variable gives a 0-d
    result, as numpy's.

    Example:
        >>> import engine as en
        >>> en.cov(en.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    if ddof is not None and ddof != int(ddof):
        raise InvalidArgumentError(f"cov: ddof must be an integer, got {ddof!r}"
                                   f"{at_user_line()}")
    X, _ = _variables(m, y, rowvar, dtype, "cov")
    n_obs = X.shape[1]
    w = None
    for weights, what in ((fweights, "fweights"), (aweights, "aweights")):
        if weights is None:
            continue
        weights = as_tensor(weights)
        if weights.ndim != 1 or weights.shape[0] != n_obs:
            raise ShapeError(f"cov: {what} must be 1-D with one weight per observation "
                             f"({n_obs}), got shape {tuple(weights.shape)}{at_user_line()}")
        weights = creation.cast(weights, dtypes.float64)
        w = weights if w is None else w * weights
    if ddof is None:
        ddof = 0 if bias else 1
    if w is None:
        avg = reduce.mean(X, axis=1, keepdims=True)
        w_sum = float(n_obs)
        fact = max(n_obs - ddof, 0)
    else:
        w_sum = reduce.sum(w)
        avg = reduce.sum(X * creation.cast(w, X.dtype), axis=1, keepdims=True) / \
            creation.cast(w_sum, X.dtype)
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            a = creation.cast(as_tensor(aweights), dtypes.float64)
            fact = w_sum - ddof * reduce.sum(w * a) / w_sum
        fact = elementwise.maximum(fact, 0.0)
    centered = X - avg
    weighted = centered if w is None else centered * creation.cast(w, X.dtype)
    conj = complex_parts.conj(centered) if X.dtype in dtypes.COMPLEX else centered
    c = linalg.matmul(weighted, shape_ops.transpose(conj, (1, 0)))
    c = c / (creation.cast(fact, c.dtype) if not isinstance(fact, (int, float)) else fact)
    return shape_ops.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients, ``cov / sqrt(var_i var_j)`` (``np.corrcoef``),
    with the real parts clipped to [-1, 1] as numpy does.

    Example:
        >>> import engine as en
        >>> en.corrcoef(en.tensor([[1.0, 2.0, 3.0], [3.0, 1.0, -1.0]])).tolist()
        [[1.0, -1.0], [-1.0, 1.0]]
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = shape_ops.reshape(complex_parts.real(diagonal(c)) if c.dtype in dtypes.COMPLEX
                          else diagonal(c), (-1,))
    s = root_with_zero_subgradient(d)
    c = c / shape_ops.reshape(s, (-1, 1))
    c = c / shape_ops.reshape(s, (1, -1))
    if c.dtype in dtypes.COMPLEX:
        re = elementwise.minimum(elementwise.maximum(complex_parts.real(c), -1.0), 1.0)
        return re + complex_parts.imag(c) * 1j
    return elementwise.minimum(elementwise.maximum(c, -1.0), 1.0)

