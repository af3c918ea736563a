"""Ops that rearrange without computing: reshape, transpose, broadcast_to, expand_dims, squeeze."""
import operator

import numpy as np

from .. import dtypes
from ..names import also_named as _also_named
from ..errors import AxisError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from .. import chunk_rules
from ..shapes import broadcast_shapes, normalize_axes, size_of
from ._args import int_tuple
from ._define import unbroadcast
from . import _rules


# ---- reshape --------------------------------------------------------------
def _reshape_eval(x, *, shape):
    n = size_of(x[0])
    if sum(1 for d in shape if d == -1) > 1:
        raise ShapeError(f"reshape: at most one -1 in the new shape {shape}")
    if any(d is not None and d < -1 for d in shape):
        raise ShapeError(f"reshape: invalid dimension in the new shape {shape}")
    known = size_of(tuple(d for d in shape if d != -1))
    if -1 in shape:
        if n is None or known is None:
            out = tuple(None if d == -1 else d for d in shape)
        elif known == 0 or n % known:
            raise ShapeError(f"reshape: cannot reshape {describe_inputs([x])} into {shape}")
        else:
            out = tuple(n // known if d == -1 else d for d in shape)
    else:
        out = tuple(shape)
        if n is not None and known is not None and n != known:
            raise ShapeError(f"reshape: cannot reshape {describe_inputs([x])} "
                             f"({n} elements) into {shape} ({known} elements)")
    return (out, x[1])


def _reshape_impl(x, *, shape):
    return x.reshape(shape)    # the method: np.reshape adds ~0.5 µs of dispatch


def _reshape_vjp(g, out, x, *, shape):
    return (reshape(g, tuple(-1 if d is None else d for d in x.shape)),)


reshape_op = register(Op("reshape", _reshape_impl, _reshape_eval, _reshape_vjp, n_inputs=1,
                         generic=lambda be, x, *, shape: be.xp.reshape(x, shape),
                         dtypes=dtypes.ALL, doc="Same values in a new shape; one dim may be -1."))
declare(reshape_op, onnx=("Reshape",), chunks=chunk_rules.reshape)


def reshape(x, shape):
    """Give ``x`` a new shape with the same number of elements (one dim may be -1).

    Example:
        >>> import engine as en
        >>> en.reshape(en.arange(6), (2, -1)).shape
        (2, 3)
    """
    if isinstance(shape, int):
        shape = (shape,)
    return apply(reshape_op, x, shape=int_tuple("reshape", shape, "shape"))


# ---- transpose ------------------------------------------------------------
def _transpose_eval(x, *, axes):
    nd = len(x[0])
    if axes is None:
        axes = tuple(range(nd))[::-1]
    if len(axes) != nd or any(not -nd <= a < nd for a in axes) or \
            sorted(a % nd for a in axes) != list(range(nd)):
        raise ShapeError(f"transpose: axes {axes} are not a permutation for {describe_inputs([x])}")
    return (tuple(x[0][a] for a in axes), x[1])


def _transpose_impl(x, *, axes):
    return x.transpose(axes)   # the method: np.transpose adds ~0.5 µs of dispatch


def _transpose_vjp(g, out, x, *, axes):
    if axes is None:
        return (transpose(g),)
    nd = len(axes)
    inverse = tuple(int(i) for i in np.argsort([a % nd for a in axes]))
    return (transpose(g, inverse),)


def _transpose_generic(be, x, *, axes):
    nd = x.ndim
    axes = tuple(range(nd))[::-1] if axes is None else tuple(a % nd for a in axes)
    return be.xp.permute_dims(x, axes)


transpose_op = register(Op("transpose", _transpose_impl, _transpose_eval, _transpose_vjp,
                           n_inputs=1, dtypes=dtypes.ALL, generic=_transpose_generic,
                           doc="Permute axes (reverse them when ``axes`` is None)."))
declare(transpose_op, onnx=("Transpose",), chunks=chunk_rules.transpose)


def transpose(x, axes=None):
    """Permute the axes of ``x``; reverses them by default.

    Example:
        >>> import engine as en
        >>> en.transpose(en.zeros((2, 3, 4)), (1, 0, 2)).shape
        (3, 2, 4)
    """
    if axes is not None:
        axes = int_tuple("transpose", axes, "axes")
    return apply(transpose_op, x, axes=axes)


_also_named(transpose, numpy="permute_dims", array_api="permute_dims")


# ---- broadcast_to ---------------------------------------------------------
def _broadcast_to_eval(x, *, shape):
    if len(shape) < len(x[0]):
        raise ShapeError(f"broadcast_to: cannot broadcast {describe_inputs([x])} to {shape}")
    out = broadcast_shapes(x[0], shape, op_name="broadcast_to")
    if tuple(out) != tuple(shape) and None not in shape:
        raise ShapeError(f"broadcast_to: cannot broadcast {describe_inputs([x])} to {shape}")
    return (tuple(shape), x[1])


def _broadcast_to_impl(x, *, shape):
    return np.broadcast_to(x, shape)


def _broadcast_to_vjp(g, out, x, *, shape):
    return (unbroadcast(g, x.shape),)


broadcast_to_op = register(Op("broadcast_to", _broadcast_to_impl, _broadcast_to_eval,
                              _broadcast_to_vjp, n_inputs=1, dtypes=dtypes.ALL,
                              generic=lambda be, x, *, shape: be.xp.broadcast_to(x, shape),
                              doc="Broadcast to a larger shape (numpy rules)."))
declare(broadcast_to_op, onnx=("Expand",), chunks=chunk_rules.broadcast_to)


def broadcast_to(x, shape):
    """Broadcast ``x`` to ``shape`` following numpy's rules."""
    if isinstance(shape, int):
        shape = (shape,)
    return apply(broadcast_to_op, x, shape=tuple(shape))


# ---- expand_dims / squeeze -------------------------------------------------
# ``axis`` is one int (the common case, and what older saved graphs hold) or a tuple of
# ints, as numpy's: positions in the *result*, so the result has ``ndim + len(axis)`` axes.
def _expand_axes(axis, in_ndim):
    """The sorted, non-negative result positions of the new axes."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    out_ndim = in_ndim + len(axes)
    try:
        return normalize_axes(axes, out_ndim, "expand_dims")
    except AxisError:
        raise AxisError(f"expand_dims: axis {axis!r} is out of range for a result of rank "
                        f"{out_ndim} (an input of rank {in_ndim} and {len(axes)} new axes)") from None


def _expand_dims_eval(x, *, axis):
    shape = list(x[0])
    for a in _expand_axes(axis, len(shape)):
        shape.insert(a, 1)
    return (tuple(shape), x[1])


def _expand_dims_vjp(g, out, x, *, axis):
    return (reshape(g, tuple(-1 if d is None else d for d in x.shape)),)


def _expand_dims_impl(x, *, axis):
    # A reshape: np.expand_dims costs ~2 µs in argument handling, this ~0.2 µs
    # (inserting a size-1 axis is always a view).
    if isinstance(axis, tuple):
        shape = list(x.shape)
        for a in _expand_axes(axis, x.ndim):
            shape.insert(a, 1)
        return x.reshape(shape)
    a = axis if axis >= 0 else axis + x.ndim + 1
    return x.reshape(x.shape[:a] + (1,) + x.shape[a:])


def _expand_dims_generic(be, x, *, axis):
    # The standard's expand_dims takes one axis: insert them in ascending result order.
    for a in _expand_axes(axis, len(x.shape)):
        x = be.xp.expand_dims(x, axis=a)
    return x


expand_dims_op = register(Op("expand_dims", _expand_dims_impl,
                             _expand_dims_eval, _expand_dims_vjp, n_inputs=1, dtypes=dtypes.ALL,
                             generic=_expand_dims_generic,
                             doc="Insert size-1 axes at ``axis`` (an int or a tuple of ints)."))
declare(expand_dims_op, onnx=("Unsqueeze",), chunks=chunk_rules.expand_dims)


def _axis_param(axis):
    """An int, or a tuple of ints, from any integer-like value(s); anything else is left for
    the shape rule to refuse with the op's name and the user's line."""
    if isinstance(axis, (list, tuple)):
        return tuple(_axis_param(a) for a in axis)
    if hasattr(axis, "__index__") and not isinstance(axis, bool):
        return operator.index(axis)
    return axis


def expand_dims(x, axis):
    """Insert new axes of size 1 at ``axis``: an int or, as numpy, a tuple of ints
    (positions in the result).

    Example:
        >>> import engine as en
        >>> en.expand_dims(en.ones((2, 3)), (0, 3)).shape
        (1, 2, 3, 1)
    """
    return apply(expand_dims_op, x, axis=_axis_param(axis))


def _squeeze_eval(x, *, axis):
    shape = x[0]
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes(axis, len(shape), "squeeze")
        for a in axes:
            if shape[a] is not None and shape[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of {describe_inputs([x])} has size "
                                 f"{shape[a]}, not 1")
    return (tuple(d for i, d in enumerate(shape) if i not in axes), x[1])


def _squeeze_impl(x, *, axis):
    out = np.squeeze(x) if axis is None else np.squeeze(x, axis=axis)
    return x.view() if out is x else out     # (a view, never the input's own array)


def _squeeze_generic(be, x, *, axis):
    shape = tuple(x.shape)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = normalize_axes(axis, len(shape), "squeeze")
    return be.xp.squeeze(x, axis=axes) if axes else x


squeeze_op = register(Op("squeeze", _squeeze_impl, _squeeze_eval, _expand_dims_vjp,
                         n_inputs=1, dtypes=dtypes.ALL, doc="Remove size-1 axes.",
                         generic=_squeeze_generic))
declare(squeeze_op, onnx=("Squeeze",), chunks=chunk_rules.squeeze)


def squeeze(x, axis=None):
    """Remove axes of size 1 (all of them, or those in ``axis``)."""
    if isinstance(axis, list):
        axis = tuple(axis)
    return apply(squeeze_op, x, axis=axis)


# ---- shape-dependent helpers (used by VJPs when dims are unknown while tracing) -----
def _broadcast_like_eval(x, like):
    out = broadcast_shapes(x[0], like[0], op_name="broadcast_like")
    if len(out) != len(like[0]) or any(a is not None and b is not None and a != b
                                       for a, b in zip(out, like[0])):
        raise ShapeError(f"broadcast_like: cannot broadcast {describe_inputs([x])} to the shape "
                         f"of {describe_inputs([like])}")
    return (tuple(like[0]), x[1])


def _broadcast_like_impl(x, like):
    return np.broadcast_to(x, like.shape)


broadcast_like_op = register(Op(
    "broadcast_like", _broadcast_like_impl, _broadcast_like_eval,
    lambda g, out, x, like: (unbroadcast(g, x.shape), None), n_inputs=2, dtypes=dtypes.ALL,
    generic=lambda be, x, like: be.xp.broadcast_to(x, tuple(like.shape)),
    doc="Broadcast ``x`` to the (run-time) shape of ``like``."))
declare(broadcast_like_op, onnx=("ExpandToShapeOf",), chunks=chunk_rules.broadcast_like)


def broadcast_like(x, like):
    """Broadcast ``x`` to ``like``'s shape, known only at run time while tracing."""
    return apply(broadcast_like_op, x, like)


def _count_eval(x, *, axes, dtype):
    return ((), dtypes.as_dtype(dtype))


def _count_impl(x, *, axes, dtype):
    n = 1
    for a in axes:
        n *= x.shape[a]
    return np.asarray(n, dtype=dtype)


def _count_generic(be, x, *, axes, dtype):
    n = 1
    for a in axes:
        n *= x.shape[a]
    return be.xp.asarray(n, dtype=be.dtype(dtype))


count_op = register(Op(
    "count", _count_impl, _count_eval, lambda g, out, x, **p: (None,), n_inputs=1,
    generic=_count_generic,
    dtypes=dtypes.ALL, doc="Number of elements of ``x`` along ``axes`` (a 0-d tensor)."))
declare(count_op, onnx=("shape_product",), shape_only=True)


def count(x, axes=None, dtype="float64"):
    """The number of elements of ``x`` over ``axes`` (all when None), as a 0-d tensor."""
    axes = normalize_axes(axes, x.ndim, "count")
    return apply(count_op, x, axes=axes, dtype=dtypes.as_dtype(dtype))


def broadcast_to_shape_of(x, like):
    """``broadcast_to(x, like.shape)``, or ``broadcast_like`` when that shape is not static."""
    if None in tuple(like.shape):
        return broadcast_like(x, like)
    return broadcast_to(x, like.shape)


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
# Every op here is linear in its data input: the JVP is the op on the tangent.
for _op in (reshape_op, transpose_op, broadcast_to_op, expand_dims_op, squeeze_op):
    declare(_op, jvp=_rules.jvp_linear(_op))
declare(broadcast_like_op, jvp=_rules.jvp_linear(broadcast_like_op, linear=(0,)))
declare(count_op, jvp=_rules.no_tangent)


def _static(shape):
    return tuple(-1 if d is None else d for d in shape)


def _reshape_batch(size, args, dims, *, shape):
    return apply(reshape_op, _rules.move_to_front(args[0], dims[0]), shape=(size,) + tuple(shape)), 0


def _transpose_batch(size, args, dims, *, axes):
    x = _rules.move_to_front(args[0], dims[0])
    nd = x.ndim - 1
    if axes is None:
        axes = tuple(range(nd))[::-1]
    if len(axes) != nd:    # the op's own error, on the element's shape
        _transpose_eval((tuple(x.shape[1:]), x.dtype), axes=axes)
    return transpose(x, (0,) + tuple(_rules.shift_axis(a, nd) for a in axes)), 0


def _broadcast_to_batch(size, args, dims, *, shape):
    x = _rules.move_to_front(args[0], dims[0])
    lead = len(shape) - (x.ndim - 1)
    if lead > 0:
        x = apply(reshape_op, x, shape=(size,) + (1,) * lead + _static(x.shape[1:]))
    return broadcast_to(x, (size,) + tuple(shape)), 0


def _expand_dims_batch(size, args, dims, *, axis):
    x = _rules.move_to_front(args[0], dims[0])
    axes = _expand_axes(axis, x.ndim - 1)          # positions in the element's result
    return apply(expand_dims_op, x, axis=tuple(a + 1 for a in axes)), 0


def _squeeze_batch(size, args, dims, *, axis):
    x = _rules.move_to_front(args[0], dims[0])
    element = tuple(x.shape[1:])
    if axis is None:
        axes = tuple(i for i, d in enumerate(element) if d == 1)
    else:
        axes = normalize_axes(axis, len(element), "squeeze")
    return apply(squeeze_op, x, axis=tuple(a + 1 for a in axes)), 0


def _broadcast_like_batch(size, args, dims):
    (x, like), (dx, dl) = args, dims
    rank = like.ndim - (dl is not None)
    if dx is not None:
        x = _rules.move_to_front(x, dx)
        lead = rank - (x.ndim - 1)
        if lead > 0:
            x = apply(reshape_op, x, shape=(size,) + (1,) * lead + _static(x.shape[1:]))
    if dl is not None:
        return broadcast_like(x, _rules.move_to_front(like, dl)), 0
    if None in tuple(like.shape):
        return NotImplemented
    return broadcast_to(x, (size,) + tuple(like.shape)), 0


def _count_batch(size, args, dims, *, axes, dtype):
    # The count of one element: the same for every element, so unbatched.
    x = _rules.move_to_front(args[0], dims[0])
    return apply(count_op, x, axes=tuple(a + 1 for a in axes), dtype=dtype), None


declare(reshape_op, batch=_reshape_batch)
declare(transpose_op, batch=_transpose_batch)
declare(broadcast_to_op, batch=_broadcast_to_batch)
declare(expand_dims_op, batch=_expand_dims_batch)
declare(squeeze_op, batch=_squeeze_batch)
declare(broadcast_like_op, batch=_broadcast_like_batch)
declare(count_op, batch=_count_batch)

# The compiled lowering writes these as views (graph/lowering/numba/numba_source.py).
declare(transpose_op, numba_form="view_transpose")
declare(reshape_op, numba_form="reshape_view")
# ... and this as a loop copying over the new shape (graph/lowering/numba/numba_shapes.py).
declare(broadcast_to_op, numba_form="broadcast_copy")
