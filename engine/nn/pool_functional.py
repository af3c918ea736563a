"""Adaptive pooling, channels-last: pick the output size, the windows follow (PyTorch's rule).

Output index ``i`` of ``out`` along an axis of size ``n`` pools the input from
``floor(i * n / out)`` to ``ceil((i + 1) * n / out)`` (windows may overlap
when ``n`` is not a multiple of ``out``). Both reductions are separable (a
window is a box), so a 2-D pool is a 1-D pool along H, then along W. When
``out`` divides ``n`` the windows tile the axis and the pool is one reshape
and one reduction; otherwise one slice per output index.

Example:
    >>> import engine as en
    >>> F = en.nn.functional
    >>> F.adaptive_avg_pool2d(en.ones((2, 7, 9, 3)), (3, 1)).shape
    (2, 3, 1, 3)
"""
import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, ShapeError, describe_args
from ..ops._args import at_user_line
from ..tensor import Tensor, tensor
from ..variable import Variable


def _as_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else tensor(x)


def _sizes(name, x, output_size, rank):
    """The input (rank + 2 dims, real) and the output size per spatial axis (None: keep)."""
    x = _as_tensor(x)
    if x.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected a floating-point input, got {describe_args([x])}"
                         f"{at_user_line()}")
    if x.ndim != rank + 2:
        raise ShapeError(f"{name}: expected an input of rank {rank + 2} (batch, {rank} spatial "
                         f"dims, channels), got {describe_args([x])}{at_user_line()}")
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * rank
    ok = len(sizes) == rank and all(
        s is None or (isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1)
        for s in sizes)
    if not ok:
        raise ShapeError(f"{name}: output_size must be a positive int or {rank} of them (None "
                         f"keeps a size), got {output_size!r}{at_user_line()}")
    spatial = x.shape[1:-1]
    if None in spatial:
        raise ShapeError(f"{name}: the spatial sizes must be known, got {describe_args([x])}"
                         f"{at_user_line()}")
    return x, tuple(n if s is None else int(s) for s, n in zip(sizes, spatial))


def _pool_axis(x, axis, out, reduce):
    """Adaptive pooling of ``x`` along ``axis`` to size ``out`` with ``reduce`` (mean, max)."""
    n = x.shape[axis]
    if n == out:
        return x
    if n % out == 0:        # tiling windows: one reshape, one reduction
        split = x.shape[:axis] + (out, n // out) + x.shape[axis + 1:]
        split = tuple(-1 if d is None else d for d in split)
        return reduce(ops.reshape(x, split), axis=axis + 1)
    pieces = []
    for i in range(out):
        start, stop = (i * n) // out, -(-((i + 1) * n) // out)
        index = (slice(None),) * axis + (slice(start, stop),)
        pieces.append(reduce(x[index], axis=axis))
    return ops.stack(pieces, axis=axis)


def _adaptive(name, x, output_size, rank, reduce):
    x, sizes = _sizes(name, x, output_size, rank)
    for i, out in enumerate(sizes):
        x = _pool_axis(x, i + 1, out, reduce)
    return x


def adaptive_avg_pool1d(x, output_size):
    """Mean over the adaptive windows of ``x`` (N, L, C), to ``output_size`` positions.

    Example:
        >>> import engine as en
        >>> x = en.reshape(en.arange(5.0), (1, 5, 1))
        >>> en.nn.functional.adaptive_avg_pool1d(x, 2).numpy().ravel()
        array([1., 3.])
    """
    return _adaptive("adaptive_avg_pool1d", x, output_size, 1, ops.mean)


def adaptive_avg_pool2d(x, output_size):
    """Mean over the adaptive windows of ``x`` (N, H, W, C); ``output_size`` is an int or
    an ``(h, w)`` pair (None keeps that size)."""
    return _adaptive("adaptive_avg_pool2d", x, output_size, 2, ops.mean)


def adaptive_max_pool1d(x, output_size):
    """Maximum over the adaptive windows of ``x`` (N, L, C)."""
    return _adaptive("adaptive_max_pool1d", x, output_size, 1, ops.max)


def adaptive_max_pool2d(x, output_size):
    """Maximum over the adaptive windows of ``x`` (N, H, W, C).

    Example:
        >>> import engine as en
        >>> x = en.reshape(en.arange(16.0), (1, 4, 4, 1))
        >>> en.nn.functional.adaptive_max_pool2d(x, 2).numpy()[0, :, :, 0]
        array([[ 5.,  7.],
               [13., 15.]])
    """
    return _adaptive("adaptive_max_pool2d", x, output_size, 2, ops.max)


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d"]
