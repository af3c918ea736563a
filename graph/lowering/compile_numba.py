"""The pass that hands whole graphs and loops to the lowering policy.

It asks ``graph/lowering/policy.py`` (``compile_graph``) to replace the graph, or each
of its loops, by one compiled node where a registered lowering that writes graphs can
and it pays; which lowering, and where, is the policy's and the lowerings' business
(``graph/lowering/plugin.py``). The only one shipped that writes graphs is numba
(``graph/lowering/numba/whole_graph.py``), hence the pass's name, which pipelines and
optimization reports keep.

Example:
    >>> import engine as en
    >>> en.config.lowering = "numpy"          # nothing is compiled
    >>> g = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
    >>> compile_numba(g)
    False
    >>> en.config.lowering = "auto"
"""
from . import policy


def compile_numba(graph):
    """Replace ``graph``, or each of its loops, by compiled nodes where the policy says
    so; True if anything was replaced. Under ``en.config.numerics = "bitwise"`` only a
    lowering whose functions give eager's bits writes them (the C lowering, with
    ``graph/lowering/c/c_bitwise.py``; numba's products and sums are not numpy's)."""
    return policy.compile_graph(graph)
