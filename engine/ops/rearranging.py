"""numpy's reordering, reshaping and filling helpers as composites of registered ops:
``fliplr``, ``flipud``, ``rot90``, ``rollaxis``, ``ravel``, ``copy``, ``resize``,
``empty_like``, ``full_like``, ``diagflat``, ``vander``.

Each is the ops it is made of, so it differentiates, traces and runs on every back
end with no rules of its own.

Example:
    >>> import engine as en
    >>> en.rot90(en.tensor([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    >>> en.vander(en.tensor([1, 2, 3]), 3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
"""
import math
import operator

import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, ShapeError
from ..lifting import TensorLike
from . import join, misc, shape_ops
from ._args import at_user_line, int_tuple
from .creation import cast
from .cumulative import as_tensor, cumprod, user_axis
from .concrete import constant_like
from .manipulation import diag, flip, tile

__all__ = ["fliplr", "flipud", "rot90", "rollaxis", "ravel", "copy", "resize", "empty_like",
           "full_like", "diagflat", "vander"]


def fliplr(m):
    """``m`` with its columns (axis 1) in reverse order, like ``np.fliplr``.

    Example:
        >>> import engine as en
        >>> en.fliplr(en.tensor([[1, 2, 3]])).tolist()
        [[3, 2, 1]]
    """
    m = as_tensor(m)
    if m.ndim < 2:
        raise ShapeError(f"fliplr: needs an array of at least 2 dimensions, got shape "
                         f"{tuple(m.shape)}{at_user_line()}")
    return flip(m, 1)


