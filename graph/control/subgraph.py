"""Bodies of control-flow ops (``cond`` branches, loop bodies), traced once into graphs."""
import numpy as np

from engine.backend import NUMPY
from engine.errors import ShapeError, describe_inputs
from engine.modes import read_variable, use_mode
from engine.pytree import flatten, unflatten
from engine.recording import no_tapes
from engine.tensor import Tensor
from engine.variable import Variable

from ..lowering.executor import CompiledGraph
from ..ir.graph_ops import assign_variable_op, body_variables, placeholder_op, read_variable_op
from ..ir.graph import Graph


def _leaf(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


class SubGraph:
    """``fn`` traced on inputs of the given avals, inside the trace ``parent`` (a ``TraceMode``).

    Tensors of enclosing graphs that ``fn`` uses become extra inputs
    (``captures``, outer tensors in the order the graph's extra inputs expect).
    """

    def __init__(self, fn, in_avals, in_tree, name, parent):
        self.name = name
        graph = Graph(name)
        graph.backend = parent.graph.backend   # the enclosing graph's
        mode = parent.nested(graph)
        with no_tapes(), use_mode(mode):
            phs = [mode.placeholder(shape, dtype, name=f"{name}_in{i}")
                   for i, (shape, dtype) in enumerate(in_avals)]
            result = fn(*unflatten(in_tree, phs))
            out_leaves, self.out_tree = flatten(result, is_leaf=_leaf)
        graph.outputs = mode.output_nodes(out_leaves)
        graph.output_tree = self.out_tree
        self.graph = graph
        self.captures = [outer for outer, _ in mode.captures]
        self.out_avals = tuple((o.shape, o.dtype) for o in graph.outputs)
        self.has_side_effects = any(n.side_effects for n in graph.nodes)
        self.variables = list(graph.variables)
        self.assigned = [n.params["var"].var for n in graph.nodes if n.op is assign_variable_op]
        self.replay = []    # nodes whose forward values a backward re-run reuses (scan)
        self._compiled = None
        for var in self.variables:
            parent._use_variable(var)

    def run(self, arrays):
        if self._compiled is None:
            # Bodies read back by en.load have no back end of their own: numpy.
            backend = getattr(self.graph, "backend", NUMPY)
            self._compiled = CompiledGraph(self.graph, backend=backend)
        return self._compiled.run(arrays)

    def __repr__(self):
        return f"<subgraph {self.name}: {len(self.graph)} nodes>"


def hoist_invariant_reads(parent, bodies):
    """Read, in the enclosing trace ``parent``, the variables that ``bodies`` (the
    bodies of one control-flow construct) read but none of them assigns; each body
    takes the value as a capture instead of reading it itself.

    The value is the same either way (nothing in the construct writes the variable),
    but a read inside a body is invisible to the tapes recording the enclosing
    trace, so a gradient with respect to the variable through a ``scan`` or ``cond``
    was lost (None). Read outside, the variable's read is recorded like any other
    and its cotangent flows back through the construct's captures. Variables a body
    assigns are still read inside, where each iteration must see the last write.
    """
    reads, writes = body_variables([b.graph for b in bodies])
    written = {id(v) for v in writes}
    for var in reads:
        if id(var) in written:
            continue
        outer = None
        for body in bodies:
            graph = body.graph
            nodes = [n for n in graph.nodes
                     if n.op is read_variable_op and n.params["var"].var is var]
            if not nodes:
                continue   # read only in a nested body, which writes it: left there
            if outer is None:
                outer = read_variable(var, parent)
            node = graph.add(placeholder_op, (), {}, (var.shape, var.dtype),
                             name="capture", source=nodes[0].source)
            graph.inputs.append(node)
            body.captures.append(outer)
            for n in nodes:
                graph.replace_all_uses_with(n, node)
                graph.erase(n)
            if not any(n.op is read_variable_op and n.params["var"].var is var
                       for n in graph.nodes):
                graph.variables = [v for v in graph.variables if v is not var]
            body.variables = list(graph.variables)


def check_same_outputs(what, a, b, name_a, name_b):
    """Two traced bodies must return the same structure, shapes and dtypes."""
    if a.out_tree != b.out_tree:
        raise ShapeError(f"{what}: {name_a} and {name_b} return different structures "
                         f"({a.out_tree} vs {b.out_tree})")
    for i, (x, y) in enumerate(zip(a.out_avals, b.out_avals)):
        if tuple(x[0]) != tuple(y[0]) or x[1] != y[1]:
            raise ShapeError(f"{what}: output {i} of {name_a} is {describe_inputs([x])} but "
                             f"{name_b} gives {describe_inputs([y])}")
