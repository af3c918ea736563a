"""One traced signature of an ``en.function``: its graph, compiled code and gradient."""
import contextlib
import gc
import weakref

import numpy as np

from engine import dtypes, ops
from engine.autodiff import GradientTape
from engine.backend import NUMPY, mismatch
from engine.config import config
from engine.cost_model import cost
from engine.errors import EngineError
from engine.modes import default_mode, read_variable, use_mode
from engine.pytree import LEAF, flatten, unflatten
from engine.recording import TapeRule, active_tapes, no_tapes, record
from engine.tensor import Tensor
from engine.writes import VIEW_OPS, adopt_result, adopt_value, setitem
from engine.variable import Variable

from ..lowering.executor import CompiledGraph, wrap_outputs
from ..ir.graph import Graph, Node
from ..ir.graph_ops import assign_variable_op, body_variables, read_variable_op
from ..control.interpret import interpret, replay_nodes
from ..lowering.pipeline import DEFAULT_PIPELINE, optimize
from ..lowering.memory_planning import plan_memory
from .residuals import split_backward, variable_read_sources
from .tracer import TraceMode


# Written inputs whose write-back the generated entry does itself (it compares every
# pair of their arrays: 28 tests for 8); more go through finish_writing's loop.
_INLINE_WRITES = 8


