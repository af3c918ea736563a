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
from typing import Any



# Vertices a merge's cycle search may visit before giving up (the merge is then
# refused: safe, at worst a kernel more). Merges of nearby regions need few; the
# searches that reach the limit are those from a forward value to its gradient in
# a deep network, whose path back through every later layer makes that merge
# illegal anyway, and which made grouping quadratic in the layer count. On the
# benchmarks' graphs (the 50-step unrolled GRU gradient, a 100-layer residual
# stack's gradient, the autoencoder) a limit of 50 groups exactly as no limit does.
SEARCH_BUDGET = 64


class _Contracted:
    """The graph with each group as one vertex, kept in a topological order as
    groups merge (Pearce and Kelly's dynamic topological sort, for contraction).

    A merge of groups is legal when no path leaves them and comes back: then
    contracting them leaves a DAG. A path from one of them to another runs between
    their positions in the order, so the searches stay inside that window, and
    the vertices found there (descendants ``D`` and ancestors ``A``) are all that
    move: ``A``, then the merged group, then ``D``, on the positions they held.

    ``users`` and ``preds`` map a node to its users and inputs; ``group_of`` maps
    a grouped node to its group and ``nodes_of`` a group to its nodes (shared with
    the caller, who updates them after a merge). Other nodes are vertices alone.
    """

    def __init__(self, nodes, users, preds, group_of, nodes_of):
        self.users, self.preds = users, preds
        self.group_of, self.nodes_of = group_of, nodes_of
        self.ord: dict[Any, int] = {}     # vertex (a node or a group id) -> its place
        verts = list(dict.fromkeys(self._vertex(n) for n in nodes))
        succ = {v: list(dict.fromkeys(self._succ(v))) for v in verts}
        waiting = dict.fromkeys(verts, 0)
        for v in verts:
            for w in succ[v]:
                waiting[w] += 1
        ready = [v for v in reversed(verts) if not waiting[v]]
        while ready:   # Kahn's algorithm: the groups were built convex, so a DAG
            v = ready.pop()
            self.ord[v] = len(self.ord)
            for w in succ[v]:
                waiting[w] -= 1
                if not waiting[w]:
                    ready.append(w)

    def _vertex(self, n):
        return self.group_of.get(n, n)

    def _members(self, v):
        group = self.nodes_of.get(v)
        return (v,) if group is None else group

    def _succ(self, v):
        for m in self._members(v):
            for u in self.users[m]:
                w = self._vertex(u)
                if w != v:
                    yield w

    def _pred(self, v):
        for m in self._members(v):
            for p in self.preds[m]:
                w = self._vertex(p)
                if w != v:
                    yield w

    def merge(self, groups, budget=SEARCH_BUDGET):
        """Whether ``groups`` (the first is the one kept) can be one vertex; if so the
        order is updated for it (the caller then merges the groups themselves)."""
        ord_ = self.ord
        lo = min(ord_[g] for g in groups)
        hi = max(ord_[g] for g in groups)
        group_set = set(groups)
        # Descendants inside the window; reaching a group again is a cycle.
        descendants, seen = [], set(group_set)
        stack = [w for g in groups for w in self._succ(g) if w not in group_set]
        while stack:
            w = stack.pop()
            if w in group_set:
                return False
            if w in seen or ord_[w] > hi:   # past every group: cannot lead back
                continue
            seen.add(w)
            descendants.append(w)
            if len(descendants) > budget:
                return False
            stack.extend(self._succ(w))
        # Ancestors inside the window (none of them a descendant: no cycle).
        ancestors, seen = [], set(group_set)
        stack = [w for g in groups for w in self._pred(g) if w not in group_set]
        while stack:
            w = stack.pop()
            if w in seen or ord_[w] < lo:    # before every group: need not move
                continue
            seen.add(w)
            ancestors.append(w)
            if len(ancestors) + len(descendants) > budget:
                return False
            stack.extend(self._pred(w))
        ancestors.sort(key=ord_.__getitem__)
        descendants.sort(key=ord_.__getitem__)
        slots = sorted([ord_[v] for v in ancestors] + [ord_[g] for g in groups] +
                       [ord_[v] for v in descendants])
        for v, slot in zip(ancestors, slots):
            ord_[v] = slot
        ord_[groups[0]] = slots[len(ancestors)]
        for v, slot in zip(descendants, slots[len(slots) - len(descendants):]):
            ord_[v] = slot
        for g in groups[1:]:
            del ord_[g]
        return True


def group_regions(graph, regions, reductions):
    """Lists of region ids to fuse together (a region alone is a list of one).

    ``regions`` maps a region id to its members in topological order, the last
    being the region's value; ``reductions`` maps it to the full sum or mean that
    alone consumes that value, or None.
    """
    region_of = {m: rid for rid, members in regions.items() for m in members}
    nodes = graph.topo_order()
    users_of = {n: graph.users(n) for n in nodes}
    preds_of = {n: list(dict.fromkeys(n.inputs + n.control_deps)) for n in nodes}
    # Groups by the id of their first region: their nodes and their regions.
    nodes_of, group_of, rids_of = {}, {}, {}
    for rid, members in regions.items():
        group = set(members)
        if reductions[rid] is not None:
            group.add(reductions[rid])
        nodes_of[rid], rids_of[rid] = group, [rid]
        for n in group:
            group_of[n] = rid
    contracted = _Contracted(nodes, users_of, preds_of, group_of, nodes_of)

    outputs = set(graph.outputs)
    # A merge refused stays refused while its groups are unchanged (merging others
    # only adds paths), so each root is tried again only once one of them grew.
    grown = dict.fromkeys(nodes_of, 0)
    refused: dict[int, tuple] = {}     # region id -> the (group, growth) pairs refused
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
            groups = list(dict.fromkeys([group_of[root]] + [group_of[u] for u in users]))
            if len(groups) == 1:
                continue
            attempt = tuple((g, grown[g]) for g in groups)
            if refused.get(rid) == attempt:
                continue
            merged = set().union(*(nodes_of[g] for g in groups))
            # A reduction is known only after the whole loop: nothing in it may use one.
            sums = [reductions[r] for g in groups for r in rids_of[g] if reductions[r]]
            if any(u in merged for r in sums for u in users_of[r]) or \
                    not contracted.merge(groups):
                refused[rid] = attempt
                continue
            first, *rest = groups
            for g in rest:
                for n in nodes_of.pop(g):
                    group_of[n] = first
                rids_of[first] += rids_of.pop(g)
            nodes_of[first] = merged
            grown[first] += 1
            changed = True
    return list(rids_of.values())


def group_outputs(graph, rids, regions, reductions, member_set, index, rows_sum=None):
    """``[(member, reduction or None)]``: what the group's kernel must produce, in
    topological order: each region's full reduction, and each region value used
    outside the group; with ``rows_sum`` (a function of a node and the value, giving a
    user that sums the value over its rows, or None), that sum too, computed in the
    same loop."""
    outputs = []
    for rid in sorted(rids, key=lambda r: index[regions[r][-1]]):
        root, reduction = regions[rid][-1], reductions[rid]
        if reduction is not None:
            outputs.append((root, reduction))
        else:
            users = graph.users(root)   # (a value nothing uses stays a result: dce's job)
            if root in graph.outputs or not users or any(u not in member_set for u in users):
                summed = rows_sum(graph, root) if rows_sum is not None else None
                if summed is None or root in graph.outputs or \
                        any(u is not summed for u in users):
                    outputs.append((root, None))   # the value itself is read outside
                if summed is not None:
                    outputs.append((root, summed))
    return outputs
