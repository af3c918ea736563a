"""numpy's functions that pick, drop or insert elements, as composites of registered
ops: ``delete``, ``insert``, ``compress``, ``extract``, ``choose``, ``select``,
``piecewise``, ``trim_zeros``.

``choose`` and ``select`` have static shapes and trace. The others give a result
whose length depends on an index list, a mask or the data: they read those values
(:mod:`engine.ops.concrete`) and gather with static indices, so they differentiate
with respect to the data; while tracing, an index list or mask given as a numpy
constant is fine and a traced one is refused with a :class:`TracingError`.

Example:
    >>> import engine as en
    >>> en.delete(en.tensor([1, 2, 3, 4]), [0, 2]).tolist()
    [2, 4]
    >>> en.insert(en.tensor([1, 2, 3]), 1, 9).tolist()
    [1, 9, 2, 3]
"""
import operator
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import (DTypeError, IndexShapeError, InvalidArgumentError, ShapeError,
                      UnsupportedError)
from ..lifting import TensorLike
from . import compare, join, misc, shape_ops
from ._args import at_user_line
from .concrete import concrete_values, constant_like
from .creation import cast
from .cumulative import as_tensor, user_axis
from .index_helpers import index_by_mode
from .manipulation import broadcast_arrays, moveaxis, take, take_along_axis, unstack
from .rearranging import full_like

__all__ = ["delete", "insert", "compress", "extract", "choose", "select", "piecewise",
           "trim_zeros"]


def _flat_or_axis(name, arr, axis):
    arr = as_tensor(arr)
    if axis is None:
        return shape_ops.reshape(arr, (-1,)), 0
    return arr, user_axis(axis, arr.ndim, name)


def _out_of_bounds(name, index, n):
    # an IndexError too, as numpy's
    return IndexShapeError(f"{name}: index {index} is out of bounds for an axis of size {n}"
                      f"{at_user_line()}")


def _index_values(name, obj, n):
    """``obj`` (ints, a slice or a boolean mask of length ``n``) as positions in ``[0, n)``."""
    if isinstance(obj, slice):
        return np.arange(n)[obj]
    values = concrete_values(name, obj, "obj")
    if values.dtype == np.bool_:
        if values.shape != (n,):
            raise IndexShapeError(f"{name}: a boolean obj must have the shape ({n},) of the axis, "
                             f"got {values.shape}{at_user_line()}")
        return np.flatnonzero(values)
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    if values.dtype.kind not in "iu":
        raise DTypeError(f"{name}: obj must hold integers or booleans, got {values.dtype}"
                         f"{at_user_line()}")
    values = values.astype(np.int64).reshape(-1)
    bad = values[(values < -n) | (values >= n)]
    if bad.size:
        raise _out_of_bounds(name, int(bad[0]), n)
    return values % max(n, 1)


def delete(arr, obj, axis=None):
    """``arr`` without the entries ``obj`` (an int, a slice, a list of ints or a boolean
    mask) along ``axis`` (of the flattened array when None), like ``np.delete``.

    Example:
        >>> import engine as en
        >>> en.delete(en.tensor([[1, 2, 3], [4, 5, 6]]), 1, axis=1).tolist()
        [[1, 3], [4, 6]]
    """
    arr, axis = _flat_or_axis("delete", arr, axis)
    n = arr.shape[axis]
    keep = np.ones(n, dtype=bool)
    keep[_index_values("delete", obj, n)] = False
    return take(arr, np.flatnonzero(keep), axis)


