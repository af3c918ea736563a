"""Running a compiled graph: call the generated function, map failures to nodes."""

import numpy as np

from engine.backend import NUMPY
from engine.errors import EngineError, format_location
from engine.recording import active_tapes
from engine.tensor import Tensor, wrap, wrap_on
from engine.transaction import atomic_call
from engine.write_tapes import LIVE_TAPE_SET

from .codegen import lower
from ..ir.graph_ops import body_variables


# What a guarded entry returns for arguments it was not made for.
MISS = object()


class GraphRuntimeError(EngineError):
    """A kernel failed while a graph ran; the message names the node and user line."""


class CompiledGraph:
    """A graph lowered to Python source and compiled. Call with input arrays.

    With ``plan`` (the graph's :class:`~graph.lowering.memory_planning.MemoryPlan`)
    planned nodes write into buffers reused across calls (a set per concurrent call).
    With ``recycle_outputs`` large outputs are written into the arrays the previous
    call returned, where the caller has let go of them (``output_recycling.py``).
    """

    def __init__(self, graph, kernel_for=None, backend=NUMPY, plan=None, recycle_outputs=False):
        self.graph = graph
        self.backend = backend
        self.lowered = lower(graph, kernel_for, backend, plan, recycle_outputs)
        self.fn = self.lowered.build()
        # A call's variable writes take effect together or (if it raises) not at
        # all, and no other thread writes those variables in the middle of it.
        written = written_variables(graph)
        if written:
            self.fn = atomic_call(self.fn, written)
        self.source = self.lowered.source
        self._plan = plan if plan is not None and plan.views else None
        self._planned = bool(self._plan)
        self._buffer_sets = []   # free sets; a call takes one, so threads never share

    def _take_buffers(self):
        try:
            return self._buffer_sets.pop()
        except IndexError:
            if self._plan is None:     # (only planned graphs take buffer sets)
                raise EngineError("buffer sets of an unplanned graph (internal error)") from None
            return self._plan.allocate()

    def run(self, arrays):
        """Run on input arrays; return the output arrays (a tuple)."""
        if not self._planned:
            try:
                return self.fn(*arrays)
            except Exception as err:
                self._reraise(err)
        buffers = self._take_buffers()
        try:
            return self.fn(*arrays, buffers)
        except Exception as err:
            self._reraise(err)
        finally:
            self._buffer_sets.append(buffers)

    def tensor_entry(self, n_inputs, on_tape, finish, single_dtype=None, guard=None,
                     finish_takes_inputs=False, written=None):
        """A generated ``entry(tensors)``: the graph run on ``n_inputs`` concrete tensors,
        in one Python call (the per-call path of ``en.function``, where a few hundred
        nanoseconds count). Under active tapes it returns ``on_tape(tensors)``; else
        ``finish(results)`` of the output arrays (``finish(results, tensors)`` with
        ``finish_takes_inputs``), except that a lone output array of ``single_dtype`` is
        wrapped at once.

        ``written``: ``(positions, own, returns_none)`` for a function that writes its
        inputs at ``positions`` (their new values are the last results) and returns
        ``own`` outputs before them (None when ``returns_none``): each input is given its result array
        in the entry itself where :func:`engine.writes.adopt_result`'s tests pass for all
        of them at once (``finish`` then rebuilds only the function's own results, as
        ``finish(results, None)``); otherwise ``finish(results, tensors)`` does it all.

        With ``guard``, a ``(shape, dtype)`` per input, the entry first checks that it
        was given exactly such concrete tensors (the dtype by identity) and returns
        ``MISS`` if not, so a caller may try it on any arguments.
        """
        ts = [f"t{i}" for i in range(n_inputs)]
        namespace = {"tapes_get": active_tapes, "on_tape": on_tape, "fn": self.fn,
                     "reraise": self._reraise, "finish": finish, "ndarray": np.ndarray,
                     "dtype": single_dtype, "new": object.__new__, "Tensor": Tensor,
                     "buffer_sets": self._buffer_sets, "MISS": MISS,
                     "allocate": self._plan.allocate if self._plan is not None else None}
        lines = ["def entry(tensors):"]
        if guard is not None:
            lines += [f"    if len(tensors) != {n_inputs}:",
                      "        return MISS"]
        if ts:
            lines.append(f"    {', '.join(ts)}, = tensors")
        if guard is not None and ts:
            checks = []
            for i, (t, (shape, dt)) in enumerate(zip(ts, guard)):
                namespace[f"shape{i}"], namespace[f"dtype{i}"] = tuple(shape), dt
                checks.append(f"type({t}) is not Tensor or {t}._value is None or "
                              f"{t}._shape != shape{i} or {t}.dtype is not dtype{i}")
            lines += ["    if " + " \\\n            or ".join(checks) + ":",
                      "        return MISS"]
        lines += ["    if tapes_get():",
                  "        return on_tape(tensors)"]
        call = "fn(" + ", ".join([f"{t}._value" for t in ts] +
                                 (["buffers"] if self._planned else [])) + ")"
        if self._planned:   # a buffer set per call, so threads never share one
            lines += ["    try:",
                      "        buffers = buffer_sets.pop()",
                      "    except IndexError:",
                      "        buffers = allocate()"]
        lines += ["    try:",
                  f"        results = {call}",
                  "    except Exception as err:"]
        if self._planned:
            lines.append("        buffer_sets.append(buffers)")
        lines.append("        reraise(err)")
        if self._planned:
            lines.append("    buffer_sets.append(buffers)")
        if single_dtype is not None and self.backend.numpy_arrays:
            lines += ["    out = results[0]",
                      "    if type(out) is ndarray and out.dtype is dtype:",
                      "        t = new(Tensor)   # wrap(out), inlined",
                      "        t._value = out",
                      "        t._shape = out.shape",
                      "        t._dtype = dtype",
                      "        t._node = None",
                      "        t._alias = None",
                      "        return t"]
        if written is not None and self.backend.numpy_arrays:
            lines += _adopting_lines(ts, *written)
            namespace["live"] = LIVE_TAPE_SET
        lines.append("    return finish(results, tensors)" if finish_takes_inputs
                     else "    return finish(results)")
        source = "\n".join(lines) + "\n"
        exec(compile(source, f"<entry {self.graph.name}>", "exec"), namespace)
        return namespace.pop("entry")   # not kept in its own globals: no cycle

    def _reraise(self, err):
        """Raise ``err`` again, of the same class where possible, naming the failing node."""
        node = self._failing_node(err)
        if node is None:
            raise err
        msg = (f"{type(err).__name__} in graph {self.graph.name!r} at node {node.name} "
               f"(op '{node.op.name}'), created at {format_location(node.source)}: {err}")
        try:
            new = type(err)(msg)
        except Exception:
            new = GraphRuntimeError(msg)
        raise new.with_traceback(None) from err

    def _failing_node(self, err):
        tb = err.__traceback__
        node = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.lowered.filename:
                node = self.lowered.line_to_node.get(tb.tb_lineno)
            tb = tb.tb_next
        return node

    def __call__(self, arrays):
        return self.run(arrays)


