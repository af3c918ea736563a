"""Graph outputs written into the arrays the previous call returned, once released.

Memory planning never gives an output a reused buffer: the caller keeps what a
call returns, and a later call must not overwrite it. So every large output
was a fresh array each call, and for a big one that costs more than the
arithmetic: the allocator maps new pages (arrays past glibc's mmap threshold,
32 MiB at most, are mapped fresh every time) and the kernel faults and zeroes
them. The per-example weight gradients of a 784-100-10 MLP at batch 256 are
one (256, 784, 100) float32 output, 80 MB: its outer products took 20-24 ms
into fresh memory against 14-16 ms into an array written before (numpy alone,
measured interleaved on the loaded 2-core machine).

Eager mode recycles freed arrays (``eager/buffer_cache.py``); a graph does it
for its outputs here. The lowered function keeps, per large output, the array
it returned last time. On the next call, when nothing else refers to that
array any more (no tensor, view, or user reference: its reference count is the
function's own, measured once by :func:`_calibrate`), the output's kernel
writes into it (the op's ``out_impl``, which computes what ``impl`` does);
otherwise it allocates as before. The results are the same bits either way.

What it costs: each compiled graph holds its last large outputs until its next
call (or until the trace is dropped), even after the caller let them go.
``en.config.recycle_graph_outputs = False`` turns it off (read when a graph is
lowered).

Example:
    >>> import weakref
    >>> import engine as en
    >>> f = en.function(lambda x: x * 2.0)
    >>> x = en.ones((256, 256))                  # 512 KiB of float64
    >>> first = weakref.ref(f(x).numpy().base)   # the result is released at once...
    >>> f(x).numpy().base is first()             # ...so the next call writes into it
    True
    >>> kept = f(x)
    >>> f(x).numpy().base is kept.numpy().base   # a result still held is never touched
    False
"""
import sys
from typing import Any

import numpy as np

from engine.config import config
from engine.cost_model import cost

from ..ir.graph_ops import constant_op, placeholder_op
from ..ir.queries import nbytes, static_shape

# The names the lowered function uses (codegen keeps node names off them).
PREV = "_prev"          # the local holding the previous array
HELD = "_held"          # list: the array each recycled output returned last
REFS = "_refcount"      # sys.getrefcount
BASE = "_free_refs"     # the count of an array nobody else refers to


def recyclable_outputs(graph, plan, backend):
    """The graph's outputs that may be written into their previous arrays, in output
    order: single-result nodes of an op with an ``out_impl``, of a static shape of at
    least ``en.config.cost.recycle_min_bytes``, that are not inputs, constants or planned
    buffers."""
    if not config.recycle_graph_outputs or not backend.buffer_reuse or _BASELINE <= 0:
        return []
    planned = set(plan.buffer_of) if plan is not None else set()
    found = []
    for node in dict.fromkeys(graph.outputs):
        if node.op in (placeholder_op, constant_op) or node.op.out_impl is None or \
                node.op.multiple_results or node.avals is not None or node in planned or \
                node.side_effects or not static_shape(node.shape):
            continue
        # Smaller outputs are left to the allocator: below glibc's default mmap
        # threshold it reuses their memory itself.
        if nbytes(node.shape, node.dtype) >= cost.recycle_min_bytes:
            found.append(node)
    return found


def namespace_entries(n):
    """The globals the lowered function needs for ``n`` recycled outputs."""
    return {HELD: [None] * n, REFS: sys.getrefcount, BASE: _BASELINE}


def statement(k, target, out_call, fresh_call):
    """The lines computing recycled output number ``k`` into ``target``: ``out_call``
    (writing into ``_prev``, the array it returned last) where that is free, else
    ``fresh_call``."""
    return [f"    {PREV} = {HELD}[{k}]",
            f"    if {PREV} is not None and {REFS}({PREV}) == {BASE}:",
            f"        {target} = {out_call}",
            "    else:",
            f"        {target} = {fresh_call}",
            f"    {HELD}[{k}] = {target}",
            f"    del {PREV}"]


def _calibrate():
    """The reference count of an array held only by ``HELD``, where the generated code
    asks (the list, the ``_prev`` local and the call's argument in CPython 3.11),
    measured with the same expression in a function of the same shape. 0 (never
    recycle) if one more reference does not show as one more."""
    namespace: dict[str, Any] = {HELD: [np.empty(1)], REFS: sys.getrefcount}
    exec(compile(f"def probe():\n    {PREV} = {HELD}[0]\n    return {REFS}({PREV})\n",
                 "<output recycling probe>", "exec"), namespace)
    probe = namespace.pop("probe")
    alone = probe()
    other = namespace[HELD][0]    # a caller's reference
    held = probe()
    del other
    return alone if held == alone + 1 else 0


_BASELINE = _calibrate()
