"""Tracing mode: the same ops, through the same ``apply``, build graph nodes.

While a function is traced, ``apply`` runs each op's ``abstract_eval`` (no
numpy kernel runs) and adds a node that remembers the user's source line.
Tapes record traced tensors exactly as they record eager ones (``apply``
records them, in every mode), so gradients taken inside a traced function
become part of the graph.

Nested tracers (the bodies of ``cond``, ``while_loop`` and ``scan``) capture
tensors of the enclosing graph as extra inputs.
"""
import numpy as np

from engine.errors import (GRADIENT_OF, DTypeError, EngineError, TracingError, format_location,
                           user_frame)
from engine.lifting import (NESTED_TYPES, WEAK_SCALAR_TYPES, as_array, holds_tensors, lift_error,
                            weak_scalar_array)
from engine.modes import Mode, current_mode, read_variable, use_mode
from engine.ops.join import stack_nested
from engine.tensor import Tensor, traced
from engine.variable import Variable, check_scatter
from engine.traced_writes import note_traced_view
from engine.writes import VIEW_OPS, capture_version

from ..control.control_flow import traced_cond
from ..passes.graph_builder import TRACE_MODE
from ..ir.graph_ops import (VarRef, assign_variable_op, body_variables, constant_op,
                        placeholder_op, read_variable_op, unpack_op)

def _located(err):
    return type(err)(f"{err}\n  at {format_location(user_frame())}")


