"""The values of a whole-graph kernel's members, written by the lowering that wrote it.

A lowering that writes whole graphs (C: ``graph/lowering/c/c_graph.py``; numba:
``graph/lowering/numba/whole_graph.py``) computes a small graph, or a scan with its time
loop, as one function: the graph run shows that function's outputs only. To say which
member is wrong, the members are rebuilt as a graph of their own whose outputs are every
member's value, and the same lowering writes and builds it (``graph_source`` and
``build_graph`` of its plug-in: the same writers, op rules and numerics); run on eager's
values of what the members read, each member's value can be judged against eager's as
the graph's nodes are. Written alone, a value the kernel kept in a register (an
elementwise op inlined into its user's loop) is stored, but it is computed by the same
expression writer, so a wrong writer shows in its member.

Example:
    >>> import numpy as np, engine as en
    >>> g = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
    >>> x = g.inputs[0]
    >>> values = member_values("numpy", g.outputs, {x: np.ones(3)})
    >>> values is None          # the numpy lowering writes no whole graphs
    True
"""
from typing import Any

import numpy as np

from ...ir.graph import Graph
from ...ir.graph_ops import constant_op, placeholder_op
from ...lowering import plugin
from ...lowering.graph_part import GraphPart


class Probe:
    """``members`` (nodes of one graph, topological order) written and built once by the
    lowering ``name`` with every member's value an output; ``run(values)`` gives
    ``{member: value}`` from ``values`` (``{outside node: array}``). ``built`` is False
    where the lowering cannot write or build them (no verdict: the caller keeps what it
    knew)."""

    def __init__(self, name, members):
        # Array constants are read as inputs (as a compiled part takes them).
        self.members = [m for m in members if not _array_constant(m)]
        self.outside = _outside(self.members)
        self.run_fn: Any = None
        lowering = plugin.registered().get(name)
        if lowering is None or not lowering.writes_graphs or not lowering.available():
            return
        graph = Graph(f"probe_{name}")
        copies = {}
        for i in self.outside:
            copies[i] = graph.add(placeholder_op, (), {}, (tuple(i.shape), i.dtype),
                                  name=i.name)
        graph.inputs = [copies[i] for i in self.outside]
        for m in self.members:
            aval = m.avals if m.avals is not None else (m.shape, m.dtype)
            copies[m] = graph.add(m.op, [copies[i] for i in m.inputs], m.params, aval,
                                  name=m.name, source=m.source)
        self.kept = [m for m in self.members if m.avals is None and m.op is not constant_op]
        graph.outputs = [copies[m] for m in self.kept]
        # A piece: the lowering writes it whatever its size (a whole graph it may decline).
        part = GraphPart(graph, [copies[m] for m in self.members], "piece")
        by_copy = {copies[m]: m for m in self.kept}
        try:
            source = lowering.graph_source(part)
            self.run_fn = lowering.build_graph(part, source)
        except plugin.Unsupported:
            return
        self.order = [by_copy[o] for o in part.outputs]
        self.dtypes = [np.dtype(i.dtype) for i in self.outside]

    @property
    def built(self):
        return self.run_fn is not None

    def run(self, values):
        values = {**{i: i.params["value"] for i in self.outside if _array_constant(i)}, **values}
        arrays = [np.ascontiguousarray(values[i], dt) for i, dt in zip(self.outside, self.dtypes)]
        with np.errstate(all="ignore"):
            results = self.run_fn(*arrays)
        return dict(zip(self.order, results))


def member_values(name, members, values):
    """``{member: value}`` of ``members`` computed by the lowering ``name`` from ``values``
    of what they read (``{node: array}``), or None where that lowering cannot write them."""
    probe = Probe(name, members)
    return probe.run(values) if probe.built else None


def _array_constant(node):
    return node.op is constant_op and np.ndim(node.params["value"]) > 0


def _outside(members):
    """The nodes ``members`` read that are not among them, in a stable order."""
    inside = set(members)
    outside = []
    for m in members:
        for i in m.inputs:
            if i not in inside and i not in outside:
                outside.append(i)
    return outside
