"""Joining and splitting along an axis: ``concat``, ``stack`` and ``split``.

``concat`` and ``stack`` take any number of inputs (``apply(concat_op, *tensors,
axis=0)``); ``split`` returns several results (``multiple_results=True``).
Their gradients are each other: concat -> split, split -> concat, stack ->
one index per input.
"""
import numpy as np

from .. import dtypes
from ..names import also_named as _also_named
from ..errors import LoadError, ShapeError, TracingError, describe_inputs
from ..lifting import NESTED_TYPES, holds_tensors
from ..modes import apply
from ..op import Op, declare, register
from .. import chunk_rules
from ..shapes import normalize_axis
from . import indexing
from . import _rules
from ._args import int_tuple
from .shape_ops import broadcast_to_op, reshape


def _merge_dim(name, avals, i, a, b):
    """Two sizes that must agree (``None`` is unknown and agrees with anything)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise ShapeError(f"{name}: input shapes differ in dimension {i} ({a} vs {b}): "
                     f"{describe_inputs(avals)}")


def _result_dtype(avals):
    return np.result_type(*[dt for _, dt in avals])


def _as_list(name, tensors):
    if not isinstance(tensors, (list, tuple)):
        raise ShapeError(f"{name}: expected a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise ShapeError(f"{name}: needs at least one tensor")
    return list(tensors)


# ---- concat ----------------------------------------------------------------
def _concat_eval(*avals, axis):
    if not avals:
        raise ShapeError("concat: needs at least one input")
    nd = len(avals[0][0])
    if nd == 0:
        raise ShapeError(f"concat: zero-dimensional inputs cannot be concatenated: "
                         f"{describe_inputs(avals)}")
    if any(len(s) != nd for s, _ in avals):
        raise ShapeError(f"concat: all inputs must have the same rank, got {describe_inputs(avals)}")
    ax = normalize_axis(axis, nd, "concat")
    shape = list(avals[0][0])
    total: int | None = 0   # None once a size is not known
    for s, _ in avals:
        for i in range(nd):
            if i != ax:
                shape[i] = _merge_dim("concat", avals, i, shape[i], s[i])
        total = None if total is None or s[ax] is None else total + s[ax]
    shape[ax] = total
    return (tuple(shape), _result_dtype(avals))


def _concat_impl(*arrays, axis):
    return np.concatenate(arrays, axis=axis)


def _concat_out(*arrays, axis, out):
    # Always a fresh array (never a view of an input), so memory planning may
    # give it a buffer and treat its inputs as dead after it.
    return np.concatenate(arrays, axis=axis, out=out)


def _concat_vjp(g, out, *inputs, axis):
    ax = axis % g.ndim
    sizes = [x.shape[ax] for x in inputs]
    if any(s is None for s in sizes):
        raise TracingError(
            "concat: the gradient needs the sizes of the inputs along the concatenated "
            f"axis {axis}, but some are unknown while tracing ({[x.shape for x in inputs]})")
    if len(inputs) == 1:
        return (g,)
    return tuple(split(g, sizes, axis=ax))


def _concat_generic(be, *arrays, axis):
    return be.xp.concat(list(be.promote(*arrays)), axis=axis)


concat_op = register(Op("concat", _concat_impl, _concat_eval, _concat_vjp, dtypes=dtypes.ALL,
                        out_impl=_concat_out, generic=_concat_generic,
                        doc="Join tensors along an existing axis."))
declare(concat_op, onnx=("Concat",), chunks=chunk_rules.concat)


def concat(tensors, axis=0):
    """Join a list of tensors along an existing ``axis`` (numpy's ``concatenate``), or
    flattened one after the other when ``axis`` is None.

    All other dimensions must agree; dtypes promote as numpy promotes them.

    Example:
        >>> import engine as en
        >>> en.concat([en.zeros((2, 3)), en.ones((1, 3))], axis=0).shape
        (3, 3)
    """
    tensors = _as_list("concat", tensors)
    if axis is None:                   # numpy's and the Array API's: flattened, then joined
        tensors, axis = [reshape(t, (-1,)) for t in tensors], 0
    return apply(concat_op, *tensors, axis=int_tuple("concat", (axis,), "axis")[0])


_also_named(concat, numpy="concatenate")


# ---- stack -----------------------------------------------------------------
def _stack_eval(*avals, axis):
    if not avals:
        raise ShapeError("stack: needs at least one input")
    nd = len(avals[0][0])
    if any(len(s) != nd for s, _ in avals):
        raise ShapeError(f"stack: all inputs must have the same shape, got {describe_inputs(avals)}")
    ax = normalize_axis(axis, nd + 1, "stack")
    shape = list(avals[0][0])
    for s, _ in avals:
        for i in range(nd):
            shape[i] = _merge_dim("stack", avals, i, shape[i], s[i])
    shape.insert(ax, len(avals))
    return (tuple(shape), _result_dtype(avals))


def _stack_impl(*arrays, axis):
    return np.stack(arrays, axis=axis)


def _stack_vjp(g, out, *inputs, axis):
    ax = axis % g.ndim
    lead = (slice(None),) * ax
    return tuple(indexing.getitem(g, lead + (i,)) for i in range(len(inputs)))


def _stack_generic(be, *arrays, axis):
    return be.xp.stack(list(be.promote(*arrays)), axis=axis)


stack_op = register(Op("stack", _stack_impl, _stack_eval, _stack_vjp, dtypes=dtypes.ALL,
                       generic=_stack_generic,
                       doc="Join same-shaped tensors along a new axis."))
declare(stack_op, onnx=("UnsqueezeConcat",), chunks=chunk_rules.stack)


def stack(tensors, axis=0):
    """Join a list of same-shaped tensors along a new ``axis``.

    Example:
        >>> import engine as en
        >>> en.stack([en.zeros(3), en.ones(3)], axis=1).shape
        (3, 2)
    """
    tensors = _as_list("stack", tensors)
    return apply(stack_op, *tensors, axis=int(axis))


def stack_nested(value):
    """A tensor for a (nested) list or tuple that holds tensors: its items stacked along
    a new first axis with :func:`stack`, level by level, so the result keeps their
    gradients and traces. Every mode's ``lift`` (and ``en.tensor``) calls this where
    numpy would read the list as constant data.

    Example:
        >>> import engine as en
        >>> x = en.tensor(2.0)
        >>> float(en.grad(lambda x: en.sum(en.tensor([x, 3 * x])))(x))
        4.0
    """
    items = [stack_nested(v) if type(v) in NESTED_TYPES and holds_tensors(v) else v
             for v in value]
    return apply(stack_op, *items, axis=0)


# ---- split -----------------------------------------------------------------
def _split_sizes(x, num_or_sizes, axis):
    """The section sizes along ``axis``; entries are ``None`` where unknown."""
    shape, _ = x
    dim = shape[axis]
    if isinstance(num_or_sizes, int):
        n = num_or_sizes
        if n <= 0:
            raise ShapeError(f"split: the number of parts must be positive, got {n}")
        if dim is None:
            return (None,) * n
        if dim % n:
            raise ShapeError(f"split: dimension {axis} of {describe_inputs([x])} (size {dim}) "
                             f"does not divide into {n} equal parts")
        return (dim // n,) * n
    sizes = tuple(num_or_sizes)
    if not sizes:
        raise ShapeError("split: the list of section sizes is empty")
    if sum(1 for s in sizes if s == -1) > 1 or any(s < -1 for s in sizes):
        raise ShapeError(f"split: sizes must be non-negative with at most one -1, got {list(sizes)}")
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        if dim is None:
            return tuple(None if s == -1 else s for s in sizes)
        if known > dim:
            raise ShapeError(f"split: sizes {list(sizes)} add up to more than dimension {axis} "
                             f"of {describe_inputs([x])} (size {dim})")
        return tuple(dim - known if s == -1 else s for s in sizes)
    if dim is not None and known != dim:
        raise ShapeError(f"split: sizes {list(sizes)} add up to {known}, but dimension {axis} "
                         f"of {describe_inputs([x])} has size {dim}")
    return sizes


def _split_eval(x, *, num_or_sizes, axis):
    nd = len(x[0])
    if nd == 0:
        raise ShapeError(f"split: cannot split a zero-dimensional input {describe_inputs([x])}")
    ax = normalize_axis(axis, nd, "split")
    sizes = _split_sizes(x, num_or_sizes, ax)
    return tuple((x[0][:ax] + (s,) + x[0][ax + 1:], x[1]) for s in sizes)


def _split_impl(x, *, num_or_sizes, axis):
    # Checked again on the concrete shape: a dim unknown at trace time is known now.
    ax = axis % x.ndim
    sizes = _split_sizes((x.shape, x.dtype), num_or_sizes, ax)
    # Basic slices (views), as np.split makes them, without its per-part overhead.
    lead = (slice(None),) * ax
    out, start = [], 0
    for size in sizes:
        out.append(x[lead + (slice(start, start + size),)])
        start += size
    return tuple(out)


def _split_generic(be, x, *, num_or_sizes, axis):
    ax = axis % x.ndim
    sizes = _split_sizes((tuple(x.shape), be.dtype_of(x)), num_or_sizes, ax)
    lead = (slice(None),) * ax
    out, start = [], 0
    for size in sizes:   # the standard indexes every dim or says "..."
        out.append(x[lead + (slice(start, start + size), Ellipsis)])
        start += size
    return tuple(out)


def _split_vjp(g, out, x, *, num_or_sizes, axis):
    # Cotangents of unused outputs arrive as zeros, so ``g`` is always complete.
    if len(g) == 1:
        return (g[0],)
    return (concat(list(g), axis=axis),)


split_op = register(Op("split", _split_impl, _split_eval, _split_vjp, multiple_results=True,
                       n_inputs=1, dtypes=dtypes.ALL,
                       generic=_split_generic,
                       doc="Cut a tensor into parts along an axis (a tuple of tensors)."))


def _split_load_check(in_avals, params, declared, where):
    # The shape rule builds one result per part: a loaded file's count is bounded
    # by its declared results before the rule runs.
    n = params.get("num_or_sizes")
    if type(n) is int and not 0 < n <= len(declared):
        raise LoadError(f"{where}: {n} parts, {len(declared)} results declared")


declare(split_op, onnx=("Split",), load_check=_split_load_check)


def split(x, num_or_sizes, axis=0):
    """Cut ``x`` along ``axis`` into a tuple of tensors, like ``tf.split``.

    ``num_or_sizes`` is either the number of equal parts or a list of section
    sizes (one of them may be -1: whatever is left).

    Example:
        >>> import engine as en
        >>> a, b = en.split(en.zeros((5, 2)), [2, 3])
        >>> a.shape, b.shape
        ((2, 2), (3, 2))
    """
    spec: int | tuple[int, ...]
    if isinstance(num_or_sizes, (list, tuple, np.ndarray)):
        spec = tuple(int(s) for s in num_or_sizes)
    else:
        spec = int(num_or_sizes)
    return apply(split_op, x, num_or_sizes=spec, axis=int(axis))


# numpy's split takes split points where this takes sizes (numpy dispatch converts them).
_also_named(split, not_numpy=True)


__all__ = ["concat", "concat_op", "stack", "stack_op", "split", "split_op"]


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
declare(concat_op, jvp=_rules.jvp_linear(concat_op))
declare(stack_op, jvp=_rules.jvp_linear(stack_op))
declare(split_op, jvp=_rules.jvp_linear(split_op))


def _all_in_front(size, args, dims):
    """Every input with the batch axis first (unbatched ones broadcast along it)."""
    return [_rules.move_to_front(a, d) if d is not None else
            apply(broadcast_to_op, a, shape=(size,) + tuple(a.shape)) for a, d in zip(args, dims)]


def _element_rank(args, dims):
    return args[0].ndim - (dims[0] is not None)


def _concat_batch(size, args, dims, *, axis):
    nd = _element_rank(args, dims)
    return apply(concat_op, *_all_in_front(size, args, dims), axis=_rules.shift_axis(axis, nd)), 0


def _stack_batch(size, args, dims, *, axis):
    nd = _element_rank(args, dims)
    return apply(stack_op, *_all_in_front(size, args, dims), axis=_rules.shift_axis(axis, nd + 1)), 0


def _split_batch(size, args, dims, *, num_or_sizes, axis):
    x = _rules.move_to_front(args[0], dims[0])
    outs = apply(split_op, x, num_or_sizes=num_or_sizes, axis=_rules.shift_axis(axis, x.ndim - 1))
    return outs, (0,) * len(outs)


declare(concat_op, batch=_concat_batch)
declare(stack_op, batch=_stack_batch)
declare(split_op, batch=_split_batch)

# The compiled lowering copies the parts into one array, and cuts one into parts
# (graph/lowering/numba/numba_source.py and numba_shapes.py).
declare(stack_op, numba_form="stack_rows")
declare(concat_op, numba_form="concat_rows")
declare(split_op, numba_form="split_parts")