def _insert_indices(obj, n):
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n))
    indices = concrete_values("insert", obj, "obj")
    if indices.size and indices.dtype.kind not in "iu":
        raise DTypeError(f"insert: obj must hold integers, got {indices.dtype}{at_user_line()}")
    indices = indices.astype(np.int64)
    bad = indices[(indices < -n) | (indices > n)]
    if bad.size:
        raise _out_of_bounds("insert", int(bad[0]), n)
    return indices


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the index or indices ``obj`` along ``axis``
    (of the flattened array when None), like ``np.insert``: a scalar ``obj`` inserts
    all of ``values`` there, a list one value (broadcast) before each index.

    Example:
        >>> import engine as en
        >>> en.insert(en.tensor([[1, 2], [3, 4]]), [0, 2], 0, axis=1).tolist()
        [[0, 1, 2, 0], [0, 3, 4, 0]]
    """
    arr, axis = _flat_or_axis("insert", arr, axis)
    n = arr.shape[axis]
    values = cast(as_tensor(values), arr.dtype)
    indices = _insert_indices(obj, n)
    shape = list(arr.shape)
    if indices.ndim == 0:                      # all of values go in before one index
        values = shape_ops.reshape(values, (1,) * (arr.ndim - values.ndim) + tuple(values.shape))
        values = moveaxis(values, 0, axis)
        shape[axis] = values.shape[axis]
        index = int(indices) + (n if indices < 0 else 0)
        new_at = index + np.arange(shape[axis])
    else:                                       # one value before each index
        indices = np.where(indices < 0, indices + n, indices).reshape(-1)
        shape[axis] = len(indices)
        order = np.argsort(indices, kind="stable")
        new_at = np.empty(len(indices), dtype=np.int64)
        new_at[order] = indices[order] + np.arange(len(indices))
    try:
        values = shape_ops.broadcast_to(values, tuple(shape))
    except ShapeError as err:
        raise ShapeError(f"insert: values do not fit: {err}{at_user_line()}") from None
    # Where each element of the result comes from in concat([arr, values]).
    source = np.empty(n + len(new_at), dtype=np.int64)
    is_new = np.zeros(n + len(new_at), dtype=bool)
    is_new[new_at] = True
    source[new_at] = n + np.arange(len(new_at))
    source[~is_new] = np.arange(n)
    return take(join.concat([arr, values], axis=axis), source, axis)


def _refuse_out(name, out):
    if out is not None:
        raise UnsupportedError(f"{name}: out= is not supported; use the returned tensor"
                               f"{at_user_line()}")


def compress(condition, a, axis=None, out=None):
    """The slices of ``a`` along ``axis`` (of the flattened array when None) where the
    1-D ``condition`` is true, like ``np.compress`` (a shorter condition leaves out the
    slices it does not reach).

    Example:
        >>> import engine as en
        >>> en.compress([False, True], en.tensor([[1, 2], [3, 4]]), axis=0).tolist()
        [[3, 4]]
    """
    _refuse_out("compress", out)
    cond = concrete_values("compress", condition, "condition")
    if cond.ndim != 1:
        raise ShapeError(f"compress: condition must be 1-D, got shape {cond.shape}"
                         f"{at_user_line()}")
    a, axis = _flat_or_axis("compress", a, axis)
    picked = np.flatnonzero(cond)
    if picked.size and picked[-1] >= a.shape[axis]:
        raise _out_of_bounds("compress", int(picked[-1]), a.shape[axis])
    return take(a, picked, axis)


def extract(condition, arr):
    """The elements of ``arr`` where ``condition`` is non-zero, flattened, like
    ``np.extract``.

    Example:
        >>> import engine as en
        >>> x = en.tensor([[1, 2], [3, 4]])
        >>> en.extract(x % 2 == 0, x).tolist()
        [2, 4]
    """
    picked = np.flatnonzero(concrete_values("extract", condition, "condition").reshape(-1))
    flat = shape_ops.reshape(as_tensor(arr), (-1,))
    if picked.size and picked[-1] >= flat.shape[0]:
        raise _out_of_bounds("extract", int(picked[-1]), flat.shape[0])
    return take(flat, picked, 0)


def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]`` at every position ``i`` (all broadcast together), like
    ``np.choose``; ``mode`` says what an index outside ``[0, len(choices))`` does:
    ``"raise"`` an error, ``"wrap"`` wraps it, ``"clip"`` clips it.

    Example:
        >>> import engine as en
        >>> en.choose(en.tensor([0, 1, 0]), [en.tensor([1, 2, 3]), en.tensor([7, 8, 9])]).tolist()
        [1, 8, 3]
    """
    _refuse_out("choose", out)
    a = as_tensor(a)
    if a.dtype not in dtypes.INTS and a.dtype != dtypes.bool_:
        raise DTypeError(f"choose: a must hold integers, got {a.dtype}{at_user_line()}")
    choices = list(unstack(choices, 0)) if isinstance(choices, TensorLike) else \
        [as_tensor(c) for c in choices]
    n = len(choices)
    if n == 0:
        raise ShapeError(f"choose: needs at least one choice{at_user_line()}")
    a = index_by_mode("choose", cast(a, dtypes.int64), n, mode, "an entry of a is",
                      f" (there are {n} choices); pass mode='wrap' or 'clip'")
    dtype = np.result_type(*(c.dtype for c in choices))
    a, *choices = broadcast_arrays(a, *(cast(c, dtype) for c in choices))
    stacked = join.stack(choices, axis=0)
    picked = take_along_axis(stacked, shape_ops.reshape(a, (1,) + tuple(a.shape)), axis=0)
    return shape_ops.reshape(picked, tuple(a.shape))


def select(condlist, choicelist, default=0):
    """At each position, the entry of the first choice whose condition holds there
    (``default`` where none does), like ``np.select``.

    Example:
        >>> import engine as en
        >>> x = en.arange(5)
        >>> en.select([x < 2, x > 3], [x, x * 10], default=-1).tolist()
        [0, 1, -1, -1, 40]
    """
    if len(condlist) != len(choicelist):
        raise ShapeError(f"select: there are {len(condlist)} conditions and "
                         f"{len(choicelist)} choices; they must be as many{at_user_line()}")
    if not len(condlist):
        raise ShapeError(f"select: needs at least one condition{at_user_line()}")
    conds = [as_tensor(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != dtypes.bool_:
            raise DTypeError(f"select: condition {i} must be boolean, got {c.dtype}"
                             f"{at_user_line()}")
    choices = [as_tensor(c) for c in choicelist]
    if isinstance(default, (bool, int, float, complex)):   # a Python scalar is weak, as in numpy
        dtype = np.result_type(*(c.dtype for c in choices), default)
        result = constant_like(choices[0], np.asarray(default, dtype=dtype))
    else:
        default = as_tensor(default)
        dtype = np.result_type(*(c.dtype for c in choices), default.dtype)
        result = cast(default, dtype)
    for cond, choice in zip(reversed(conds), reversed(choices)):
        result = compare.where(cond, cast(choice, dtype), result)
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in conds + choices), tuple(result.shape))
    if tuple(result.shape) != shape:   # its own memory, writable as numpy's (not a broadcast view)
        result = misc.identity(shape_ops.broadcast_to(result, shape))
    return result


