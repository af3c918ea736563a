"""Compiled lowering of small-op regions: a whole graph, or each ``scan``, as one native function.

Where every node of a graph has a numba form (elementwise ops through their
``scalar_form`` rule, the others through ``numba_form``: matrix products,
transposes, sums and means, integer indexing, ``stack``, ``scan``), the whole
graph becomes one node calling one numba function; otherwise each ``scan``
whose body has one does, with its time loop inside the compiled code. The
numpy lowering stays for everything else, and always works.

``en.config.lowering`` chooses (through ``graph/lowering/policy.py``'s ``graph_mode``):

- ``"numpy"``, ``"c"`` and other lowerings: never;
- ``"numba"``: wherever the region can be written (and numba is installed), and is
  at most ``numba_max_source_lines`` lines of source or already on disk (a longer graph
  is compiled in parts of about half that; a longer scan warns and stays numpy);
- ``"auto"`` (the default): where numba is installed, the source is at most
  ``numba_max_source_lines`` lines (or on disk), the region's values are
  small (at most ``whole_graph_small_elements`` elements each: where numpy's per-call
  overhead, not its SIMD loops, is the cost; up to ``whole_graph_max_elements`` where
  no matrix product is large enough for OpenBLAS's threads), and it pays over
  ``compile_calls`` calls, compile time included: the machine code is on disk already
  (``graph/lowering/numba/numba_cache.py``; loading costs tens of milliseconds), or
  the ops a call runs (a scan's body counted once per step) times
  ``numpy_call_seconds`` over ``compile_calls`` calls exceed the estimated compile
  time, ``numba_compile_seconds + numba_compile_seconds_per_line`` per source line;

Fused regions are the policy's too: it asks the registered lowerings
(``graph/lowering/c/lowering.py``, ``graph/lowering/numba/lowering.py``).

The figures named here are thresholds of the cost model (``engine/cost_model.py``), read
from ``en.config.cost`` when a graph is lowered.

Example:
    >>> import engine as en
    >>> en.config.lowering
    'auto'
"""
import importlib.util
import logging
import warnings

import numpy as np

from engine.backend import NUMPY
from engine.cost_model import cost
from engine.op import Op
from engine.shapes import size_of

# None of these imports numba until it compiles.
from .. import policy
from . import numba_blas, numba_cache, numba_source
from ...ir.graph_ops import constant_op, placeholder_op, unpack_op
from ..parallel import product_work

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
# A longer graph is compiled in parts of about half this (``_parts``: the unrolled tanh
# RNN in six, 114 s on the idle machine); a longer scan is left to the numpy lowering in
# every mode ("numba" warns), unless its machine code is on disk already
# (cost.numba_max_source_lines).

log = logging.getLogger("engine.graph")


def numba_available():
    """Whether numba is installed (found, not imported: importing it takes a second)."""
    return importlib.util.find_spec("numba") is not None


def compile_numba(graph):
    """Replace the graph, or each of its scans, by one compiled node where the policy
    says so (module docstring). Returns True if anything was replaced."""
    mode = policy.graph_mode()
    if mode is None or not getattr(graph, "backend", NUMPY).compiled_lowerings or \
            not numba_available():
        return False
    whole = _whole_graph(graph)
    # A graph of large values is left to the fused kernels (the policy's) and
    # numpy's threaded BLAS: written whole, each value would be a fresh array and each
    # product one BLAS thread.
    too_large = _too_large(whole) if whole is not None else None
    if too_large:
        graph.notes.append("compiled lowering: the graph is not written whole: " + too_large)
        whole = None
    done = _try(mode, graph, whole, split=True) if whole is not None else 0
    if not done:
        done = sum(_try(mode, graph, members) for members in _scan_regions(graph))
    if done:
        graph.notes.append(f"compiled {done} region{'s' if done != 1 else ''} with numba")
    return bool(done)


