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

from engine.errors import EngineError, UnsupportedError

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


def check_writable(node):
    """Raises :class:`Unsupported` unless ``node`` has static dims and a dtype numba takes."""
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
        # Inside a time loop: (index in ``lines`` of the loop's header, its depth). Buffers
        # are allocated there, once per call, and reused by every step.
        self.preheader = None
        self.owned = set()      # buffers allocated for the current loop body's values
        self.keep = set()       # body nodes a later scan reads: never inlined
        self.reuse = {}         # later scan node -> {its body node: earlier body node}
        self.stashes = {}       # earlier body node -> name of the (steps, ...) array of its values
        self.targets = {}       # body node -> "S[t]": its value is written straight there
        self.contiguous = set() # names of C-contiguous arrays (inputs, buffers): reshapable
        self.written = set()    # nodes written straight into their targets
        self.largest_product = 0   # most multiply-adds of one np.dot call

    def fresh(self, prefix="v"):
        self._names += 1
        return f"{prefix}{self._names}"

    def line(self, text, depth=1):
        self.lines.append("    " * depth + text)

    def alloc(self, shape, dtype, depth, prefix="v"):
        """A new buffer's name; inside a time loop it is allocated before the loop (once a
        call, not once a step: every value of a step is dead by the next one)."""
        name = self.fresh(prefix)
        self.contiguous.add(name)
        text = f"{name} = np.empty({tuple(shape)!r}, {_np_type(dtype)})"
        if self.preheader is None:
            self.line(text, depth)
        else:
            index, d = self.preheader
            self.lines.insert(index, "    " * d + text)
            self.preheader = (index + 1, d)
            self.owned.add(name)
        return name

    def buffer(self, node, depth):
        """Where ``node``'s array is written: its target (a step of a stacked array) or a
        new buffer."""
        target = self.targets.get(node)
        if target is None:
            return self.alloc(node.shape, node.dtype, depth)
        name = self.fresh()
        self.line(f"{name} = {target}", depth)
        self.written.add(node)
        self.owned.add(name)   # a step of an array of ours: no carry's buffer
        return name

    def loop_nest(self, shape, depth):
        """Writes ``for i0 ...: for i1 ...:`` over ``shape``; returns ``(index, inner depth)``."""
        for k, d in enumerate(shape):
            self.line(f"for i{k} in range({d}):", depth + k)
        return ", ".join(f"i{k}" for k in range(len(shape))), depth + len(shape)

    def copy(self, dst, src, shape, depth, op="="):
        """``dst[...] op src[...]`` as a loop nest (``dst`` may carry a leading index,
        ``"y3[t4, "``-style, given as ``("y3", "t4")``); numba's slice assignment checks
        for overlap and may copy through a temporary, a loop does not."""
        base, lead = dst if isinstance(dst, tuple) else (dst, None)
        if not shape:
            target = f"{base}[{lead}]" if lead else f"{base}[()]"
            self.line(f"{target} {op} {src}", depth)
            return
        index, inner = self.loop_nest(shape, depth)
        target = f"{base}[{lead}, {index}]" if lead else f"{base}[{index}]"
        self.line(f"{target} {op} {src}[{index}]", inner)

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
            check_writable(node)
            value = np.asarray(node.params["value"])
            if value.ndim:
                raise Unsupported("array constants are inputs")
            self.values[node] = _Value("scalar", _literal(value, node.dtype), (), node.dtype)
            return
        if op.multiple_results and op.rules.get("numba_form") is None:
            raise Unsupported(f"{op.name}")
        if not op.multiple_results:
            check_writable(node)
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
        expr = scalar_expression(node, [f"({self.element(i, rank)})" for i in node.inputs])
        users = self.users.get(node, [])
        if node not in outputs and node not in self.keep and len(users) == 1 and \
                _inlinable_user(users[0], node):
            self.values[node] = _Value("expr", expr, node.shape, node.dtype)
            return
        if rank == 0:
            name = self.fresh()
            self.line(f"{name} = {expr}", depth)
            self.values[node] = _Value("scalar", name, (), node.dtype)
            return
        name = self.buffer(node, depth)
        index, inner = self.loop_nest(node.shape, depth)
        self.line(f"{name}[{index}] = {expr}", inner)
        self.values[node] = _Value("array", name, node.shape, node.dtype)