def _adopting_lines(ts, positions, own, returns_none=False):
    """The entry's lines giving each written input its new result array (see
    ``tensor_entry``): :func:`engine.writes.adopt_result`'s tests, inlined, for every
    written input at once, and the arrays distinct."""
    outs = [f"o{j}" for j in range(len(positions))]
    lines = ["    if not live:",
             f"        {', '.join(outs)}, = results[{own}:]"]
    checks = []
    for o, p in zip(outs, positions):
        t = ts[p]
        checks.append(f"type({o}) is ndarray and {o}.base is None and type({t}) is Tensor "
                      f"and {t}._alias is None and {o}.dtype is {t}._dtype and "
                      f"{o}.shape == {t}._shape and {o}.flags.writeable")
    checks += [f"{a} is not {b}" for i, a in enumerate(outs) for b in outs[i + 1:]]
    lines.append("        if " + " \
                and ".join(checks) + ":")
    lines += [f"            {ts[p]}._value = {o}" for o, p in zip(outs, positions)]
    lines.append("            return None" if returns_none else
                 "            return finish(results, None)")
    return lines


def written_variables(graph):
    """The variables ``graph`` assigns, its control-flow bodies included."""
    return body_variables([graph])[1]


def wrap_outputs(arrays, dtypes, backend=NUMPY):
    """Concrete tensors for a graph's output arrays, with the dtypes the graph promised
    (numpy scalars become 0-d arrays), exactly as eager mode makes them."""
    if not backend.numpy_arrays:
        return [wrap_on(backend, a if backend.dtype_of(a) == dt else backend.astype(a, dt))
                for a, dt in zip(arrays, dtypes)]
    out = []
    for a, dt in zip(arrays, dtypes):
        if type(a) is not np.ndarray:
            a = np.asarray(a)
        if a.dtype != dt:
            a = a.astype(dt)
        out.append(wrap(a))
    return out
