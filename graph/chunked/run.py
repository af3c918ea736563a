"""An ``en.function`` called with chunked (Dask) tensors: once before, per chunk, once after.

The function is traced on numpy placeholders of the full shapes, the graph is
split (:mod:`.partition`), and each call runs

1. the *free* part on the client (an ``en.function``): what the chunks need
   from the parameters (variable reads, ``W.T``);
2. the *rows* part per chunk, one task per chunk, each running the engine's
   compiled code on its rows and returning the partial results of the
   reductions over rows; the back end sums (or maxes) the partials in a tree
   and sends the shared values to the workers once;
3. the *post* part on the client (an ``en.function``, all or nothing for its
   variable writes), on the combined results: the optimizer step of an
   L-BFGS iteration, the loss's last division.

So one call is one Dask computation with O(chunks) tasks.

Example:
    >>> import dask.array as da, numpy as np, engine as en
    >>> w = en.Variable(np.ones((3, 2)))
    >>> f = en.function(lambda x: en.mean(en.tanh(x @ w)))
    >>> x = en.tensor(da.from_array(np.full((10, 3), 0.1), chunks=(4, 3)))
    >>> round(float(f(x)), 6) == round(float(np.tanh(0.3)), 6)
    True
"""
import numpy as np

from engine.config import config
from engine.errors import TracingError, format_location, user_frame
from engine.numerics import bitwise
from engine.ops import transpose
from engine.modes import current_mode
from engine.pytree import LEAF, unflatten
from engine.tensor import wrap, wrap_on

from ..control.interpret import evaluate
from ..ir.queries import is_view
from .gather import gather_reductions, rows_first
from .partition import needed, partition
from .program import ChunkProgram


