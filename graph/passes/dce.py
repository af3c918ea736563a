"""Dead code elimination: drop nodes whose values nobody needs.

Outputs, graph inputs and side effects (assign, print, py_function, loops
that assign) are roots; everything they need through data inputs stays.
Side effects keep their order through control edges.
"""
from ..ir.queries import remove_node


def needed(graph, roots):
    """The nodes of ``graph`` that ``roots`` or its side effects need, through data inputs
    and the control edges that order side effects."""
    live = set()
    stack = [n for n in graph.nodes if n.side_effects] + list(roots)
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack.extend(node.inputs)
        stack.extend(d for d in node.control_deps if d.side_effects)
    return live


def dce(graph):
    """Remove nodes that no output or side effect depends on. Returns True if any were."""
    live = needed(graph, graph.outputs)
    live.update(graph.inputs)
    dead = [n for n in reversed(graph.topo_order()) if n not in live]
    for node in dead:
        remove_node(graph, node)
    if dead:
        graph.notes.append(f"removed {len(dead)} dead nodes")
    return bool(dead)
