"""The numba lowering's whole graphs and loops: one graph, or each ``scan``, as one function.

Where every node of a graph has a numba form (elementwise ops through their
``scalar_form`` rule, the others through ``numba_form``: matrix products,
transposes, sums and means, integer indexing, ``stack``, ``scan``), the whole
graph becomes one node calling one numba function; otherwise each ``scan``
whose body has one does, with its time loop inside the compiled code. The
numpy lowering stays for everything else, and always works.

The policy (``graph/lowering/policy.py``) asks ``NumbaLowering``
(``graph/lowering/numba/lowering.py``), which writes with ``numba_source`` and decides
with this module's helpers:

- under ``en.config.lowering = "numba"``: wherever the part can be written (and numba is
  installed), and is at most ``numba_max_source_lines`` lines of source or already on
  disk (a longer graph is compiled in pieces of about half that; a longer scan warns and
  stays numpy);
- under ``"auto"`` (the default): where numba is installed, the source is at most
  ``numba_max_source_lines`` lines (or on disk), the part's values are
  small (at most ``whole_graph_small_elements`` elements each: where numpy's per-call
  overhead, not its SIMD loops, is the cost; up to ``whole_graph_max_elements`` where
  no matrix product is large enough for OpenBLAS's threads), and it pays over
  ``compile_calls`` calls, compile time included: the machine code is on disk already
  (``graph/lowering/numba/numba_cache.py``; loading costs tens of milliseconds), or
  the ops a call runs (a scan's body counted once per step) times
  ``numpy_call_seconds`` over ``compile_calls`` calls exceed the estimated compile
  time, ``numba_compile_seconds + numba_compile_seconds_per_line`` per source line.

A graph too large for one function (``too_large``) is not written whole in any mode.
The figures named here are thresholds of the cost model (``engine/cost_model.py``), read
from ``en.config.cost`` when a graph is lowered.

Example (a graph of a million elements is left to the fused kernels):
    >>> import engine as en
    >>> f = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"])
    >>> too_large(GraphPart.whole(f.graph_for(en.ones((1000, 1000)))).members)
    'a value of 1000000 elements, over cost.whole_graph_max_elements'
"""
import logging

import numpy as np

from engine.cost_model import cost

# None of these imports numba until it compiles.
from . import numba_cache, numba_source
from ..graph_limits import loop_members, small_enough, too_large   # shared with the C lowering
from ..graph_part import GraphPart
from ...ir.graph_ops import unpack_op
from ...ir.graph import Node

__all__ = ["loop_members", "small_enough", "too_large", "too_long", "pieces",
           "compile_function", "whole_graph_source"]

# The policy's figures, measured on the benchmark machine (README, "rnn"): the numpy
# lowering spends 1.5-3 us per op on arrays of a few thousand elements; importing numba
# takes about 1 s, and a region compiles in about 0.1 s per source line in a fresh
# process (the GRU's forward and backward, 201 lines: 19 s on the loaded 2-core machine,
# about 9 s of it numba's first compile in the process): cost.compile_calls,
# numpy_call_seconds, numba_compile_seconds and numba_compile_seconds_per_line.
# A region with a value over cost.whole_graph_small_elements, up to
# cost.whole_graph_max_elements, is still compiled whole
# where none of its matrix products (outside scan bodies) is large enough for OpenBLAS to
# thread: numba's np.dot runs on one thread. Written whole, the 50-step GRU's loss and
# gradient (its weight gradients' per-step stacks of 204,800 elements summed inside the
# compiled code) ran 7.7 ms a call against 11.7 with its two scans compiled apart and the
# rest numpy (JAX: 9.3), and a (400, 300) float32 elementwise graph 549 us against 705
# as a compiled fused kernel; the autoencoder at batch 100 (values of 78,400 elements,
# products of 1.5e7 multiply-adds) ran 2.67 ms whole against 2.13 with numpy's threaded
# BLAS and kernels.
# numba's compile time grows faster than the source: on the loaded benchmark machine the
# 267-line LSTM forward and backward compiles in about 10 s (beyond numba's first-use
# cost of about 10 s a process), the 50-step unrolled tanh RNN's 1,694 lines in 305 s.
# A longer graph is compiled in parts of about half this (``pieces``: the unrolled tanh
# RNN in six, 114 s on the idle machine); a longer scan is left to the numpy lowering in
# every mode ("numba" warns), unless its machine code is on disk already
# (cost.numba_max_source_lines).

