"""numba source for a region of a graph: one function, loops written out.

``emit(nodes, inputs, outputs, name)`` writes a plain-Python function that
numba compiles in nopython mode. Every shape is static, so each elementwise op
becomes a loop nest with literal bounds; an elementwise value used once, by an
elementwise op of the same shape, is computed inside its user's loop (no
array is made for it). Other ops are written by the pattern their
``numba_form`` rule names (``PATTERNS`` below: matrix products through
``np.dot``, reductions as loops accumulating in float64, transposes as views,
a ``scan`` as a time loop around its inlined body). A node the emitter cannot
write raises :class:`Unsupported`, and the caller keeps the numpy lowering.

Example (the loop nest of ``tanh(x * 2.0)`` on a (2, 3) float32 input)::

    def region(a0):
        a0 = np.ascontiguousarray(a0)
        v0 = np.empty((2, 3), np.float32)
        for i0 in range(2):
            for i1 in range(3):
                v0[i0, i1] = np.float32(tanh32(np.float32(a0[i0, i1] * np.float32(2.0))))
        return (v0,)

The statement writer is ``numba_emitter.py``; a ``scan``'s time loop, ``numba_scan.py``.
"""
import numpy as np

from .numba_emitter import (Emitter, Unsupported, _np_type, _Value, check_writable,
                            count_users, scalar_expression)
from .numba_scan import plan_reuse, scan_loop
from ..graph_limits import op_count   # shared with the C lowering
from . import numba_shapes

__all__ = ["PATTERNS", "Unsupported", "check_writable", "emit", "op_count", "scalar_expression"]


# ---- patterns (named by ops' numba_form rules) ---------------------------------------------
def _matmul(em, node, depth):
    x, y = (em.scalar_or_array(i) for i in node.inputs)
    if x.kind != "array" or y.kind != "array" or len(x.shape) not in (1, 2) or \
            len(y.shape) not in (1, 2) or node.shape == () or x.dtype != y.dtype or \
            np.dtype(x.dtype).kind != "f" or np.dtype(node.dtype) != np.dtype(x.dtype):
        raise Unsupported("matmul: only 1-d and 2-d float products of one dtype")
    if 0 in x.shape or 0 in y.shape:
        raise Unsupported("matmul: empty operands")
    em.largest_product = max(em.largest_product, int(np.prod(x.shape)) * (
        y.shape[-1] if len(y.shape) == 2 else 1))
    if len(x.shape) == 2 and len(y.shape) == 2:
        # Into a buffer of its own (numba's three-argument np.dot, C or F operands): no
        # allocation per call, and none per step inside a time loop.
        name = em.buffer(node, depth)
        em.line(f"np.dot({x.text}, {y.text}, {name})", depth)
    else:
        name = em.fresh()
        em.line(f"{name} = np.dot({x.text}, {y.text})", depth)
    em.values[node] = _Value("array", name, node.shape, node.dtype)


def _transpose(em, node, depth):
    x = em.scalar_or_array(node.inputs[0])
    rank = len(x.shape)
    axes = node.params.get("axes")
    if x.kind == "scalar" or rank < 2 or axes is None and rank == 2:
        if rank >= 2:
            name = em.fresh()
            em.line(f"{name} = {x.text}.T", depth)
            em.values[node] = _Value("array", name, node.shape, node.dtype)
        else:
            em.values[node] = x
        return
    if rank == 2 and tuple(a % 2 for a in axes) == (1, 0):
        name = em.fresh()
        em.line(f"{name} = {x.text}.T", depth)
        em.values[node] = _Value("array", name, node.shape, node.dtype)
        return
    if rank == 2 and tuple(a % 2 for a in axes) == (0, 1):
        em.values[node] = x
        return
    raise Unsupported("transpose: 2-d only")


