"""The numpy lowering as a plug-in: the reference every other lowering is measured against.

Its region writer is fusion's block-loop kernel (``fusion.FusedKernel``: one numpy call
per op over row blocks that stay in cache), which fusion always builds: it runs wherever
no other lowering is chosen, and a hot-swapped kernel starts on it. Its whole-graph
writer is ``codegen``. Forcing it (``en.config.lowering = "numpy"``) turns every compiled
lowering off.

Example:
    >>> from engine.graph.lowering.plugin import get
    >>> get("numpy").cost(None, 100)
    0.0
"""
from .plugin import Lowering


class NumpyLowering(Lowering):
    """Always available; costs nothing beyond itself (see the module docstring)."""

    name = "numpy"
    priority = 0
    auto = False   # the policy's fallback, never a candidate to beat itself
    writes_graphs = True

    def cost(self, region, calls, source=None):
        return 0.0