class ChunkedFunction:
    """One trace of an ``en.function`` for chunked arguments (see the module doc)."""

    guarded_entry = None      # the en.function's fast path never calls this trace

    def __init__(self, graph, name, tensors, compile_function):
        # ``graph``: the function traced on numpy placeholders, unoptimized (the caller,
        # en.function, traces it: this stage runs a graph and never traces one).
        self.name = name
        self._compile = compile_function
        self._row_positions = [i for i, t in enumerate(tensors) if t.backend.chunked]
        self.backend = tensors[self._row_positions[0]].backend
        self.graph = graph
        plan = self.plan = partition(graph, [graph.inputs[i] for i in self._row_positions])
        self._build(plan)

    # -- building the three parts ----------------------------------------------------
    def _build(self, plan):
        graph = plan.graph
        # Under en.config.numerics = "bitwise": sums over the rows run after the chunks,
        # on their inputs' rows gathered (gather.py).
        self._gathered = gather_reductions(plan) if bitwise() else []
        reduce_nodes = plan.nodes("reduce")
        row_outputs = [o for o in graph.outputs if plan.place[o] == "rows"]
        for o in row_outputs:
            if plan.axis[o] != 0:
                raise TracingError(f"{self.name}: a result computed per chunk must keep the "
                                   f"rows as its first axis; {o.name} has them at axis "
                                   f"{plan.axis[o]} (transpose it after the call)")
        chunk_nodes = [n for n in needed(plan, reduce_nodes + row_outputs + self._gathered)
                       if plan.place[n] in ("rows", "reduce") or n in plan.resized]
        chunk_nodes = [n for n in chunk_nodes if n not in plan.row_inputs]
        chunk_nodes = _recompute_views(plan, chunk_nodes)
        # Values the chunks take from the free part (shared, sent to workers once).
        inside = set(chunk_nodes) | set(plan.row_inputs)
        shared = []
        for n in chunk_nodes:
            for i in n.inputs:
                if i not in inside and i not in shared:
                    shared.append(i)
        post_nodes = plan.nodes("post")
        # Values the post part and the outputs take from the free part.
        post_inputs = []
        for n in post_nodes + list(graph.outputs):
            for i in (n.inputs if n in post_nodes else [n]):
                if plan.place[i] == "free" and i not in post_inputs:
                    post_inputs.append(i)
        self._shared, self._post_inputs = shared, post_inputs
        self._reduce, self._row_outputs, self._post = reduce_nodes, row_outputs, post_nodes
        free_args = [p for p in graph.inputs if p not in plan.row_inputs]
        self._free_args = free_args
        self._free_fn = self._compile(self._run_free, f"{self.name}_free")
        self._post_fn = self._compile(self._run_post, f"{self.name}_post")
        self._program = self._chunk_program(plan, chunk_nodes, shared)

    def _chunk_program(self, plan, chunk_nodes, shared):
        slot = {}
        for i, p in enumerate(plan.row_inputs):
            slot[p] = i
        for j, s in enumerate(shared):
            slot[s] = len(plan.row_inputs) + j
        steps = []

        def add_step(node, step):
            steps.append(step)
            slot[node] = len(plan.row_inputs) + len(shared) + len(steps) - 1

        for n in chunk_nodes:
            rule = plan.rule.get(n)
            op_name = rule.partial if rule is not None and rule.partial else n.op.name
            resize = plan.resized[n][1] if n in plan.resized else (rule.resize if rule else ())
            add_step(n, (op_name, [slot[i] for i in n.inputs], dict(n.params), tuple(resize)))
        gathered = []
        for n in self._gathered:
            axes, _ = rows_first(n, plan.axis[n])
            if axes is None:
                gathered.append(slot[n])
            else:
                add_step(("rows_first", n), ("transpose", [slot[n]], {"axes": axes}, ()))
                gathered.append(slot[("rows_first", n)])
        return ChunkProgram(self.name, len(plan.row_inputs), steps,
                            [slot[n] for n in self._reduce],
                            [slot[n] for n in self._row_outputs] + gathered, where="",
                            compile_function=self._compile)

    def _run_free(self, *args):
        """The free part: every free value the chunks, the post part or the outputs use."""
        plan = self.plan
        env = dict(zip(self._free_args, args))
        targets = self._shared + self._post_inputs
        for n in needed(plan, targets):
            if n in env or plan.place[n] != "free":
                continue
            env[n] = wrap(plan.constants[n]) if n in plan.constants else \
                evaluate(current_mode(), n, [env[i] for i in n.inputs])
        return tuple(env[n] for n in targets)

    def _run_post(self, *values):
        plan = self.plan
        k, m = len(self._reduce), len(self._post_inputs)
        env = dict(zip(self._reduce, values[:k]))
        env.update(zip(self._post_inputs, values[k:k + m]))
        for n, value in zip(self._gathered, values[k + m:]):
            _, inverse = rows_first(n, plan.axis[n])
            env[n] = value if inverse is None else transpose(value, inverse)
        for n in self._post:
            env[n] = evaluate(current_mode(), n, [env[i] for i in n.inputs])
        outs = [o for o in plan.graph.outputs if plan.place[o] != "rows"]
        return tuple(env[o] for o in outs)

    # -- calling --------------------------------------------------------------------
    def _chunk_call(self, tensors):
        """The free part run, and the arguments of the back end's ``run_chunks``."""
        self._program.where = format_location(user_frame())
        self._program.check_numerics = config.check_numerics
        plan = self.plan
        rows = [tensors[i] for i in self._row_positions]
        free = [t for i, t in enumerate(tensors) if i not in self._row_positions]
        for t in free:
            if not t.backend.numpy_arrays:
                raise TracingError(f"{self.name}: only the chunked (row) inputs may live on "
                                   f"back end {t.backend.name}; move others with t.to('numpy')")
        free_values = self._free_fn(*free) if self._shared or self._post_inputs else ()
        free_values = _same_objects([np.asarray(v.numpy()) for v in free_values])
        combines = [(plan.rule[n].combine, _divisor(n) if plan.rule[n].divide else None)
                    for n in self._reduce]
        row_avals = [(o.shape[1:], o.dtype) for o in self._row_outputs] + \
            [(tuple(d for k, d in enumerate(n.shape) if k != plan.axis[n]), n.dtype)
             for n in self._gathered]
        args = (self._program, [t._value for t in rows], free_values[:len(self._shared)],
                combines, row_avals)
        return args, free_values[len(self._shared):]

    def task_graph(self, tensors):
        """The back end's task graph one call computes (a dict: key -> task), for
        counting tasks; nothing runs but the free part."""
        args, _ = self._chunk_call(tensors)
        total, row_outputs = self.backend.chunk_graph(*args)
        graph = {}
        for value in ([total] if total is not None else []) + row_outputs:
            graph.update(dict(value.__dask_graph__()))
        return graph

    def shared_nbytes(self, tensors):
        """Bytes of the shared values (parameters, values computed once on the client)
        one call sends to each worker that runs a chunk."""
        args, _ = self._chunk_call(tensors)
        return sum(v.nbytes for v in {id(v): v for v in args[2]}.values())

    def __call__(self, tensors):
        graph, plan = self.graph, self.plan
        if graph.written_inputs:
            raise TracingError(
                f"graph {graph.name!r} writes to its argument(s) {graph.written_inputs} "
                f"(at {format_location(user_frame())}); the chunked (Dask) run cannot write "
                "a caller's chunked tensor: return the new value instead (x = f(x))")
        args, post_values = self._chunk_call(tensors)
        partials, row_arrays = self.backend.run_chunks(*args)
        reduced = [wrap(np.asarray(v, dtype=n.dtype)) for v, n in zip(partials, self._reduce)]
        n_rows = len(self._row_outputs)
        gathered = [wrap(np.asarray(a)) for a in row_arrays[n_rows:]]
        row_arrays = row_arrays[:n_rows]
        has_post = any(plan.place[o] != "rows" for o in graph.outputs) or self._post
        post = self._post_fn(*reduced, *[wrap(v) for v in post_values], *gathered) \
            if has_post else ()
        if not isinstance(post, tuple):
            post = (post,)
        out_iter, row_iter = iter(post), iter(row_arrays)
        outs = [wrap_on(self.backend, next(row_iter)) if plan.place[o] == "rows"
                else next(out_iter) for o in graph.outputs]
        return outs[0] if graph.output_tree == LEAF else unflatten(graph.output_tree, outs)


