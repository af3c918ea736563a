"""Dead results of a scan: per-step results and carries nothing reads leave the loop.

A gradient's backward scan returns a cotangent for every forward input, but the user
may want only some: per-example gradients of an RNN with respect to its weights leave
the cotangent of the sequence (a ``(steps, batch, inputs)`` stack, one product a step)
unread, yet the loop computed and stacked it each step. Likewise a carry whose final
value nobody reads and that only feeds its own update (an accumulator of a gradient
nobody asked for) costs its update each step.

This pass removes from a scan node:

* each per-step result (``ys``) no node reads: from the body's outputs (the body's
  ``dce`` then drops what only fed it);
* each carry whose final value and per-step stack nobody reads and that no other kept
  output or side effect of the body depends on: its initial value, its body input
  and output;
* each sequence (``xs``, for a scan of static length) and each captured value the
  body no longer reads.

The node's results, its ``n_carry``, ``n_x``, ``summed`` and ``unread`` params and
the indices of the ``unpack`` nodes reading it are renumbered. The rewritten node is
a complete scan of its own (a gradient of it would be right), and gradients are taken
before optimization anyway. Bodies with side effects keep them: a node with effects
is a root. ``while_loop`` variables are handled by ``while_dead_vars``.

Example:
    >>> import engine as en
    >>> def f(xs):
    ...     return en.scan(lambda c, x: (c + x, x * 3.0), 0.0, xs)[0]
    >>> g = en.function(f, passes=["cleanup"]).graph_for(en.ones(4))
    >>> scan = next(n for n in g.nodes if n.op.name == "scan")
    >>> len(scan.params["body"].out_avals), len(scan.avals)
    (1, 2)
"""
from ..ir.graph_ops import unpack_op
from .body_copy import flat_tree, private_body, set_body
from .dce import dce, needed


def read_results(graph, node):
    """Indices of ``node``'s results that some node reads, or None when that is
    unknown (a reader other than ``unpack``, or the node is a graph output)."""
    if any(o is node for o in graph.outputs):
        return None
    read = set()
    for user in graph.data_users(node):
        if user.op is not unpack_op:
            return None
        read.add(user.params["index"])
    return read


def _dead_carries(graph, n_carry, candidates, kept_outputs):
    """The ``candidates`` (carry indices) whose body inputs nothing kept needs: carries
    that feed only their own updates (or one another's, all of them dead). ``graph``:
    the scan's body; ``kept_outputs``: positions of its outputs that stay."""
    outs, inputs = graph.outputs, graph.inputs
    dead = set(candidates)
    while dead:
        roots = [outs[j] for j in range(len(outs)) if j in kept_outputs or
                 (j < n_carry and j not in dead)]
        live = needed(graph, roots)
        blocked = {j for j in dead if inputs[j] in live}
        if not blocked:
            break
        dead -= blocked
    return dead


def scan_dead_results(graph):
    """Remove the results, carries and inputs of each scan that nothing reads (see the
    module docstring). Returns True if any scan changed."""
    count = 0
    for node in graph.topo_order():
        if node.op.rules.get("dead_results") == "scan":
            count += _prune(graph, node)
    if count:
        graph.notes.append(f"removed {count} unread scan result{'s' if count != 1 else ''}, "
                           "carries or inputs")
    return bool(count)


def _prune(graph, node):
    """Rewrite scan ``node`` without what nothing reads; the number of things removed."""
    read = read_results(graph, node)
    if read is None:
        return 0
    p = node.params
    body, n_carry, n_x = p["body"], p["n_carry"], p["n_x"]
    n_real = len(body.out_avals)
    n_y, n_res = n_real - n_carry, len(body.replay)
    dead_ys = {k for k in range(n_y) if n_carry + k not in read}
    candidates = {j for j in range(n_carry) if j not in read and n_real + j not in read}
    # Outputs of the body that stay whatever the carries: kept ys and replayed values.
    kept_outputs = {n_carry + k for k in range(n_y) if k not in dead_ys} | \
        set(range(n_real, n_real + n_res))
    dead_carries = _dead_carries(body.graph, n_carry, candidates, kept_outputs) \
        if candidates else set()
    unused = _unused_inputs(body.graph, n_carry, n_x, p["length"], dead_ys, dead_carries)
    if not dead_ys and not dead_carries and not unused:
        return 0
    work = private_body(node, body)
    _rewrite_body(work, n_carry, dead_ys, dead_carries, unused)
    keep_c = [j for j in range(n_carry) if j not in dead_carries]
    keep_y = [k for k in range(n_y) if k not in dead_ys]
    gone_inputs = set(dead_carries) | unused
    graph.set_inputs(node, [x for i, x in enumerate(node.inputs) if i not in gone_inputs])
    # Old result index -> new: carries, ys, stacks of carries, replayed values.
    old = (keep_c + [n_carry + k for k in keep_y] + [n_real + j for j in keep_c]
           + [n_real + n_carry + r for r in range(n_res)])
    renumber = {o: i for i, o in enumerate(old)}
    node.avals = tuple(node.avals[o] for o in old)
    for user in graph.data_users(node):
        user.params = {**user.params, "index": renumber[user.params["index"]]}
    new_c = len(keep_c)
    y_index = {k: i for i, k in enumerate(keep_y)}
    c_index = {j: i for i, j in enumerate(keep_c)}
    summed = tuple(y_index[k] for k in p.get("summed", ()) if k in y_index)
    unread = tuple(sorted([c_index[k] for k in p.get("unread", ()) if k in c_index] +
                          [new_c + k - n_carry for k in p.get("unread", ()) if k >= n_carry]))
    params = {**p, "n_carry": new_c, "n_x": n_x - sum(1 for i in unused if i < n_carry + n_x)}
    for name, value in (("summed", summed), ("unread", unread)):
        if name in p or value:
            params[name] = value
    node.params = params
    set_body(node, "body", work)
    return len(dead_ys) + len(dead_carries) + len(unused)


def _unused_inputs(body_graph, n_carry, n_x, length, dead_ys, dead_carries):
    """Input positions past the carries (sequences, captures) that the body will not
    read once ``dead_ys`` and ``dead_carries`` are gone. Sequences only for a scan of
    static length (the first one gives the length otherwise)."""
    outs = body_graph.outputs
    roots = [o for j, o in enumerate(outs) if j not in dead_carries and
             (j < n_carry or j - n_carry not in dead_ys)]
    live = needed(body_graph, roots)
    first = n_carry if isinstance(length, int) else n_carry + n_x
    return {i for i in range(first, len(body_graph.inputs))
            if body_graph.inputs[i] not in live}


def _rewrite_body(body, n_carry, dead_ys, dead_carries, unused):
    """Drop ``body``'s outputs for ``dead_ys``/``dead_carries``, the nodes only they
    needed, and its inputs for ``dead_carries`` and ``unused``."""
    graph = body.graph
    n_real = len(body.out_avals)
    keep = [j for j in range(len(graph.outputs))
            if j >= n_real or (j not in dead_carries if j < n_carry else j - n_carry not in dead_ys)]
    graph.outputs = [graph.outputs[j] for j in keep]
    body.out_avals = tuple(body.out_avals[j] for j in keep if j < n_real)
    body.out_tree = graph.output_tree = flat_tree(len(body.out_avals))
    dce(graph)
    gone = set(dead_carries) | unused
    n_caps = len(body.captures)
    first_capture = len(graph.inputs) - n_caps
    body.captures = [c for i, c in enumerate(body.captures) if first_capture + i not in gone]
    for i in sorted(gone, reverse=True):
        placeholder = graph.inputs.pop(i)
        graph.erase(placeholder)