log = logging.getLogger("engine.graph")

# One name for every function: the source, hashed, names the cached files.
NAME = "region"


def whole_graph_source(graph):
    """The numba source the whole of ``graph`` would compile to; raises
    ``numba_source.Unsupported`` naming what cannot be written (nothing is compiled).

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
        >>> print(whole_graph_source(g).splitlines()[0])
        def region(a0):
    """
    part = GraphPart.whole(graph)
    if part is None:
        raise numba_source.Unsupported("the graph has effects or nothing to compute")
    return numba_source.emit(part.members, part.inputs, part.outputs, NAME)[0]


def too_long(source):
    """Whether ``source`` is over ``cost.numba_max_source_lines`` lines and not on disk
    (numba would compile it for minutes)."""
    return source.count("\n") > cost.numba_max_source_lines and \
        not numba_cache.is_cached(source)


def too_long_note(part, source):
    """Why a part whose source is ``too_long`` stays with the numpy lowering."""
    lines = source.count("\n")
    return (f"compiled lowering: a region of {len(part.members)} nodes is {lines} lines of "
            f"numba source, over "
            f"en.config.cost.numba_max_source_lines = {cost.numba_max_source_lines} (numba "
            "would compile it for minutes); the numpy lowering runs it")


def pieces(members, lines):
    """``members`` (in topological order) cut into runs of about half
    ``cost.numba_max_source_lines`` lines of source each, a multi-result node kept with
    the unpacks that follow it.

    numba's compile time grows faster than the source: the 50-step unrolled tanh RNN's
    1,694 lines compiled in 305 s as one function. Values read across a cut become the
    arrays one piece returns and the next takes.
    """
    count = -(-lines // max(1, cost.numba_max_source_lines // 2))
    size = -(-len(members) // count)
    parts: list[list[Node]] = []
    part: list[Node] = []
    for m in members:
        if len(part) >= size and m.op is not unpack_op:
            parts.append(part)
            part = []
        part.append(m)
    return parts + [part] if part else parts


def compile_seconds(source):
    """numba's estimated time to compile ``source`` (not counting its import)."""
    return cost.numba_compile_seconds + \
        cost.numba_compile_seconds_per_line * source.count("\n")


def _numba_type(shape, dtype):
    import numba   # optional (see lowering.numba_available)
    return numba.types.Array(numba.from_dtype(np.dtype(dtype)), len(shape), "C")


def compile_function(source, inputs):
    """``(callable a compiled node runs, whether it came from the disk cache)`` for
    ``source`` reading ``inputs``; the callable is None when numba refuses the source."""
    name = source.split("(", 1)[0].removeprefix("def ")
    signature = tuple(_numba_type(i.shape, i.dtype) for i in inputs)
    try:
        fn, from_cache = numba_cache.load(source, name, signature)
    except Exception as err:   # a numba typing limit: keep the numpy lowering
        log.debug("numba refused region %s: %s: %s", name, type(err).__name__, err)
        return None, False
    if all(i.shape for i in inputs):
        # Called directly (a Python frame less per call): another layout of an input
        # (a transposed view) compiles one more specialization, made contiguous inside.
        return fn, from_cache
    return _caller(fn, [i.dtype for i in inputs]), from_cache


def _caller(fn, dtypes):
    """``fn`` for the arrays it was compiled for, where a 0-d input may come as a numpy
    scalar from a kernel: then the inputs are made arrays of their dtypes first (and at
    every later call, since a failed attempt costs numba a typing pass each time)."""
    from numba.core.errors import TypingError   # numba is imported: fn is its dispatcher
    converting: list[bool] = []     # not empty once the inputs need converting

    def convert(arrays):
        return [np.ascontiguousarray(a, dt) if np.ndim(a) else np.asarray(a, dt)
                for a, dt in zip(arrays, dtypes)]

    def run(*arrays):
        if converting:
            return fn(*convert(arrays))
        try:
            return fn(*arrays)
        # A scalar where an array was compiled for: numba refuses it (TypeError) or, as
        # a new specialization, fails to type it (TypingError), before running anything.
        except (TypeError, TypingError):
            converting.append(True)
            return fn(*convert(arrays))
    vars(run)["dispatcher"] = fn     # for inspection (an attribute functions do not declare)
    return run
