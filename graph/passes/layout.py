"""Layout: a transposed matrix product is computed in the layout its users read.

``transpose(a @ b)`` of 2-D operands becomes ``transpose(b) @ transpose(a)``.
BLAS reads a transposed operand through its strides at no cost, so the new
product writes a contiguous result where the old one left a transposed view,
which an elementwise user then walked with a large stride. The typical case
is a gradient: for ``y = h @ w.T`` the gradient with respect to ``w`` comes out
as ``transpose(h.T @ g)`` and is added to ``w``'s other gradient.

Each output element is the same sum over the inner dimension, but BLAS may
block that sum differently for the swapped operands, so float64 results can
differ in the last bits (float32 ones were identical in every shape tried):
the same kind of change as the block sums of fused reductions, within the
optimizer's tolerance for optimized against unoptimized graphs.
"""
from engine import ops

from .common import replace_node


def _is_swap(node):
    axes = node.params["axes"]
    return len(node.shape) == 2 and (axes is None or tuple(a % 2 for a in axes) == (1, 0))


def layout(graph):
    """Rewrite every ``transpose(a @ b)`` of matrices whose product has no other use."""
    count = 0
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
    return bool(count)
