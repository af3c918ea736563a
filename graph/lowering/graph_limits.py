"""What the lowerings that write whole graphs share: which loops they write, how large a
graph may be written as one function, and how many ops a call of one runs.

The numba lowering (``graph/lowering/numba/whole_graph.py``) and the C lowering
(``graph/lowering/c/lowering.py``) decide with these, from the cost model's figures
(``engine/cost_model.py``): a graph with a value over ``cost.whole_graph_max_elements``
elements, or over ``cost.whole_graph_small_elements`` with a matrix product that
OpenBLAS would thread, is left to the fused kernels and numpy's threaded BLAS.

Example (a graph of a million elements is left to the fused kernels):
    >>> import engine as en
    >>> from engine.graph.lowering.graph_part import GraphPart
    >>> f = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"])
    >>> too_large(GraphPart.whole(f.graph_for(en.ones((1000, 1000)))).members)
    'a value of 1000000 elements, over cost.whole_graph_max_elements'
"""
from engine.cost_model import cost
from engine.shapes import size_of

from .parallel import product_work
from .plugin import Unsupported
from ..ir.graph_ops import constant_op, placeholder_op, unpack_op

__all__ = ["loop_members", "op_count", "small_enough", "too_large"]


def loop_members(graph):
    """Each scan of ``graph`` (without effects) with the nodes unpacking its results."""
    regions = []
    for node in graph.topo_order():
        if node.op.rules.get("numba_form") != "time_loop" or node.side_effects or node.control_deps:
            continue
        regions.append([node] + [u for u in graph.users(node) if u.op is unpack_op])
    return regions


def _largest(members):
    """The most elements of one value in ``members`` (a scan's body included); values
    of unknown dims, which the writers refuse anyway, count as none."""
    nodes = [m for m in members if not m.op.multiple_results]
    for m in members:
        if m.op.rules.get("numba_form") == "time_loop":
            nodes += list(m.params["body"].graph.nodes)
    return max([_size(n.shape) for n in nodes], default=0)


def small_enough(members):
    """Whether ``members`` may be compiled as one function: every value has at most
    ``cost.whole_graph_small_elements`` elements, or at most
    ``cost.whole_graph_max_elements`` with no matrix product that OpenBLAS would
    thread. Other graphs of larger values get compiled fused kernels instead."""
    return too_large(members) is None


def too_large(members):
    """Why ``members`` may not be compiled as one function (``small_enough``), or None."""
    largest = _largest(members)
    if largest <= cost.whole_graph_small_elements:
        return None
    if largest > cost.whole_graph_max_elements:
        return f"a value of {largest} elements, over cost.whole_graph_max_elements"
    work = max(map(product_work, members), default=0)
    if work <= cost.openblas_threaded_work:
        return None
    return (f"a value of {largest} elements, over cost.whole_graph_small_elements, and a "
            f"matrix product of {work} multiply-adds, which OpenBLAS threads")


def _size(shape):
    """Elements of ``shape``; 0 where it is unknown (such values are never compiled)."""
    return (size_of(shape) or 0) if shape is not None else 0


def op_count(nodes):
    """The ops one call of ``nodes`` runs (a scan's body once per step)."""
    total = 0
    for n in nodes:
        if n.op in (placeholder_op, constant_op, unpack_op):
            continue
        if n.op.rules.get("numba_form") == "time_loop":
            body = n.params["body"].graph
            total += n.params["length"] * op_count(body.topo_order())
        else:
            total += 1
    return total


def writable_scan(node):
    """``(body, n_carry, n_x, length)`` of a scan ``node`` a compiled time loop can write;
    raises :class:`Unsupported` for a body that replays values or has effects, an
    unknown or zero length, or stacks the numpy lowering's passes changed."""
    p = node.params
    body, n_carry, n_x, length = p["body"], p["n_carry"], p["n_x"], p["length"]
    if body.replay or body.has_side_effects or not length:
        raise Unsupported("scan: replayed values, effects or unknown length")
    if p.get("summed") or p.get("unread"):   # passes that run after these lowerings
        raise Unsupported("scan with results summed or stacks left out by the numpy "
                          "lowering's passes")
    return body, n_carry, n_x, length