def scalar_expression(node, args):
    """The numba expression computing elementwise ``node`` from the scalar expressions
    ``args`` of its inputs, converted to its dtype (float32 ``exp``/``tanh`` in their
    vectorizable forms).

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.exp(x), passes=["cleanup"]).graph_for(
        ...     en.ones(3, dtype="float32"))
        >>> scalar_expression(g.outputs[0], ["a"])
        'np.float32(exp32(a))'
    """
    form = node.op.rules["scalar_form"]
    in_dt = np.dtype(node.inputs[0].dtype) if node.inputs else np.dtype(node.dtype)
    form = form.replace("ONE", _literal(1, in_dt)).replace("ZERO", _literal(0, in_dt))
    if in_dt == np.float32:
        for slow, fast in _FAST_FLOAT32:
            form = form.replace(slow, fast)
    return f"{_np_type(node.dtype)}({form.format(*args)})"


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
    name = em.alloc(node.shape, node.dtype, depth)
    for k, p in enumerate(parts):
        em.copy((name, str(k)), p.text, p.shape, depth)
    em.values[node] = _Value("array", name, node.shape, node.dtype)


def _scan(em, node, depth):
    """The time loop with the body's statements inside it (see control_flow.scan).

    Every buffer a step needs is allocated once, before the loop; the carries live in
    buffers of their own, updated in place at the end of each step. Only the results
    read after the loop are stacked, and only the body nodes they (and the carries)
    need are written. A value an earlier scan of the region computed for the same step
    (a scan's VJP recomputing its forward body) is read from that scan's stash.
    Products that do not depend on the carries run once for all the steps, before or
    after the loop (:func:`_batched_products`).
    """
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
        check_writable(o)
    for x in xs:
        if x.kind != "array":
            raise Unsupported("scan over a scalar")
    t = em.fresh("t")
    used = {u.params["index"] for u in em.users.get(node, []) if u.op is unpack_op}
    summed = _summed_over_steps(em, node, n_carry, n_y)
    reused = em.reuse.get(node, {})
    x_of = {ph: x for ph, x in zip(graph.inputs[n_carry:n_carry + n_x], xs)}
    after = _summed_products(em, node, x_of, summed, reused)
    wanted = outs[:n_carry] + [o for k, o in enumerate(outs[n_carry:]) if k not in after and (
        k in summed or n_carry + k in used)] + [n for n in graph.nodes if n in em.keep] + \
        [b for _, b, _ in after.values()]
    before = _input_products(em, node, x_of, reused, _needed(graph, wanted, {
        **reused, **{ph: None for ph in graph.inputs}}))
    carry_names = []
    for c in carries:
        if c.kind == "array":
            name = em.alloc(c.shape, c.dtype, depth, "c")
            em.line(f"{name}[...] = {c.text}", depth)
        else:
            name = em.fresh("c")
            em.line(f"{name} = {c.text}", depth)
        carry_names.append(name)
    ys = {}
    for k, o in enumerate(outs[n_carry:]):
        if k in after:
            continue
        if k in summed:   # only its sum over the steps is used: add each step into it
            ys[k] = em.alloc(o.shape, np.float64, depth, "y")
            em.line(f"{ys[k]}[...] = 0", depth)
        elif n_carry + k in used:
            ys[k] = em.alloc((length,) + tuple(o.shape), o.dtype, depth, "y")
            if o.op is not placeholder_op and o not in em.targets:
                em.targets[o] = f"{ys[k]}[{t}]"
    stacked = {}
    for j, c in enumerate(carries):
        if n_carry + n_y + j in used:
            stacked[j] = em.alloc((length,) + tuple(c.shape), c.dtype, depth, "h")
    # The body's products with a step's input slice, for every step at once.
    batched = {}
    for n, (x_text, w_text) in before.items():
        m, kk = n.inputs[0].shape
        em.largest_product = max(em.largest_product, length * m * kk * n.shape[1])
        name = em.alloc((length,) + tuple(n.shape), n.dtype, depth, "p")
        em.line(f"np.dot({x_text}.reshape(({length * m}, {kk})), {w_text}, "
                f"{name}.reshape(({length * m}, {n.shape[1]})))", depth)
        batched[n] = name
    # Values of this body a later scan reads, and the right factors of the products
    # summed after the loop: stacked over the steps, written there directly.
    stash = [n for n in graph.topo_order() if n.op is not placeholder_op and (
        n in em.keep or any(n is b for _, b, _ in after.values()))]
    for n in stash:
        k = _y_index(outs, n_carry, n)
        if n in batched:
            em.stashes[n] = batched[n]
        elif n in reused:
            em.stashes[n] = em.stashes[reused[n]]
        elif k is not None and k in ys and k not in summed:
            em.stashes[n] = ys[k]
        else:
            em.stashes[n] = em.alloc((length,) + tuple(n.shape), n.dtype, depth, "r")
            em.targets.setdefault(n, f"{em.stashes[n]}[{t}]")
    steps = f"range({length} - 1, -1, -1)" if p["reverse"] else f"range({length})"
    em.line(f"for {t} in {steps}:", depth)
    inner = depth + 1
    saved, saved_pre, saved_owned = dict(em.values), em.preheader, em.owned
    em.preheader, em.owned = (len(em.lines) - 1, depth), set()
    for j, (name, c) in enumerate(zip(carry_names, carries)):
        if j in stacked:
            em.copy((stacked[j], t), name, c.shape, inner)
        em.values[graph.inputs[j]] = _Value(c.kind, name, c.shape, c.dtype)
    for ph, x in x_of.items():
        name = em.fresh("x")
        em.line(f"{name} = {x.text}[{t}]", inner)
        em.values[ph] = _Value("array" if ph.shape else "scalar", name, ph.shape, ph.dtype)
    for ph, c in zip(graph.inputs[n_carry + n_x:], caps):
        em.values[ph] = c
    preset = [(mine, em.stashes[theirs]) for mine, theirs in reused.items()]
    preset += list(batched.items())
    for mine, array in preset:
        name = em.fresh("x")
        em.line(f"{name} = {array}[{t}]", inner)
        em.values[mine] = _Value("array", name, mine.shape, mine.dtype)
    wanted = outs[:n_carry] + [outs[n_carry + k] for k in ys] + stash
    order = _needed(graph, wanted, em.values)
    users_before = em.users
    em.users = count_users(order, outs)
    em.emit_nodes(order, set(outs) | set(stash), inner)
    em.users = users_before
    results = [em.values.get(o) for o in outs]
    for v in results:
        if v is not None and v.kind == "expr":
            raise Unsupported("scan output inlined")
    for k, name in ys.items():
        v = results[n_carry + k]
        if k in summed:
            em.copy(name, v.text, v.shape, inner, op="+=")
        elif em.targets.get(outs[n_carry + k]) != f"{name}[{t}]" or \
                outs[n_carry + k] not in em.written:
            em.copy((name, t), v.text, v.shape, inner)
    for n in stash:
        if n not in em.written and n not in reused and n not in batched and \
                em.stashes[n] not in ys.values():
            v = em.values[n]
            em.copy((em.stashes[n], t), v.text, v.shape, inner)
    _update_carries(em, carry_names, carries, results[:n_carry], inner)
    em.values, em.preheader, em.owned = saved, saved_pre, saved_owned
    unread = _Value("expr", "<not kept>", (), None)   # results nothing reads after the loop
    values = [_Value(c.kind, name, c.shape, c.dtype) for name, c in zip(carry_names, carries)]
    for k, o in enumerate(outs[n_carry:]):
        values.append(_Value("array", ys[k], (length,) + tuple(o.shape), o.dtype)
                      if k in ys and k not in summed else unread)
    for j, c in enumerate(carries):
        values.append(_Value("array", stacked[j], (length,) + tuple(c.shape), c.dtype)
                      if j in stacked else unread)
    em.values[node] = values
    for k, total in summed.items():
        name = em.alloc(total.shape, total.dtype, depth)
        if k in after:   # sum over t of a_t.T @ b_t: one product of the stacked factors
            a_text, b, m = after[k]
            b_text = x_of[b].text if b in x_of else em.stashes[b]
            rows, (kk, nn) = length * m, total.shape
            em.largest_product = max(em.largest_product, rows * kk * nn)
            em.line(f"np.dot({a_text}.reshape(({rows}, {kk})).T, "
                    f"{b_text}.reshape(({rows}, {nn})), {name})", depth)
        else:
            em.copy(name, ys[k], total.shape, depth)
        em.values[total] = _Value("array", name, total.shape, total.dtype)


