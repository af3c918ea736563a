"""How a pass adds ops to a graph through the op functions (``ops.matmul(...)``, ``vmap``).

A pass that rewrites with whole functions (the batching rules of ``vmap``, ``ops.concat``
with its shape rule) rather than one ``graph.add`` per node needs the tracing mode over
its graph. That mode is the jit stage's ``TraceMode`` (``graph/jit/tracer.py``), a later
stage than the passes, so the tracer registers its class here when it is imported (as
``engine/transforms/batching.py``'s ``STAGED_LOOPS`` are filled).

Example:
    >>> import engine as en
    >>> from engine import ops
    >>> g = en.function(lambda x: x * 2.0, passes=[]).graph_for(en.ones(3))
    >>> x = g.inputs[0]
    >>> with building(g):
    ...     y = ops.exp(as_tensor(x))
    >>> y._node.op.name, y._node in g
    ('exp', True)
"""
import contextlib

from engine.modes import use_mode
from engine.recording import no_tapes
from engine.tensor import traced

#: ``[TraceMode]``, appended by graph/jit/tracer.py.
TRACE_MODE: list = []


@contextlib.contextmanager
def building(graph):
    """Inside the block the op functions add nodes to ``graph`` (no tape records them);
    yields the mode."""
    mode = TRACE_MODE[0](graph)
    with no_tapes(), use_mode(mode):
        yield mode


def as_tensor(node):
    """A traced tensor standing for ``node`` (a node of the graph being built)."""
    return traced(node.shape, node.dtype, node)