def _reduce(mean):
    def emit(em, node, depth):
        x = em.scalar_or_array(node.inputs[0])
        if set(node.params) != {"axis", "keepdims"}:
            raise Unsupported("reduction params")
        kind = np.dtype(x.dtype).kind
        if kind not in "fiu" or (mean and kind != "f"):
            raise Unsupported("reduction dtype")
        rank = len(x.shape)
        axis = node.params["axis"]
        axes = tuple(range(rank)) if axis is None else tuple(
            sorted(a % rank for a in (axis if isinstance(axis, tuple) else (axis,)))) if rank else ()
        if 0 in x.shape:
            raise Unsupported("reduction of an empty array")
        acc_t = np.float64 if kind == "f" else node.dtype
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        kept = [k for k in range(rank) if k not in axes]
        elem = em.element(node.inputs[0], rank)
        out_t = _np_type(node.dtype)
        if not kept:    # a full reduction
            name = em.fresh()
            if rank:
                # One accumulator per position of the last axis: the adds of the inner loop
                # are independent, so it vectorizes (a single float64 sum cannot: its adds
                # are one chain, one add's latency each).
                lanes = x.shape[-1]
                acc = em.alloc((lanes,), acc_t, depth, "s")
                em.line(f"{acc}[:] = 0", depth)
                _, inner = em.loop_nest(x.shape, depth)
                em.line(f"{acc}[i{rank - 1}] += {elem}", inner)
                total = f"{acc}.sum()"
            else:
                total = elem
            total = f"{total} / {count}" if mean else total
            em.line(f"{name} = {out_t}({total})", depth)
            if node.shape == ():
                em.values[node] = _Value("scalar", name, (), node.dtype)
            else:   # keepdims of a full reduction
                arr = em.alloc(node.shape, node.dtype, depth)
                em.line(f"{arr}[...] = {name}", depth)
                em.values[node] = _Value("array", arr, node.shape, node.dtype)
            return
        kept_shape = tuple(x.shape[k] for k in kept)
        acc = em.alloc(kept_shape, acc_t, depth, "s")
        em.line(f"{acc}[:] = 0", depth)
        # Loops in the input's order, so the adds stream through memory.
        _, inner = em.loop_nest(x.shape, depth)
        em.line(f"{acc}[{', '.join(f'i{k}' for k in kept)}] += {elem}", inner)
        out = em.alloc(kept_shape, node.dtype, depth)
        index, inner = em.loop_nest(kept_shape, depth)
        value = f"{acc}[{index}] / {count}" if mean else f"{acc}[{index}]"
        em.line(f"{out}[{index}] = {out_t}({value})", inner)
        name = out
        if tuple(node.shape) != kept_shape:   # keepdims: a view
            name = em.fresh()
            em.line(f"{name} = {out}.reshape({tuple(node.shape)!r})", depth)
        em.values[node] = _Value("array", name, node.shape, node.dtype)
    return emit


def _getitem(em, node, depth):
    """``x[k]`` (an integer) or ``x[lo:hi]`` (a step-1 slice) on the leading axis, or
    ``x[:, lo:hi]`` (a step-1 slice after whole axes: columns of a wider product): a view."""
    spec = node.params.get("spec")
    if set(node.params) != {"spec"} or len(node.inputs) != 1 or not spec or \
            spec[-1][0] not in ("int", "slice") or \
            any(tuple(s) != ("slice", None, None, None) for s in spec[:-1]) or \
            len(spec) > 1 and spec[-1][0] != "slice":
        raise Unsupported("getitem: one integer or slice on the leading axis, or one slice "
                          "after whole axes, only")
    x = em.scalar_or_array(node.inputs[0])
    if x.kind != "array" or not x.shape:
        raise Unsupported("getitem of a scalar")
    name = em.fresh()
    if len(spec) > 1:
        _, start, stop, step = spec[-1]
        axis = len(spec) - 1
        if step not in (None, 1) or axis >= len(x.shape):
            raise Unsupported("getitem: a slice with a step")
        lo, hi, _ = slice(start, stop).indices(x.shape[axis])
        em.line(f"{name} = {x.text}[{':, ' * axis}{lo}:{max(lo, hi)}]", depth)
        em.values[node] = _Value("array", name, node.shape, node.dtype)
        return
    if spec[0][0] == "slice":
        _, start, stop, step = spec[0]
        if step not in (None, 1):
            raise Unsupported("getitem: a slice with a step")
        lo, hi, _ = slice(start, stop).indices(x.shape[0])
        em.line(f"{name} = {x.text}[{lo}:{max(lo, hi)}]", depth)
        if x.text in em.contiguous:    # rows of a C array are one
            em.contiguous.add(name)
        em.values[node] = _Value("array", name, node.shape, node.dtype)
        return
    k = spec[0][1]
    if not -x.shape[0] <= k < x.shape[0]:
        raise Unsupported("getitem out of range")
    k %= x.shape[0]
    em.line(f"{name} = {x.text}[{k}]", depth)
    kind = "array" if node.shape else "scalar"
    em.values[node] = _Value(kind, name, node.shape, node.dtype)