def _out_leaf(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


def _finisher(out_dtypes, single_output, tree, backend, written=(), fresh=()):
    """``finish(results)``: tensors (on ``backend``) for the graph's output arrays, in
    the structure the function returned (the ``fresh`` ones copied). With ``written``
    inputs it is ``finish(results, inputs)``, and writes their new values (the last
    results) back."""
    def finish(results):
        outs = wrap_outputs(_copied(results, fresh), out_dtypes, backend)
        return outs[0] if single_output else unflatten(tree, outs)

    n_own = len(out_dtypes) - len(written)
    own_dtypes, written_dtypes = out_dtypes[:n_own], out_dtypes[n_own:]
    # A function that only writes (an optimizer step) returns None: no tree to rebuild.
    returns_none = n_own == 0 and unflatten(tree, []) is None

    def finish_writing(results, inputs):
        if inputs is None:       # the entry gave the written inputs their arrays itself
            if returns_none:
                return None
            return unflatten(tree, wrap_outputs(results[:n_own], own_dtypes, backend))
        if fresh:
            results = _copied(results, fresh)
        adopted: list = []
        for position, array, dt in zip(written, results[n_own:], written_dtypes):
            target = inputs[position]
            # A result array of its own memory (results that could view an input were
            # copied above) is given to the input as it is, unless this call already
            # gave it to another input; otherwise its values are written in.
            if (adopted and any(array is a for a in adopted)) or \
                    not adopt_result(target, array):
                setitem(target, Ellipsis, wrap_outputs([array], [dt], backend)[0])
            else:
                adopted.append(array)
        if returns_none:
            return None
        return unflatten(tree, wrap_outputs(results[:n_own], own_dtypes, backend))
    return finish_writing if written else finish


def _copied(results, fresh):
    if not fresh:
        return results
    results = list(results)
    for i in fresh:
        results[i] = copy_array(results[i])
    return results


def copy_array(array):
    """A copy of a result array, on its own back end."""
    copy = getattr(array, "copy", None)
    if copy is not None:
        return copy()
    namespace = array.__array_namespace__()
    return namespace.asarray(array, copy=True)


def _results_on_arguments(graph):
    """Positions of the outputs that may share an input's memory: an input itself, or
    reached from one through view ops only (numpy's views, identity)."""
    fresh = []
    for i, node in enumerate(graph.outputs):
        while node.op.name in VIEW_OPS or node.op.name == "identity":
            node = node.inputs[0]
        if node.op.name == "placeholder":
            fresh.append(i)
    return tuple(fresh)


def _write_back(outs, inputs, written, tree):
    """Store the new values of the written inputs (the last of ``outs``) into the
    caller's tensors; the function's own results, in their structure."""
    n = len(outs) - len(written)
    for position, value in zip(written, outs[n:]):
        if not adopt_value(inputs[position], value._value, inputs):
            setitem(inputs[position], Ellipsis, value)
    return unflatten(tree, outs[:n])


def _weak_method(method):
    """``method`` called through a weak reference to its object."""
    ref = weakref.WeakMethod(method)

    def call(*args):
        bound = ref()
        if bound is None:
            raise EngineError("this traced function's graph has been freed")
        return bound(*args)
    return call


@contextlib.contextmanager
def _collector_paused():
    """The cycle collector off while the passes and lowering run (engine code only:
    the user's function has been traced). Each full collection walks every live
    object, so collections during a big compile made it superlinear in op count
    (a 20,000-op gradient: 424 us per op, 277 with it off; 265 at 2,000 ops)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class ConcreteFunction:
    """The graph and compiled code for one input signature.

    Attributes: ``graph`` (what runs), ``unoptimized_graph``, ``source`` (the
    generated Python), ``report`` (what each optimization pass did).

    ``compile_function(fn, name)`` makes the ``en.function`` that the gradient
    of a call runs (``graph.jit.function.Function``, which makes these objects).
    """

    def __init__(self, fn, name, key, leaves, treedef, specs=None, passes=None,
                 compile_function=None, backend=NUMPY):
        self.python_function = fn
        self.name = name
        self.key = key
        self._leaves = leaves
        self._treedef = treedef
        self._specs = specs
        self._backward = None
        self._forward = None
        self._replay: list[Node] | None = None    # set with the forward (_replayed)
        self._saving = None         # a SavedCut once the backward is split; False: it cannot be
        self._recomputed = 0        # backward passes run by recomputing the forward
        self._passes = passes
        self._compile_function = compile_function
        self.backend = backend
        graph = Graph(name)
        graph.backend = backend     # traced tensors report it; lowering binds its kernels
        graph = self._trace(graph)
        _check_variables(graph, backend)
        self.unoptimized_graph = graph
        with _collector_paused():
            self.graph, self.report = _optimize(graph, passes, backend)
            self.compiled = CompiledGraph(self.graph, backend=backend,
                                          plan=self.graph.memory_plan, recycle_outputs=True)
        self.source = self.compiled.source
        self._out_dtypes = [o.dtype for o in self.graph.outputs]
        written = self.graph.written_inputs
        # Results that may be an argument's memory (an argument, or a view of one, once
        # the passes removed what stood between): copied, so a write to a result never
        # reaches an argument (a compiled function's results are new tensors).
        self._fresh = _results_on_arguments(self.graph)
        self._single_output = (self.graph.output_tree == LEAF and not written
                               and not self._fresh)
        # entry(tensors): the whole call on concrete tensors, one generated function.
        # guarded_entry(args): the same, checking first that args are such tensors.
        single = self._out_dtypes[0] if self._single_output else None
        n = len(self.graph.inputs)
        # What the entries call must not hold this object, which holds them: the
        # cycle would leave a dropped trace (evicted, or its en.function deleted)
        # to the cycle collector, arrays and all.
        finish = _finisher(self._out_dtypes, self._single_output, self.graph.output_tree,
                           backend, written, self._fresh)
        on_tape = _weak_method(self._on_tape)
        # The entry gives written inputs their arrays itself when no result may view an
        # input (those are copied first) and a handful are written (it tests each pair).
        own = len(self._out_dtypes) - len(written)
        inline = (written, own, own == 0 and unflatten(self.graph.output_tree, []) is None) \
            if written and not self._fresh and len(written) <= _INLINE_WRITES else None
        self.entry = self.compiled.tensor_entry(n, on_tape, finish, single,
                                                finish_takes_inputs=bool(written),
                                                written=inline)
        self.guarded_entry = None
        if specs is None:   # traced for these very shapes
            guard = [(p.shape, p.dtype) for p in self.graph.inputs]
            self.guarded_entry = self.compiled.tensor_entry(n, on_tape, finish,
                                                            single, guard,
                                                            finish_takes_inputs=bool(written),
                                                            written=inline)
        self._float_vars = [v for v in self.graph.variables
                            if v.trainable and v.dtype in dtypes.FLOATS]

    # -- tracing -----------------------------------------------------------------
    def _trace(self, graph):
        mode = TraceMode(graph)
        with no_tapes(), use_mode(mode):   # eager tapes must not see traced tensors
            args, kwargs = self._traced_arguments(mode)
            placeholders = [(t, t._node) for t in flatten((args, kwargs))[0]
                            if isinstance(t, Tensor) and t._value is None]
            result = self.python_function(*args, **kwargs)
        out_leaves, out_tree = flatten(result, is_leaf=_out_leaf)
        graph.outputs = mode.output_nodes(out_leaves)
        graph.output_tree = out_tree
        # Arguments the function wrote (x[...] = v, x += y): called eagerly it would change
        # the caller's tensors, so the graph returns their new values as extra outputs and
        # each call writes them back (PyTorch's functionalization epilogue).
        for t, node in placeholders:
            if t._node is not node:
                graph.written_inputs.append(graph.inputs.index(node))
                graph.outputs.append(t._node)
        return graph

    def _traced_arguments(self, mode, replace=None):
        """The call's arguments with tensors replaced by placeholders (or ``replace``)."""
        if self._specs is not None:
            tensors = replace or [mode.placeholder(s.shape, s.dtype, name=s.name or f"x{i}")
                                  for i, s in enumerate(self._specs)]
            return list(tensors), {}
        leaves = []
        it = iter(replace) if replace is not None else None
        i = 0
        for leaf, part in zip(self._leaves, self.key[1]):
            if part[0] == "T":
                leaves.append(next(it) if it else mode.placeholder(part[1], part[2], name=f"x{i}"))
                i += 1
            else:
                leaves.append(leaf)
        args, kwargs = unflatten(self._treedef, leaves)
        return list(args), kwargs

    def memory_report(self):
        """A dict: buffers, buffer_bytes (the planned peak of intermediates), bytes_reused,
        planned_nodes, in_place, and unplanned_peak_bytes for comparison."""
        plan = self.graph.memory_plan
        if plan is None:
            data = plan_memory(self.graph).as_dict()
            data.update(buffers=0, buffer_bytes=0, planned_nodes=0, bytes_reused=0, in_place=0,
                        note="memory planning is off for this function")
            return data
        return plan.as_dict()

    # -- running -------------------------------------------------------------------
    def __call__(self, tensors):
        for t in tensors:
            if t._value is None:
                raise EngineError(f"{self.name}: a traced tensor was passed to a compiled "
                                  "function outside of tracing")
        return self.entry(tensors)

    def _on_tape(self, tensors):
        return self._call_recorded(tensors, [t._value for t in tensors])

    # -- gradients -----------------------------------------------------------------
    def _replayed(self) -> list[Node]:
        """The nodes whose values the forward also returns (``replay_nodes``)."""
        # Found where the forward is compiled: every reader runs _forward_with_residuals
        # (or reads a split made after it) first.
        if self._replay is None:
            raise EngineError("the forward with residuals is compiled first (internal error)")
        return self._replay

    def _forward_with_residuals(self):
        """The graph again, also returning the values a backward re-run cannot
        reproduce (variable reads, random draws, effect results)."""
        if self._forward is None:
            self._replay = replay_nodes(self.unoptimized_graph)
            self._forward = self._compile_forward(self._residual_graph()[0])
        return self._forward

    def _residual_graph(self):
        """A copy of the unoptimized graph whose outputs are followed by the replayed
        nodes (``self._replay``), and those nodes in the copy."""
        mapping: dict[Node, Node] = {}
        graph = self.unoptimized_graph.copy(name=f"{self.name}_forward", mapping=mapping)
        replayed = [mapping[n] for n in self._replayed()]
        graph.outputs = graph.outputs + replayed
        return graph, replayed

    def _compile_forward(self, graph):
        """``(CompiledGraph, output dtypes)`` of a forward graph run for a tape."""
        optimized, _ = _optimize(graph, self._passes, self.backend)
        return (CompiledGraph(optimized, backend=self.backend, plan=optimized.memory_plan,
                              recycle_outputs=True),
                [o.dtype for o in optimized.outputs])

    def _call_recorded(self, tensors, arrays):
        """Run under active tapes and record the call as one op whose VJP is a compiled
        backward graph fed by this call's residuals. Once a backward has been split
        (``graph/jit/residuals.py``) the call also returns the values that backward reads,
        so nothing runs twice; before that, the backward recomputes them."""
        saving = self._saving
        compiled, dtypes_ = saving.forward if saving else self._forward_with_residuals()
        results = wrap_outputs(_copied(compiled.run(arrays), self._fresh), dtypes_,
                               self.backend)
        n = len(self.graph.outputs)
        n_res = n + len(self._replayed())
        outs, residuals, cut = results[:n], results[n:n_res], results[n_res:]
        mode = default_mode()   # the values are concrete whatever mode is current
        reads = [read_variable(v, mode) for v in self._float_vars]
        record(_call_rule(self, residuals, cut if saving else None), list(tensors) + reads,
               tuple(outs), {})
        return _write_back(outs, tensors, self.graph.written_inputs, self.graph.output_tree)

    def _all_wanted(self, inputs):
        n_in = len(inputs) - len(self._float_vars)
        return tuple(k >= n_in or x.dtype in dtypes.FLOATS for k, x in enumerate(inputs))

    def _split_backward(self, inputs, residuals, gs):
        """After a few backward passes: split the backward graph (for every gradient at once)
        so that later calls save what it reads. Leaves ``_saving`` False where the graph
        cannot be split."""
        self._saving = False
        # A trace for an input_signature serves several shapes, but the backward is
        # traced for this call's: its split would bake them in.
        if self._specs is not None or any(g is None for g in gs):
            return
        flat = list(inputs) + list(residuals) + list(gs)
        backward = self.backward_function(self._all_wanted(inputs)).get_concrete_function(*flat)
        graph = backward.unoptimized_graph
        if len(graph.inputs) != len(flat):
            return
        forward, replayed = self._residual_graph()
        assigned = _assigned_variables(forward)
        reads = variable_read_sources(forward, self._float_vars)
        reads = [None if id(v) in assigned else r for v, r in zip(self._float_vars, reads)]
        n_in = len(self.graph.inputs)
        split = split_backward(forward, graph, forward.inputs[:n_in] + reads + replayed)
        if split is None:
            return
        with _collector_paused():
            compiled = self._compile_forward(split.forward)
        self._saving = SavedCut(compiled, split.cotangent, self._all_wanted(inputs), self)

    def backward_function(self, wanted=None):
        """An ``en.function`` from (inputs, variable values, residuals, output cotangents)
        to the gradients of the float inputs and the trainable float variables.

        ``wanted`` (one bool per input, then per variable; default all) picks the
        gradients it computes and returns, in that order: an input nobody
        differentiates (an RNN cell's ``x``) costs its gradient's products otherwise.
        Each choice is its own function, made once.
        """
        if wanted is None:
            wanted = (True,) * (len(self.graph.inputs) + len(self._float_vars))
        wanted = tuple(wanted)
        if self._backward is None:
            self._backward = {}
        backward = self._backward.get(wanted)
        if backward is None:
            backward = self._backward[wanted] = self._make_backward(wanted)
        return backward

    def _make_backward(self, wanted):
        self._forward_with_residuals()
        graph = self.unoptimized_graph
        n_in = len(graph.inputs)
        variables = self._float_vars
        assigned = _assigned_variables(graph)
        replay_nodes_ = self._replayed()

        def backward(*flat):
            xs = list(flat[:n_in])
            vs = list(flat[n_in:n_in + len(variables)])
            rest = flat[n_in + len(variables):]
            residuals, gs = list(rest[:len(replay_nodes_)]), list(rest[len(replay_nodes_):])
            value_of = {id(v): t for v, t in zip(variables, vs)}
            replay = {}
            for node, r in zip(replay_nodes_, residuals):
                var = node.params["var"].var if node.op is read_variable_op else None
                if var is not None and id(var) in value_of and id(var) not in assigned:
                    r = value_of[id(var)]   # so gradients reach the variable
                replay[node] = r
            sources = [x for x, w in zip(xs, wanted) if w and x.dtype in dtypes.FLOATS] + \
                [v for v, w in zip(vs, wanted[n_in:]) if w]
            with GradientTape() as tape:
                tape.watch(sources)
                outs = interpret(graph, xs, replay)
            pairs = [(o, g) for o, g in zip(outs, gs) if o.dtype in dtypes.FLOATS]
            grads = tape.gradient([o for o, _ in pairs], sources,
                                  output_gradients=[g for _, g in pairs]) if pairs else \
                [None] * len(sources)
            return tuple(ops.zeros_like(s) if g is None else g for s, g in zip(sources, grads))

        return self._compile_function(backward, f"{self.name}_backward")


def _assigned_variables(graph):
    """The ids of the variables ``graph`` assigns."""
    return {id(n.params["var"].var) for n in graph.nodes if n.op is assign_variable_op}


class SavedCut:
    """A split backward: the forward that also returns the cut values, and the
    cotangent part (``graph/jit/residuals.py``) compiled per choice of gradients."""

    def __init__(self, forward, cotangent, all_wanted, concrete):
        self.forward = forward            # (CompiledGraph, output dtypes)
        self.cotangent = cotangent        # Graph: backward inputs, cut values -> all gradients
        self.all_wanted = all_wanted
        self._compile_function = concrete._compile_function
        self._name = f"{concrete.name}_backward"
        self._functions = {}

    def backward_function(self, wanted):
        """An ``en.function`` of (inputs, variable values, residuals, cotangents, cut
        values) returning the gradients ``wanted`` picks, in order."""
        fn = self._functions.get(wanted)
        if fn is None:
            graph = self.cotangent
            # The cotangent graph returns every gradient of all_wanted, in order.
            rank = {k: r for r, k in enumerate(k for k, a in enumerate(self.all_wanted) if a)}
            chosen = [rank[k] for k, w in enumerate(wanted) if w]

            def backward(*flat):
                outs = interpret(graph, list(flat))
                return tuple(outs[k] for k in chosen)
            fn = self._functions[wanted] = self._compile_function(backward, self._name)
        return fn


def _call_rule(concrete, residuals, cut=None):
    """The tape rule of one compiled-function call: its VJP runs the compiled backward
    graph on this call's residuals (and the cut values it saved, if any), for the
    inputs the tape needs gradients of."""
    def vjp(gs, outs, *inputs, needs):
        n_vars = len(concrete._float_vars)
        n_in = len(inputs) - n_vars
        wanted = tuple(bool(need) and (k >= n_in or x.dtype in dtypes.FLOATS)
                       for k, (x, need) in enumerate(zip(inputs, needs)))
        if not any(wanted):
            return (None,) * len(inputs)
        if cut is not None and not active_tapes():
            # First order: the saved values are constants. (An outer tape recording this
            # backward needs them as functions of the inputs: it takes the path below.)
            fn = concrete._saving.backward_function(wanted)
            grads = iter(fn(*inputs, *residuals, *gs, *cut))
        else:
            grads = iter(concrete.backward_function(wanted)(*inputs, *residuals, *gs))
            concrete._recomputed += 1
            # The backward is split once it has run cost.split_backward_after times by
            # recomputing: the split traces and compiles three more graphs, which a
            # function differentiated once or twice would never win back.
            if concrete._saving is None and \
                    concrete._recomputed >= cost.split_backward_after:
                try:
                    concrete._split_backward(inputs, residuals, gs)
                except Exception as err:   # an optimization: the gradient above stands
                    concrete._saving = False
                    concrete.split_error = f"{type(err).__name__}: {err}"
        return tuple(next(grads) if w else None for w in wanted)
    return TapeRule(f"call[{concrete.name}]", vjp, multiple_results=True, vjp_needs=True)


# The back-end capability each pass relies on (engine.backend.base.Backend): fusion
# writes block loops, the row-split product writes into out= views, memory planning
# keeps buffers between calls. A back end without it runs its kernels one by one.
_NEEDS = {"row_regions": "fused_loops", "fusion": "fused_loops", "parallel_matmul": "out_kernels",
          "chunked_products": "out_kernels",
          "memory_planning": "buffer_reuse"}


def _check_variables(graph, backend):
    """Refuse a graph for ``backend`` that reads or assigns a variable holding another
    back end's array (checked once here, so no call pays for it)."""
    reads, writes = body_variables([graph])
    for var in reads + writes:
        if var.backend is not backend:
            raise mismatch(f"graph {graph.name} (variable {var.name!r})", backend, var.backend)


def _optimize(graph, passes, backend=NUMPY):
    """Run the optimization pipeline (``passes=None``: the default one)."""
    if not all(getattr(backend, need) for need in _NEEDS.values()):
        chosen = passes if passes is not None else (config.default_passes or DEFAULT_PIPELINE)
        passes = [p for p in chosen if _supported(p, backend)]
    return optimize(graph, passes)


def _supported(p, backend):
    """Whether pass ``p`` (a function or its name) may run on ``backend``."""
    need = _NEEDS.get(getattr(p, "__name__", p))
    return need is None or getattr(backend, need)

