"""Values a later loop recomputes from an earlier loop's steps: stacked by the earlier one.

A scan's VJP runs the body again in its backward loop: each step recomputes the
forward step (an LSTM's gate product ``[x_t, h_t] @ W + b``, its sigmoids and tanhs)
from the forward loop's stacked carries and inputs, then takes its gradient. The
forward loop computed those values already, at the same step from the same inputs.
JAX's ``scan`` keeps such values as residuals; here the forward loop stacks them as
extra per-step results and the backward loop reads the stacks as per-step inputs, so
the recomputation leaves it (the product that ``scan_hoist`` or the C lowering would
otherwise run again over every step's rows, and the elementwise work after it).

Two scans over the same number of steps match where a value of the later one's body
is, node for node (op, params, inputs: CSE's structural key), a value of the earlier
one's body computed from the same things: a per-step input of the later scan that is
the earlier scan's stack of a carry (its value entering step ``t``), one of its own
per-step inputs or one of its stacked per-step results (a forward-mode scan stacks the
carries entering each step as results: the tangent loop of an HVP's forward), a
capture that is one of the earlier scan's captures, or constants.
The values taken are the matched ones an unmatched node (the gradient) reads, where
computing them needs a product (an op with a ``fold_cost`` rule: the recomputation
the stack saves is a product's work, where an elementwise value would cost about its
stack's memory traffic), and while the new stacks hold at most
``cost.scan_hoist_max_bytes``. Scans with side effects or replayed random draws are
left alone.

The value read is the one the earlier loop computed: the same ops on the same inputs,
so the same bits where the lowering computes both alike (and under bitwise numerics).

Example:
    >>> import engine as en
    >>> def loss(w, xs):
    ...     step = lambda h, x: (en.tanh(h @ w + x),) * 2
    ...     return en.sum(en.scan(step, en.zeros((2, 3)), xs)[1])
    >>> g = en.function(en.grad(loss), passes=["cleanup"]).graph_for(
    ...     en.ones((3, 3)), en.ones((4, 2, 3)))
    >>> backward = [n for n in g.nodes if n.op.name == "scan" and n.params["reverse"]][0]
    >>> [n.op.name for n in backward.params["body"].graph.nodes if n.op.name == "tanh"]
    []
"""
from engine.cost_model import cost
from engine.op import freeze_params

from ..ir.graph_ops import constant_op, placeholder_op, unpack_op
from ..ir.queries import is_constant, nbytes, static_shape
from .body_copy import flat_tree, private_body, set_body
from .dce import dce

_CONST_BYTES = 4096     # constants are matched by value up to this size (as CSE merges them)


def scan_residuals(graph):
    """Let each scan read the values an earlier scan over the same steps computes
    (see the module docstring). Returns True if any scan changed."""
    scans = [n for n in graph.topo_order() if _plain_scan(graph, n)]
    taken = 0
    for k, later in enumerate(scans):
        for earlier in scans[:k]:
            if earlier.params["length"] == later.params["length"]:
                taken += _share(graph, earlier, later)
    if taken:
        graph.notes.append(f"stacked {taken} value{'s' if taken != 1 else ''} a later loop "
                           "recomputed")
    return bool(taken)


def _plain_scan(graph, node):
    """A scan of static length with no effects, no replayed draws and only unpacks reading it."""
    if node.op.rules.get("dead_results") != "scan" or node.side_effects or node.control_deps:
        return False
    p = node.params
    if not isinstance(p["length"], int) or p["length"] < 1 or p["body"].replay:
        return False
    return node not in graph.outputs and \
        all(u.op is unpack_op and not u.control_deps for u in graph.users(node))


# ---- matching the later body against the earlier one ------------------------------------
def _key(node, canon):
    """The structural key of ``node`` with its inputs' canonical nodes, or None."""
    if node.side_effects or node.op.random or node.control_deps:
        return None
    if is_constant(node):
        v = node.params["value"]
        return None if v.nbytes > _CONST_BYTES else ("constant", v.dtype.str, v.shape,
                                                     v.tobytes())
    ins = [canon.get(i) for i in node.inputs]
    if any(i is None for i in ins):
        return None
    try:
        params = freeze_params(node.params)
        hash(params)
    except TypeError:
        return None
    return node.op, params, tuple(i.id for i in ins)


def _earlier_table(body):
    """``{key: node}`` of the earlier body's nodes, and ``{node: its canonical twin}``."""
    table: dict = {}
    canon: dict = {}
    for n in body.graph.topo_order():
        if n.op is placeholder_op:
            canon[n] = n
            continue
        key = _key(n, canon)
        if key is not None:
            canon[n] = table.setdefault(key, n)
    return table, canon


