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
"""
import numpy as np

from engine.errors import EngineError

from ..graph_ops import constant_op, placeholder_op, unpack_op

# numba's float32 np.exp / np.tanh are scalar libm calls; numba_math has vectorizable ones.
_FAST_FLOAT32 = (("np.exp(", "exp32("), ("np.tanh(", "tanh32("))
_DTYPES = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                 "uint32", "uint64", "float32", "float64")}


class Unsupported(EngineError):
    """The region holds something the emitter cannot write; keep the numpy lowering."""


def _np_type(dtype):
    name = np.dtype(dtype).name
    return "np.bool_" if name == "bool" else f"np.{name}"


def _literal(value, dtype):
    value = np.asarray(value).item()
    if isinstance(value, float) and not np.isfinite(value):
        text = "np.nan" if value != value else ("np.inf" if value > 0 else "-np.inf")
    else:
        text = repr(value)
    return f"{_np_type(dtype)}({text})"


def _check(node):
    if node.shape is None or any(d is None for d in node.shape):
        raise Unsupported(f"{node.name}: unknown dims")
    if np.dtype(node.dtype) not in _DTYPES:
        raise Unsupported(f"{node.name}: dtype {node.dtype}")


class _Value:
    """How the emitted code holds a node's value: an array name, a scalar name (0-d
    values are scalars inside the function), or an expression over the loop indices
    (an elementwise value computed in its single user's loop)."""

    __slots__ = ("kind", "text", "shape", "dtype")

    def __init__(self, kind, text, shape, dtype):
        self.kind, self.text, self.shape, self.dtype = kind, text, tuple(shape), dtype


class Emitter:
    """Writes the statements of one function; ``values`` maps nodes to :class:`_Value`."""

    def __init__(self):
        self.lines = []
        self.values = {}
        self._names = 0
        self.users = {}
        self.outputs = set()

    def fresh(self, prefix="v"):
        self._names += 1
        return f"{prefix}{self._names}"

    def line(self, text, depth=1):
        self.lines.append("    " * depth + text)

    # -- reading values ------------------------------------------------------------
    def array(self, node, depth):
        """The name of ``node``'s value as an array (0-d scalars wrapped)."""
        v = self.values[node]
        if v.kind == "array":
            return v.text
        if v.kind == "scalar":
            name = self.fresh("w")
            self.line(f"{name} = np.empty((), {_np_type(v.dtype)})", depth)
            self.line(f"{name}[()] = {v.text}", depth)
            return name
        raise Unsupported("an inlined expression read as an array")

    def scalar_or_array(self, node):
        v = self.values[node]
        if v.kind == "expr":
            raise Unsupported("an inlined expression read by a pattern")
        return v

    def element(self, node, out_rank):
        """``node``'s element at the loop indices of a rank-``out_rank`` loop nest."""
        v = self.values[node]
        if v.kind in ("scalar", "expr"):
            return v.text
        rank = len(v.shape)
        if rank == 0:
            return f"{v.text}[()]"
        idx = ["0" if d == 1 else f"i{out_rank - rank + j}" for j, d in enumerate(v.shape)]
        return f"{v.text}[{', '.join(idx)}]"

    # -- nodes ---------------------------------------------------------------------
    def emit_nodes(self, order, outputs, depth):
        self.outputs = outputs
        for node in order:
            if node in self.values:
                continue
            self.emit_node(node, outputs, depth)

    def emit_node(self, node, outputs, depth):
        op = node.op
        if op is placeholder_op:
            raise Unsupported("a placeholder that is not an input")
        if op is unpack_op:
            results = self.values[node.inputs[0]]
            self.values[node] = results[node.params["index"]]
            return
        if op is constant_op:
            _check(node)
            value = np.asarray(node.params["value"])
            if value.ndim:
                raise Unsupported("array constants are inputs")
            self.values[node] = _Value("scalar", _literal(value, node.dtype), (), node.dtype)
            return
        if op.multiple_results and op.rules.get("numba_form") is None:
            raise Unsupported(f"{op.name}")
        if not op.multiple_results:
            _check(node)
        for i in node.inputs:
            if i not in self.values:
                raise Unsupported(f"{node.name}: input {i.name} outside the region")
        form = op.rules.get("scalar_form") if op.elementwise else None
        if form is not None:
            self._elementwise(node, form, outputs, depth)
            return
        pattern = op.rules.get("numba_form")
        if pattern is None or pattern not in PATTERNS:
            raise Unsupported(f"op {op.name} has no numba form")
        PATTERNS[pattern](self, node, depth)

    def _elementwise(self, node, form, outputs, depth):
        rank = len(node.shape)
        in_dt = np.dtype(node.inputs[0].dtype) if node.inputs else np.dtype(node.dtype)
        form = form.replace("ONE", _literal(1, in_dt)).replace("ZERO", _literal(0, in_dt))
        if in_dt == np.float32:
            for slow, fast in _FAST_FLOAT32:
                form = form.replace(slow, fast)
        args = [f"({self.element(i, rank)})" for i in node.inputs]
        expr = f"{_np_type(node.dtype)}({form.format(*args)})"
        users = self.users.get(node, [])
        if node not in outputs and len(users) == 1 and _inlinable_user(users[0], node):
            self.values[node] = _Value("expr", expr, node.shape, node.dtype)
            return
        name = self.fresh()
        if rank == 0:
            self.line(f"{name} = {expr}", depth)
            self.values[node] = _Value("scalar", name, (), node.dtype)
            return
        self.line(f"{name} = np.empty({tuple(node.shape)!r}, {_np_type(node.dtype)})", depth)
        for k, d in enumerate(node.shape):
            self.line(f"for i{k} in range({d}):", depth + k)
        index = ", ".join(f"i{k}" for k in range(rank))
        self.line(f"{name}[{index}] = {expr}", depth + rank)
        self.values[node] = _Value("array", name, node.shape, node.dtype)


def _inlinable_user(user, node):
    """An elementwise user of the same shape that reads ``node`` once (in one input
    whose place its scalar form names once: ``square``'s ``{0} * {0}`` would compute
    an inlined input twice)."""
    form = user.op.rules.get("scalar_form") if user.op.elementwise else None
    if form is None or user.op.multiple_results or tuple(user.shape) != tuple(node.shape) \
            or user.inputs.count(node) != 1:
        return False
    return form.count("{%d}" % user.inputs.index(node)) == 1


def count_users(nodes, outputs):
    """``{node: [users]}`` within ``nodes`` (each user once per input position)."""
    users = {}
    for n in nodes:
        for i in n.inputs:
            users.setdefault(i, []).append(n)
    return users


# ---- patterns (named by ops' numba_form rules) ---------------------------------------------
def _matmul(em, node, depth):
    x, y = (em.scalar_or_array(i) for i in node.inputs)
    if x.kind != "array" or y.kind != "array" or len(x.shape) not in (1, 2) or \
            len(y.shape) not in (1, 2) or node.shape == () or x.dtype != y.dtype or \
            np.dtype(x.dtype).kind != "f" or np.dtype(node.dtype) != np.dtype(x.dtype):
        raise Unsupported("matmul: only 1-d and 2-d float products of one dtype")
    if 0 in x.shape or 0 in y.shape:
        raise Unsupported("matmul: empty operands")
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
        acc_t = "np.float64" if kind == "f" else _np_type(node.dtype)
        count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        kept = [k for k in range(rank) if k not in axes]
        name = em.fresh()
        elem = em.element(node.inputs[0], rank)
        if not kept:    # a full reduction: a scalar accumulator
            acc = em.fresh("s")
            em.line(f"{acc} = {acc_t}(0)", depth)
            for k, d in enumerate(x.shape):
                em.line(f"for i{k} in range({d}):", depth + k)
            em.line(f"{acc} += {elem}", depth + rank)
            total = f"{acc} / {count}" if mean else acc
            em.line(f"{name} = {_np_type(node.dtype)}({total})", depth)
            if node.shape == ():
                em.values[node] = _Value("scalar", name, (), node.dtype)
            else:   # keepdims of a full reduction
                arr = em.fresh()
                em.line(f"{arr} = np.full({tuple(node.shape)!r}, {name})", depth)
                em.values[node] = _Value("array", arr, node.shape, node.dtype)
            return
        acc = em.fresh("s")
        kept_shape = tuple(x.shape[k] for k in kept)
        em.line(f"{acc} = np.zeros({kept_shape!r}, {acc_t})", depth)
        # The reduced axes innermost where they are last, so the adds stream in memory.
        for k, d in enumerate(x.shape):
            em.line(f"for i{k} in range({d}):", depth + k)
        em.line(f"{acc}[{', '.join(f'i{k}' for k in kept)}] += {elem}", depth + rank)
        total = f"{acc} / {count}" if mean else acc
        em.line(f"{name} = ({total}).astype({_np_type(node.dtype)})"
                f".reshape({tuple(node.shape)!r})", depth)
        em.values[node] = _Value("array", name, node.shape, node.dtype)
    return emit


def _getitem(em, node, depth):
    spec = node.params.get("spec")
    if set(node.params) != {"spec"} or len(node.inputs) != 1 or len(spec) != 1 or \
            spec[0][0] != "int":
        raise Unsupported("getitem: one integer index only")
    x = em.scalar_or_array(node.inputs[0])
    if x.kind != "array" or not x.shape:
        raise Unsupported("getitem of a scalar")
    k = spec[0][1]
    if not -x.shape[0] <= k < x.shape[0]:
        raise Unsupported("getitem out of range")
    k %= x.shape[0]
    name = em.fresh()
    em.line(f"{name} = {x.text}[{k}]", depth)
    kind = "array" if node.shape else "scalar"
    em.values[node] = _Value(kind, name, node.shape, node.dtype)


def _stack(em, node, depth):
    if node.params.get("axis") not in (0, -len(node.shape)) or set(node.params) != {"axis"}:
        raise Unsupported("stack: axis 0 only")
    parts = [em.scalar_or_array(i) for i in node.inputs]
    if any(np.dtype(p.dtype) != np.dtype(node.dtype) for p in parts):
        raise Unsupported("stack of mixed dtypes")
    name = em.fresh()
    em.line(f"{name} = np.empty({tuple(node.shape)!r}, {_np_type(node.dtype)})", depth)
    for k, p in enumerate(parts):
        em.line(f"{name}[{k}] = {p.text}", depth)
    em.values[node] = _Value("array", name, node.shape, node.dtype)


def _scan(em, node, depth):
    """The time loop with the body's statements inside it (see control_flow.scan)."""
    p = node.params
    body, n_carry, n_x, length = p["body"], p["n_carry"], p["n_x"], p["length"]
    graph = body.graph
    if body.replay or body.has_side_effects or length is None or length == 0:
        raise Unsupported("scan: replayed values, effects or unknown length")
    ins = [em.scalar_or_array(i) for i in node.inputs]
    carries, xs, caps = ins[:n_carry], ins[n_carry:n_carry + n_x], ins[n_carry + n_x:]
    outs = list(graph.outputs)
    n_y = len(outs) - n_carry
    for o in outs:
        _check(o)
    carry_names = []
    for c, ph in zip(carries, graph.inputs[:n_carry]):
        name = em.fresh("c")
        em.line(f"{name} = {c.text}", depth)
        carry_names.append(name)
    summed = _summed_over_steps(em, node, n_carry, n_y)
    ys = []
    for k, o in enumerate(outs[n_carry:]):
        name = em.fresh("y")
        if k in summed:   # only its sum over the steps is used: add each step into it
            em.line(f"{name} = np.zeros({tuple(o.shape)!r}, np.float64)", depth)
        else:
            em.line(f"{name} = np.empty({(length,) + tuple(o.shape)!r}, {_np_type(o.dtype)})",
                    depth)
        ys.append(name)
    stacked = []
    for c in carries:
        name = em.fresh("h")
        em.line(f"{name} = np.empty({(length,) + tuple(c.shape)!r}, {_np_type(c.dtype)})", depth)
        stacked.append(name)
    t = em.fresh("t")
    steps = f"range({length} - 1, -1, -1)" if p["reverse"] else f"range({length})"
    em.line(f"for {t} in {steps}:", depth)
    inner = depth + 1
    saved = dict(em.values)
    for k, (name, c) in enumerate(zip(carry_names, carries)):
        em.line(f"{stacked[k]}[{t}] = {name}", inner)
        em.values[graph.inputs[k]] = _Value(c.kind, name, c.shape, c.dtype)
    for k, x in enumerate(xs):
        ph = graph.inputs[n_carry + k]
        if x.kind != "array":
            raise Unsupported("scan over a scalar")
        name = em.fresh("x")
        em.line(f"{name} = {x.text}[{t}]", inner)
        em.values[ph] = _Value("array" if ph.shape else "scalar", name, ph.shape, ph.dtype)
    for ph, c in zip(graph.inputs[n_carry + n_x:], caps):
        em.values[ph] = c
    order = [n for n in graph.topo_order() if n.op is not placeholder_op]
    users_before = em.users
    em.users = count_users(order, outs)
    em.emit_nodes(order, set(outs), inner)
    em.users = users_before
    results = []
    for o in outs:
        v = em.values[o]
        if v.kind == "expr":
            raise Unsupported("scan output inlined")
        results.append(v)
    for k in range(n_y):
        if k in summed:
            em.line(f"{ys[k]} += {results[n_carry + k].text}", inner)
        else:
            em.line(f"{ys[k]}[{t}] = {results[n_carry + k].text}", inner)
    if n_carry:
        news = [v.text for v in results[:n_carry]]
        em.line(f"{', '.join(carry_names)}, = {', '.join(news)},", inner)
    em.values = saved
    shapes = [c.shape for c in carries] + [(length,) + tuple(o.shape) for o in outs[n_carry:]] + \
        [(length,) + c.shape for c in carries]
    kinds = [c.kind for c in carries] + ["array"] * (n_y + n_carry)
    dts = [c.dtype for c in carries] + [o.dtype for o in outs[n_carry:]] + [c.dtype for c in carries]
    texts = carry_names + ys + stacked
    em.values[node] = [_Value(k, s, sh, d) for k, s, sh, d in zip(kinds, texts, shapes, dts)]
    for k, total in summed.items():
        name = em.fresh()
        em.line(f"{name} = {ys[k]}.astype({_np_type(total.dtype)})", depth)
        em.values[total] = _Value("array", name, total.shape, total.dtype)
        # The stacked ys were never made: nothing else may read them.
        em.values[node][n_carry + k] = _Value("expr", "<summed>", shapes[n_carry + k], dts[n_carry + k])


def _summed_over_steps(em, node, n_carry, n_y):
    """``{y index: sum node}`` for the stacked ys whose one use is their float sum over
    the steps (a scan's VJP sums the per-step gradients of what the body captured)."""
    found = {}
    for u in em.users.get(node, []):
        index = u.params.get("index", -1) - n_carry
        if u.op is not unpack_op or not 0 <= index < n_y or u in em.outputs:
            continue
        users = em.users.get(u, [])
        if len(users) != 1:
            continue
        total = users[0]
        axis = total.params.get("axis")
        if total.op.rules.get("numba_form") != "reduce_sum" or total.inputs != [u] or \
                axis not in (0, (0,)) or total.params.get("keepdims") or \
                np.dtype(total.dtype).kind != "f" or total.dtype != u.dtype or not u.shape[1:]:
            continue
        if sum(1 for x in em.users.get(node, []) if x.params.get("index") == u.params["index"]) != 1:
            continue
        found[index] = total
    return found


PATTERNS = {
    "dot": _matmul,
    "view_transpose": _transpose,
    "reduce_sum": _reduce(mean=False),
    "reduce_mean": _reduce(mean=True),
    "int_index": _getitem,
    "stack_rows": _stack,
    "time_loop": _scan,
}


# ---- a whole region ----------------------------------------------------------------------
def emit(nodes, inputs, outputs, name):
    """``(source, n_ops)``: a function ``name(*inputs)`` returning the values of ``outputs``
    (a tuple, 0-d values as 0-d arrays), computing ``nodes`` (in topological order).
    ``n_ops`` counts the ops one call runs (a scan's body once per step). Raises
    :class:`Unsupported` when a node cannot be written."""
    em = Emitter()
    args = []
    for k, node in enumerate(inputs):
        _check(node)
        arg = f"a{k}"
        args.append(arg)
        if node.shape:
            em.line(f"{arg} = np.ascontiguousarray({arg})")
            em.values[node] = _Value("array", arg, node.shape, node.dtype)
        else:
            em.values[node] = _Value("scalar", f"{arg}[()]", (), node.dtype)
    em.users = count_users(nodes, outputs)
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
    return source, _op_count(nodes)


def _op_count(nodes):
    total = 0
    for n in nodes:
        if n.op in (placeholder_op, constant_op, unpack_op):
            continue
        if n.op.rules.get("numba_form") == "time_loop":
            body = n.params["body"].graph
            total += n.params["length"] * _op_count(body.topo_order())
        else:
            total += 1
    return total
