"""Common subexpression elimination by a structural key (op, params, inputs)."""
from engine.op import freeze_params

from ..ir.queries import is_constant, replace_node
from ..ir.graph import Node
from ..ir.graph_ops import placeholder_op

_CONST_BYTES = 4096   # small constants are merged by value


def _key(node):
    if is_constant(node):
        v = node.params["value"]
        if v.nbytes > _CONST_BYTES:
            return None
        return ("constant", v.dtype.str, v.shape, v.tobytes())
    try:
        params = freeze_params(node.params)
        hash(params)
    except TypeError:
        return None
    return (node.op, params, tuple(i.id for i in node.inputs),
            tuple(d.id for d in node.control_deps))


def cse(graph):
    """Merge nodes that compute the same thing from the same inputs. Returns True if any were."""
    seen: dict[tuple, Node] = {}
    merged = 0
    for node in graph.topo_order():
        if node.op is placeholder_op or node.side_effects:
            continue
        key = _key(node)
        if key is None:
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        replace_node(graph, node, first)
        merged += 1
    if merged:
        graph.notes.append(f"merged {merged} duplicate nodes")
    return bool(merged)
