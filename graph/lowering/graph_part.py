"""A whole graph, or a part of it, as a lowering that writes graphs sees it.

A :class:`GraphPart` is what the policy hands a lowering's whole-graph methods
(``graph/lowering/plugin.py``): a whole graph (``kind`` "graph": every node that computes,
when none has side effects), one piece of a graph too long to build at once ("piece"),
or one loop with the nodes that unpack its results ("scan"). Where the lowering writes and
builds it, :meth:`GraphPart.replace` puts one compiled node in the members' place.

Example:
    >>> import engine as en
    >>> g = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
    >>> part = GraphPart.whole(g)
    >>> part.kind, len(part.inputs), [o.op.name for o in part.outputs]
    ('graph', 1, ['mul'])
"""
import dataclasses
from typing import Any

import numpy as np

from engine.op import Op

from ..ir.graph_ops import constant_op, placeholder_op, unpack_op

__all__ = ["GraphPart"]


@dataclasses.dataclass
class GraphPart:
    """``members`` (nodes of ``graph`` in topological order) to be written as one function.

    ``inputs``: the values the members read from outside (array constants among them:
    they are passed in, not written into the source); ``outputs``: the members read
    outside or returned by the graph. Both are read from the graph when the part is made,
    so a part is made just before it is written (an earlier part's replacement changes
    what the later ones read). ``meta``: what the lowering learnt writing and building it,
    copied into the compiled node's ``meta``.
    """
    graph: Any
    members: list
    kind: str = "graph"
    meta: dict = dataclasses.field(default_factory=dict)
    inputs: list = dataclasses.field(init=False)
    outputs: list = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        inside = set(self.members)
        inputs: list = []
        for m in self.members:
            for i in m.inputs:
                if i not in inside and i not in inputs:
                    inputs.append(i)
        self.inputs = inputs
        graph_outputs = set(self.graph.outputs)
        self.outputs = [m for m in self.members if not m.op.multiple_results and (
            m in graph_outputs or any(u not in inside for u in self.graph.users(m)))]

    @classmethod
    def whole(cls, graph: Any) -> "GraphPart | None":
        """Every computing node of ``graph`` as one part; None when one has side effects or
        control dependencies, or nothing computes."""
        members = []
        for node in graph.topo_order():
            if node.op is placeholder_op or _array_constant(node):
                continue
            if node.side_effects or node.control_deps:
                return None
            members.append(node)
        return cls(graph, members) if members else None

    def replace(self, run: Any, source: str, backend: str) -> Any:
        """Put one node calling ``run`` (inputs in, a tuple of the outputs' values back)
        in the members' place, with the outputs unpacked from it; returns that node."""
        graph = self.graph
        avals = [(tuple(o.shape), o.dtype) for o in self.outputs]
        op = Op("compiled_region", run, lambda *a: avals, None, multiple_results=True,
                n_inputs=len(self.inputs),
                doc=f"A {backend}-compiled region of {len(self.members)} nodes")
        last = self.members[-1]
        node = graph.add(op, list(self.inputs), {}, avals, name="compiled", source=last.source)
        node.meta["kernel_source"] = source
        node.meta["backend"] = backend
        node.meta.update(self.meta)
        for j, (out, aval) in enumerate(zip(self.outputs, avals)):
            value = graph.add(unpack_op, [node], {"index": j}, aval, name="compiled_result",
                              source=out.source)
            graph.replace_all_uses_with(out, value)
        for m in reversed(self.members):
            graph.drop_control_users(m)
            graph.erase(m)
        return node


def _array_constant(node: Any) -> bool:
    return node.op is constant_op and np.ndim(node.params["value"]) > 0
