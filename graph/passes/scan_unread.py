"""Scan stacks nothing reads: a loop that leaves out the per-step stacks of its carries
and of its random draws.

A scan returns, beside its final carries and per-step results, the carry entering
each step, stacked: its VJP reads them (a backward pass needs the forward's states).
A scan that is itself a backward pass keeps them only for a second-order gradient,
so in a first-order gradient's graph nothing reads them, yet the loop copies each
step's carry into a ``(length, ...)`` array: 16 MB for a 2000-step RNN of batch 16
and hidden 128. Likewise the values a backward pass must replay rather than recompute
(each step's random draws, its variable reads) are stacked for the VJP alone: a scan
that is not differentiated (sampling a sequence, a forward pass with dropout) needs
none of them. This pass marks such stacks ``unread`` (indices below ``n_carry`` are
carries, ``n_carry + k`` the body's ``k``-th replayed value); the scan leaves them
empty (shape ``(0, ...)``) and skips the copies.

Scans are found by their op's ``unread_stacks`` rule. Gradients are taken before
optimization, so no pass or gradient reads an optimized scan's stacks later; a node
marked so refuses a VJP. It runs after ``compile_numba``: a compiled scan writes only
what its region's outputs read.

Example:
    >>> import engine as en
    >>> def f(xs):
    ...     return en.scan(lambda c, x: (c + x, c * x), en.zeros(3), xs)[1]
    >>> g = en.function(f).graph_for(en.ones((4, 3)))
    >>> [n.params["unread"] for n in g.nodes if n.op.name == "scan"]
    [(0,)]
"""
from ..ir.graph_ops import unpack_op


def _unread_stacks(graph, node):
    """The stacks of scan ``node`` no node reads: carries ``k`` and replayed values
    ``n_carry + k``, whose outputs follow the final carries and per-step results in
    that order (output ``first + k`` for either)."""
    body = node.params["body"]
    first = len(body.out_avals)                # the stacks' first output index
    read = set()
    for user in graph.users(node):
        if user.op is not unpack_op:           # reads every result
            return ()
        read.add(user.params["index"])
    if any(o is node for o in graph.outputs):
        return ()
    stacks = node.params["n_carry"] + len(body.replay)
    return tuple(k for k in range(stacks) if first + k not in read)


def scan_unread(graph):
    """Mark the stacks of each scan's carries and random draws that nothing reads (see
    the module docstring). Returns True if any scan changed."""
    count = 0
    for node in graph.topo_order():
        if not node.op.rules.get("unread_stacks") or node.params.get("unread"):
            continue
        unread = _unread_stacks(graph, node)
        if not unread:
            continue
        avals = list(node.avals)
        first = len(node.params["body"].out_avals)
        for k in unread:
            shape, dtype = avals[first + k]
            avals[first + k] = ((0,) + tuple(shape[1:]), dtype)
        node.avals = tuple(avals)
        node.params = {**node.params, "unread": unread}
        count += len(unread)
    if count:
        graph.notes.append(f"left out {count} unread scan stack{'s' if count != 1 else ''}")
    return bool(count)
