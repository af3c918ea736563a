"""numpy's ``apply_along_axis`` and ``apply_over_axes``: a Python function applied to
slices, the results put together with ``stack`` and ``reshape``. The loop runs once
per slice when called (unrolled while tracing), so the function may be any Python
code of engine ops; gradients and tracing come from the ops it calls.

Example:
    >>> import engine as en
    >>> en.apply_along_axis(lambda r: r[0] + r[-1], 1, en.tensor([[1, 2, 3], [4, 5, 6]])).tolist()
    [4, 10]
"""
import numpy as np

from ..errors import ShapeError
from . import join, shape_ops
from ._args import at_user_line
from .cumulative import as_tensor, user_axis
from .manipulation import moveaxis

__all__ = ["apply_along_axis", "apply_over_axes"]


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis`` (``np.apply_along_axis``):
    the dimensions of ``func1d``'s result take the place of ``axis``.

    Example:
        >>> import engine as en
        >>> en.apply_along_axis(en.sort, 0, en.tensor([[3, 1], [1, 2]])).tolist()
        [[1, 1], [3, 2]]
    """
    arr = as_tensor(arr)
    if arr.ndim == 0:
        raise ShapeError(f"apply_along_axis: a 0-d input has no axis{at_user_line()}")
    axis = user_axis(axis, arr.ndim, "apply_along_axis")
    moved = moveaxis(arr, axis, -1)
    outer = tuple(moved.shape[:-1])
    if 0 in outer:
        raise ShapeError(f"apply_along_axis: cannot apply along axis {axis} when another "
                         f"axis of {tuple(arr.shape)} has length 0{at_user_line()}")
    results = [as_tensor(func1d(moved[index], *args, **kwargs)) for index in np.ndindex(outer)]
    inner = tuple(results[0].shape)
    out = shape_ops.reshape(join.stack(results, axis=0), outer + inner)
    # The result's own axes go where ``axis`` was.
    order = (tuple(range(axis)) + tuple(range(len(outer), len(outer) + len(inner)))
             + tuple(range(axis, len(outer))))
    return shape_ops.transpose(out, order) if order != tuple(range(out.ndim)) else out


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied over each axis in turn (``np.apply_over_axes``); a result
    with one dimension fewer gets it back (length 1), so the rank stays the same.

    Example:
        >>> import engine as en
        >>> en.apply_over_axes(en.sum, en.tensor([[1, 2], [3, 4]]), [0, 1]).tolist()
        [[10]]
    """
    val = as_tensor(a)
    n = val.ndim
    for axis in np.atleast_1d(np.asarray(axes)).tolist():
        axis = axis + n if axis < 0 else axis
        res = as_tensor(func(val, axis))
        if res.ndim != val.ndim:
            res = shape_ops.expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ShapeError(f"apply_over_axes: the function does not return an array "
                                 f"of the right rank ({val.ndim} or {val.ndim - 1}), got "
                                 f"shape {tuple(res.shape)}{at_user_line()}")
        val = res
    return val