def _leaves(graph, earlier, later):
    """``{later body input: earlier body node}`` for the inputs that are, at every step,
    values the earlier body has: the earlier scan's carry stacks, per-step inputs and
    stacked per-step results, and its captures."""
    pe, pl = earlier.params, later.params
    be, bl = pe["body"].graph, pl["body"].graph
    n_ce, n_xe = pe["n_carry"], pe["n_x"]
    n_ye = len(pe["body"].out_avals) - n_ce
    unread = set(pe.get("unread") or ())
    summed = set(pe.get("summed") or ())
    per_step = {earlier.inputs[n_ce + k]: be.inputs[n_ce + k] for k in range(n_xe)}
    for u in graph.users(earlier):
        k = u.params["index"] - n_ce
        j = k - n_ye
        if 0 <= k < n_ye and k not in summed:
            per_step[u] = be.outputs[n_ce + k]  # the result of each step
        elif 0 <= j < n_ce and j not in unread:
            per_step[u] = be.inputs[j]          # the carry entering each step
    captures = {earlier.inputs[m]: be.inputs[m] for m in range(n_ce + n_xe, len(be.inputs))}
    n_cl, n_xl = pl["n_carry"], pl["n_x"]
    found = {}
    for i in range(n_cl, len(bl.inputs)):
        outer = later.inputs[i]
        twin = per_step.get(outer) if i < n_cl + n_xl else captures.get(outer)
        if twin is not None and twin.aval == bl.inputs[i].aval:
            found[bl.inputs[i]] = twin
    return found


def _matches(graph, earlier, later):
    """``[(later body node, earlier body node)]``: the values worth reading from the
    earlier scan's stacks (see the module docstring), in the later body's order."""
    table, canon_e = _earlier_table(earlier.params["body"])
    bl = later.params["body"].graph
    # A stacked result stands for its canonical twin: the node keys are built on.
    canon = {ph: canon_e.get(v, v) for ph, v in _leaves(graph, earlier, later).items()}
    if not canon:
        return []
    for n in bl.topo_order():
        if n.op is placeholder_op or n in canon:
            continue
        key = _key(n, canon)
        twin = table.get(key) if key is not None else None
        if twin is not None:
            canon[n] = twin
    outputs = set(bl.outputs)
    chosen, total = [], 0
    length = later.params["length"]
    for n in bl.topo_order():
        if n not in canon or n.op in (placeholder_op, constant_op) or n.op.multiple_results \
                or not static_shape(n.shape):
            continue
        if n not in outputs and all(u in canon for u in bl.users(n)):
            continue            # read only by other matched values
        if not _needs_product(n, canon):
            continue
        size = nbytes(n.shape, n.dtype) * length
        if total + size > cost.scan_hoist_max_bytes:
            continue
        total += size
        chosen.append((n, canon[n]))
    return chosen


def _needs_product(node, canon):
    """Whether computing ``node`` from the matched leaves runs a product."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in seen or n.op in (placeholder_op, constant_op):
            continue
        seen.add(n)
        if n.op.rules.get("fold_cost"):
            return True
        stack.extend(i for i in n.inputs if i in canon)
    return False


# ---- the rewrite ----------------------------------------------------------------------------
def _share(graph, earlier, later):
    """Stack in ``earlier`` what ``later`` recomputes; the number of values shared."""
    if not _matches(graph, earlier, later):
        return 0
    # The same matching on the bodies each node will own (copies where shared).
    body_e = private_body(earlier, earlier.params["body"])
    body_l = private_body(later, later.params["body"])
    set_body(earlier, "body", body_e)
    set_body(later, "body", body_l)
    found = _matches(graph, earlier, later)
    stacks = _stacks_of(graph, earlier, [twin for _, twin in found])
    p = later.params
    bl = body_l.graph
    at = p["n_carry"] + p["n_x"]
    inputs = list(later.inputs)
    for k, ((value, _), stack) in enumerate(zip(found, stacks)):
        ph = bl.add(placeholder_op, (), {}, (value.shape, value.dtype),
                    name=f"{value.name}_stacked", source=value.source)
        bl.inputs.insert(at + k, ph)
        inputs.insert(at + k, stack)
        bl.replace_all_uses_with(value, ph)
    bl.notes = []
    dce(bl)
    graph.set_inputs(later, inputs)
    later.params = {**p, "n_x": p["n_x"] + len(found)}
    return len(found)


def _stacks_of(graph, earlier, values):
    """The stacks over the steps of ``values`` (earlier body nodes): a per-step result
    the earlier scan has already, else a new one after its own."""
    p = earlier.params
    body = p["body"]
    bg, n_c = body.graph, p["n_carry"]
    n_y = len(body.out_avals) - n_c
    summed = set(p.get("summed") or ())
    existing = {bg.outputs[n_c + k]: n_c + k for k in range(n_y) if k not in summed}
    unpacks = {u.params["index"]: u for u in graph.users(earlier)}
    new: list = []
    index = {}
    for v in values:
        if v in existing:
            index[v] = existing[v]
        elif v not in index:
            index[v] = n_c + n_y + len(new)
            new.append(v)
    if new:
        bg.outputs = bg.outputs[:n_c + n_y] + new + bg.outputs[n_c + n_y:]
        body.out_avals = tuple(body.out_avals) + tuple((v.shape, v.dtype) for v in new)
        body.out_tree = bg.output_tree = flat_tree(len(body.out_avals))
        length = p["length"]
        avals = list(earlier.avals)
        at = n_c + n_y
        avals[at:at] = [((length,) + tuple(v.shape), v.dtype) for v in new]
        earlier.avals = tuple(avals)
        for u in graph.users(earlier):      # the carry stacks move past the new results
            if u.params["index"] >= at:
                u.params = {**u.params, "index": u.params["index"] + len(new)}
        unpacks = {u.params["index"]: u for u in graph.users(earlier)}
    out = []
    for v in values:
        i = index[v]
        if i not in unpacks:
            unpacks[i] = graph.add(unpack_op, [earlier], {"index": i}, earlier.avals[i],
                                   name=f"{earlier.name}_{v.name}", source=v.source)
        out.append(unpacks[i])
    return out