def _is_swap(node):
    """A transpose of a matrix."""
    if node.op.rules.get("numba_form") != "view_transpose" or len(node.shape) != 2:
        return False
    axes = node.params.get("axes")
    return axes is None or tuple(a % 2 for a in axes) == (1, 0)


def _float_product(n):
    a, b = n.inputs
    return n.op.rules.get("numba_form") == "dot" and len(n.shape) == 2 and \
        len(a.shape) == 2 and len(b.shape) == 2 and np.dtype(n.dtype).kind == "f" and \
        np.dtype(a.dtype) == np.dtype(b.dtype) == np.dtype(n.dtype) and 0 not in a.shape + b.shape


def _input_products(em, node, x_of, reused, needed):
    """``{body node: (stacked input, matrix)}``: the ``needed`` products ``x_t @ W`` of
    a step's slice of a contiguous stacked input and a captured matrix, each written as
    one ``(steps * m, k) @ W`` before the loop (an RNN's input projections)."""
    graph = node.params["body"].graph
    first = node.params["n_carry"] + node.params["n_x"]
    captured = {ph: em.values[i] for ph, i in zip(graph.inputs[first:], node.inputs[first:])}
    before = {}
    for n in needed:
        if n in reused or n.op.rules.get("numba_form") != "dot" or not _float_product(n):
            continue
        x, w = n.inputs
        if x in x_of and x_of[x].text in em.contiguous and w in captured and \
                captured[w].kind == "array":
            before[n] = (x_of[x].text, captured[w].text)
    return before


