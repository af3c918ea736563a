"""Carry-independent work moved out of a scan's loop: one large product before it.

In ``h = tanh(h @ W + x_t @ U + b)`` the product ``x_t @ U`` reads only the step's
input slice and a captured (loop-invariant) weight, yet runs as a small product every
step. Computed for all steps at once before the loop it is one GEMM of
``(T * B, n) @ (n, m)`` rows (cuDNN does this for an RNN's input projection), and the
body reads the step's slice of the result as a new per-step input. A backward scan
gains most: it recomputes its forward step from the stacked forward carries (per-step
inputs too), so that whole recomputation leaves the loop.

The pass finds, in each scan body, the nodes whose inputs are only per-step inputs
(``xs``), captured inputs and constants -- never a carry, a side effect, a random draw
or a value the backward pass replays -- and, among them, the values the rest of the
body reads (the boundary). A boundary value that varies by step is computed before the
loop by ``vmap`` of its nodes over the stacked inputs (each op's batching rule: a
matmul of stacked ``(T, B, n)`` rows by a 2-D weight is one GEMM); one that depends
on captures and constants alone is computed once and becomes a new capture. What is
worth hoisting is the cost model's call (``_worth``, its bound in
``engine/cost_model.py``): values computed with a product, while their stack stays
under ``scan_hoist_max_bytes``; values computed by elementwise ops and data movement
alone (views, broadcasts, concatenations) stay, since stacked they only add memory
traffic (the elementwise steps of a hoisted product go with it). Inputs the body no
longer reads are dropped.

Before that, a product of a concatenation ``concat([x_t, h], -1) @ W`` (an LSTM written
with one weight) is split into ``x_t @ W[:nx] + h @ W[nx:]`` where that lets its
per-step part leave the loop (``scan_hoist_split.py``).

The default pipeline runs it after ``compile_numba``, on the scans no compiled lowering
took: a graph the C lowering writes whole (``h @ W`` a BLAS call inside its time loop)
ran 0.4-0.8 ms on the bench's 50-step RNN where, hoisted, its stacked values were
over the whole-graph limits and the loop and product ran apart in 1.2 ms. Where the C
lowering does not write the whole graph, it hoists each scan itself before writing it
(``hoist_scans`` without row blocks, its ``hoists_scans`` flag in
``graph/lowering/policy.py``) and writes the hoisted products into the scan's C function,
one gemm before the time loop on the loop's one BLAS thread.

Not under ``en.config.numerics = "bitwise"``: one GEMM over every step's rows may round
differently from eager's per-step products (BLAS picks its kernel by the row count:
a row a step, ``(20, 64) @ (64, 256)`` as one product, gave 4,187 of 5,120 float32
entries other bits than the twenty products). The stacked inputs keep the steps' order, so a
reversed scan (a VJP's) reads its slices as before.

Example:
    >>> import engine as en
    >>> def rnn(h, xs, w, u):
    ...     return en.scan(lambda h, x: (en.tanh(h @ w + x @ u),) * 2, h, xs)[1]
    >>> f = en.function(rnn, passes=["cleanup", "scan_hoist"])
    >>> g = f.graph_for(en.ones((2, 3)), en.ones((5, 2, 4)), en.ones((3, 3)), en.ones((4, 3)))
    >>> body = next(n for n in g.nodes if n.op.name == "scan").params["body"].graph
    >>> [n.op.name for n in body.nodes if n.op.name == "matmul"]   # only h @ w is left
    ['matmul']
"""
import copy
import math
import warnings

from engine import ops
from engine.cost_model import cost
from engine.modes import apply
from engine.numerics import bitwise
from engine.tensor import wrap
from engine.transforms.batching import has_rule, vmap

from ..ir.graph_ops import STRUCTURAL, constant_op, placeholder_op
from ..ir.queries import nbytes, remove_node, static_shape
from .graph_builder import as_tensor, building
from .scan_hoist_split import split_concat_products

STEP, INVARIANT = "step", "invariant"


def scan_hoist(graph):
    """Move the carry-independent work of each scan body before its loop (see the module
    docstring). Returns True if any scan changed."""
    return hoist_scans(graph, row_blocks=True)


