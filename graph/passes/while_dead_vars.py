"""Dead variables of a ``while_loop``: a loop variable whose final value nobody reads and
that neither the condition nor another kept variable (nor an effect) depends on.

Such a variable only feeds its own update (a counter or an accumulator left from the
user's code, a tangent nobody asked for), yet the loop computes it every iteration.
This pass removes it: its initial value from the node's inputs, its input from the
body and the condition, its output from the body (whose ``dce`` then drops what only
fed it). The node's results and ``n_vars`` and the indices of the ``unpack`` nodes
reading it are renumbered. Captured values stay (the node splits its inputs by the
bodies' capture counts). ``while_loop`` has no VJP in a graph, so nothing
differentiates the rewritten node. The scan's counterpart is ``scan_dead_results``.

Example:
    >>> import engine as en
    >>> def f(n):
    ...     i, total, unused = en.while_loop(lambda i, t, u: i < n,
    ...                                      lambda i, t, u: (i + 1, t + i, u * 2.0),
    ...                                      (en.tensor(0), en.tensor(0), en.tensor(1.0)))
    ...     return total
    >>> g = en.function(f, passes=["cleanup"]).graph_for(en.tensor(4))
    >>> next(n for n in g.nodes if n.op.name == "while_loop").params["n_vars"]
    2
"""
from .body_copy import flat_tree, private_body, set_body
from .dce import dce, needed
from .scan_dead_results import read_results


def _dead_vars(cond, body, candidates):
    """The ``candidates`` (variable positions) that neither ``cond`` nor ``body`` needs
    but for their own updates."""
    cond_live = needed(cond.graph, cond.graph.outputs)
    dead = {j for j in candidates if cond.graph.inputs[j] not in cond_live}
    outs, inputs = body.graph.outputs, body.graph.inputs
    while dead:
        live = needed(body.graph, [o for j, o in enumerate(outs) if j not in dead])
        blocked = {j for j in dead if inputs[j] in live}
        if not blocked:
            break
        dead -= blocked
    return dead


def _drop_inputs(sub, positions):
    """Remove the inputs at ``positions`` (unused once dead nodes go) from ``sub``'s graph."""
    dce(sub.graph)
    for i in sorted(positions, reverse=True):
        sub.graph.erase(sub.graph.inputs.pop(i))


def while_dead_vars(graph):
    """Remove each ``while_loop``'s variables that nothing reads or needs (see the module
    docstring). Returns True if any loop changed."""
    count = 0
    for node in graph.topo_order():
        if node.op.rules.get("dead_results") != "while_loop":
            continue
        read = read_results(graph, node)
        p = node.params
        if read is None:
            continue
        candidates = {j for j in range(p["n_vars"]) if j not in read}
        dead = _dead_vars(p["cond"], p["body"], candidates) if candidates else set()
        if not dead:
            continue
        cond, body = private_body(node, p["cond"]), private_body(node, p["body"])
        keep = [j for j in range(p["n_vars"]) if j not in dead]
        body.graph.outputs = [body.graph.outputs[j] for j in keep]
        body.out_avals = tuple(body.out_avals[j] for j in keep)
        body.out_tree = body.graph.output_tree = flat_tree(len(keep))
        _drop_inputs(body, dead)
        _drop_inputs(cond, dead)
        graph.set_inputs(node, [x for i, x in enumerate(node.inputs) if i not in dead])
        renumber = {j: i for i, j in enumerate(keep)}
        node.avals = tuple(node.avals[j] for j in keep)
        for user in graph.data_users(node):
            user.params = {**user.params, "index": renumber[user.params["index"]]}
        set_body(node, "cond", cond)
        set_body(node, "body", body)
        node.params = {**node.params, "n_vars": len(keep)}
        count += len(dead)
    if count:
        graph.notes.append(f"removed {count} unread while_loop variable{'s' if count != 1 else ''}")
    return bool(count)
