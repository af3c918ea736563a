"""Scan results summed in the loop: a per-step result read only by its sum over the steps.

A scan stacks each step's results into a ``(length, ...)`` array. Its gradient with
respect to a value the body captures (a weight) is such a stack, one gradient per step,
summed right after the loop (the scan VJP in ``graph/control/control_flow.py``). In the numpy
lowering the GRU's backward scan stacked its nine weights' gradients, 4.9 MB a call
that left the cache and came back for the sums. This pass marks such results
``summed``: the scan adds each step's value into one array, and the sum node goes.

Scans are found by their op's ``summed_results`` rule. The pass applies to float
results of a scan of static length. The scan adds them up in the blocks of the
engine's sum over the leading axis (``LeadingSum`` in ``engine/ops/reduce.py``: one
after another, and from 1024 steps in blocks of 256), so the memory is one step's
value per block and the rounding is of the same kind: the same bits for a forward
scan, the steps in the other order for a reversed one (a VJP). A 0-d result of
``MAX_STEPS`` steps or more keeps its stack, which numpy sums pairwise. It runs
after ``compile_numba``: a scan written as native code is a compiled region by then,
summing in its own loop.

Example:
    >>> import engine as en
    >>> def f(w, xs):
    ...     return en.sum(en.scan(lambda c, x: (c, x * w), 0.0, xs)[1], axis=0)
    >>> g = en.function(f).graph_for(en.ones(3), en.ones((4, 3)))
    >>> [n.params["summed"] for n in g.nodes if n.op.name == "scan"]
    [(0,)]
"""
import collections

import numpy as np

from engine import ops
from engine.numerics import bitwise
from engine.ops.reduce import BLOCKED_FROM_ROWS
from engine.shapes import normalize_axes

from ..ir.graph_ops import unpack_op
from ..ir.queries import remove_node

# From this many steps a 0-d result stays stacked: numpy sums a 1-d stack pairwise, where
# LeadingSum would add blocks of steps.
MAX_STEPS = BLOCKED_FROM_ROWS


def _summed_results(graph, node):
    """``[(k, unpack, sum)]`` for the per-step results ``k`` of scan ``node`` whose only
    reader is a sum over the steps."""
    n_carry = node.params["n_carry"]
    n_y = len(node.params["body"].out_avals) - n_carry
    unpacks = [u for u in graph.data_users(node) if u.op is unpack_op]
    readers = collections.Counter(u.params["index"] for u in unpacks)
    found = []
    for u in unpacks:
        k = u.params["index"] - n_carry
        if not 0 <= k < n_y or readers[u.params["index"]] != 1 or u in graph.outputs or \
                np.dtype(u.dtype).kind != "f":
            continue
        users = graph.users(u)
        if len(users) != 1 or users[0].op is not ops.sum_op:
            continue
        total = users[0]
        if total.params["keepdims"] or total.dtype != u.dtype or None in total.shape or \
                normalize_axes(total.params["axis"], len(u.shape), "sum") != (0,):
            continue
        found.append((k, u, total))
    return found


def scan_sums(graph):
    """Mark the results of each scan that only their sums over the steps read (see the
    module docstring). Returns True if any scan changed. Not under
    ``en.config.numerics = "bitwise"``: a reversed scan would add its steps in the other
    order than eager's sum of the stack."""
    if bitwise():
        return False
    count = 0
    for node in graph.topo_order():
        if not node.op.rules.get("summed_results") or node.params.get("summed"):
            continue
        length = node.params["length"]
        if not isinstance(length, int):
            continue
        found = [(k, u, total) for k, u, total in _summed_results(graph, node)
                 if length < MAX_STEPS or total.shape]
        if not found:
            continue
        avals = list(node.avals)
        n_carry = node.params["n_carry"]
        for k, u, total in found:
            avals[n_carry + k] = (total.shape, total.dtype)
            u.shape = total.shape
            graph.replace_all_uses_with(total, u)
            remove_node(graph, total)
        node.avals = tuple(avals)
        node.params = {**node.params, "summed": tuple(sorted(k for k, _, _ in found))}
        count += len(found)
    if count:
        graph.notes.append(f"summed {count} scan results in their loops")
    return bool(count)
