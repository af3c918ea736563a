"""Small queries shared by the passes."""
import numpy as np

from .graph_ops import constant_op


# Layout ops that make a view: no bytes are computed, so a program that has the viewed
# value makes the view again rather than keep or receive a second reference to it.
VIEW_OPS = frozenset(("transpose", "reshape", "expand_dims", "squeeze"))


def is_view(node):
    """``node`` is a layout op returning a view of its input (see ``VIEW_OPS``)."""
    return node.op.name in VIEW_OPS and not node.side_effects


def fresh_results(node):
    """A node with several results whose op has an ``out_impl`` (a multi-output
    fused kernel): it writes each result into a given array (``out=`` a tuple,
    None where it should allocate) and never returns an input or a view of one."""
    return node.op.multiple_results and node.op.out_impl is not None


def is_constant(node):
    return node.op is constant_op


def constant_value(node):
    return node.params["value"]


def static_shape(shape):
    return shape is not None and None not in shape


def nbytes(shape, dtype):
    n = 1
    for d in shape:
        n *= d
    return n * np.dtype(dtype).itemsize


def all_equal_to(node, value):
    """True when ``node`` is a constant whose every element equals ``value``."""
    if not is_constant(node):
        return False
    v = constant_value(node)
    return v.size > 0 and bool(np.all(v == value))


def remove_node(graph, node):
    """Erase a node that has no data users left (dropping control edges it carried)."""
    graph.drop_control_users(node)
    graph.erase(node)


def replace_node(graph, node, by):
    """Point every use of ``node`` at ``by`` and remove ``node``. Returns True (changed)."""
    graph.replace_all_uses_with(node, by)
    remove_node(graph, node)
    return True
