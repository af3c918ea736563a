"""The product of a concatenation split by its parts, so a per-step part can leave the loop.

An LSTM written with one weight computes ``concat([x_t, h], -1) @ W``: the per-step
input and the carry share one product, so nothing of it reads the step's input alone
and ``scan_hoist`` cannot move ``x_t``'s share out of the loop. Since the product of a
concatenation along its last axis is the sum of the parts' products with the matching
rows of ``W``,

    concat([x_t, h], -1) @ W  =  x_t @ W[:nx] + h @ W[nx:],

the body is rewritten so where ``W`` is loop-invariant and the parts mix what may leave
the loop (per-step inputs, captures, constants and what only they reach) with what may
not (a carry): consecutive parts of one kind share a product, the movable ones'
product first. Whatever reads the result (a ``split`` into four gates, slices) reads
the sum instead. The sum rounds differently from the one product, to float rounding.

Example:
    >>> import engine as en
    >>> def lstm_like(h, xs, w):
    ...     return en.scan(lambda h, x: (en.tanh(en.concat([x, h], axis=-1) @ w),) * 2,
    ...                    h, xs)[1]
    >>> f = en.function(lstm_like, passes=["cleanup", "scan_hoist"])
    >>> g = f.graph_for(en.ones((2, 3)), en.ones((5, 2, 4)), en.ones((7, 3)))
    >>> body = next(n for n in g.nodes if n.op.name == "scan").params["body"].graph
    >>> sorted(n.op.name for n in body.nodes if n.op.name in ("concat", "matmul"))
    ['matmul']
"""
import itertools

from engine import ops
from .graph_builder import as_tensor, building


def split_concat_products(body, kinds):
    """Split each product ``concat(parts, last axis) @ W`` in ``body`` (a ``SubGraph``)
    whose invariant ``W`` meets parts that may leave the loop and parts that may not;
    ``kinds`` maps the nodes that may leave it (``scan_hoist.body_kinds``). Returns the
    number of products split."""
    graph = body.graph
    count = 0
    for node in graph.topo_order():
        parts = _split_parts(node, kinds)
        if parts is None:
            continue
        new = _sum_of_products(graph, parts, node, kinds)
        graph.replace_all_uses_with(node, new)
        count += 1
    return count


def _split_parts(node, kinds):
    """The concatenation's parts when ``node`` is a product worth splitting, else None."""
    if node.op is not ops.matmul_op or node.side_effects:
        return None
    cat, w = node.inputs
    if cat.op is not ops.concat_op or w not in kinds or len(w.shape) != 2 or \
            not cat.shape or cat.params["axis"] % len(cat.shape) != len(cat.shape) - 1:
        return None
    parts = list(cat.inputs)
    if any(p.dtype != cat.dtype or p.shape[-1] is None for p in parts):
        return None
    movable = [p in kinds for p in parts]
    return parts if any(movable) and not all(movable) else None


def _sum_of_products(graph, parts, product_node, kinds):
    """``sum(run @ W[rows of run])`` over the runs of consecutive parts of one kind, the
    movable runs first; the new node (its nodes keep the product's source line)."""
    w = product_node.inputs[1]
    before = set(graph.nodes)
    products, start = [], 0
    with building(graph):
        weight = as_tensor(w)
        for movable, group in itertools.groupby(parts, key=lambda p: p in kinds):
            run = [as_tensor(p) for p in group]
            rows = sum(p.shape[-1] for p in run)
            lhs = run[0] if len(run) == 1 else ops.concat(run, axis=-1)
            product = ops.matmul(lhs, ops.getitem(weight, slice(start, start + rows)))
            products.append((not movable, product))
            start += rows
        products.sort(key=lambda pair: pair[0])     # stable: the movable ones first
        total = products[0][1]
        for _, product in products[1:]:
            total = ops.add(total, product)
    for node in graph.nodes:
        if node not in before:
            node.source = product_node.source
    return total._node
