"""Small products in a loop body that share their left operand: one wider product.

Forward mode doubles a loop's products: the tangent of ``h @ W`` is
``dh @ W + h @ dW``, so a JVP's step computes ``h @ W`` and ``h @ dW`` -- the same
rows times two loop-invariant weights -- and its backward loop (an HVP's) likewise
``d @ W.T`` and ``d @ dW.T``. Side by side the weights are one matrix, and the two
products one BLAS call with twice the columns::

    h @ W, h @ dW   ->   r = h @ concat([W, dW], axis=1);  r[:, :n], r[:, n:]

The concatenation reads only loop invariants, so it is written once before the loop
(a new captured input of the scan), and each step saves a BLAS call (a fixed cost of
a few microseconds, as large as a ``(32, 64) @ (64, 64)`` product's arithmetic) and
runs one product of a better shape. A right operand may be a captured input or its
transpose (``W.T``, read in place by the concatenation).

Which products: ``matmul`` of a left operand with two or more axes that reads a carry
or a step's input (a product of invariants alone is ``scan_hoist``'s) by a 2-D
right operand computed from the captures alone, of the same dtype and inner size, each
of at most ``cost.batched_product_max_work`` multiply-adds (above, a call's fixed
cost is small against the arithmetic), the merged weights copied once at most
``cost.batched_block_max_elements`` elements per step saved.

``sliced_products`` leaves the wide product whole: its readers together read all of
it. Not under ``en.config.numerics = "bitwise"``: BLAS may pick another kernel for
the wider product and round an element differently.

Example:
    >>> import engine as en
    >>> def f(h0, xs, w, dw):
    ...     step = lambda h, x: (en.tanh(h @ w + x), en.tanh(h @ dw + x))
    ...     return en.scan(step, h0, xs)[1]
    >>> g = en.function(f).graph_for(en.ones((4, 8)), en.ones((5, 4, 8)),
    ...                              en.ones((8, 8)), en.ones((8, 8)))
    >>> scan = next(n for n in g.nodes if n.op.name == "scan")
    >>> [n.shape for n in scan.params["body"].graph.nodes if n.op.name == "matmul"]
    [(4, 16)]
"""
import collections
import math

from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise

from ..ir.queries import remove_node, static_shape
from .graph_builder import as_tensor, building
from .scan_hoist import _copied, _drop_dead, _drop_unread_inputs, _placeholder


def scan_wide_products(graph):
    """Merge each scan body's small products sharing a left operand by invariant right
    operands (see the module docstring). Returns True if any were."""
    if bitwise():
        return False
    merged = 0
    for node in graph.topo_order():
        # Scans are found by their op's summed_results rule, as scan_hoist finds them.
        if node.op.rules.get("summed_results") and \
                isinstance(node.params.get("length"), int) and node.params["length"] > 1:
            merged += _merge_scan(graph, node)
    if merged:
        graph.notes.append(f"merged {merged} loop product{'s' if merged != 1 else ''} "
                           "sharing an operand into wider ones")
    return bool(merged)


def _invariant_right(node, captures):
    """``(capture placeholder, transposed)`` when ``node`` is a 2-D captured input or its
    transpose, else None."""
    if node in captures:
        return node, False
    if node.op is ops.transpose_op and not node.side_effects and len(node.shape) == 2 and \
            node.inputs[0] in captures and node.params.get("axes") in (None, (1, 0)):
        return node.inputs[0], True
    return None


def _groups(body, n_carry, n_x, length):
    """``[(left, [product, ...])]``: the products worth merging, grouped by left operand."""
    g = body.graph
    captures = set(g.inputs[n_carry + n_x:])
    replayed = set(body.replay)
    by_left = collections.defaultdict(list)
    for node in g.topo_order():
        if node.op is not ops.matmul_op or node.params or node in replayed or \
                node.side_effects or node.control_deps or len(node.inputs) != 2:
            continue
        left, right = node.inputs
        if len(right.shape) != 2 or len(left.shape) < 2 or left in captures or \
                not static_shape(node.shape) or not static_shape(left.shape) or \
                left.dtype != right.dtype or _invariant_right(right, captures) is None or \
                math.prod(node.shape) * left.shape[-1] > cost.batched_product_max_work:
            continue
        by_left[left].append(node)
    found = []
    for left, products in by_left.items():
        distinct = list({_invariant_right(p.inputs[1], captures): p for p in products}.values())
        width = sum(q.shape[-1] for q in distinct)
        if len(distinct) >= 2 and \
                left.shape[-1] * width <= cost.batched_block_max_elements * length:
            found.append((left, distinct))
    return found


def _merge_scan(graph, node):
    p = node.params
    n_carry, n_x, length = p["n_carry"], p["n_x"], p["length"]
    if not _groups(p["body"], n_carry, n_x, length):     # (before copying the body)
        return 0
    body = _copied(p["body"])
    g = body.graph
    captures = g.inputs[n_carry + n_x:]
    outer = dict(zip(captures, node.inputs[n_carry + n_x:]))
    captured = set(captures)
    inputs = list(node.inputs)
    merged = 0
    for left, products in _groups(body, n_carry, n_x, length):   # the same, in the copy
        with building(graph):     # the weights side by side, once, before the loop
            parts = []
            for q in products:
                capture, transposed = _invariant_right(q.inputs[1], captured)
                weight = as_tensor(outer[capture])
                parts.append(ops.transpose(weight, (1, 0)) if transposed else weight)
            wide_weight = ops.concat(parts, axis=1)._node
        wide_weight.source = node.source
        ph = _placeholder(g, wide_weight, len(g.inputs), "wide_weight")
        inputs.append(wide_weight)
        with building(g):
            wide = ops.matmul(as_tensor(left), as_tensor(ph))
            lead = (slice(None),) * (len(wide.shape) - 1)
            at = 0
            for q in products:
                part = ops.getitem(wide, lead + (slice(at, at + q.shape[-1]),))._node
                part.source = q.source
                at += q.shape[-1]
                g.replace_all_uses_with(q, part)
        wide._node.source = products[0].source
        for q in products:
            remove_node(g, q)
        merged += len(products)
    _drop_dead(g)      # the transposes of captures no product reads now
    inputs, n_x = _drop_unread_inputs(g, inputs, n_carry, n_x)
    body.captures = inputs[n_carry + n_x:]
    graph.set_inputs(node, inputs)
    node.params = {**p, "body": body, "n_x": n_x}
    return merged