class TraceMode(Mode):
    """The mode that turns op calls into nodes of ``self.graph``."""

    name = "trace"
    is_concrete = False

    def __init__(self, graph, parent=None):
        self.graph = graph
        self.parent = parent
        self.captures = []          # (outer tensor, inner placeholder node)
        self._captured = {}         # id(outer tensor) -> inner tensor
        self._consts = {}           # id(source object) -> (source, tensor)
        self._var_state = {}        # variable -> [last assign node, reads since]
        self._last_effect = None

    def nested(self, graph):
        """The mode tracing a body (of ``cond``, ``while_loop``, ``scan``) into ``graph``:
        it captures this trace's tensors as extra inputs."""
        return TraceMode(graph, parent=self)

    # -- inputs ---------------------------------------------------------------
    def placeholder(self, shape, dtype, name="x"):
        node = self.graph.add(placeholder_op, (), {}, (tuple(shape), np.dtype(dtype)), name=name,
                              source=user_frame())
        self.graph.inputs.append(node)
        return traced(node.shape, node.dtype, node)

    def constant(self, array, name="const", source_obj=None, backend=None):
        """A constant node; ``backend`` names the back end a captured tensor came from
        (lowering refuses it on another back end)."""
        key = id(source_obj) if source_obj is not None else None
        if key is not None and key in self._consts:
            return self._consts[key][1]
        array = np.asarray(array)
        node = self.graph.add(constant_op, (), {"value": array}, (array.shape, array.dtype),
                              name=name, source=user_frame())
        if backend is not None:
            node.meta["backend"] = backend
        t = traced(node.shape, node.dtype, node)
        if key is not None:
            self._consts[key] = (source_obj, t)
            if isinstance(source_obj, Tensor):   # a write to it later must retrace
                capture_version(source_obj)
        return t

    def _capture(self, t):
        """A tensor of an enclosing graph becomes an input of this one."""
        key = id(t)
        if key in self._captured:
            return self._captured[key]
        if self.parent is None:
            raise TracingError(
                f"a traced tensor {t._describe()} from another function's trace was used here "
                f"(at {format_location(user_frame())}); pass it as an argument or return it instead")
        outer = self.parent.lift([t])[0]
        node = self.graph.add(placeholder_op, (), {}, (t.shape, t.dtype), name="capture",
                              source=t._node.source)
        self.graph.inputs.append(node)
        inner = traced(node.shape, node.dtype, node)
        self.captures.append((outer, node))
        self._captured[key] = inner
        return inner

    def lift(self, args):
        """Turn op arguments into tensors of this graph (constants, captures, reads)."""
        out = []
        weak = False
        for a in args:
            if isinstance(a, Tensor):
                if a._value is None:
                    if a._node is None:     # (a tensor without a value is traced)
                        raise TracingError("a tensor with neither a value nor a node "
                                           "(internal error)")
                    if a._node.graph is not self.graph:
                        a = self._capture(a)
                else:   # graphs keep constants as numpy; lowering converts them
                    a = self.constant(a.numpy() if type(a) is not Tensor else a._value,
                                      source_obj=a, backend=a.backend.name)
            elif type(a) in WEAK_SCALAR_TYPES:
                weak = True
            elif isinstance(a, Variable):
                a = read_variable(a, self)
            elif type(a) in NESTED_TYPES and holds_tensors(a):   # [x, 2 * x]: a stack node
                a = self.lift([stack_nested(a)])[0]
            else:
                a = self.constant(as_array(a))
            out.append(a)
        if weak:
            others = [a.dtype for a in out if type(a) not in WEAK_SCALAR_TYPES]
            out = [self.constant(weak_scalar_array(a, others)) if type(a) in WEAK_SCALAR_TYPES
                   else a for a in out]
        return out

    # -- ops ------------------------------------------------------------------
    def apply(self, op, args, params):
        try:
            tensors = self.lift(args)
        except (DTypeError, OverflowError) as err:   # as in eager mode
            raise lift_error(op, args, err) from None
        try:
            aval = op.abstract_eval(*[(t.shape, t.dtype) for t in tensors], **params)
        except EngineError as err:
            raise _located(err) from None
        except TypeError as err:               # a keyword the op does not take
            error = op.params_error(len(tensors), params)
            if error is None:
                raise
            raise _located(error) from err
        node = self.add_node(op, [t._node for t in tensors], params, aval)
        out = self.outputs_of(node)
        if op.name in VIEW_OPS:      # numpy's view: writes through it reach the base
            note_traced_view(op, out, tensors, params)
        return out

    def cond(self, pred, true_fn, false_fn, *operands):
        return traced_cond(self, pred, true_fn, false_fn, operands)

    def add_node(self, op, inputs, params, aval, name=None):
        """Add a node for ``op`` and order it after earlier side effects when needed."""
        gradient_of = GRADIENT_OF.get()
        if gradient_of is None or gradient_of[0] is None:
            node = self.graph.add(op, inputs, params, aval, name=name, source=user_frame())
        else:                 # a node of a gradient rule: the line of the op it differentiates
            node = self.graph.add(op, inputs, params, aval, name=name, source=gradient_of[0])
            node.meta["gradient_of"] = gradient_of[1]
        if node.side_effects or op.random:
            self._order_effect(node)
        return node

    def outputs_of(self, node):
        """Traced tensors for a node's result(s) (unpack nodes for multiple results)."""
        if not node.op.multiple_results:
            return traced(node.shape, node.dtype, node)
        outs = []
        for i, aval in enumerate(node.avals):
            u = self.graph.add(unpack_op, [node], {"index": i}, aval,
                               name=f"{node.name}_{i}", source=node.source)
            outs.append(traced(u.shape, u.dtype, u))
        return tuple(outs)

    def _order_effect(self, node):
        if self._last_effect is not None:
            self.graph.add_control_dep(node, self._last_effect)
        self._last_effect = node

    # -- variables ------------------------------------------------------------
    def _use_variable(self, var):
        if not any(v is var for v in self.graph.variables):
            self.graph.variables.append(var)

    def read_variable(self, var):
        self._use_variable(var)
        node = self.graph.add(read_variable_op, (), {"var": VarRef(var)}, (var.shape, var.dtype),
                              name=_var_name(var), source=user_frame())
        state = self._var_state.setdefault(var, [None, []])
        if state[0] is not None:
            self.graph.add_control_dep(node, state[0])   # see the latest assign
        state[1].append(node)
        return traced(node.shape, node.dtype, node)

    def assign_variable(self, var, value, kind, indices=None):
        self._use_variable(var)
        if type(value) in WEAK_SCALAR_TYPES:
            value = np.asarray(value, dtype=var.dtype)
        (value,) = self.lift([value])
        inputs = [value._node]
        if kind == "scatter_update":
            (indices,) = self.lift([indices])
            try:
                check_scatter(var, (indices.shape, indices.dtype), (value.shape, value.dtype))
            except EngineError as err:
                raise _located(err) from None
            inputs.append(indices._node)
        elif value.dtype != var.dtype or (tuple(value.shape) != tuple(var.shape) and
                                          not (kind != "assign" and value.shape == ())):
            try:
                var._check_new_value(value, kind)
            except EngineError as err:
                raise _located(err) from None
        node = self.add_node(assign_variable_op, inputs, {"var": VarRef(var), "kind": kind},
                             (var.shape, var.dtype), name=f"assign_{_var_name(var)}")
        state = self._var_state.setdefault(var, [None, []])
        for read in state[1]:
            self.graph.add_control_dep(node, read)       # earlier reads see the old value
        if state[0] is not None:
            self.graph.add_control_dep(node, state[0])
        state[0], state[1] = node, []
        return var

    def order_body_variables(self, node, bodies):
        """Order a control-flow ``node`` by the variables its ``bodies`` read and assign.

        A body's reads see the latest assign made before ``node``; a body's
        assigns are seen by reads made after it (the same ordering a direct
        read or assign gets), with nested bodies included.
        """
        reads, writes = body_variables([b.graph for b in bodies])
        for var in reads:
            state = self._var_state.setdefault(var, [None, []])
            if state[0] is not None and state[0] is not node:
                self.graph.add_control_dep(node, state[0])
            state[1].append(node)
        for var in writes:
            state = self._var_state.setdefault(var, [None, []])
            for read in state[1]:
                if read is not node:
                    self.graph.add_control_dep(node, read)
            if state[0] is not None and state[0] is not node:
                self.graph.add_control_dep(node, state[0])
            state[0], state[1] = node, []

    def output_nodes(self, leaves):
        """Nodes for a traced function's flat outputs (constants for non-traced values)."""
        nodes = []
        with use_mode(self):
            for leaf in leaves:
                # numpy scalars (np.float32(0.5), np.int64, np.bool_) are 0-d arrays
                # that keep their dtype, as they would as an op's argument.
                if (isinstance(leaf, (Tensor, Variable, np.ndarray, np.number, np.bool_))
                        or type(leaf) in WEAK_SCALAR_TYPES):
                    (t,) = self.lift([leaf])
                    nodes.append(t._node)
                else:
                    raise TracingError(
                        f"a traced function returned {type(leaf).__name__} {leaf!r}; "
                        "return tensors, arrays, numbers or tuples/lists/dicts of them")
        return nodes


# Passes add nodes through this mode (graph/passes/graph_builder.py, an earlier stage).
TRACE_MODE.append(TraceMode)


def _var_name(var):
    return "var_" + "".join(c if c.isalnum() else "_" for c in str(var.name))


def is_tracing():
    """True while a function is being traced in this thread."""
    return not current_mode().is_concrete
