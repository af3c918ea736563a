"""The chunked path under ``en.config.numerics = "bitwise"``: sums over the rows gathered.

A sum (or mean, product, ``x.T @ g``) over the rows adds each chunk's partial result
and then the partials: another order of additions than eager mode's one kernel over
all rows, so other bits. Under "bitwise" such a reduction runs after the chunks
instead, on its inputs' rows gathered from the chunks (one array each), with eager's
kernel; maxima and minima combine exactly and stay per chunk. What is gathered
travels to the client: the price of the bits is the memory of those rows.

Example:
    >>> import numpy as np, engine as en
    >>> from engine.graph.chunked.partition import partition
    >>> f = en.function(lambda x: en.sum(en.tanh(x), axis=0), optimize=False)
    >>> g = f.get_concrete_function(en.zeros((10, 3))).unoptimized_graph
    >>> plan = partition(g, [g.inputs[0]])
    >>> [n.op.name for n in gather_reductions(plan)], plan.nodes("reduce")
    (['tanh'], [])
"""

# Combines that give the same value in any order (argmax/argmin: None).
EXACT_COMBINES = ("max", "min", None)


def gather_reductions(plan):
    """Make each reduction over the rows whose partials would add up in another order
    than eager's a ``post`` node of ``plan``; return the ``rows`` nodes it reads, to be
    gathered from the chunks (in schedule order)."""
    gathered = []
    for node in plan.nodes("reduce"):
        if plan.rule[node].combine in EXACT_COMBINES:
            continue
        plan.place[node] = "post"
        del plan.rule[node]
        for i in node.inputs:
            if plan.place[i] == "rows" and i not in gathered:
                gathered.append(i)
    return [n for n in plan.order if n in gathered]


def rows_first(node, axis):
    """``(axes, inverse)``: the transpose that brings the row ``axis`` of ``node`` first
    (a gathered array is joined along its first axis), and the one that undoes it; None
    and None when the rows are first already."""
    if axis == 0:
        return None, None
    axes = (axis,) + tuple(k for k in range(len(node.shape)) if k != axis)
    inverse = tuple(sorted(range(len(axes)), key=axes.__getitem__))
    return axes, inverse