def _wrap_condlist(condlist, ndim):
    """numpy's reading of ``condlist``: one condition, or a list of them."""
    if isinstance(condlist, (TensorLike, np.ndarray)):
        # np.ndim and list() take tensors and variables as they take arrays, but TensorLike
        # declares neither the array protocol nor iteration to the type checker.
        conds: Any = condlist
        return [conds] if np.ndim(conds) == ndim else list(conds)
    if isinstance(condlist, (bool, np.bool_)) or (
            ndim != 0 and not isinstance(condlist[0], (list, np.ndarray, TensorLike))):
        return [condlist]
    return list(condlist)


def piecewise(x, condlist, funclist, *args, **kw):
    """``x`` with each function of ``funclist`` applied where its condition holds, like
    ``np.piecewise``: a function gets only the elements its condition picks (a
    constant stands for a function giving it); one more function than conditions is
    the value where none holds; elsewhere the result is 0. Later conditions win.
    The conditions pick by value, so a traced condition is refused.

    Example:
        >>> import engine as en
        >>> x = en.tensor([-2.0, 0.5, 3.0])
        >>> en.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * v]).tolist()
        [2.0, 0.25, 9.0]
    """
    x = as_tensor(x)
    masks = []
    for c in _wrap_condlist(condlist, x.ndim):
        mask = concrete_values("piecewise", c, "condlist").astype(bool)
        if mask.shape != tuple(x.shape):
            raise ShapeError(f"piecewise: a condition of shape {mask.shape} does not match x "
                             f"of shape {tuple(x.shape)}{at_user_line()}")
        masks.append(mask.reshape(-1))
    funcs = list(funclist)
    if len(funcs) == len(masks) + 1:
        masks.append(~np.any(masks, axis=0) if masks else np.ones(x.size, dtype=bool))
    elif len(funcs) != len(masks):
        raise ShapeError(f"piecewise: {len(masks)} conditions need {len(masks)} or "
                         f"{len(masks) + 1} functions, got {len(funcs)}{at_user_line()}")
    flat = shape_ops.reshape(x, (-1,))
    owner = np.full(flat.shape[0], -1, dtype=np.int64)   # the last piece claiming each element
    for k, mask in enumerate(masks):
        owner[mask] = k
    # The result gathers from concat([0, the values each piece keeps]).
    parts, source = [full_like(flat, 0, shape=(1,))], np.zeros(flat.shape[0], dtype=np.int64)
    offset = 1
    for k, (mask, fn) in enumerate(zip(masks, funcs)):
        at = np.flatnonzero(mask)
        if not at.size:
            continue        # numpy does not call a function on no elements
        vals = fn(take(flat, at, 0), *args, **kw) if callable(fn) else fn
        vals = shape_ops.broadcast_to(cast(as_tensor(vals), x.dtype), (len(at),))
        kept = np.flatnonzero(owner[at] == k)
        if kept.size:
            parts.append(take(vals, kept, 0))
            source[at[kept]] = offset + np.arange(len(kept))
            offset += len(kept)
    return shape_ops.reshape(take(join.concat(parts), source, 0), tuple(x.shape))


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading (``"f"``) and/or trailing (``"b"``) zeros along
    ``axis`` (every axis when None: the smallest box holding the non-zero values),
    like ``np.trim_zeros``.

    Example:
        >>> import engine as en
        >>> en.trim_zeros(en.tensor([0, 0, 1, 2, 0, 3, 0])).tolist()
        [1, 2, 0, 3]
    """
    filt = as_tensor(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise InvalidArgumentError(f"trim_zeros: trim must be 'fb', 'f' or 'b', got "
                                   f"{trim!r}{at_user_line()}")
    axes = range(filt.ndim) if axis is None else \
        [user_axis(a, filt.ndim, "trim_zeros") for a in
         ((axis,) if isinstance(axis, (int, np.integer)) else axis)]
    if not axes:
        return filt
    where = np.argwhere(concrete_values("trim_zeros", filt, "filt"))
    start: np.ndarray | list[int | None]    # per axis; None: that end is not trimmed
    stop: np.ndarray | list[int | None]
    if where.size == 0:
        start = stop = [0] * filt.ndim
    else:
        start = where.min(axis=0) if "f" in trim else [None] * filt.ndim
        stop = where.max(axis=0) + 1 if "b" in trim else [None] * filt.ndim
    return filt[tuple(slice(_int(start[ax]), _int(stop[ax])) if ax in axes else slice(None)
                      for ax in range(filt.ndim))]


def _int(v):
    return None if v is None else operator.index(int(v))