def hoist_scans(graph, row_blocks, min_step_work=0):
    """``scan_hoist``, the hoisted products in row blocks OpenBLAS runs on one thread
    each where ``row_blocks`` (for numpy; a lowering that writes the scan with its
    producers runs them on one thread itself); a per-step value only where its products
    do at least ``min_step_work`` multiply-adds a step. The nodes made are marked
    ``meta["scan_hoisted"]`` (a lowering writing the loop takes them in)."""
    if bitwise():
        return False
    hoisted = 0
    for node in graph.topo_order():
        # Scans are found as scan_sums finds them, by their op's summed_results rule (the
        # op itself lives in a later stage, graph/control).
        if node.op.rules.get("summed_results") and \
                isinstance(node.params.get("length"), int) and node.params["length"] > 0:
            hoisted += _hoist_scan(graph, node, row_blocks, min_step_work)
    if hoisted:
        graph.notes.append(f"hoisted {hoisted} per-step value{'s' if hoisted != 1 else ''} "
                           "out of scan loops")
    return bool(hoisted)


# ---- which body nodes may leave the loop ---------------------------------------------------
def _movable(node, replayed):
    """A body node that may run outside the loop: pure, deterministic, one result of a
    static shape, replayed by no backward pass, ordered after nothing."""
    return (node.op.name not in STRUCTURAL and node.op.impl is not None and
            not node.side_effects and not node.op.random and not node.op.multiple_results and
            not node.control_deps and node not in replayed and static_shape(node.shape))


def body_kinds(body, n_carry, n_x):
    """``{node: STEP or INVARIANT}`` for the body nodes that read no carry: the per-step
    inputs and what only they, captures and constants reach are STEP; captures,
    constants and what only they reach are INVARIANT."""
    graph = body.graph
    kinds = {}
    for k, ph in enumerate(graph.inputs):
        if k >= n_carry:
            kinds[ph] = STEP if k < n_carry + n_x else INVARIANT
    replayed = set(body.replay)
    for node in graph.topo_order():
        if node in kinds or node.op is placeholder_op:
            continue
        if node.op is constant_op:
            kinds[node] = INVARIANT
            continue
        if not _movable(node, replayed) or any(i not in kinds for i in node.inputs):
            continue
        step = any(kinds[i] == STEP for i in node.inputs)
        if step and not has_rule(node.op):   # vmap would loop over the steps
            continue
        kinds[node] = STEP if step else INVARIANT
    return kinds


def _region(value, kinds):
    """The movable nodes ``value`` is computed from (itself included), leaves excluded."""
    seen, stack = set(), [value]
    while stack:
        node = stack.pop()
        if node in seen or node.op in (placeholder_op, constant_op):
            continue
        seen.add(node)
        stack.extend(i for i in node.inputs if i in kinds)
    return seen


def _worth(value, region, kind, length, min_step_work=0):
    """The cost rule: is computing ``value`` (from ``region``) outside the loop cheaper?
    Only work with a product (an op whose work grows faster than its operands: matmul,
    convolutions) leaves: one large product over all steps' rows runs at BLAS speed
    where each step's small one does not. Elementwise work and data movement stay (in
    a compiled loop they cost little, and stacked they only add memory traffic)."""
    if not any(n.op.rules.get("fold_cost") for n in region):
        return False
    if kind == INVARIANT:
        return True            # computed once instead of every step, one value's memory
    return nbytes(value.shape, value.dtype) * length <= cost.scan_hoist_max_bytes and \
        sum(map(_product_work, region)) >= min_step_work


def _below_elementwise_tail(value, kinds):
    """``value`` without the elementwise ops at its top that read one per-step value and
    otherwise only loop invariants (``x_t @ W + b``: the bias): those stay in the loop,
    where they join the step's elementwise loop, instead of one more pass over the whole
    stack before it (an LSTM module's input bias: T * B * 4H values read and written)."""
    while value.op.elementwise and kinds.get(value) == STEP:
        steps = [i for i in value.inputs if kinds.get(i) == STEP]
        if len(steps) != 1 or value.inputs.count(steps[0]) != 1 or \
                tuple(steps[0].shape) != tuple(value.shape) or \
                steps[0].op in (placeholder_op, constant_op) or \
                any(i not in kinds for i in value.inputs):
            break
        value = steps[0]
    return value


