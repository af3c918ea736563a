"""Memory planning: give intermediate values preallocated buffers, reused across
nodes and across calls.

Liveness runs over the compiled schedule (the graph's topological order).
Views (reshape, transpose, ...) keep the buffer they look into alive. A node
gets a buffer when its op has an ``out_impl`` (a kernel that writes into a
given array, which also promises its plain ``impl`` never returns a view), its
shape is static, and its value cannot reach the caller: values that are
outputs, or views of outputs, or handed to side effects, are always freshly
allocated, so a later call never overwrites what the caller holds.
An elementwise node whose input dies at that node writes over it (in place).
A multi-output fused kernel gets one buffer per result that may have one
(each result, an ``unpack`` node, lives and dies on its own): they are taken
where the kernel runs and passed to it as ``out=(...)``; a result may take
over a dying input's buffer where the kernel says that is safe
(``node.meta["may_overwrite"]``: it reads the input only before writing the result).

The plan lives in ``graph.memory_plan``; the lowering reads ``node.meta["buffer"]``.
"""
import numpy as np

from ..graph_ops import unpack_op
from .common import fresh_results, nbytes, static_shape


class MemoryPlan:
    """Byte buffers, the typed views the planned values live in, and the figures
    ``memory_report`` shows."""

    def __init__(self, slots, views, unplanned_peak, planned_bytes, inplace):
        self.slots = slots                  # [bytes] one per buffer
        self.views = views                  # [(slot, shape, dtype)] one per planned value
        self.planned = len(views)           # number of nodes writing into buffers
        self.unplanned_peak = unplanned_peak
        self.planned_bytes = planned_bytes  # bytes the planned nodes would allocate unplanned
        self.inplace = inplace

    @property
    def buffer_bytes(self):
        return sum(self.slots)

    def allocate(self):
        """One set of buffers: a typed array per planned value (views into shared bytes)."""
        raw = [np.empty(n, np.uint8) for n in self.slots]
        return [raw[s][:nbytes(shape, dtype)].view(dtype).reshape(shape)
                for s, shape, dtype in self.views]

    @property
    def bytes_reused(self):
        return self.planned_bytes - self.buffer_bytes

    def as_dict(self):
        return {"buffers": len(self.slots), "buffer_bytes": self.buffer_bytes,
                "planned_nodes": self.planned, "bytes_reused": self.bytes_reused,
                "in_place": self.inplace, "unplanned_peak_bytes": self.unplanned_peak}


def _roots(order):
    """For each node, the set of fresh values its array may be (a view of). The
    results of a multi-output kernel are fresh values of their own."""
    roots = {}
    for node in order:
        if node.op.out_impl is not None and not node.op.multiple_results:
            roots[node] = frozenset([node])
        elif node.op is unpack_op and fresh_results(node.inputs[0]):
            roots[node] = frozenset([node])
        elif fresh_results(node):
            roots[node] = frozenset()
        else:
            acc = set()
            for i in node.inputs:
                acc |= roots[i]
            roots[node] = frozenset(acc)
    return roots


def _unplanned_peak(order, last_use, outputs, roots):
    live, peak = 0, 0
    dying = {}
    for n, i in last_use.items():
        dying.setdefault(i, []).append(n)

    def fresh(node):
        return roots[node] == {node} and static_shape(node.shape)
    # A multi-output kernel makes all its results where it runs, not at the unpacks.
    position = {n: i for i, n in enumerate(order)}
    born = {}
    for i, node in enumerate(order):
        if fresh(node):
            at = position[node.inputs[0]] if node.op is unpack_op else i
            born.setdefault(at, []).append(node)
    for i, node in enumerate(order):
        for b in born.get(i, ()):
            live += nbytes(b.shape, b.dtype)
            peak = max(peak, live)
        for d in dying.get(i, ()):
            if fresh(d) and d not in outputs:
                live -= nbytes(d.shape, d.dtype)
    return peak


def _pick_slot(free, slot_bytes, need):
    """A free buffer for ``need`` bytes: the smallest that fits, else the largest
    (grown), else a new one. Any dtype can live in any buffer: values are views."""
    if free:
        fits = [s for s in free if slot_bytes[s] >= need]
        slot = min(fits, key=lambda s: slot_bytes[s]) if fits else \
            max(free, key=lambda s: slot_bytes[s])
        free.remove(slot)
        return slot
    slot_bytes.append(0)
    return len(slot_bytes) - 1


