"""Multi-output fusion: regions that feed one another become one kernel.

Single-output fusion (``fusion.find_regions``) stops at a value that has users
in two regions. The autoencoder's loss and gradient is the common case: ``y =
sigmoid(z + b2)`` feeds both ``d = y - x`` and the gradient ``dz = d c y (1 -
y)``, and ``d`` feeds both the loss ``mean(d²)`` and ``dz``, so it runs as four
kernels that write ``y`` and ``d`` to memory and read them back three times.
Grouped, one block loop reads ``z``, ``b2`` and ``x`` once and writes ``dz``
and the loss; ``y`` and ``d`` live in block-sized scratch (XLA calls this
multi-output fusion).

A region joins the regions that use its value when every user of the value is
in one of them, all have the value's shape, no member of the merged set uses
one of its full reductions (known only when the loop ends), and the merged set
is convex: no path leaves it and comes back, which would make the fused node
its own ancestor. Each group's results are the values of its regions that are used
outside it (or are graph outputs) and its regions' full reductions.
"""


def _convex(users, merged, group_of, nodes_of):
    """No path from a node of ``merged`` through nodes outside it back into it.

    Every other group will be one node too, so reaching any of its nodes reaches
    the users of all of them (``group_of`` maps a node to its group, ``nodes_of``
    a group to its nodes; ``users`` maps a node to its users).
    """
    stack = [u for n in merged for u in users[n] if u not in merged]
    seen = set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n in merged:
            return False
        g = group_of.get(n)
        group = nodes_of[g] if g is not None else (n,)
        seen.update(group)
        for m in group:
            stack.extend(users[m])
    return True


def group_regions(graph, regions, reductions):
    """Lists of region ids to fuse together (a region alone is a list of one).

    ``regions`` maps a region id to its members in topological order, the last
    being the region's value; ``reductions`` maps it to the full sum or mean that
    alone consumes that value, or None.
    """
    region_of = {m: rid for rid, members in regions.items() for m in members}
    users_of = {n: graph.users(n) for n in graph.nodes}
    # Groups by the id of their first region: their nodes and their regions.
    nodes_of, group_of, rids_of = {}, {}, {}
    for rid, members in regions.items():
        nodes = set(members)
        if reductions[rid] is not None:
            nodes.add(reductions[rid])
        nodes_of[rid], rids_of[rid] = nodes, [rid]
        for n in nodes:
            group_of[n] = rid

    outputs = set(graph.outputs)
    changed = True
    while changed:
        changed = False
        for rid, members in regions.items():
            root = members[-1]
            if reductions[rid] is not None or root in outputs:
                continue
            users = users_of[root]
            if not users or any(u not in region_of or
                                tuple(u.shape) != tuple(root.shape) for u in users):
                continue
            groups = {group_of[u] for u in users} | {group_of[root]}
            if len(groups) == 1:
                continue
            merged = set().union(*(nodes_of[g] for g in groups))
            # A reduction is known only after the whole loop: nothing in it may use one.
            sums = [reductions[r] for g in groups for r in rids_of[g] if reductions[r]]
            if any(u in merged for r in sums for u in users_of[r]) or \
                    not _convex(users_of, merged, group_of, nodes_of):
                continue
            first, *rest = groups
            for g in rest:
                for n in nodes_of.pop(g):
                    group_of[n] = first
                rids_of[first] += rids_of.pop(g)
            nodes_of[first] = merged
            changed = True
    return list(rids_of.values())


def group_outputs(graph, rids, regions, reductions, member_set, index):
    """``[(member, reduction or None)]``: what the group's kernel must produce, in
    topological order: each region's full reduction, and each region value used
    outside the group."""
    outputs = []
    for rid in sorted(rids, key=lambda r: index[regions[r][-1]]):
        root, reduction = regions[rid][-1], reductions[rid]
        if reduction is not None:
            outputs.append((root, reduction))
        else:
            users = graph.users(root)   # (a value nothing uses stays a result: dce's job)
            if root in graph.outputs or not users or any(u not in member_set for u in users):
                outputs.append((root, None))
    return outputs