def _try(mode, graph, members, split=False):
    """Compile one region where it can be written and pays; the number of compiled nodes
    it was replaced by (0: none). With ``split``, a region over
    ``cost.numba_max_source_lines`` lines whose code is not on disk is compiled in
    consecutive parts (see ``_parts``)."""
    region = _Region(graph, members)
    try:
        # One name for every region: the source, hashed, names the cached files.
        source, n_ops, largest = numba_source.emit(members, region.inputs, region.outputs,
                                                   "region")
    except numba_source.Unsupported as err:
        log.debug("compiled lowering: region of %d nodes not written: %s", len(members), err)
        return 0
    lines = source.count("\n")
    if lines > cost.numba_max_source_lines and not numba_cache.is_cached(source):
        if split:
            return sum(_try(mode, graph, part) for part in _parts(members, lines))
        why = (f"compiled lowering: a region of {len(members)} nodes is {lines} lines of numba "
               f"source, over en.config.cost.numba_max_source_lines = "
               f"{cost.numba_max_source_lines} (numba would compile it "
               "for minutes); the numpy lowering runs it")
        graph.notes.append(why)
        log.debug(why)
        if mode == "numba":
            warnings.warn(why, stacklevel=2)
        return 0
    if not _pays(mode, members, source, n_ops):
        return 0
    compiled, from_cache = _compile(source, region)
    if compiled is None:
        return 0
    if largest > cost.openblas_threaded_work:   # see graph/lowering/numba/numba_blas.py
        compiled = numba_blas.one_thread(compiled)
    region.replace(compiled, source, n_ops, from_cache)
    return 1


