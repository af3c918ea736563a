"""The C lowering as a plug-in: large fused regions as C loop nests (``c_source``),
built by the system's C compiler (``c_compiler``) and run by ``c_fused.CFusedKernel``.

Example:
    >>> from engine.graph.lowering.plugin import get
    >>> get("c").background       # may move a hot kernel to C in the background
    True
"""
import warnings

from engine.cost_model import cost

from . import c_compiler, c_fused, c_source
from ..plugin import Lowering


class CLowering(Lowering):
    """Fused regions in C: first choice under "auto" where a compiler is found and it
    pays (a cached kernel loads in a millisecond, a new one compiles in a fraction of a
    second); a region that pays only over a long run is compiled once hot."""

    name = "c"
    priority = 10
    background = True

    def available(self):
        return c_fused.available()

    def saved_per_call(self, region):
        return c_fused.saved_per_call(region.size, region.n_ops)

    def build_seconds(self, region, source):
        return 0.0 if c_compiler.is_cached(source) else cost.c_compile_seconds

    def region_source(self, region):
        return c_source.kernel_source(c_fused.NAME, region.members, region.inputs,
                                      region.outputs)

    def build_in_background(self, region, source):
        """The kernel, raising what the compiler says (the hot swap warns once)."""
        return c_fused.CFusedKernel(region.name, region.members, region.inputs,
                                    region.outputs, region.threads, source)

    def build_region(self, region, source):
        try:
            return self.build_in_background(region, source)
        except (c_compiler.CompileError, OSError) as err:
            # A source the compiler refuses is a fault of the C lowering: said, not
            # hidden, and the numpy kernel runs.
            warnings.warn(f"C lowering: fused region {region.name} was not compiled ({err}); "
                          "the numpy lowering runs it", RuntimeWarning, stacklevel=2)
            return None
