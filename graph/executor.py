"""Running a compiled graph: call the generated function, map failures to nodes."""

import numpy as np

from engine.errors import EngineError, format_location
from engine.tensor import wrap

from .codegen import lower


class GraphRuntimeError(EngineError):
    """A kernel failed while a graph ran; the message names the node and user line."""


class CompiledGraph:
    """A graph lowered to Python source and compiled. Call with input arrays."""

    def __init__(self, graph, kernel_for=None):
        self.graph = graph
        self.lowered = lower(graph, kernel_for)
        self.fn = self.lowered.build()
        self.source = self.lowered.source
        plan = getattr(graph, "memory_plan", None)
        self._plan = plan if plan is not None and plan.views else None
        self._planned = bool(self._plan)
        self._buffer_sets = []   # free sets; a call takes one, so threads never share

    def _take_buffers(self):
        try:
            return self._buffer_sets.pop()
        except IndexError:
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


def wrap_outputs(arrays, dtypes):
    """Concrete tensors for a graph's output arrays, with the dtypes the graph promised
    (numpy scalars become 0-d arrays), exactly as eager mode makes them."""
    out = []
    for a, dt in zip(arrays, dtypes):
        if type(a) is not np.ndarray:
            a = np.asarray(a)
        if a.dtype != dt:
            a = a.astype(dt)
        out.append(wrap(a))
    return out
