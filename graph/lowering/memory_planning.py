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
(the kernel op's ``may_overwrite`` rule: it reads the input only before writing the
result).

The walk along the schedule settles each planned value's lifetime (a chain of
in-place values shares one); byte buffers are then given to the lifetimes,
the largest first, so a small value kept long never pins a large buffer.

:func:`plan_memory` computes a :class:`MemoryPlan` and changes nothing; the pass
:func:`memory_planning` keeps it as ``graph.memory_plan``, which lowering takes
as an argument (``codegen.lower(graph, plan=...)``).
"""
import bisect

import numpy as np

from engine.backend import NUMPY

from . import concat_in_place
from ..ir.graph import Node
from ..ir.graph_ops import unpack_op
from ..ir.queries import fresh_results, nbytes, static_shape


class MemoryPlan:
    """Byte buffers, the typed views the planned values live in, which node writes
    into which view, and the figures ``memory_report`` shows.

    ``buffer_of[node]`` is the view a single-result node writes into (``out=``);
    ``out_buffers_of[node]`` gives a multi-output kernel a view index, or None, per
    result (``out=(...)``). Nodes in neither allocate their results.
    """

    def __init__(self, slots, views, buffer_of, out_buffers_of, unplanned_peak, planned_bytes,
                 inplace):
        self.slots = slots                  # [bytes] one per buffer
        self.views = views                  # [(slot, shape, dtype)] one per planned value
        self.buffer_of = buffer_of          # {node: view index}
        self.out_buffers_of = out_buffers_of  # {node: (view index or None, ...)}
        self.planned = len(views)           # number of nodes writing into buffers
        self.unplanned_peak = unplanned_peak
        self.planned_bytes = planned_bytes  # bytes the planned nodes would allocate unplanned
        self.inplace = inplace
        # The in-place concatenations this plan was made for (memory_planning), or None.
        self.placement = None

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
            acc: set[Node] = set()
            for i in node.inputs:
                acc |= roots[i]
            roots[node] = frozenset(acc)
    return roots


def _unplanned_peak(order, last_use, outputs, roots):
    live, peak = 0, 0
    dying: dict[int, list[Node]] = {}     # step -> the values last used there
    for n, i in last_use.items():
        dying.setdefault(i, []).append(n)

    def fresh(node):
        return roots[node] == {node} and static_shape(node.shape)
    # A multi-output kernel makes all its results where it runs, not at the unpacks.
    position = {n: i for i, n in enumerate(order)}
    born: dict[int, list[Node]] = {}      # step -> the values made there
    for i, node in enumerate(order):
        if fresh(node):
            at = position[node.inputs[0]] if node.op is unpack_op else i
            born.setdefault(at, []).append(node)
    for i in range(len(order)):
        for b in born.get(i, ()):
            live += nbytes(b.shape, b.dtype)
            peak = max(peak, live)
        for d in dying.get(i, ()):
            if fresh(d) and d not in outputs:
                live -= nbytes(d.shape, d.dtype)
    return peak


def _assign_slots(lifetimes):
    """Byte buffers for the ``lifetimes`` (``[bytes, first, last]`` schedule positions
    each): the slot per lifetime and the size per slot. The largest lifetimes are placed
    first, each in the smallest buffer free for its whole span, else a new one (the
    "greedy by size" planner of TFLite). Placed along the schedule instead, a small value
    kept long (a checkpointed block's narrow input) took a large buffer that happened to be
    free and pinned it, and the large values after it needed new ones."""
    slot_of: list[int | None] = [None] * len(lifetimes)
    slot_bytes: list[int] = []      # per slot: its size,
    spans: list[list[tuple[int, int]]] = []     # and its (first, last) spans, sorted
    for k in sorted(range(len(lifetimes)), key=lambda k: (-lifetimes[k][0], lifetimes[k][1])):
        need, first, last = lifetimes[k]
        # Slots are made largest first, so the last one free is the smallest that fits.
        slot = next((s for s in reversed(range(len(slot_bytes)))
                     if not _overlaps(spans[s], first, last)), None)
        if slot is None:
            slot = len(slot_bytes)
            slot_bytes.append(need)
            spans.append([])
        bisect.insort(spans[slot], (first, last))
        slot_of[k] = slot
    return slot_of, slot_bytes


def _overlaps(spans, first, last):
    """Whether ``[first, last]`` meets one of the disjoint sorted ``spans``: only the last
    span starting at or before ``last`` can."""
    k = bisect.bisect_right(spans, (last, float("inf"))) - 1
    return k >= 0 and spans[k][1] >= first


class _Liveness:
    """What the schedule ``order`` says about each fresh value: the nodes whose arrays
    may be (views of) it (``roots``), where it is read last (``last_use``), the values
    that die at each position (``dying``), and those that must never live in a reused
    buffer because the caller or a side effect may keep them (``escaping``)."""

    def __init__(self, graph, order, unplanned=frozenset()):
        self.unplanned = unplanned
        self.roots = roots = _roots(order)
        self.last_use: dict[Node, int] = {}
        last_use = self.last_use
        for i, node in enumerate(order):
            for inp in node.inputs:
                for r in roots[inp]:
                    last_use[r] = max(last_use.get(r, -1), i)
        self.escaping = escaping = set()
        for out in graph.outputs:
            escaping |= roots[out]
        for node in order:
            if node.side_effects or (node.op.multiple_results and not fresh_results(node)):
                for inp in node.inputs:
                    escaping |= roots[inp]
        self.dying: dict[int, list[Node]] = {}     # step -> the values last used there
        for r, i in last_use.items():
            self.dying.setdefault(i, []).append(r)

    def plannable(self, node):
        """A single-result node that may write into a planned buffer."""
        return (node.op.out_impl is not None and node.avals is None and
                static_shape(node.shape) and node not in self.escaping and
                not node.side_effects and node not in self.unplanned)


class _Buffers:
    """Lifetimes handed out along the schedule: a value starts a lifetime of its own, or
    continues the one of an input that dies where it is made (in place), and ends it when
    it dies. :func:`_assign_slots` then gives the lifetimes byte buffers."""

    def __init__(self, live):
        self.live = live
        self.lifetimes = []     # [bytes, first, last]: the largest value, schedule span
        self.views = []         # per planned value: (lifetime, shape, dtype)
        self.lifetime_of = {}
        self.released = set()
        self.inplace = 0
        self.planned_bytes = 0

    def reuse_dying(self, i, reader, key, candidates):
        """In place: the lifetime of a planned input among ``candidates`` that dies at
        ``reader`` (the node at position ``i``) and has the shape and dtype ``key``, or
        None. No other input of ``reader`` may be a view of it."""
        roots, last_use = self.live.roots, self.live.last_use
        for inp in candidates:
            if inp in self.lifetime_of and inp not in self.released and \
                    last_use.get(inp) == i and (tuple(inp.shape), inp.dtype) == key and \
                    all(o is inp or inp not in roots[o] for o in reader.inputs):
                self.released.add(inp)
                self.inplace += 1
                return self.lifetime_of[inp]
        return None

    def new_view(self, i, node, lifetime):
        """``node``'s value, made at position ``i``, lives in ``lifetime`` from now on;
        returns its view index."""
        need = nbytes(node.shape, node.dtype)
        span = self.lifetimes[lifetime]
        span[0] = max(span[0], need)
        self.lifetime_of[node] = lifetime
        self.views.append((lifetime, tuple(node.shape), node.dtype))
        self.planned_bytes += need
        if node not in self.live.last_use:     # nobody reads it: free at once
            self.released.add(node)
            span[2] = i
        return len(self.views) - 1

    def place(self, i, node, candidates=(), reader=None):
        """A view for ``node``'s value, made by ``reader`` (default: ``node``) at position
        ``i``: over a dying input of it among ``candidates`` when one fits, else in a
        lifetime of its own."""
        key = (tuple(node.shape), node.dtype)
        lifetime = self.reuse_dying(i, reader or node, key, candidates)
        if lifetime is None:
            lifetime = len(self.lifetimes)
            # Until it is seen to die, a value is live to the end of the schedule.
            self.lifetimes.append([0, i, float("inf")])
        return self.new_view(i, node, lifetime)

    def release_dying(self, i):
        """End the lifetimes of the values that die at position ``i`` (after it runs)."""
        for r in self.live.dying.get(i, ()):
            if r in self.lifetime_of and r not in self.released:
                self.released.add(r)
                self.lifetimes[self.lifetime_of[r]][2] = i

    def slots(self):
        """The byte buffers: their sizes, and ``(slot, shape, dtype)`` per planned value."""
        slot_of, slot_bytes = _assign_slots(self.lifetimes)
        return slot_bytes, [(slot_of[k], shape, dtype) for k, shape, dtype in self.views]


def _kernel_out_buffers(graph, i, node, buffers):
    """Views (or None) for the results of the multi-output kernel ``node``, taken at its
    position ``i``, where it writes them. A result unpacked twice is left to the kernel
    to allocate: both unpacks are one array, which one buffer's liveness would not cover."""
    out = [None] * len(node.avals)
    unpacks = [u for u in graph.data_users(node) if u.op is unpack_op]
    taken = [u.params["index"] for u in unpacks]
    may_overwrite = node.op.rules.get("may_overwrite") or {}
    for u in unpacks:
        j = u.params["index"]
        if taken.count(j) == 1 and static_shape(u.shape) and u not in buffers.live.escaping \
                and u not in buffers.live.unplanned:
            # In place over an input that dies here, where the kernel says it reads
            # that input only before it writes this result.
            out[j] = buffers.place(i, u, [node.inputs[p] for p in may_overwrite.get(j, ())],
                                   reader=node)
    return tuple(out)


def plan_memory(graph, unplanned=frozenset()):
    """The :class:`MemoryPlan` for running ``graph`` in its topological order (the graph
    is not changed); the nodes in ``unplanned`` get no buffer (they write elsewhere).

    Example:
        >>> import engine as en
        >>> from engine.graph.lowering.memory_planning import plan_memory
        >>> f = en.function(lambda x: en.exp(en.matmul(x, x)) * 2.0, passes=["cleanup"])
        >>> plan = plan_memory(f.graph_for(en.ones((4, 4))))
        >>> plan.planned, len(plan.slots), plan.inplace   # exp writes over the product
        (2, 1, 1)
    """
    order = graph.topo_order()
    live = _Liveness(graph, order, unplanned)
    buffers = _Buffers(live)
    buffer_of, out_buffers_of = {}, {}
    for i, node in enumerate(order):
        if fresh_results(node):
            views = _kernel_out_buffers(graph, i, node, buffers)
            if any(v is not None for v in views):
                out_buffers_of[node] = views
        elif live.plannable(node):
            buffer_of[node] = buffers.place(i, node, node.inputs if node.op.elementwise else ())
        buffers.release_dying(i)
    peak = _unplanned_peak(order, live.last_use, set(graph.outputs), live.roots)
    slot_bytes, views = buffers.slots()
    return MemoryPlan(slot_bytes, views, buffer_of, out_buffers_of, peak,
                      buffers.planned_bytes, buffers.inplace)


def memory_planning(graph):
    """The pass: plan the graph's buffers and keep the plan as ``graph.memory_plan`` (for
    lowering). Returns False: the graph's structure does not change.

    Concatenations whose parts the plan lets write in place (``graph/lowering/concat_in_place.py``)
    are placed first; then the graph is planned again without buffers for those parts and
    concatenations, which write into the concatenation's own array, and the plan keeps
    that placement for lowering."""
    plan = plan_memory(graph)
    placement = concat_in_place.place_concats(graph, graph.topo_order(), plan,
                                              getattr(graph, "backend", NUMPY))
    placed = placement.placed_nodes()
    if placed:
        plan = plan_memory(graph, unplanned=placed)
    plan.placement = placement   # lowering takes it, rather than placing again
    graph.memory_plan = plan
    graph.notes.append(f"{plan.planned} values in {len(plan.slots)} reused buffers "
                       f"({plan.inplace} in place)")
    return False
