"""Layout: a transposed matrix product is computed in the layout its users read.

``transpose(a @ b)`` of 2-D operands becomes ``transpose(b) @ transpose(a)``.
BLAS reads a transposed operand through its strides at no cost, so the new
product writes a contiguous result where the old one left a transposed view,
which an elementwise user then walked with a large stride. The typical case
is a gradient: for ``y = h @ w.T`` the gradient with respect to ``w`` comes out
as ``transpose(h.T @ g)`` and is added to ``w``'s other gradient. A transposed sum
(or difference) of such products, which nothing else reads, is first split into the
transposed products (the tangent of that gradient in a Hessian-vector product is
``transpose(a.T @ g + h.T @ dg)``), so the sum too walks contiguous arrays.

Each output element is the same sum over the inner dimension, but BLAS may
block that sum differently for the swapped operands, so float64 results can
differ in the last bits (float32 ones were identical in every shape tried):
the same kind of change as the block sums of fused reductions, within the
optimizer's tolerance for optimized against unoptimized graphs.

A transposed matrix that small products read as their right operand is made
C-contiguous once (``meta["contiguous"]``, honoured by the numpy lowering):
OpenBLAS takes about twice as long for a small product whose right operand is
transposed (``(32, 64) @ (64, 64)^T`` float32: 6.1 against 3.1 us; from about
2^21 multiply-adds the two cost the same), and the backward pass of an RNN
reads ``U^T`` once a step. The copy holds the same values (the RNN workloads'
products came out bit for bit the same; BLAS may order a sum differently by layout).
"""
from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise

from ..ir.queries import remove_node, replace_node


# Elementwise sums that commute with a transpose, operand by operand.
_LINEAR_SUMS = (ops.add_op, ops.sub_op)


def _is_swap(node):
    axes = node.params["axes"]
    return len(node.shape) == 2 and (axes is None or tuple(a % 2 for a in axes) == (1, 0))


# Products of fewer multiply-adds than cost.layout_small_product_work, with a transposed
# right operand, read a C-ordered copy of it; at least cost.layout_min_readers of them, so
# the copy (1.3-2.3 us for (64, 64)) pays.


def _small_product_reader(user, node):
    """Whether ``user`` is a small 2-D product with ``node`` as its right operand."""
    if user.op is not ops.matmul_op or user.inputs[1] is not node:   # (a matmul has two)
        return False
    a, b = user.inputs
    if len(a.shape) != 2 or len(b.shape) != 2 or None in a.shape or None in b.shape:
        return False
    return a.shape[0] * a.shape[1] * b.shape[1] < cost.layout_small_product_work


def _contiguous_operands(graph):
    """Mark transposed matrices read by several small products as C-ordered copies."""
    count = 0
    for node in graph.nodes:
        if node.op is not ops.transpose_op or not _is_swap(node) or node.meta.get("contiguous"):
            continue
        readers = [u for u in graph.users(node) if _small_product_reader(u, node)]
        if len(readers) >= cost.layout_min_readers:
            node.meta["contiguous"] = True
            count += 1
    if count:
        graph.notes.append(f"{count} transposed right operands of small products copied "
                           "to C order once")
    return count


def _single_use(graph, node):
    return graph.users(node) != [] and len(graph.users(node)) == 1 and node not in graph.outputs


def _swappable_product(graph, node):
    """A 2-D product of 2-D matrices that only one node reads (not an output)."""
    return (node.op is ops.matmul_op and len(node.shape) == 2
            and all(len(x.shape) == 2 for x in node.inputs) and _single_use(graph, node))


def _transposed_sums(graph):
    """``transpose(p + q)`` of products ``p``, ``q`` that nothing else reads ->
    ``transpose(p) + transpose(q)``, each of which the rewrite below computes in the
    transposed layout: the sum then reads and writes contiguous arrays. (The tangent of a
    transposed gradient, in a Hessian-vector product, is such a sum.)"""
    count = 0
    for node in graph.topo_order():
        if node not in graph or node.op is not ops.transpose_op or not _is_swap(node):
            continue
        (total,) = node.inputs
        if (total.op not in _LINEAR_SUMS or not _single_use(graph, total)
                or tuple(total.shape) != tuple(reversed(node.shape))
                or not all(tuple(x.shape) == tuple(total.shape) and x.dtype == total.dtype
                           and _swappable_product(graph, x) for x in total.inputs)):
            continue
        parts = [graph.add(ops.transpose_op, [x], {"axes": (1, 0)}, (node.shape, x.dtype),
                           name="transpose", source=node.source) for x in total.inputs]
        new = graph.add(total.op, parts, dict(total.params), (node.shape, node.dtype),
                        name=total.name, source=total.source)
        replace_node(graph, node, new)
        remove_node(graph, total)           # so each product has its transpose as only user
        count += 1
    if count:
        graph.notes.append(f"moved {count} transposes of sums of products onto the products")
    return count


def layout(graph):
    """Rewrite every ``transpose(a @ b)`` of matrices whose product has no other use, and
    mark transposed right operands of small products to be copied to C order once.
    Not under ``en.config.numerics = "bitwise"``: BLAS may order the sums of another
    layout differently (see the module docstring)."""
    if bitwise():
        return False
    marked = _contiguous_operands(graph)
    count = _transposed_sums(graph)
    for node in graph.topo_order():
        if node not in graph or node.op is not ops.transpose_op or not _is_swap(node):
            continue
        (product,) = node.inputs
        if (product.op is not ops.matmul_op or len(product.shape) != 2
                or any(len(x.shape) != 2 for x in product.inputs)
                or graph.users(product) != [node] or product in graph.outputs):
            continue
        swapped = []
        for x in reversed(product.inputs):
            swapped.append(graph.add(ops.transpose_op, [x], {"axes": (1, 0)},
                                     ((x.shape[1], x.shape[0]), x.dtype), name="transpose",
                                     source=product.source))
        new = graph.add(ops.matmul_op, swapped, dict(product.params), (node.shape, node.dtype),
                        name="matmul", source=product.source)
        replace_node(graph, node, new)
        count += 1
    if count:
        graph.notes.append(f"computed {count} transposed products in their users' layout")
    return bool(count or marked)