def _summed_products(em, node, x_of, summed, reused):
    """``{y index: (stacked a, b node, m)}`` for the ys used only by their sum over the
    steps that are ``a_t.T @ b_t`` (a weight's gradient), ``a_t`` a step's slice of a
    contiguous stacked input or of an earlier scan's stash: ``b`` is stacked in the
    loop, and the sum is one product of the stacked factors after it."""
    graph = node.params["body"].graph
    n_carry = node.params["n_carry"]
    readers = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    outs = list(graph.outputs)
    after = {}
    for k in summed:
        o = outs[n_carry + k]
        if o.op.rules.get("numba_form") != "dot" or not _float_product(o) or \
                outs.count(o) != 1 or readers.get(o) or o in reused:
            continue
        a, b = o.inputs
        if not _is_swap(a):
            continue
        if a.inputs[0] in x_of:
            a_text = x_of[a.inputs[0]].text
        elif a.inputs[0] in reused:   # a value the earlier scan stacked
            a_text = em.stashes[reused[a.inputs[0]]]
        else:
            continue
        if a_text not in em.contiguous:
            continue
        if b in x_of:
            if x_of[b].text not in em.contiguous:
                continue
        elif b.op is placeholder_op or b in reused and em.stashes.get(reused[b]) is None:
            continue
        after[k] = (a_text, b, a.shape[1])
    return after


def _y_index(outs, n_carry, node):
    for k, o in enumerate(outs[n_carry:]):
        if o is node:
            return k
    return None


def _needed(graph, wanted, known):
    """The body's nodes (topological order) that ``wanted`` needs, given the ``known`` values."""
    need = set()
    stack = [w for w in wanted]
    while stack:
        n = stack.pop()
        if n in need or n in known:
            continue
        need.add(n)
        stack.extend(n.inputs)
    return [n for n in graph.topo_order() if n in need and n.op is not placeholder_op]


def _update_carries(em, names, carries, news, depth):
    """The carries' new values, written into their buffers. A new value in a buffer of
    this step (``em.owned``) is copied straight in; any other (a carry, a view of one,
    a slice of an input) goes through a buffer first, so no carry is overwritten
    before another reads it."""
    direct, staged = [], []
    for name, c, v in zip(names, carries, news):
        if c.kind != "array":
            direct.append((name, v.text, c.shape))
        elif v.kind == "array" and v.text in em.owned:
            direct.append((name, v.text, c.shape))
        else:
            tmp = em.alloc(c.shape, c.dtype, depth, "n")
            if v.kind == "array":
                em.copy(tmp, v.text, c.shape, depth)
            else:
                em.line(f"{tmp}[...] = {v.text}", depth)
            staged.append((name, tmp, c.shape))
    scalars = [(n, v) for n, v, shape in direct if not shape]
    for name, text, shape in direct + staged:
        if shape:
            em.copy(name, text, shape, depth)
    if scalars:
        em.line(f"{', '.join(n for n, _ in scalars)}, = {', '.join(v for _, v in scalars)},",
                depth)


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


# ---- a later scan reading an earlier one's values -----------------------------------------
# A scan's VJP is a scan whose body recomputes the forward body from the stacked carries
# (control_flow.scan). Where both are in one region, the recomputed values are read
# from the forward loop instead: each body node gets a key naming what it computes for
# step t (its op, params and the keys of its inputs; a carry, an input sliced at t, a
# captured outer value), and a node of the later body whose key an earlier body has is
# that node's value at the same step.
_VIEWS = ("view_transpose", "int_index")