def _product_work(node):
    """The multiply-adds of a body node that is a matrix product (else 0)."""
    if node.op is not ops.matmul_op or not node.shape:
        return 0
    return math.prod(node.shape) * node.inputs[0].shape[-1]


def _boundary(graph, kinds):
    """The movable values the rest of the body (or its outputs) reads."""
    outputs = set(graph.outputs)
    found = []
    for node in graph.topo_order():
        if node not in kinds or node.op in (placeholder_op, constant_op):
            continue
        if node in outputs or any(u not in kinds for u in graph.users(node)):
            found.append(node)
    return found


# ---- the rewrite ----------------------------------------------------------------------------
def _hoist_scan(graph, node, row_blocks, min_step_work):
    """Hoist what pays out of scan ``node``; returns how many values left its loop."""
    p = node.params
    n_carry, n_x, length = p["n_carry"], p["n_x"], p["length"]
    body = _copied(p["body"])
    split_concat_products(body, body_kinds(body, n_carry, n_x))
    kinds = body_kinds(body, n_carry, n_x)
    chosen = [v for v in _boundary(body.graph, kinds)
              if _worth(v, _region(v, kinds), kinds[v], length, min_step_work)]
    chosen = list(dict.fromkeys(_below_elementwise_tail(v, kinds) for v in chosen))
    if not chosen:
        return 0
    outer = dict(zip(body.graph.inputs[n_carry:], node.inputs[n_carry:]))
    steps = [v for v in chosen if kinds[v] == STEP]
    invariants = [v for v in chosen if kinds[v] == INVARIANT]
    before = set(graph.nodes)
    new_steps = _compute(graph, steps, kinds, outer, batched=True, row_blocks=row_blocks)
    if new_steps is None:   # a batching rule fell back to a loop: leave the scan
        for n in reversed(graph.topo_order()):
            if n not in before:
                remove_node(graph, n)
        return 0
    new_invariants = _compute(graph, invariants, kinds, outer, batched=False)
    for n in graph.nodes:
        if n not in before:
            n.source = node.source
            n.meta["scan_hoisted"] = True
    inputs = list(node.inputs)
    g = body.graph
    at = n_carry + n_x
    for v, o in zip(steps, new_steps):
        ph = _placeholder(g, v, at, f"{v.name}_hoisted")
        inputs.insert(at, o)
        at += 1
        g.replace_all_uses_with(v, ph)
    for v, o in zip(invariants, new_invariants):
        ph = _placeholder(g, v, len(g.inputs), f"{v.name}_hoisted")
        inputs.append(o)
        g.replace_all_uses_with(v, ph)
    n_x += len(steps)
    _drop_dead(g)
    inputs, n_x = _drop_unread_inputs(g, inputs, n_carry, n_x)
    body.captures = inputs[n_carry + n_x:]
    graph.set_inputs(node, inputs)
    node.params = {**p, "body": body, "n_x": n_x}
    return len(chosen)


def _copied(body):
    """A copy of the body ``SubGraph`` to rewrite (the unoptimized graph shares the
    original)."""
    mapping: dict = {}
    new = copy.copy(body)
    new.graph = body.graph.copy(mapping=mapping)
    new.graph.backend = body.graph.backend
    new.replay = [mapping[n] for n in body.replay]
    new.captures = list(body.captures)
    new._compiled = None
    return new


def _placeholder(graph, like, at, name):
    ph = graph.add(placeholder_op, (), {}, (like.shape, like.dtype), name=name,
                   source=like.source)
    graph.inputs.insert(at, ph)
    return ph


def _compute(graph, values, kinds, outer, batched, row_blocks=True):
    """Nodes of ``graph`` computing ``values`` (body nodes) from the scan's inputs
    ``outer`` (``{body input: outer node}``): stacked over the steps (``batched``,
    through vmap) or once. None if a batching rule had to loop."""
    if not values:
        return []
    region = set().union(*(_region(v, kinds) for v in values))
    order = [n for n in values[0].graph.topo_order() if n in region]
    leaves = [ph for ph in outer if any(ph in n.inputs for n in region)]
    before = set(graph.nodes)

    def run(*args):
        env = dict(zip(leaves, args))
        for n in order:
            env[n] = _evaluate(n, [env[i] if i in env else _evaluate(i, []) for i in n.inputs])
        return [env[v] for v in values]

    with building(graph):
        args = [as_tensor(outer[ph]) for ph in leaves]
        if not batched:
            return [t._node for t in run(*args)]
        axes = tuple(0 if kinds[ph] == STEP else None for ph in leaves)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outs = [t._node for t in vmap(run, in_axes=axes)(*args)]
        if caught:      # vmap's fallback (a loop over the steps) warned: not worth it
            return None
        if not row_blocks:
            return outs
        done = _below_blas_threads(graph, [n for n in graph.nodes if n not in before])
    return [done.get(n, n) for n in outs]


