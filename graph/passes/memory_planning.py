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

The plan lives in ``graph.memory_plan``; the lowering reads ``node.meta["buffer"]``.
"""
from .common import has_side_effects, nbytes, static_shape


class MemoryPlan:
    """Buffer slots and the figures ``memory_report`` shows."""

    def __init__(self, slots, planned, unplanned_peak, planned_bytes, inplace):
        self.slots = slots                  # [(shape, dtype)] one per buffer
        self.planned = planned              # number of nodes writing into buffers
        self.unplanned_peak = unplanned_peak
        self.planned_bytes = planned_bytes  # bytes the planned nodes would allocate unplanned
        self.inplace = inplace

    @property
    def buffer_bytes(self):
        return sum(nbytes(s, d) for s, d in self.slots)

    @property
    def bytes_reused(self):
        return self.planned_bytes - self.buffer_bytes

    def as_dict(self):
        return {"buffers": len(self.slots), "buffer_bytes": self.buffer_bytes,
                "planned_nodes": self.planned, "bytes_reused": self.bytes_reused,
                "in_place": self.inplace, "unplanned_peak_bytes": self.unplanned_peak}


def _roots(order):
    """For each node, the set of fresh values its array may be (a view of)."""
    roots = {}
    for node in order:
        if node.op.out_impl is not None:
            roots[node] = frozenset([node])
        else:
            acc = set()
            for i in node.inputs:
                acc |= roots[i]
            roots[node] = frozenset(acc)
    return roots


def _unplanned_peak(order, last_use, outputs):
    live, peak = 0, 0
    dying = {}
    for n, i in last_use.items():
        dying.setdefault(i, []).append(n)
    for i, node in enumerate(order):
        if node.op.out_impl is not None and static_shape(node.shape):
            live += nbytes(node.shape, node.dtype)
            peak = max(peak, live)
        for d in dying.get(i, ()):
            if d.op.out_impl is not None and static_shape(d.shape) and d not in outputs:
                live -= nbytes(d.shape, d.dtype)
    return peak


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
        if has_side_effects(node) or node.op.multiple_results:
            for inp in node.inputs:
                escaping |= roots[inp]

    def plannable(node):
        return (node.op.out_impl is not None and node.avals is None and
                static_shape(node.shape) and node not in escaping and
                not has_side_effects(node))

    dying = {}
    for r, i in last_use.items():
        dying.setdefault(i, []).append(r)
    free = {}
    slots = []
    slot_of = {}
    released = set()
    inplace = 0
    planned_bytes = 0
    for node in order:
        node.meta.pop("buffer", None)
    for i, node in enumerate(order):
        if plannable(node):
            key = (tuple(node.shape), node.dtype)
            pool = free.setdefault(key, [])
            if node.op.elementwise:
                # In place: a planned input that dies here, with our shape and dtype.
                for inp in node.inputs:
                    if inp in slot_of and inp not in released and last_use.get(inp) == i \
                            and (tuple(inp.shape), inp.dtype) == key and \
                            all(o is inp or inp not in roots[o] for o in node.inputs):
                        released.add(inp)
                        pool.append(slot_of[inp])
                        inplace += 1
                        break
            if pool:
                slot = pool.pop()
            else:
                slot = len(slots)
                slots.append(key)
            slot_of[node] = slot
            node.meta["buffer"] = slot
            planned_bytes += nbytes(*key)
            if node not in last_use:     # nobody reads it: free at once
                released.add(node)
                pool.append(slot)
        for r in dying.get(i, ()):
            if r in slot_of and r not in released:
                released.add(r)
                free[(tuple(r.shape), r.dtype)].append(slot_of[r])
    graph.memory_plan = MemoryPlan(slots, len(slot_of), _unplanned_peak(order, last_use,
                                                                       set(graph.outputs)),
                                   planned_bytes, inplace)
    graph.notes.append(f"{len(slot_of)} values in {len(slots)} reused buffers "
                       f"({inplace} in place)")
    return False
