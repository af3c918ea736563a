"""Concatenations written in place: each part's kernel writes into its slice of the result.

``concat(reshape(a, (-1,)), b, c)`` copies every part into a new array. Where
the parts are made by kernels that write into a given buffer (planned values; a
result of a multi-output kernel counts), the lowering instead allocates the
result before the first part is made and hands each part's kernel its slice as
``out=``: the concatenation then costs nothing, and whatever else reads a part
reads it there. L-BFGS flattens its gradients this way every step (a 618 KB copy
of the weight gradient at batch 100); an unrolled RNN writes each step's state
into the stack of states its loss and its weight gradient read.

A concatenation (``concat`` or ``stack``) along the leading axis qualifies: each
part is then one run of the result's elements. The result is a fresh array every
call (where the memory plan gave the concatenation a buffer, that buffer may hold
another value until the concatenation's own line, after its parts are written),
never a graph output (output recycling may place those). A part or two that no
kernel can write in place (a graph input, a part placed in another
concatenation) is copied in where the concatenation runs. Two concatenations of
one run of parts share one result: ``concat(h_0, ..., h_{T-1})`` and
``stack(h_1, ..., h_T)`` are two views of ``h_0, ..., h_T`` written once.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, y: en.concat([en.reshape(x @ y, (-1,)), en.sum(x, axis=0)]) + 0.0)
    >>> x = en.ones((2, 2))
    >>> f(x, x).tolist()
    [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
"""
import numpy as np

from engine import ops

from ..ir.graph import Node
from ..ir.graph_ops import unpack_op
from ..ir.queries import static_shape


