"""numpy's functions that write into their first argument, on tensors.

``np.copyto``, ``np.place``, ``np.put``, ``np.putmask`` and ``np.fill_diagonal``
called with a tensor dispatch here (``engine/numpy_dispatch.py``'s ``HANDLERS``).
Each computes the new values with the engine's ops and writes them into the
tensor (``t[...] = values``; a variable is assigned), so a write records on tapes
and traces as any other. When the target is a numpy array and only another
argument is a tensor, numpy writes the tensor's values into its own array.

Example (on a variable; a tensor is written the same way):
    >>> import numpy as np
    >>> import engine as en
    >>> v = en.Variable(en.zeros((3, 3)))
    >>> np.fill_diagonal(v, 2.0)
    >>> np.putmask(v, v == 0, -1.0)
    >>> v.tolist()
    [[2.0, -1.0, -1.0], [-1.0, 2.0, -1.0], [-1.0, -1.0, 2.0]]
"""
import inspect

import numpy as np

from . import ops as _ops
from .errors import (ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError,
                     format_location, user_frame)
from .lifting import TensorLike
from .ops.concrete import concrete_values


def _at():
    return f"\n  at {format_location(user_frame())}"


def write_all(x, values):
    """Store ``values`` (broadcast and cast to ``x``'s shape and dtype) as all of ``x``'s
    elements: a tensor by ``x[...] = values``; a variable, whose value is replaced
    whole, by ``assign``. (The in-place methods of ``engine/tensor_methods.py`` write
    through here too.)"""
    if hasattr(x, "assign"):
        x.assign(_ops.broadcast_to(_ops.cast(values, x.dtype), x.shape))
    else:
        x[...] = values


def _bound(func, args, kwargs):
    """numpy's call bound to numpy's signature: ``{parameter: value}``, defaults filled."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _numpy_values(x):
    """A tensor's values as a numpy array (other values as they are), for numpy's own
    function writing into a numpy array."""
    return np.asarray(x) if isinstance(x, TensorLike) else x


def _target(name, a):
    if not isinstance(a, TensorLike):
        raise ArgumentTypeError(f"numpy.{name}: the array to write must be a tensor or a "
                                f"numpy array, got {type(a).__name__}{_at()}")
    return a


def copyto(func, args, kwargs):
    """``np.copyto(dst, src, casting='same_kind', where=True)``: ``src`` broadcast into
    ``dst`` where ``where`` holds."""
    p = _bound(func, args, kwargs)
    dst, src, casting, where = p["dst"], p["src"], p["casting"], p["where"]
    if isinstance(dst, np.ndarray):
        np.copyto(dst, _numpy_values(src), casting=casting, where=_numpy_values(where))
        return
    dst = _target("copyto", dst)
    src_dtype = getattr(src, "dtype", None)
    if src_dtype is not None and not np.can_cast(src_dtype, dst.dtype, casting):
        raise DTypeError(f"numpy.copyto: cannot copy {src_dtype} into a {dst.dtype} tensor "
                         f"under casting={casting!r}{_at()}")
    src_shape = tuple(getattr(src, "shape", np.shape(src)))
    try:
        shape = np.broadcast_shapes(src_shape, tuple(dst.shape))
    except ValueError:
        shape = None
    if shape != tuple(dst.shape):
        raise ShapeError(f"numpy.copyto: src of shape {src_shape} does not broadcast to dst's "
                         f"shape {tuple(dst.shape)}{_at()}")
    values = _ops.broadcast_to(_ops.cast(src, dst.dtype), dst.shape)
    if where is not True:
        values = _ops.where(where, values, dst)
    write_all(dst, values)


def place(func, args, kwargs):
    """``np.place(arr, mask, vals)``: the places where ``mask`` holds, in order, take
    ``vals``' elements in order (repeated as needed)."""
    p = _bound(func, args, kwargs)
    arr, mask, vals = p["arr"], p["mask"], p["vals"]
    if isinstance(arr, np.ndarray):
        np.place(arr, _numpy_values(mask), _numpy_values(vals))
        return
    arr = _target("place", arr)
    mask = concrete_values("numpy.place", mask, "mask").astype(bool)
    if mask.size != arr.size:
        raise ShapeError(f"numpy.place: mask has {mask.size} elements, arr {arr.size} "
                         f"(shape {tuple(arr.shape)}){_at()}")
    places = np.flatnonzero(mask)
    if places.size == 0:
        return
    vals = _ops.ravel(vals if isinstance(vals, TensorLike) else np.asarray(vals))
    if vals.shape[0] == 0:
        raise InvalidArgumentError(f"numpy.place: vals is empty, but mask selects "
                                   f"{places.size} places{_at()}")
    arr.put(places, _ops.take(vals, np.arange(places.size) % vals.shape[0]))


def put(func, args, kwargs):
    """``np.put(a, ind, v, mode='raise')``: ``a.put(ind, v, mode)``."""
    p = _bound(func, args, kwargs)
    a, ind, v, mode = p["a"], p["ind"], p["v"], p["mode"]
    if isinstance(a, np.ndarray):
        np.put(a, _numpy_values(ind), _numpy_values(v), mode=mode)
        return
    _target("put", a).put(ind, v, mode=mode)


def putmask(func, args, kwargs):
    """``np.putmask(a, mask, values)``: ``a.flat[n] = values[n]`` (values repeated to
    ``a``'s size) where ``mask.flat[n]`` holds. In engine ops, so it traces."""
    p = _bound(func, args, kwargs)
    a, mask, values = p["a"], p["mask"], p["values"]
    if isinstance(a, np.ndarray):
        np.putmask(a, _numpy_values(mask), _numpy_values(values))
        return
    a = _target("putmask", a)
    mask_shape = tuple(getattr(mask, "shape", np.shape(mask)))
    if mask_shape != tuple(a.shape):
        raise ShapeError(f"numpy.putmask: mask has shape {mask_shape}, a has shape "
                         f"{tuple(a.shape)}; they must be the same{_at()}")
    values = values if isinstance(values, TensorLike) else np.asarray(values)
    if values.size == 0:
        if np.any(concrete_values("numpy.putmask", mask, "mask")):
            raise InvalidArgumentError(f"numpy.putmask: values is empty{_at()}")
        return
    spread = _ops.cast(_ops.resize(values, a.shape), a.dtype)
    write_all(a, _ops.where(mask, spread, a))


def fill_diagonal(func, args, kwargs):
    """``np.fill_diagonal(a, val, wrap=False)``: the main diagonal of ``a`` (every
    axis the same length above 2-D) takes ``val``'s elements, repeated as needed; with
    ``wrap`` a tall matrix's diagonal starts again below, as numpy's."""
    p = _bound(func, args, kwargs)
    a, val, wrap = p["a"], p["val"], p["wrap"]
    if isinstance(a, np.ndarray):
        np.fill_diagonal(a, _numpy_values(val), wrap=wrap)
        return
    a = _target("fill_diagonal", a)
    if a.ndim < 2:
        raise ShapeError(f"numpy.fill_diagonal: a must be at least 2-D, got shape "
                         f"{tuple(a.shape)}{_at()}")
    # numpy's own rule: the diagonal is every step-th element of the flat array.
    end = None
    if a.ndim == 2:
        step = a.shape[1] + 1
        if not wrap:
            end = a.shape[1] * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ShapeError(f"numpy.fill_diagonal: above 2-D every axis must have the same "
                             f"length, got shape {tuple(a.shape)}{_at()}")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
    a.flat[:end:step] = val


HANDLERS = {("numpy", f.__name__): f for f in (copyto, place, put, putmask, fill_diagonal)}
