"""The numba lowerings as plug-ins.

``numba``: a fused region as one numba loop nest (``numba_fused.CompiledFusedKernel``),
and a whole small graph, or each scan, as one numba function (``whole_graph``).
``numba_ufunc``: a single-result fused region as one numba ``vectorize`` ufunc
(``fusion_numba``); chosen only when forced by name.

Example:
    >>> from engine.graph.lowering.plugin import get
    >>> get("numba").writes_graphs, get("numba_ufunc").auto
    (True, False)
"""
import importlib.util
import logging
import math
import sys

from engine.cost_model import cost

from . import fusion_numba, numba_blas, numba_cache, numba_fused, numba_source, whole_graph
from ..plugin import Declined, Lowering, Unsupported

log = logging.getLogger("engine.graph")


def numba_available():
    """Whether numba is installed (found, not imported: importing it takes a second)."""
    return importlib.util.find_spec("numba") is not None


class NumbaLowering(Lowering):
    """Fused regions as numba loop nests (after C under "auto": numba's import and first
    compile cost seconds), and whole small graphs and scans as numba functions."""

    name = "numba"
    priority = 20
    writes_graphs = True

    def available(self):
        return numba_available()

    def saved_per_call(self, region):
        return region.size * region.n_ops * cost.numba_saved_seconds_per_element_op + \
            region.n_ops * cost.numpy_call_seconds - cost.numba_call_seconds

    def build_seconds(self, region, source):
        seconds = 0.0 if "numba" in sys.modules else cost.numba_import_seconds
        if not numba_cache.is_cached(source):
            seconds += cost.numba_compile_seconds + \
                cost.numba_compile_seconds_per_line * source.count("\n")
        return seconds

    def region_source(self, region):
        return numba_fused.kernel_source(numba_fused.SOURCE_NAME, region.members,
                                         region.inputs, region.outputs)

    def build_region(self, region, source):
        try:
            return numba_fused.CompiledFusedKernel(region.name, region.members, region.inputs,
                                                   region.outputs, region.threads, source)
        except Exception as err:   # a numba typing limit: keep the numpy lowering
            log.debug("numba refused fused region %s: %s: %s", region.name,
                      type(err).__name__, err)
            return None

    # ---- whole graphs and scans (graph/lowering/numba/whole_graph.py) ------------------
    def loop_members(self, graph):
        return whole_graph.loop_members(graph)

    def graph_source(self, part):
        """The part's function; a whole graph too large, or a piece or scan too long to
        compile, is declined (see ``whole_graph``)."""
        if part.kind == "graph":
            why = whole_graph.too_large(part.members)
            if why:
                # A graph of large values is left to the fused kernels and numpy's threaded
                # BLAS: written whole, each value would be a fresh array and each product
                # one BLAS thread.
                raise Declined("compiled lowering: the graph is not written whole: " + why)
        try:
            source, ops, largest = numba_source.emit(part.members, part.inputs, part.outputs,
                                                     whole_graph.NAME)
        except numba_source.Unsupported as err:
            raise Unsupported(str(err)) from err
        part.meta["compiled_ops"], part.meta["largest_product"] = ops, largest
        if part.kind != "graph" and whole_graph.too_long(source):
            raise Declined(whole_graph.too_long_note(part, source), warn=True)
        return source

    def graph_pieces(self, part, source):
        if part.kind == "graph" and whole_graph.too_long(source):
            return whole_graph.pieces(part.members, source.count("\n"))
        return None

    def graph_cost(self, part, calls, source=None):
        if not whole_graph.small_enough(part.members):
            return math.inf   # numpy's threaded BLAS and fused kernels serve it better
        if source is not None and numba_cache.is_cached(source):
            # On disk already: loading takes milliseconds and the calls cost no more than
            # numpy's, so it is taken whatever it saves (a graph of constants too).
            return -math.inf
        ops = part.meta.get("compiled_ops")
        if ops is None:
            ops = numba_source.op_count(part.members)
        build = 0.0 if source is None else whole_graph.compile_seconds(source)
        return build - ops * cost.numpy_call_seconds * calls

    def build_graph(self, part, source):
        run, part.meta["from_cache"] = whole_graph.compile_function(source, part.inputs)
        if run is None:
            return None
        if part.meta["largest_product"] > cost.openblas_threaded_work:
            run = numba_blas.one_thread(run)   # see graph/lowering/numba/numba_blas.py
        return run


class _UfuncKernel:
    """A numba ufunc as a fused kernel: ``out_impl(*inputs, out)``."""

    backend = "numba"

    def __init__(self, ufunc):
        self.ufunc, self.source = ufunc, ufunc.source

    def out_impl(self, *args):
        return self.ufunc(*args[:-1], out=args[-1])


class NumbaUfuncLowering(Lowering):
    """A fused region of one value as one numba ufunc: one pass, one call, no scratch
    buffers. Only when forced (``en.config.lowering = "numba_ufunc"``); fusion then keeps
    each region apart, since a ufunc has one result."""

    name = "numba_ufunc"
    priority = 30
    auto = False
    groups_regions = False

    def available(self):
        return fusion_numba.available()

    def region_source(self, region):
        if not region.one_value:
            raise Unsupported("a numba ufunc computes one value, not a reduction")
        source = fusion_numba.ufunc_source(region.name, region.members, region.inputs)
        if source is None:
            raise Unsupported("an op without a scalar form")
        return source

    def build_region(self, region, source):
        ufunc = fusion_numba.compile_ufunc(region.name, region.members, region.inputs, source)
        return None if ufunc is None else _UfuncKernel(ufunc)