def _divisor(node):
    """The number of elements a mean over the rows divides by (full shapes)."""
    shape = node.inputs[0].shape
    axis = node.params.get("axis")
    axes = range(len(shape)) if axis is None else \
        [a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)]
    return float(np.prod([shape[a] for a in axes]))


def _recompute_views(plan, chunk_nodes):
    """``chunk_nodes`` with the free view ops they read (chains of them included)
    moved into the chunk program, in graph order."""
    inside = set(chunk_nodes) | set(plan.row_inputs)
    todo = [i for n in chunk_nodes for i in n.inputs if i not in inside]
    pulled = set()
    while todo:
        n = todo.pop()
        if n in inside or n in pulled or not is_view(n) or n in plan.constants \
                or plan.place.get(n) != "free":
            continue
        pulled.add(n)
        todo.extend(n.inputs)
    if not pulled:
        return chunk_nodes
    keep = set(chunk_nodes) | pulled
    return [n for n in plan.order if n in keep]


def _same_objects(values):
    """``values`` with arrays that are the same bytes seen the same way (two reads of
    one variable) replaced by one object, so that they are serialized once."""
    seen: dict[tuple, np.ndarray] = {}
    out = []
    for v in values:
        key = (v.__array_interface__["data"][0], v.shape, v.strides, v.dtype.str)
        out.append(seen.setdefault(key, v))
    return out