def flipud(m):
    """``m`` with its rows (axis 0) in reverse order, like ``np.flipud``.

    Example:
        >>> import engine as en
        >>> en.flipud(en.tensor([1, 2, 3])).tolist()
        [3, 2, 1]
    """
    m = as_tensor(m)
    if m.ndim < 1:
        raise ShapeError(f"flipud: needs an array of at least 1 dimension, got a 0-d one"
                         f"{at_user_line()}")
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, from the first
    axis towards the second, like ``np.rot90``.

    Example:
        >>> import engine as en
        >>> en.rot90(en.tensor([[1, 2], [3, 4]]), k=-1).tolist()
        [[3, 1], [4, 2]]
    """
    m = as_tensor(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ShapeError(f"rot90: axes must name 2 axes, got {axes}{at_user_line()}")
    a0, a1 = (user_axis(a, m.ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ShapeError(f"rot90: the axes {axes} name the same axis{at_user_line()}")
    k = operator.index(k) % 4
    if k == 0:
        return m[(slice(None),) * m.ndim]      # numpy's m[:], a view
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return shape_ops.transpose(flip(m, a1), tuple(perm))
    return flip(shape_ops.transpose(m, tuple(perm)), a1)


def rollaxis(a, axis, start=0):
    """Move ``axis`` back until it lies before position ``start``, like ``np.rollaxis``
    (``en.moveaxis`` is the clearer spelling).

    Example:
        >>> import engine as en
        >>> en.rollaxis(en.ones((3, 4, 5)), 2).shape
        (5, 3, 4)
    """
    a = as_tensor(a)
    n = a.ndim
    axis = user_axis(axis, n, "rollaxis")
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise ShapeError(f"rollaxis: start {start - n if start < 0 else start} is out of "
                         f"bounds for an array of {n} dimensions (-{n} <= start < {n + 1})"
                         f"{at_user_line()}")
    if axis < start:
        start -= 1
    if axis == start:
        return a[(slice(None),) * n]           # numpy's a[...], a view
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return shape_ops.transpose(a, tuple(order))


def ravel(a, order="C"):
    """``a`` as a 1-D array, like ``np.ravel``: ``order="F"`` reads it column by column
    (``"A"`` and ``"K"`` read a tensor as ``"C"``: its elements are in row-major order).

    Example:
        >>> import engine as en
        >>> en.ravel(en.tensor([[1, 2], [3, 4]]), order="F").tolist()
        [1, 3, 2, 4]
    """
    a = as_tensor(a)
    if order not in ("C", "F", "A", "K"):
        raise InvalidArgumentError(f"ravel: order must be one of 'C', 'F', 'A', 'K', got "
                                   f"{order!r}{at_user_line()}")
    if order == "F":
        a = shape_ops.transpose(a, tuple(reversed(range(a.ndim))))
    return shape_ops.reshape(a, (-1,))


def copy(a, order="K", subok=False):
    """A new tensor with the values of ``a`` (a variable's current value), like ``np.copy``.

    Example:
        >>> import engine as en
        >>> x = en.tensor([1.0, 2.0])
        >>> y = en.copy(x)
        >>> y is x, y.tolist()
        (False, [1.0, 2.0])
    """
    return misc.identity(a)


def resize(a, new_shape):
    """An array of ``new_shape`` filled with the elements of ``a`` in order, repeated as
    often as needed, like ``np.resize`` (zeros when either is empty).

    Example:
        >>> import engine as en
        >>> en.resize(en.tensor([1, 2, 3]), (2, 4)).tolist()
        [[1, 2, 3, 1], [2, 3, 1, 2]]
    """
    a = as_tensor(a)
    new_shape = _shape("resize", new_shape, "new_shape")
    total, flat = math.prod(new_shape), shape_ops.reshape(a, (-1,))
    if total == 0 or flat.shape[0] == 0:
        return full_like(a, 0, shape=new_shape)
    copies = -(-total // flat.shape[0])
    # its own memory, writable as numpy's (tile may give a view of a broadcast)
    return misc.identity(shape_ops.reshape(tile(flat, (copies,))[:total], new_shape))


def _shape(name, shape, what):
    shape = int_tuple(name, shape if isinstance(shape, (tuple, list)) else (shape,), what)
    if any(d < 0 for d in shape):
        raise ShapeError(f"{name}: all elements of {what} {shape} must be non-negative"
                         f"{at_user_line()}")
    return shape


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array of ``a``'s shape (or ``shape``) and dtype (or ``dtype``) holding
    ``fill_value`` everywhere, like ``np.full_like``: the value is cast to the dtype as
    numpy casts it (``2.7`` into an int array is ``2``) and an array value broadcasts.

    Example:
        >>> import engine as en
        >>> en.full_like(en.tensor([1, 2, 3]), 2.7).tolist()
        [2, 2, 2]
    """
    a = as_tensor(a)
    dtype = a.dtype if dtype is None else dtypes.as_dtype(dtype)
    shape = tuple(a.shape) if shape is None else _shape("full_like", shape, "shape")
    if isinstance(fill_value, TensorLike):
        value = cast(fill_value, dtype)
    else:
        value = constant_like(a, np.asarray(fill_value).astype(dtype))
    try:
        filled = shape_ops.broadcast_to(value, shape)
    except ShapeError as err:
        raise ShapeError(f"full_like: {err}") from None
    return misc.identity(filled)   # its own memory, writable as numpy's (not a broadcast view)


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """An array of ``prototype``'s shape (or ``shape``) and dtype (or ``dtype``), like
    ``np.empty_like``; its values are zeros (numpy leaves them unset, so any value is
    numpy's, and zeros are reproducible).

    Example:
        >>> import engine as en
        >>> en.empty_like(en.tensor([1.0, 2.0]), shape=(2, 2)).shape
        (2, 2)
    """
    return full_like(prototype, 0, dtype=dtype, shape=shape)


def diagflat(v, k=0):
    """A 2-D array with the flattened ``v`` on its ``k``-th diagonal, like ``np.diagflat``.

    Example:
        >>> import engine as en
        >>> en.diagflat(en.tensor([[1, 2]]), 1).tolist()
        [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    return diag(shape_ops.reshape(as_tensor(v), (-1,)), operator.index(k))


def vander(x, N=None, increasing=False):  # noqa: N803  (numpy's name)
    """The Vandermonde matrix of the 1-D ``x``: columns ``x**(N-1), ..., x**0`` (in
    increasing powers when ``increasing``), like ``np.vander``. The powers are running
    products, so the gradient is exact at ``x = 0``.

    Example:
        >>> import engine as en
        >>> en.vander(en.tensor([2.0, 3.0]), increasing=True).tolist()
        [[1.0, 2.0], [1.0, 3.0]]
    """
    x = as_tensor(x)
    if x.ndim != 1:
        raise ShapeError(f"vander: x must be one-dimensional, got shape {tuple(x.shape)}"
                         f"{at_user_line()}")
    x = cast(x, np.promote_types(x.dtype, np.int64))    # numpy's: at least the default int
    n = x.shape[0]
    N = n if N is None else operator.index(N)  # noqa: N806
    if N < 0:
        raise ShapeError(f"vander: N must be non-negative, got {N}{at_user_line()}")
    if N == 0:
        return full_like(x, 0, shape=(n, 0))
    columns = [full_like(x, 1, shape=(n, 1)),
               shape_ops.broadcast_to(shape_ops.reshape(x, (n, 1)), (n, N - 1))]
    powers = cumprod(join.concat(columns, axis=1), axis=1)
    return powers if increasing else flip(powers, 1)