def memory_planning(graph):
    """Assign buffers (``node.meta['buffer']``) and store ``graph.memory_plan``. Returns False:
    the graph's structure does not change."""
    order = graph.topo_order()
    roots = _roots(order)
    last_use = {}
    for i, node in enumerate(order):
        for inp in node.inputs:
            for r in roots[inp]:
                last_use[r] = max(last_use.get(r, -1), i)
    escaping = set()
    for out in graph.outputs:
        escaping |= roots[out]
    for node in order:
        if node.side_effects or (node.op.multiple_results and not fresh_results(node)):
            for inp in node.inputs:
                escaping |= roots[inp]

    def plannable(node):
        return (node.op.out_impl is not None and node.avals is None and
                static_shape(node.shape) and node not in escaping and
                not node.side_effects)

    dying = {}
    for r, i in last_use.items():
        dying.setdefault(i, []).append(r)
    slot_bytes = []     # size of each byte buffer (the largest value it ever holds)
    free = []           # slots holding no live value
    views = []          # per planned value: (slot, shape, dtype)
    slot_of = {}
    released = set()
    inplace = 0
    planned_bytes = 0
    for node in order:
        for key in ("buffer", "out_buffers"):
            node.meta.pop(key, None)

    def reuse_dying(i, node, key, candidates):
        """In place: the slot of a planned input among ``candidates`` that dies at
        ``node`` (position ``i``) and has the shape and dtype ``key``, or None."""
        nonlocal inplace
        for inp in candidates:
            if inp in slot_of and inp not in released and last_use.get(inp) == i \
                    and (tuple(inp.shape), inp.dtype) == key and \
                    all(o is inp or inp not in roots[o] for o in node.inputs):
                released.add(inp)
                inplace += 1
                return slot_of[inp]
        return None

    def new_view(node, slot):
        nonlocal planned_bytes
        need = nbytes(node.shape, node.dtype)
        slot_bytes[slot] = max(slot_bytes[slot], need)
        slot_of[node] = slot
        views.append((slot, tuple(node.shape), node.dtype))
        planned_bytes += need
        if node not in last_use:     # nobody reads it: free at once
            released.add(node)
            free.append(slot)
        return len(views) - 1

    for i, node in enumerate(order):
        if fresh_results(node):
            # The results' buffers are taken here, where the kernel writes them.
            # A result unpacked twice is left to the kernel to allocate: both
            # unpacks are one array, which one buffer's liveness would not cover.
            buffers = [None] * len(node.avals)
            unpacks = [u for u in graph.data_users(node) if u.op is unpack_op]
            taken = [u.params["index"] for u in unpacks]
            for u in unpacks:
                j = u.params["index"]
                if taken.count(j) == 1 and static_shape(u.shape) and u not in escaping:
                    # In place over an input that dies here, where the kernel says
                    # it reads that input only before it writes this result.
                    slot = reuse_dying(i, node, (tuple(u.shape), u.dtype),
                                       [node.inputs[p] for p in
                                        node.meta.get("may_overwrite", {}).get(j, ())])
                    if slot is None:
                        slot = _pick_slot(free, slot_bytes, nbytes(u.shape, u.dtype))
                    buffers[j] = new_view(u, slot)
            if any(b is not None for b in buffers):
                node.meta["out_buffers"] = tuple(buffers)
        elif plannable(node):
            key = (tuple(node.shape), node.dtype)
            need = nbytes(*key)
            slot = reuse_dying(i, node, key, node.inputs) if node.op.elementwise else None
            if slot is None:
                slot = _pick_slot(free, slot_bytes, need)
            node.meta["buffer"] = new_view(node, slot)
        for r in dying.get(i, ()):
            if r in slot_of and r not in released:
                released.add(r)
                free.append(slot_of[r])
    slots = slot_bytes
    graph.memory_plan = MemoryPlan(slots, views, _unplanned_peak(order, last_use,
                                                                 set(graph.outputs), roots),
                                   planned_bytes, inplace)
    graph.notes.append(f"{len(slot_of)} values in {len(slots)} reused buffers "
                       f"({inplace} in place)")
    return False