def _reshape(em, node, depth):
    """A view of a C-contiguous array (a copy made contiguous first otherwise)."""
    x = em.scalar_or_array(node.inputs[0])
    if x.kind != "array" or not node.shape or set(node.params) != {"shape"}:
        raise Unsupported("reshape of a scalar or to one")
    source = x.text if x.text in em.contiguous else f"np.ascontiguousarray({x.text})"
    name = em.fresh()
    em.line(f"{name} = {source}.reshape({tuple(node.shape)!r})", depth)
    em.contiguous.add(name)
    em.values[node] = _Value("array", name, node.shape, node.dtype)


def _stack(em, node, depth):
    if node.params.get("axis") not in (0, -len(node.shape)) or set(node.params) != {"axis"}:
        raise Unsupported("stack: axis 0 only")
    parts = [em.scalar_or_array(i) for i in node.inputs]
    if any(np.dtype(p.dtype) != np.dtype(node.dtype) for p in parts):
        raise Unsupported("stack of mixed dtypes")
    name = em.alloc(node.shape, node.dtype, depth)
    for k, p in enumerate(parts):
        em.copy((name, str(k)), p.text, p.shape, depth)
    em.values[node] = _Value("array", name, node.shape, node.dtype)



PATTERNS = {
    "dot": _matmul,
    "view_transpose": _transpose,
    "reduce_sum": _reduce(mean=False),
    "reduce_mean": _reduce(mean=True),
    "leading_index": _getitem,
    "reshape_view": _reshape,
    "concat_rows": numba_shapes.concat,
    "broadcast_copy": numba_shapes.broadcast,
    "split_parts": numba_shapes.split,
    "stack_rows": _stack,
    "time_loop": scan_loop,
}


# ---- a whole region ----------------------------------------------------------------------
def emit(nodes, inputs, outputs, name):
    """``(source, n_ops, largest_product)``: a function ``name(*inputs)`` returning the
    values of ``outputs`` (a tuple, 0-d values as 0-d arrays), computing ``nodes`` (in
    topological order). ``n_ops`` counts the ops one call runs (a scan's body once per
    step); ``largest_product`` is the most multiply-adds of one ``np.dot`` in it. Raises
    :class:`Unsupported` when a node cannot be written."""
    em = Emitter(PATTERNS)
    args = []
    for k, node in enumerate(inputs):
        check_writable(node)
        arg = f"a{k}"
        args.append(arg)
        if node.shape:
            em.line(f"{arg} = np.ascontiguousarray({arg})")
            em.contiguous.add(arg)
            em.values[node] = _Value("array", arg, node.shape, node.dtype)
        else:
            em.values[node] = _Value("scalar", f"{arg}[()]", (), node.dtype)
    em.users = count_users(nodes, outputs)
    plan_reuse(em, nodes)
    outs = set(outputs)
    em.emit_nodes(nodes, outs, 1)
    returned = []
    for o in outputs:
        v = em.values[o]
        if v.kind == "expr":
            raise Unsupported("an output inlined")
        returned.append(em.array(o, 1))
    em.line(f"return ({', '.join(returned)}{',' if len(returned) == 1 else ''})")
    source = f"def {name}({', '.join(args)}):\n" + "\n".join(em.lines) + "\n"
    return source, op_count(nodes), em.largest_product
