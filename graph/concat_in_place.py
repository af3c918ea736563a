"""Concatenations written in place: each part's kernel writes into its slice of the result.

``concat(reshape(a, (-1,)), b, c)`` copies every part into a new array. Where
the parts are made by kernels that write into a given buffer (planned values,
used only by the concatenation; a result of a multi-output kernel counts), the lowering instead allocates the result
before the first part is made and hands each part's kernel its slice as
``out=``: the concatenation then costs nothing. L-BFGS flattens its gradients
this way every step (a 618 KB copy of the weight gradient at batch 100).

Only a result that is freshly allocated each call qualifies (not a planned
buffer, whose bytes may hold another value until the concatenation runs, and
not a graph output, which output recycling may place), of one dimension, with
parts of its dtype.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, y: en.concat([en.reshape(x @ y, (-1,)), en.sum(x, axis=0)]) + 0.0)
    >>> x = en.ones((2, 2))
    >>> f(x, x).tolist()
    [2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
"""
import numpy as np

from engine import ops
from engine.backend import NUMPY

from .graph_ops import unpack_op
from .passes.common import static_shape


class Placement:
    """Where the in-place concatenations of a lowered graph put their parts.

    ``part_of[node]``: ``(k, lo, hi, shape)``, the node writes into
    ``result k[lo:hi]`` seen as ``shape``; ``allocate_before[node]``: the results
    ``k`` to allocate before the line of ``node``; ``result_of[concat]``: ``k``.
    """

    def __init__(self):
        self.part_of = {}
        self.allocate_before = {}
        self.result_of = {}
        self.results = []        # per k: (size, dtype)
        # A part that is one result of a multi-output kernel: {kernel: {index: unpack}}.
        self.kernel_parts = {}

    def out_argument(self, node):
        return f"out={self._slice(node)}"

    def _slice(self, node):
        k, lo, hi, shape = self.part_of[node]
        return f"{result_name(k)}[{lo}:{hi}].reshape({shape!r})"

    def kernel_out_argument(self, kernel, views):
        """``out=(...)`` for a multi-output ``kernel`` one of whose results is a part:
        that result's slice, the planned buffers (or None) for the others."""
        parts = self.kernel_parts[kernel]
        return "out=(" + "".join(
            f"{self._slice(parts[j])}, " if j in parts else
            "None, " if b is None else f"_b{b}, " for j, b in enumerate(views)) + ")"

    def allocation(self, k):
        size, dtype = self.results[k]
        return f"    {result_name(k)} = _np_empty({size}, {dtype_name(k)})"


def result_name(k):
    return f"_cc{k}"


def dtype_name(k):
    return f"_cc{k}_dtype"


def _single_data_user(graph, node):
    users = graph.data_users(node)
    return users[0] if len(users) == 1 and users[0].inputs.count(node) == 1 else None


def _planned(plan, producer):
    """Whether ``producer`` writes into a planned buffer: its own, or (an unpack) the one
    its multi-output kernel is handed for that result."""
    if producer in plan.buffer_of:
        return True
    if producer.op is not unpack_op:
        return False
    views = plan.out_buffers_of.get(producer.inputs[0])
    return views is not None and views[producer.params["index"]] is not None


def _producer(graph, part, concat):
    """The node whose kernel would write ``part`` (through reshapes), or None."""
    node, user = part, concat
    while True:
        if _single_data_user(graph, node) is not user:
            return None
        if node.op is not ops.reshape_op:
            return node
        node, user = node.inputs[0], node


def place_concats(graph, order, plan, backend):
    """The :class:`Placement` for ``graph`` lowered in ``order`` under ``plan``."""
    placement = Placement()
    if plan is None or backend is not NUMPY:
        return placement
    position = {n: i for i, n in enumerate(order)}
    outputs = set(graph.outputs)
    for concat in order:
        if concat.op is not ops.concat_op or len(concat.shape) != 1 or concat in outputs or \
                concat in plan.buffer_of or not static_shape(concat.shape) or \
                concat.side_effects:
            continue
        parts, lo = [], 0
        for part in concat.inputs:
            producer = _producer(graph, part, concat)
            size = int(np.prod(part.shape)) if static_shape(part.shape) else 0
            if producer is None or not _planned(plan, producer) or producer in outputs or \
                    producer in placement.part_of or part.dtype != concat.dtype or size == 0:
                break
            parts.append((producer, lo, lo + size, tuple(producer.shape)))
            lo += size
        else:
            if lo != concat.shape[0] or len({p[0] for p in parts}) != len(parts):
                continue
            k = len(placement.results)
            placement.results.append((lo, concat.dtype))
            placement.result_of[concat] = k
            writers = []
            for producer, start, stop, shape in parts:
                placement.part_of[producer] = (k, start, stop, shape)
                if producer.op is unpack_op:   # the kernel writes it, where it runs
                    kernel = producer.inputs[0]
                    placement.kernel_parts.setdefault(kernel, {})[
                        producer.params["index"]] = producer
                    writers.append(kernel)
                else:
                    writers.append(producer)
            first = min(writers, key=position.__getitem__)
            placement.allocate_before.setdefault(first, []).append(k)
    return placement


def namespace_entries(placement):
    """The globals the lowered function needs for ``placement``."""
    entries = {"_np_empty": np.empty} if placement.results else {}
    for k, (_, dtype) in enumerate(placement.results):
        entries[dtype_name(k)] = np.dtype(dtype)
    return entries
