"""Splitting a traced graph for data chunked by rows: what runs once before the
chunks, what runs per chunk, and what runs on the combined partial results.

Each node gets a *place*:

* ``free``: it does not depend on the chunked inputs (parameters, constants,
  their transforms); it runs once, on the client, before the chunks;
* ``rows``: it acts row by row (its row axis is recorded); it runs per chunk;
* ``reduce``: it reduces over the rows (``sum(x, axis=0)``, ``mean``,
  ``x.T @ g``); each chunk computes a partial result and the partials combine;
* ``post``: it depends on a reduction or changes state (a variable write);
  it runs once, on the client, after the chunks.

The ops' ``chunks`` rules (``engine/chunk_rules.py``) say how each acts on rows.
An op with no such rule among the rows (a sort along them, ``x @ x.T``) raises
a :class:`~engine.errors.TracingError` naming it and the user's line.

Example:
    >>> import numpy as np, engine as en
    >>> from engine.graph.chunked.partition import partition
    >>> f = en.function(lambda x, w: en.sum(en.tanh(x @ w)), optimize=False)
    >>> g = f.get_concrete_function(en.zeros((10, 3)), en.zeros((3, 2))).unoptimized_graph
    >>> plan = partition(g, [g.inputs[0]])
    >>> sorted({plan.place[n] for n in g.nodes})
    ['free', 'reduce', 'rows']
"""
import itertools

import numpy as np

from engine import chunk_rules
from engine.errors import TracingError, describe_inputs, format_location

from ..ir.graph import Node
from ..ir.graph_ops import constant_op, placeholder_op, unpack_op


class Plan:
    """The split: ``place`` (node -> place), ``axis`` (rows node -> its row axis),
    ``rule`` (rows and reduce nodes -> their ChunkRule), ``resized`` (free nodes
    that also run per chunk, their row count changed: node -> (axis, resize)),
    ``constants`` (shape-only nodes among the rows whose result has no rows,
    ``count(x)`` -> their value), ``rows`` (the row count), the graph and its
    chunked inputs."""

    def __init__(self, graph, row_inputs, rows):
        self.graph, self.row_inputs, self.rows = graph, list(row_inputs), rows
        self.place, self.axis, self.rule = {}, {}, {}
        self.resized, self.constants = {}, {}
        self.order = graph.topo_order()

    def nodes(self, place):
        return [n for n in self.order if self.place[n] == place]


def _error(node, message):
    where = f"\n  at {format_location(node.source)}" if node.source else ""
    ins = [(i.shape, i.dtype) for i in node.inputs if i.avals is None]
    return TracingError(f"op '{node.op.name}' on chunked data ({describe_inputs(ins)}): "
                        f"{message}{where}")


def partition(graph, row_inputs):
    """The :class:`Plan` for ``graph`` with the placeholders ``row_inputs`` chunked
    along their first axis (all with the same number of rows)."""
    counts = {p.shape[0] for p in row_inputs}
    if len(counts) != 1:
        raise TracingError(f"chunked inputs must have the same number of rows, got "
                           f"{sorted(counts)}")
    plan = Plan(graph, row_inputs, counts.pop())
    rows_of = set(row_inputs)
    for node in plan.order:
        if node in rows_of:
            plan.place[node], plan.axis[node] = "rows", 0
            continue
        axes = [plan.axis.get(i) if plan.place.get(i) == "rows" else None for i in node.inputs]
        after = any(plan.place.get(i) in ("post", "reduce") for i in node.inputs) or \
            any(plan.place.get(d) in ("post", "reduce") for d in node.control_deps) or \
            node.side_effects
        if node.op.rules.get("shape_only") and not node.side_effects and \
                any(plan.place[i] != "free" for i in node.inputs) and \
                not _keeps_rows(node, axes):
            # ones_like(loss), count(x): the value needs no data (the seed of a backward pass).
            # One that keeps the rows (zeros_like(x)) runs per chunk below: as one
            # full-size constant it would join the chunk's rows in no op.
            plan.constants[node] = _shape_only_value(node)
            plan.place[node] = "free"
            continue
        if all(a is None for a in axes):
            plan.place[node] = "post" if after else "free"
            continue
        if after:
            raise _error(node, "it uses a value computed after a reduction over the rows or "
                               "a state change (that would need a second pass over the data)")
        if node.side_effects or node.op.random or node.avals is not None:
            raise _error(node, "random draws, side effects and multi-result ops cannot run "
                               "per chunk")
        rule = _rule_for(plan, node, axes)
        plan.rule[node] = rule
        plan.place[node] = rule.kind
        if rule.kind == "rows":
            plan.axis[node] = rule.axis
    return plan


