"""numpy's scatters that write into their first argument, on tensors:
``np.put_along_axis(arr, indices, values, axis)`` and ``ufunc.at(a, indices, b)`` for
``add``, ``subtract``, ``multiply``, ``maximum`` and ``minimum`` (``np.add.at`` ...).

Each computes the functional result with the engine's ops (``en.put_along_axis``,
``en.scatter_reduce``) and writes it into the tensor (``t[...] = result``; a variable is
assigned), so the write records on tapes and traces as any other. When the target is
a numpy array and only another argument is a tensor, numpy writes the tensor's values
into its own array.

``ufunc.at`` takes numpy's whole index (ints, slices, integer arrays, masks): the flat
positions it selects are found by indexing ``arange(a.size)`` with it, and the values
are combined into those positions of the flattened tensor, repeated positions
accumulating as numpy's (unbuffered) ``at`` does.

Example:
    >>> import numpy as np
    >>> import engine as en
    >>> t = en.zeros(4)
    >>> np.add.at(t, [0, 0, 2], 1.0)
    >>> np.maximum.at(t, [3, 3], en.tensor([5.0, 7.0]))
    >>> t.tolist()
    [2.0, 0.0, 1.0, 7.0]
"""
import numpy as np

from . import ops as _ops
from .errors import UnsupportedError, format_location, user_frame
from .lifting import TensorLike
from .numpy_inplace import _bound, _numpy_values, _target, write_all

# ufunc -> (reduce of en.scatter_reduce, whether the values are negated first)
_AT_REDUCES = {np.add: ("sum", False), np.subtract: ("sum", True),
               np.multiply: ("prod", False), np.maximum: ("amax", False),
               np.minimum: ("amin", False)}


def _at():
    return f"\n  at {format_location(user_frame())}"


def _values(v):
    return v if isinstance(v, TensorLike) else _ops.identity(np.asarray(v))


def scatter_at(a, indices, b, reduce):
    """``a`` with ``b`` combined (``reduce`` of :func:`en.scatter_reduce`) into the
    elements ``a[indices]`` names, repeated ones accumulating: the functional
    ``ufunc.at``. A new tensor; ``a`` is left as it is."""
    positions = _ops.reshape(_ops.arange(int(np.prod(a.shape)), dtype="int64"),
                             tuple(a.shape))[indices]
    b = _values(b)
    b = _ops.broadcast_to(b, tuple(positions.shape)) if tuple(b.shape) != tuple(
        positions.shape) else b
    flat = _ops.scatter_reduce(_ops.reshape(a, (-1,)), 0, _ops.reshape(positions, (-1,)),
                               _ops.reshape(b, (-1,)), reduce)
    return _ops.reshape(flat, tuple(a.shape))


def ufunc_at(ufunc, inputs, kwargs):
    """``ufunc.at(a, indices, b)`` with a tensor among the arguments."""
    what = f"numpy.{ufunc.__name__}.at"
    a, indices, *rest = inputs
    b = rest[0] if rest else None
    if isinstance(a, np.ndarray):           # numpy writes into its own array
        ufunc.at(a, _numpy_values(indices), *([_numpy_values(b)] if rest else []))
        return None
    rule = _AT_REDUCES.get(ufunc)
    if rule is None or b is None or kwargs:
        raise UnsupportedError(
            f"{what} is not supported on tensors (the engine scatters with add, subtract, "
            f"multiply, maximum and minimum); write t[index] = values, or call it on "
            f"t.numpy(){_at()}")
    a = _target(f"{ufunc.__name__}.at", a)
    reduce, negate = rule
    b = _values(b)
    write_all(a, scatter_at(a, indices, -b if negate else b, reduce))
    return None


def put_along_axis(func, args, kwargs):
    """``np.put_along_axis(arr, indices, values, axis)``: ``values`` written at
    ``indices`` along ``axis`` (the last write wins where indices repeat)."""
    p = _bound(func, args, kwargs)
    arr, indices, values, axis = p["arr"], p["indices"], p["values"], p["axis"]
    if isinstance(arr, np.ndarray):
        np.put_along_axis(arr, _numpy_values(indices), _numpy_values(values), axis)
        return
    arr = _target("put_along_axis", arr)
    write_all(arr, _ops.put_along_axis(arr, indices, values, axis))


HANDLERS = {("numpy", "put_along_axis"): put_along_axis}