def _parts(members, lines):
    """``members`` (in topological order) cut into runs of about half
    ``cost.numba_max_source_lines`` lines of source each, a multi-result node kept with
    the unpacks that follow it.

    numba's compile time grows faster than the source: the 50-step unrolled tanh RNN's
    1,694 lines compiled in 305 s as one function. Values read across a cut become the
    arrays one part returns and the next takes.
    """
    count = -(-lines // max(1, cost.numba_max_source_lines // 2))
    size = -(-len(members) // count)
    parts, part = [], []
    for m in members:
        if len(part) >= size and m.op is not unpack_op:
            parts.append(part)
            part = []
        part.append(m)
    return parts + [part] if part else parts


def whole_graph_source(graph):
    """The numba source the whole of ``graph`` would compile to; raises
    ``numba_source.Unsupported`` naming what cannot be written (nothing is compiled).

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
        >>> print(whole_graph_source(g).splitlines()[0])
        def region(a0):
    """
    members = _whole_graph(graph)
    if members is None:
        raise numba_source.Unsupported("the graph has effects or nothing to compute")
    region = _Region(graph, members)
    return numba_source.emit(members, region.inputs, region.outputs, "region")[0]


def _whole_graph(graph):
    """Every computing node, when none has side effects or control dependencies."""
    members = []
    for node in graph.topo_order():
        if node.op is placeholder_op or _array_constant(node):
            continue
        if node.side_effects or node.control_deps:
            return None
        members.append(node)
    return members if members else None


def _scan_regions(graph):
    regions = []
    for node in graph.topo_order():
        if node.op.rules.get("numba_form") != "time_loop" or node.side_effects or node.control_deps:
            continue
        regions.append([node] + [u for u in graph.users(node) if u.op is unpack_op])
    return regions


def _array_constant(node):
    return node.op is constant_op and np.ndim(node.params["value"]) > 0


class _Region:
    """The nodes to replace, the values they read from outside, and those read outside."""

    def __init__(self, graph, members):
        self.graph = graph
        self.members = members
        inside = set(members)
        inputs = []
        for m in members:
            for i in m.inputs:
                if i not in inside and i not in inputs:
                    inputs.append(i)
        self.inputs = inputs
        graph_outputs = set(graph.outputs)
        self.outputs = [m for m in members if not m.op.multiple_results and (
            m in graph_outputs or any(u not in inside for u in graph.users(m)))]

    def replace(self, compiled, source, n_ops, from_cache):
        graph = self.graph
        avals = [(tuple(o.shape), o.dtype) for o in self.outputs]
        op = Op("compiled_region", compiled, lambda *a: avals, None, multiple_results=True,
                n_inputs=len(self.inputs),
                doc=f"A numba-compiled region of {len(self.members)} nodes")
        last = self.members[-1]
        node = graph.add(op, list(self.inputs), {}, avals, name="compiled", source=last.source)
        node.meta["kernel_source"] = source
        node.meta["compiled_ops"] = n_ops
        node.meta["backend"] = "numba"
        node.meta["from_cache"] = from_cache   # machine code loaded from disk, not compiled
        for j, (out, aval) in enumerate(zip(self.outputs, avals)):
            value = graph.add(unpack_op, [node], {"index": j}, aval, name="compiled_result",
                              source=out.source)
            graph.replace_all_uses_with(out, value)
        for m in reversed(self.members):
            graph.drop_control_users(m)
            graph.erase(m)


def _largest(members):
    """The most elements of one value in ``members`` (a scan's body included); values
    of unknown dims, which the emitter refuses anyway, count as none."""
    nodes = [m for m in members if not m.op.multiple_results]
    for m in members:
        if m.op.rules.get("numba_form") == "time_loop":
            nodes += list(m.params["body"].graph.nodes)
    return max([_size(n.shape) for n in nodes], default=0)


def _small_enough(members):
    """Whether ``members`` may be compiled as one region: every value has at most
    ``cost.whole_graph_small_elements`` elements, or at most
    ``cost.whole_graph_max_elements`` with no matrix product that OpenBLAS would
    thread. Other graphs of larger values get compiled fused kernels instead."""
    return _too_large(members) is None


def _too_large(members):
    """Why ``members`` may not be compiled as one region (``_small_enough``), or None."""
    largest = _largest(members)
    if largest <= cost.whole_graph_small_elements:
        return None
    if largest > cost.whole_graph_max_elements:
        return f"a value of {largest} elements, over cost.whole_graph_max_elements"
    work = max(map(product_work, members), default=0)
    if work <= cost.openblas_threaded_work:
        return None
    return (f"a value of {largest} elements, over cost.whole_graph_small_elements, and a "
            f"matrix product of {work} multiply-adds, which OpenBLAS threads")


def _size(shape):
    """Elements of ``shape``; 0 where it is unknown (such values are never compiled)."""
    return (size_of(shape) or 0) if shape is not None else 0


def _pays(mode, members, source, n_ops):
    if mode == "numba":
        return True
    if not _small_enough(members):
        return False
    if numba_cache.is_cached(source):
        return True
    return n_ops * cost.numpy_call_seconds * cost.compile_calls > _compile_seconds(source)


def _compile_seconds(source):
    """numba's estimated time to compile ``source`` (not counting its import)."""
    return cost.numba_compile_seconds + \
        cost.numba_compile_seconds_per_line * source.count("\n")


def _numba_type(shape, dtype):
    import numba   # optional (see numba_available)
    return numba.types.Array(numba.from_dtype(np.dtype(dtype)), len(shape), "C")


def _compile(source, region):
    """``(callable a compiled node runs, whether it came from the disk cache)``; the
    callable is None when numba refuses the source."""
    name = source.split("(", 1)[0].removeprefix("def ")
    signature = tuple(_numba_type(i.shape, i.dtype) for i in region.inputs)
    try:
        fn, from_cache = numba_cache.load(source, name, signature)
    except Exception as err:   # a numba typing limit: keep the numpy lowering
        log.debug("numba refused region %s: %s: %s", name, type(err).__name__, err)
        return None, False
    if all(i.shape for i in region.inputs):
        # Called directly (a Python frame less per call): another layout of an input
        # (a transposed view) compiles one more specialization, made contiguous inside.
        return fn, from_cache
    return _caller(fn, [i.dtype for i in region.inputs]), from_cache


def _caller(fn, dtypes):
    """``fn`` for the arrays it was compiled for, where a 0-d input may come as a numpy
    scalar from a kernel: then the inputs are made arrays of their dtypes first (and at
    every later call, since a failed attempt costs numba a typing pass each time)."""
    from numba.core.errors import TypingError   # numba is imported: fn is its dispatcher
    converting = []

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
    run.dispatcher = fn
    return run