def _rule_for(plan, node, axes):
    """The node's ChunkRule; for an elementwise op, free inputs that span the rows and
    were made from a shape (``broadcast_to(g, (N, d))`` in a backward pass) run per
    chunk too, at the chunk's row count."""
    op = node.op
    rule = _chunk_rule(op)
    if rule is None:
        raise _error(node, "it needs every row of the data at once (it has no rule for "
                           "chunked rows); run it on computed values, or eagerly on Dask "
                           "arrays")
    avals = [(i.shape, i.dtype) for i in node.inputs]
    found = rule(axes, avals, node.aval, node.params)
    if found is None and op.elementwise:
        axes = _resize_free_inputs(plan, node, axes)
        found = rule(axes, avals, node.aval, node.params) if axes is not None else None
    if found is None:
        raise _error(node, "it needs every row of the data at once (for example it mixes "
                           "rows, or reduces them in a way partial results cannot combine)")
    return found


def _resize_free_inputs(plan, node, axes):
    """Mark the free inputs of an elementwise node that span the rows as run per
    chunk; the new input axes, or None when an input cannot be."""
    from_end = {len(node.inputs[i].shape) - a for i, a in enumerate(axes) if a is not None}
    if len(from_end) != 1:
        return None
    (k,) = from_end
    out = list(axes)
    marks: dict[Node, tuple] = {}      # committed only when every input can run per chunk
    for i, (inp, a) in enumerate(zip(node.inputs, axes)):
        nd = len(inp.shape)
        if a is not None or nd < k or inp.shape[nd - k] == 1:
            continue
        if not _per_chunk(plan, inp, nd - k, marks):
            return None
        out[i] = nd - k
    plan.resized.update(marks)
    return out


def _per_chunk(plan, node, p, marks):
    """Whether the free ``node``, whose axis ``p`` spans the rows, can be computed per
    chunk instead: it is made from a shape (``broadcast_to(g, (N, d))``, ``zeros``),
    or its op's chunks rule keeps the rows at ``p`` when the inputs that span the
    rows run per chunk too (``reshape(broadcast_to(g, (N,)), (N, 1))`` in the
    backward pass of a mean over rows). Records it (and those it is made of) in
    ``marks``: node -> (axis, the params to resize)."""
    done = marks.get(node, plan.resized.get(node))
    if done is not None:
        return done[0] == p
    if node.shape[p] != plan.rows or node.side_effects or node.op.random or \
            node.avals is not None or any(plan.place.get(j) != "free" for j in node.inputs):
        return False
    # (a multi-result input has no shape of its own: its unpack nodes have them)
    spans = [[q for q, n in enumerate(i.shape or ()) if n == plan.rows] for i in node.inputs]
    if not any(spans):
        if "shape" in node.params and node.params["shape"][p] == plan.rows:
            marks[node] = (p, (("shape", p),))
            return True
        return False
    rule = _chunk_rule(node.op)
    if rule is None:
        return False
    avals = [(i.shape, i.dtype) for i in node.inputs]
    # Each input that spans the rows either carries them (at one of its axes of
    # that length) or, where the rule allows it, broadcasts.
    for axes in itertools.product(*[s + [None] if s else [None] for s in spans]):
        if all(a is None for a in axes):
            continue
        found = rule(list(axes), avals, node.aval, node.params)
        if found is None or found.kind != "rows" or found.axis != p:
            continue
        trial = dict(marks)
        if all(q is None or _per_chunk(plan, i, q, trial) for i, q in zip(node.inputs, axes)):
            marks.update(trial)
            marks[node] = (p, tuple(found.resize))
            return True
    return False


def _chunk_rule(op):
    """The op's ``chunks`` rule; elementwise ops have one without declaring it."""
    return op.rules.get("chunks") or (chunk_rules.elementwise if op.elementwise else None)


def _keeps_rows(node, axes):
    """Whether the shape-only ``node`` over inputs with row axes ``axes`` has the
    rows in its result (``zeros_like(x)``, not ``count(x)``), so it is made per
    chunk, at the chunk's row count."""
    if all(a is None for a in axes):
        return False
    rule = _chunk_rule(node.op)
    if rule is None:
        return False
    found = rule(axes, [(i.shape, i.dtype) for i in node.inputs], node.aval, node.params)
    return found is not None and found.kind == "rows"


def _shape_only_value(node):
    """The value of a node whose result depends only on its inputs' shapes (the full
    shapes, not a chunk's)."""
    args = [np.broadcast_to(np.zeros((), i.dtype), i.shape) for i in node.inputs]
    return np.asarray(node.op.impl(*args, **node.params))


def needed(plan, targets):
    """The nodes ``targets`` depend on (themselves included), in schedule order."""
    seen = set()
    stack = list(targets)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in plan.constants:
            stack.extend(n.inputs)
    return [n for n in plan.order if n in seen]


def is_source(node):
    """Nodes the per-chunk program takes as inputs rather than computes."""
    return node.op in (placeholder_op, constant_op) or node.op is unpack_op
