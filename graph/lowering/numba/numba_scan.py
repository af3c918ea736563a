"""The numba form of a ``scan``: its time loop written out, the body inlined inside it.

``scan_loop`` is the ``"time_loop"`` pattern of ``numba_source.PATTERNS``: every
buffer a step needs is allocated once before the loop, carries are updated in
place, products that do not depend on the carries run once for all steps, and a
later scan that recomputes an earlier one's body (a scan's VJP) reads the earlier
loop's values instead (``plan_reuse``).
"""
import numpy as np

from engine.errors import UnsupportedError

from ...ir.graph import Node
from ...ir.graph_ops import placeholder_op, unpack_op
from ..graph_limits import writable_scan
from .numba_emitter import Unsupported, _Value, check_writable, count_users


def scan_loop(em, node, depth):
    """The time loop with the body's statements inside it (see control_flow.scan).

    Every buffer a step needs is allocated once, before the loop; the carries live in
    buffers of their own, updated in place at the end of each step. Only the results
    read after the loop are stacked, and only the body nodes they (and the carries)
    need are written. A value an earlier scan of the region computed for the same step
    (a scan's VJP recomputing its forward body) is read from that scan's stash.
    Products that do not depend on the carries run once for all the steps, before or
    after the loop (:func:`_batched_products`).
    """
    body, n_carry, n_x, length = writable_scan(node)
    graph = body.graph
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
    steps = f"range({length} - 1, -1, -1)" if node.params["reverse"] else f"range({length})"
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
    readers: dict[Node, list[Node]] = {}
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
_VIEWS = ("view_transpose", "leading_index")


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
    by_key: dict[tuple, Node] = {}
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
    readers: dict[Node, list[Node]] = {}
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