def _evaluate(node, args):
    """``node``'s op applied to ``args`` in the current mode (a constant: its value)."""
    if node.op is constant_op:
        return wrap(node.params["value"])
    return apply(node.op, *args, **node.params)


def block_hoisted_products(graph):
    """The products ``hoist_scans(row_blocks=False)`` made that are still graph nodes (no
    lowering wrote them with their loop) in row blocks, as ``scan_hoist`` makes them."""
    made = [n for n in graph.topo_order() if n.meta.get("scan_hoisted")]
    with building(graph):
        _below_blas_threads(graph, made)


def _below_blas_threads(graph, made):
    """Products the hoisting made (all steps' rows at once) split into a batch of row
    blocks that OpenBLAS runs each on one thread: above ``cost.openblas_threaded_work``
    it wakes its threads, which then spin beside the loop's small products on a loaded
    machine ((1600, 16) @ (16, 64): 2.5-8 ms threaded, 0.1 ms as 8 blocks of 200 rows,
    and the 50-step loop after it 0.4 -> 12 ms). Returns ``{old product: new node}``."""
    done = {}
    for node in made:
        if node.op is not ops.matmul_op or len(node.shape) != 2:
            continue
        x, y = node.inputs
        if len(x.shape) != 2 or len(y.shape) != 2:
            continue
        rows, k = x.shape
        blocks = _blocks(rows, k * y.shape[1])
        if blocks == 1:
            continue
        # The weight broadcast to a stack too: a stack times one matrix is one product
        # of all its rows again (matmul's kernel), the threaded one.
        lhs = ops.reshape(as_tensor(x), (blocks, rows // blocks, k))
        rhs = ops.broadcast_to(as_tensor(y), (blocks,) + tuple(y.shape))
        out = ops.reshape(ops.matmul(lhs, rhs), node.shape)._node
        graph.replace_all_uses_with(node, out)
        remove_node(graph, node)
        done[node] = out
    return done


def _blocks(rows, work_per_row):
    """The fewest row blocks, a divisor of ``rows``, each of at most
    ``cost.openblas_threaded_work`` multiply-adds (1: the product stays whole)."""
    limit = cost.openblas_threaded_work
    if rows * work_per_row <= limit:
        return 1
    for blocks in range(2, rows + 1):
        if rows % blocks == 0 and (rows // blocks) * work_per_row <= limit:
            return blocks
    return rows


def _drop_dead(graph):
    """Remove body nodes nothing reads any more (the hoisted work)."""
    live, stack = set(), list(graph.outputs) + [n for n in graph.nodes if n.side_effects]
    while stack:
        n = stack.pop()
        if n not in live:
            live.add(n)
            stack.extend(n.inputs)
            stack.extend(n.control_deps)
    for n in reversed(graph.topo_order()):
        if n not in live and n.op is not placeholder_op:
            remove_node(graph, n)


def _drop_unread_inputs(graph, inputs, n_carry, n_x):
    """Leave out per-step inputs and captures the body no longer reads (carries stay)."""
    read = [k < n_carry or bool(graph.users(ph)) or ph in graph.outputs
            for k, ph in enumerate(graph.inputs)]
    if n_x and not any(read[n_carry:n_carry + n_x]):
        read[n_carry] = True     # one stays: lowerings take the length from the xs
    dropped = [ph for ph, r in zip(graph.inputs, read) if not r]
    graph.inputs = [ph for ph, r in zip(graph.inputs, read) if r]
    for ph in dropped:
        graph.erase(ph)
    n_x = sum(read[n_carry:n_carry + n_x])
    return [x for x, r in zip(inputs, read) if r], n_x