def plan_reuse(em, nodes):
    """Fills ``em.reuse`` and ``em.keep`` for the scans among ``nodes`` (top level)."""
    scans = [n for n in nodes if n.op.rules.get("numba_form") == "time_loop"]
    for i, later in enumerate(scans):
        for earlier in scans[:i]:
            if earlier.params["length"] != later.params["length"]:
                continue
            matched = _match(earlier, later)
            frontier = _frontier(later, matched)
            if frontier:
                em.reuse.setdefault(later, {}).update({n: matched[n] for n in frontier})
                em.keep.update(matched[n] for n in frontier)


def _keys(scan, placeholder_keys):
    """``{body node: key}`` in topological order, from the keys of the placeholders."""
    keys = dict(placeholder_keys)
    for n in scan.params["body"].graph.topo_order():
        if n in keys:
            continue
        if n.op is placeholder_op or n.op.random or n.op.multiple_results or n.side_effects:
            keys[n] = ("unique", id(n))
            continue
        try:
            params = _freeze(n.params)
        except TypeError:
            keys[n] = ("unique", id(n))
            continue
        keys[n] = (n.op.name, params, tuple(keys[i] for i in n.inputs), str(n.dtype))
    return keys


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        value = np.asarray(value)
        return ("array", str(value.dtype), value.shape, value.tobytes())
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return (type(value).__name__, value)
    raise UnsupportedError(f"no step key for a param of type {type(value).__name__}")


def _match(earlier, later):
    """``{later body node: earlier body node}`` computing the same value at each step."""
    ep, lp = earlier.params, later.params
    eg, lg = ep["body"].graph, lp["body"].graph
    enc, enx = ep["n_carry"], ep["n_x"]
    e_outs = list(eg.outputs)
    eny = len(e_outs) - enc
    ekeys = _keys(earlier, {**{ph: ("carry", j) for j, ph in enumerate(eg.inputs[:enc])},
                            **{ph: ("x", id(u)) for ph, u in zip(eg.inputs[enc:enc + enx],
                                                                earlier.inputs[enc:enc + enx])},
                            **{ph: ("outer", id(u)) for ph, u in zip(eg.inputs[enc + enx:],
                                                                    earlier.inputs[enc + enx:])}})
    lnc, lnx = lp["n_carry"], lp["n_x"]
    start = {ph: ("later carry", j) for j, ph in enumerate(lg.inputs[:lnc])}
    for ph, u in zip(lg.inputs[lnc:lnc + lnx], later.inputs[lnc:lnc + lnx]):
        start[ph] = ("x", id(u))
        if u.op is unpack_op and u.inputs[0] is earlier:
            index = u.params["index"]
            if enc <= index < enc + eny:             # the earlier scan's y at step t
                start[ph] = ekeys[e_outs[index]]
            elif enc + eny <= index < 2 * enc + eny:   # its carry before step t
                start[ph] = ("carry", index - enc - eny)
    for ph, u in zip(lg.inputs[lnc + lnx:], later.inputs[lnc + lnx:]):
        start[ph] = ("outer", id(u))
    lkeys = _keys(later, start)
    by_key = {}
    for n, k in ekeys.items():
        if n.op is not placeholder_op and k[0] != "unique":
            by_key.setdefault(k, n)
    varying = _step_varying(eg, enc + enx)
    return {n: by_key[k] for n, k in lkeys.items()
            if n.op is not placeholder_op and k in by_key and by_key[k] in varying}


def _step_varying(graph, n_varying):
    """The body nodes that depend on a carry or an input sliced at the step."""
    out = set(graph.inputs[:n_varying])
    for n in graph.topo_order():
        if any(i in out for i in n.inputs):
            out.add(n)
    return out


def _frontier(later, matched):
    """The matched nodes the rest of the later body reads (views are recomputed from
    their inputs: reading them costs nothing)."""
    graph = later.params["body"].graph
    readers = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    outs = set(graph.outputs)
    found = set()

    def want(n):
        if n not in matched:
            return
        if n.op.rules.get("numba_form") in _VIEWS or not n.shape:
            for i in n.inputs:
                want(i)
        else:
            found.add(n)
    for n in matched:
        if n in outs or any(r not in matched for r in readers.get(n, [])):
            want(n)
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
    """``(source, n_ops, largest_product)``: a function ``name(*inputs)`` returning the
    values of ``outputs`` (a tuple, 0-d values as 0-d arrays), computing ``nodes`` (in
    topological order). ``n_ops`` counts the ops one call runs (a scan's body once per
    step); ``largest_product`` is the most multiply-adds of one ``np.dot`` in it. Raises
    :class:`Unsupported` when a node cannot be written."""
    em = Emitter()
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
    return source, _op_count(nodes), em.largest_product


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
