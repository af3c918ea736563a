"""The numba lowerings as plug-ins.

``numba``: a fused region as one numba loop nest (``numba_fused.CompiledFusedKernel``),
and whole small graphs and scans as one numba function (the ``compile_numba`` pass).
``numba_ufunc``: a single-result fused region as one numba ``vectorize`` ufunc
(``fusion_numba``); chosen only when forced by name.

Example:
    >>> from engine.graph.lowering.plugin import get
    >>> get("numba").writes_graphs, get("numba_ufunc").auto
    (True, False)
"""
import importlib
import logging
import sys

from engine.cost_model import cost

from . import fusion_numba, numba_cache, numba_fused
from ..plugin import Lowering, Unsupported

log = logging.getLogger("engine.graph")


def _whole_graph_pass():
    # The pass that writes whole graphs holds the test hook ``numba_available``; loaded
    # by name, since it imports this folder.
    return importlib.import_module("engine.graph.lowering.numba.whole_graph")


class NumbaLowering(Lowering):
    """Fused regions as numba loop nests (after C under "auto": numba's import and first
    compile cost seconds), and whole small graphs and scans as numba functions."""

    name = "numba"
    priority = 20
    writes_graphs = True

    def available(self):
        return _whole_graph_pass().numba_available()

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
