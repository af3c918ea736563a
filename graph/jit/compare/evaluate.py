"""The three runs the comparison judges a graph by, each giving a value per node.

* :func:`graph_values`: the optimized, lowered graph, every intermediate kept: a copy of
  the graph whose outputs are all its values, lowered with the same kernels (fused
  regions, C and numba kernels, the lowering's kernel picks) but no memory plan, so no
  buffer is overwritten before it is read;
* :func:`traced_values`: eager mode's values, each traced node run
  through ``apply`` in eager mode (validation and the op's eager kernel) on the eager
  values of its inputs;
* :func:`traced_values` with ``fallback``: the reference, the same ops run on float64
  (complex128) values from the float64 inputs on. A node whose op refuses the wider dtype
  takes eager's value, widened.

Random draws and values of side effects come from the graph run, so all three see the
same numbers; variables read the values they had when the comparison began (restored
after each run). The bodies of control flow (``cond``, ``while_loop``, ``scan``) run op
by op in the eager and float64 runs too (:class:`EagerBody`): their compiled form would
share the graph's kernel picks.
"""
import numpy as np

from engine.modes import default_mode
from engine.recording import no_tapes
from engine.tensor import Tensor, wrap

from ...control.interpret import evaluate
from ...control.subgraph import SubGraph
from ...ir.graph_ops import (assign_variable_op, body_variables, constant_op, placeholder_op,
                             read_variable_op, unpack_op)
from ...ir.graph import Node
from ...lowering.executor import CompiledGraph
from .provenance import ORIGIN

WIDE = {np.dtype("float16"): np.dtype("float64"), np.dtype("float32"): np.dtype("float64"),
        np.dtype("complex64"): np.dtype("complex128")}


def widen(array):
    """``array`` (numpy) in float64 or complex128 when it is a narrower float or complex."""
    array = np.asarray(array)
    wide = WIDE.get(array.dtype)
    return array.astype(wide) if wide is not None else array


class VariableState:
    """The values of a graph's variables (bodies included) when the comparison began."""

    def __init__(self, graphs):
        reads, writes = body_variables(graphs)
        self.variables = {id(v): v for v in reads + writes}
        self.saved = {k: v._value for k, v in self.variables.items()}

    def restore(self):
        for k, var in self.variables.items():
            with var._lock:
                var._set(self.saved[k])


def graph_values(optimized, arrays, backend):
    """``{optimized node: value}`` for every single-result node (and each result of a
    multi-result node, as a tuple) of the optimized graph run on ``arrays``."""
    # (compiled, nodes kept, back end): lowered once per graph, reused by later comparisons.
    made = getattr(optimized, "_every_value", None)
    if made is None or made[2] is not backend:
        mapping: dict[Node, Node] = {}
        copy = optimized.copy(mapping=mapping)
        copy.backend = optimized.backend
        kept = [n for n in optimized.topo_order() if n.op is not placeholder_op]
        copy.outputs = [mapping[n] for n in kept]
        copy.written_inputs = []
        made = (CompiledGraph(copy, backend=backend, plan=None), kept, backend)
        optimized._every_value = made
    compiled, kept, _ = made
    values = dict(zip(optimized.inputs, arrays))
    values.update(zip(kept, compiled.run(list(arrays))))
    return values


def _given(node, given):
    """The graph run's value of a traced node that a re-run cannot reproduce (a random
    draw, a side effect's result), or None."""
    if node.op.random or (node.side_effects and node.op is not assign_variable_op):
        return given.get(node)
    return None


def traced_values(unoptimized, arrays, given, variables, fallback=None):
    """``{traced node: numpy value}`` from running ``unoptimized`` op by op in eager mode.

    ``given`` maps traced nodes to values taken as they are (random draws). With
    ``fallback`` (the eager run's values) this is the reference run: every float value
    is widened to float64 first, and a node whose op refuses the wide values takes its
    eager value, widened. Returns the values and the set of such nodes."""
    upcast = fallback is not None
    mode = default_mode()
    env = {}
    narrow = set()
    prepare = widen if upcast else np.asarray
    var_values: dict[int, np.ndarray] = {}
    for node, array in zip(unoptimized.inputs, arrays):
        env[node] = wrap(prepare(array))
    variables.restore()
    with no_tapes():
        for node in unoptimized.topo_order():
            if node in env:
                continue
            fixed = _given(node, given)
            if fixed is not None:
                env[node] = _wrap_tree(fixed, prepare)
                continue
            if node.op is read_variable_op:
                var = node.params["var"].var
                env[node] = wrap(prepare(var_values.get(id(var), var._value)))
                continue
            if node.op is assign_variable_op and node.params["kind"] != "scatter_update":
                env[node] = _assigned(node, env, var_values, prepare)
                continue
            if node.op is constant_op:
                env[node] = wrap(prepare(node.params["value"]))
                continue
            args = [env[i] for i in node.inputs]
            try:
                env[node] = evaluate(mode, node, args, _eager_params(node.params))
            except Exception:
                if not upcast:
                    raise
                narrow.add(node)
                env[node] = _wrap_tree(fallback[node], widen)
    variables.restore()
    return {n: _numpy_tree(v) for n, v in env.items()}, narrow


class EagerBody:
    """A control-flow body (a :class:`SubGraph`) that runs op by op in eager mode."""

    def __init__(self, body):
        self._body = body

    def __getattr__(self, name):
        return getattr(self._body, name)

    def run(self, arrays):
        mode = default_mode()
        graph = self._body.graph
        env = {n: wrap(np.asarray(a)) for n, a in zip(graph.inputs, arrays)}
        for node in graph.topo_order():
            if node not in env:
                env[node] = evaluate(mode, node, [env[i] for i in node.inputs],
                                     _eager_params(node.params))
        return tuple(_numpy_tree(env[o]) for o in graph.outputs)


def _eager_params(params):
    """``params`` with each body made an :class:`EagerBody` (None: no body in them)."""
    if not any(isinstance(v, SubGraph) for v in params.values()):
        return None
    return {k: EagerBody(v) if isinstance(v, SubGraph) else v for k, v in params.items()}


def _assigned(node, env, var_values, prepare):
    """An assignment's new value, kept for later reads, without touching the variable."""
    var = node.params["var"].var
    old = var_values.get(id(var), prepare(var._value))
    value = np.asarray(env[node.inputs[0]]._value)
    kind = node.params["kind"]
    new = value if kind == "assign" else old + value if kind == "assign_add" else old - value
    new = np.broadcast_to(new, var.shape).astype(prepare(np.zeros((), var.dtype)).dtype)
    var_values[id(var)] = new
    return wrap(np.array(new))


def _wrap_tree(value, prepare):
    if isinstance(value, (tuple, list)):
        return tuple(_wrap_tree(v, prepare) for v in value)
    return wrap(prepare(value))


def _numpy_tree(value):
    if value is None:
        return None
    if isinstance(value, Tensor):
        return np.asarray(value._value)
    if isinstance(value, (tuple, list)):
        return tuple(_numpy_tree(v) for v in value)
    return np.asarray(value)


def counterparts(optimized, values):
    """``{traced node: graph value}`` for the optimized nodes that stand for a traced node."""
    found = {}
    for node, value in values.items():
        origin = node.meta.get(ORIGIN)
        if origin is not None and origin not in found:
            found[origin] = value
    return found


def is_unpack(node):
    return node.op is unpack_op
