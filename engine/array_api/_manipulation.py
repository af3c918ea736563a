"""The standard's manipulation, indexing and linear algebra functions.

They call the engine's shape ops under the standard's signatures (``permute_dims``
is ``en.transpose``, ``concat(axis=None)`` joins flattened inputs). A few are
short compositions of engine ops (``broadcast_arrays``, ``unstack``,
``matrix_transpose``), so they trace and differentiate like any engine code.

Example:
    >>> import engine.array_api as xp
    >>> xp.permute_dims(xp.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
"""
import engine as _en
from engine.errors import InvalidArgumentError
from engine.shapes import broadcast_shapes as _broadcast_shapes

from ._lookup import standard_function

__all__ = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "permute_dims",
           "reshape", "squeeze", "stack", "unstack", "matmul", "matrix_transpose"]


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other (a list)."""
    shape = _broadcast_shapes(*[a.shape for a in arrays], op_name="broadcast_arrays")
    return [a if a.shape == shape else _en.broadcast_to(a, shape) for a in arrays]


def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape``."""
    return _en.broadcast_to(x, tuple(shape))


def concat(arrays, /, *, axis=0):
    """The arrays joined along ``axis`` (flattened first when ``axis`` is None)."""
    return _en.concat(list(arrays), axis=axis)


def expand_dims(x, /, axis=0):
    """``x`` with a new axis of length one at ``axis``."""
    return _en.expand_dims(x, axis)


_permute_dims = standard_function("permute_dims")


def permute_dims(x, /, axes):
    """``x`` with its axes reordered."""
    return _permute_dims(x, tuple(axes))


def reshape(x, /, shape, *, copy=None):
    """``x`` in a new shape: a view where numpy's reshape gives one (``copy=None``),
    new memory with ``copy=True``; ``copy=False`` refuses where a view is impossible."""
    out = _en.reshape(x, tuple(shape))
    if copy:
        return _en.identity(out)          # (eagerly a copy of the view)
    if copy is False and getattr(x, "_value", None) is not None and \
            getattr(out, "_alias", None) is None and out.size:
        raise InvalidArgumentError("reshape: this shape needs a copy of the values, but "
                                   "copy=False")
    return out


def squeeze(x, /, axis):
    """``x`` without the length-one axes ``axis``."""
    return _en.squeeze(x, axis)


def stack(arrays, /, *, axis=0):
    """The arrays stacked along a new axis."""
    return _en.stack(list(arrays), axis=axis)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    if not -x.ndim <= axis < x.ndim:
        raise _en.ShapeError(f"unstack: axis {axis} is out of range for {x.ndim}-d input")
    axis %= x.ndim
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(x.shape[axis]))


def matmul(x1, x2, /):
    """The matrix product, batched over leading axes."""
    return _en.matmul(x1, x2)


def matrix_transpose(x, /):
    """``x`` with its last two axes swapped."""
    if x.ndim < 2:
        raise _en.ShapeError(f"matrix_transpose: expected at least 2 dimensions, got {x.shape}")
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return _en.transpose(x, perm)


def _optional(name, make):
    """Define ``name`` from the engine function it adapts, when the engine has it."""
    fn = standard_function(name)
    if fn is not None:
        globals()[name] = make(fn)
        __all__.append(name)


def _flip(fn):
    def flip(x, /, *, axis=None):
        """``x`` with the order of elements reversed along ``axis`` (all when None)."""
        return fn(x, axis=axis)
    return flip


def _moveaxis(fn):
    def moveaxis(x, source, destination, /):
        """``x`` with axes ``source`` moved to ``destination``."""
        return fn(x, source, destination)
    return moveaxis


def _repeat(fn):
    def repeat(x, repeats, /, *, axis=None):
        """Each element of ``x`` repeated ``repeats`` times along ``axis``."""
        return fn(x, repeats, axis=axis)
    return repeat


def _roll(fn):
    def roll(x, /, shift, *, axis=None):
        """``x`` shifted cyclically by ``shift`` along ``axis``."""
        return fn(x, shift, axis=axis)
    return roll


def _tile(fn):
    def tile(x, repetitions, /):
        """``x`` repeated ``repetitions`` times along each axis."""
        return fn(x, tuple(repetitions))
    return tile


def _take(fn):
    def take(x, indices, /, *, axis=None):
        """Elements of ``x`` at ``indices`` along ``axis``."""
        return fn(x, indices, axis=axis)
    return take


def _take_along_axis(fn):
    def take_along_axis(x, indices, /, *, axis=-1):
        """Elements of ``x`` at ``indices``, matched along ``axis``."""
        return fn(x, indices, axis=axis)
    return take_along_axis


def _tensordot(fn):
    def tensordot(x1, x2, /, *, axes=2):
        """The sum of products over ``axes`` of ``x1`` and ``x2``."""
        return fn(x1, x2, axes=axes)
    return tensordot


def _vecdot(fn):
    def vecdot(x1, x2, /, *, axis=-1):
        """The dot product of vectors along ``axis`` (the first conjugated)."""
        return fn(x1, x2, axis=axis)
    return vecdot


for _name, _make in (("flip", _flip), ("moveaxis", _moveaxis), ("repeat", _repeat),
                     ("roll", _roll), ("tile", _tile), ("take", _take),
                     ("take_along_axis", _take_along_axis), ("tensordot", _tensordot),
                     ("vecdot", _vecdot)):
    _optional(_name, _make)
