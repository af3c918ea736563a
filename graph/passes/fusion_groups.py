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


def _convex(graph, merged, group_of_node):
    """No path from a node of ``merged`` through nodes outside it back into it. Every
    other group will be one node too, so reaching any of its nodes reaches all of
    their users (``group_of_node`` maps a node to its group's node set)."""
    stack = [u for n in merged for u in graph.users(n) if u not in merged]
    seen = set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n in merged:
            return False
        group = group_of_node.get(n, (n,))
        seen.update(group)
        for g in group:
            stack.extend(graph.users(g))
    return True


def group_regions(graph, regions, reductions):
    """Lists of region ids to fuse together (a region alone is a list of one).

    ``regions`` maps a region id to its members in topological order, the last
    being the region's value; ``reductions`` maps it to the full sum or mean that
    alone consumes that value, or None.
    """
    region_of = {m: rid for rid, members in regions.items() for m in members}
    parent = {rid: rid for rid in regions}

    def find(r):
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    def nodes_by_group():
        groups = {}
        for rid, members in regions.items():
            nodes = groups.setdefault(find(rid), set())
            nodes.update(members)
            if reductions[rid] is not None:
                nodes.add(reductions[rid])
        return groups

    outputs = set(graph.outputs)
    changed = True
    while changed:
        changed = False
        for rid, members in regions.items():
            root = members[-1]
            if reductions[rid] is not None or root in outputs:
                continue
            users = graph.users(root)
            if not users or any(u not in region_of or
                                tuple(u.shape) != tuple(root.shape) for u in users):
                continue
            groups = {find(region_of[u]) for u in users} | {find(rid)}
            if len(groups) == 1:
                continue
            by_group = nodes_by_group()
            merged = set().union(*(by_group[g] for g in groups))
            group_of_node = {n: nodes for nodes in by_group.values() for n in nodes}
            # A reduction is known only after the whole loop: nothing in it may use one.
            sums = [reductions[r] for r in regions if find(r) in groups and reductions[r]]
            if any(u in merged for r in sums for u in graph.users(r)) or \
                    not _convex(graph, merged, group_of_node):
                continue
            first, *rest = groups
            for g in rest:
                parent[g] = first
            changed = True
    grouped = {}
    for rid in regions:
        grouped.setdefault(find(rid), []).append(rid)
    return list(grouped.values())


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