class Placement:
    """Where the in-place concatenations of a lowered graph put their parts.

    ``part_of[node]``: ``(k, lo, hi, shape)``, the node writes into
    ``result k[lo:hi]`` seen as ``shape``; ``allocate_before[node]``: the results
    ``k`` to allocate before the line of ``node``; ``result_of[concat]``: ``(k, lo)``,
    the concatenation is ``result k`` from element ``lo`` on.
    """

    def __init__(self):
        self.part_of = {}
        self.allocate_before = {}
        self.result_of = {}
        self.results = []        # per k: [size, dtype]
        # Per concatenation, the parts no kernel writes in place: ``(part, lo, hi)``,
        # copied into ``result k[lo:hi]`` where the concatenation runs.
        self.copies_of = {}
        # A part that is one result of a multi-output kernel: {kernel: {index: unpack}}.
        self.kernel_parts = {}
        self.last_of = {}        # per k: the concatenation after which it is dropped
        self._units = {}

    def placed_nodes(self):
        """The nodes that write into a result here (parts, and the unpacks of kernels'
        parts) and the concatenations that are views of one: they need no buffers."""
        return frozenset(self.part_of) | frozenset(self.result_of)

    def out_argument(self, node):
        return f"out={self._slice(node)}"

    def _slice(self, node):
        k, lo, hi, shape = self.part_of[node]
        return self._run(k, lo, hi, shape)

    def _unit(self, k):
        """The one shape of every part of result ``k`` when each starts at a multiple of
        its size (then the result is allocated as a stack of them, and a part is one
        index into it, 0.15 us where a slice and a reshape take 0.4), else None."""
        if not self._units:          # every result's at once: the placement is complete
            runs: dict[int, list] = {}     # k -> [(start, shape)] of its parts and copies
            for kk, lo, _, shape in self.part_of.values():
                runs.setdefault(kk, []).append((lo, tuple(shape)))
            for concat, (kk, _) in self.result_of.items():
                for part, lo, _ in self.copies_of.get(concat, ()):
                    runs.setdefault(kk, []).append((lo, tuple(part.shape)))
            for kk, found in runs.items():
                shapes = {shape for _, shape in found}
                unit = shapes.pop() if len(shapes) == 1 else None
                size = int(np.prod(unit)) if unit is not None else 0
                if not size or any(lo % size for lo, _ in found) or self.results[kk][0] % size:
                    unit = None
                self._units[kk] = unit
        return self._units.get(k)

    def _run(self, k, lo, hi, shape):
        """Elements ``lo:hi`` of result ``k``, seen as ``shape``."""
        name, unit = result_name(k), self._unit(k)
        if unit is not None:
            size = int(np.prod(unit))
            if hi - lo == size and tuple(shape) == unit:
                # A 0-d part needs the trailing ``...``: a plain index into a 1-d
                # array gives a numpy scalar, not a view a kernel can write into.
                return f"{name}[{lo // size}{', ...' if unit == () else ''}]"
            run = f"{name}[{lo // size}:{hi // size}]"
        else:
            run = f"{name}[{lo}:{hi}]"
        return f"{run}.reshape({tuple(shape)!r})"

    def kernel_out_argument(self, kernel, views):
        """``out=(...)`` for a multi-output ``kernel`` one of whose results is a part:
        that result's slice, the planned buffers (or None) for the others."""
        parts = self.kernel_parts[kernel]
        views = views or (None,) * len(kernel.avals)
        return "out=(" + "".join(
            f"{self._slice(parts[j])}, " if j in parts else
            "None, " if b is None else f"_b{b}, " for j, b in enumerate(views)) + ")"

    def concat_lines(self, concat, target, names):
        """The statements of ``concat``: its copied parts, then ``target`` takes its run of
        the result (the whole array where it is the whole, else a view in its shape)."""
        k, lo = self.result_of[concat]
        name = result_name(k)
        lines = [f"    {self._run(k, a, b, part.shape)}[...] = {names[part]}"
                 for part, a, b in self.copies_of.get(concat, ())]
        size, shape = int(np.prod(concat.shape)), tuple(concat.shape)
        if (lo, size) == (0, self.results[k][0]) and len(shape) == 1 and self._unit(k) is None:
            value = name
        elif (lo, size) == (0, self.results[k][0]):
            value = f"{name}.reshape({shape!r})"
        else:
            value = self._run(k, lo, lo + size, shape)
        # The allocation's own name is dropped with the last view: a variable's assign
        # takes an array held once as is.
        drop = f"; del {name}" if self.last_of[k] is concat else ""
        return lines + [f"    {target} = {value}{drop}"]

    def allocation(self, k):
        size, _ = self.results[k]
        unit = self._unit(k)
        shape = size if unit is None else (size // int(np.prod(unit)),) + unit
        return f"    {result_name(k)} = _np_empty({shape!r}, {dtype_name(k)})"


def result_name(k):
    return f"_cc{k}"


def dtype_name(k):
    return f"_cc{k}_dtype"


def _planned(plan, producer):
    """Whether ``producer`` writes into a planned buffer: its own, or (an unpack) the one
    its multi-output kernel is handed for that result."""
    if producer in plan.buffer_of:
        return True
    if producer.op is not unpack_op:
        return False
    views = plan.out_buffers_of.get(producer.inputs[0])
    return views is not None and views[producer.params["index"]] is not None


def _producer(part):
    """The node whose kernel would write ``part`` (through reshapes, which are views)."""
    node = part
    while node.op is ops.reshape_op:
        node = node.inputs[0]
    return node


def _leading_join(node):
    """Whether ``node`` joins its inputs along axis 0 (a concat or stack): then each part
    is one run of the result's elements in C order."""
    if node.op not in (ops.concat_op, ops.stack_op) or not static_shape(node.shape):
        return False
    axis = node.params.get("axis", 0)
    return len(node.shape) > 0 and axis % len(node.shape) == 0


def place_concats(graph, order, plan, backend):
    """The :class:`Placement` for ``graph`` lowered in ``order`` under ``plan``."""
    placement = Placement()
    if plan is None or not backend.buffer_reuse:
        return placement
    position = {n: i for i, n in enumerate(order)}
    outputs = set(graph.outputs)
    writers: dict[int, list[Node]] = {}      # per k: the nodes whose kernels write its parts
    for concat in order:
        if not _leading_join(concat) or concat in outputs or concat.side_effects:
            continue
        runs = _runs(concat, plan, placement, outputs)
        if runs is None:
            continue
        k, lo, parts, copies = _result_for(concat, runs, placement)
        if k is None:
            continue
        placement.result_of[concat] = (k, lo)
        placement.copies_of[concat] = copies
        placement.last_of[k] = concat
        for producer, start, stop, shape in parts:
            placement.part_of[producer] = (k, start, stop, shape)
            if producer.op is unpack_op:   # the kernel writes it, where it runs
                kernel = producer.inputs[0]
                placement.kernel_parts.setdefault(kernel, {})[producer.params["index"]] = producer
                writers.setdefault(k, []).append(kernel)
            else:
                writers.setdefault(k, []).append(producer)
    for k, nodes in writers.items():
        first = min(nodes, key=position.__getitem__)
        placement.allocate_before.setdefault(first, []).append(k)
    return placement


def _runs(concat, plan, placement, outputs):
    """Per part of ``concat``: ``(part, producer or None, size)``, the producer where its
    kernel can write the part in place or where it is placed already; None if a part
    has no static shape or another dtype."""
    runs, fresh = [], set()
    for part in concat.inputs:
        if not static_shape(part.shape) or part.dtype != concat.dtype:
            return None
        producer = _producer(part)
        placeable = producer in placement.part_of or (
            _planned(plan, producer) and producer not in outputs and producer not in fresh)
        if placeable and producer not in placement.part_of:
            fresh.add(producer)
        runs.append((part, producer if placeable else None, int(np.prod(part.shape))))
    return runs


def _result_for(concat, runs, placement):
    """``(k, lo, parts, copies)``: where ``concat`` goes, its parts to write in place and
    the ones to copy; k None where it stays a kernel. A concatenation whose leading
    parts are already the end of a result in order extends that result."""
    k, lo, offset, start = None, 0, 0, 0
    first = runs[0][1]
    if first is not None and first in placement.part_of:
        k, lo = placement.part_of[first][:2]
        offset = lo
        while start < len(runs) and runs[start][1] in placement.part_of and \
                placement.part_of[runs[start][1]][:2] == (k, offset):
            offset = placement.part_of[runs[start][1]][2]
            start += 1
        if offset != placement.results[k][0]:
            return None, 0, [], []       # not the result's end: a copy of its own
    parts, copies = [], []
    for part, producer, size in runs[start:]:
        if producer is not None and producer not in placement.part_of and size:
            parts.append((producer, offset, offset + size, tuple(producer.shape)))
        elif size:
            copies.append((part, offset, offset + size))
        offset += size
    # Copying a part or two keeps the rest in place; more would cost more calls than
    # the one concatenation they replace.
    if len(copies) > 2 or len(copies) >= len(parts) + start or not (parts or start) or \
            (k is not None and placement.results[k][1] != concat.dtype):
        return None, 0, [], []
    if k is None:
        k = len(placement.results)
        placement.results.append([0, concat.dtype])
    placement.results[k][0] = offset
    return k, lo, parts, copies


def namespace_entries(placement):
    """The globals the lowered function needs for ``placement``."""
    entries = {"_np_empty": np.empty} if placement.results else {}
    for k, (_, dtype) in enumerate(placement.results):
        entries[dtype_name(k)] = np.dtype(dtype)
    return entries
