"""Where each node of an optimized graph came from: the traced node it stands for and
the pass that made or changed it.

The comparison (``compare.py``) optimizes the traced graph again with the function's own
passes, on a :class:`TrackedGraph`: a graph that notes, as each pass runs, which node
replaces which (``replace_all_uses_with``), which nodes a pass adds and which it changes
in place. Each node of the result then carries in ``meta``:

* ``"origin"``: the traced (unoptimized) node whose value it holds, or None for a value
  a pass introduced (a transposed operand, a fused kernel of several results);
* ``"made_by"``: the pass that added it or last changed its op, inputs or params (None:
  the node is the traced one, untouched).

The passes run are the function's own (looked up by name at run time, so a pass
replaced in ``pipeline.PASSES`` runs here too), in the function's order.
"""
from engine.config import config
from engine.errors import InvalidArgumentError

from ..concrete import _NEEDS, _supported
from ...ir.graph import Graph, Node
from ...lowering import pipeline

ORIGIN = "origin"
# The steps that pick kernels (after the rewrites): the graph before the first of them is
# kept as ``graph.rewritten``, every node one op, for finding a rewrite's fault inside a
# region these steps later fused or compiled.
LOWERING_STEPS = ("compile_numba", "scan_sums", "scan_unread", "row_regions", "fusion",
                  "parallel_matmul", "chunked_products", "memory_planning")
MADE_BY = "made_by"


class TrackedGraph(Graph):
    """A :class:`Graph` that records provenance while passes rewrite it (see module doc)."""

    current_pass = None

    def add(self, op, inputs, params, aval, name=None, source=None):
        node = super().add(op, inputs, params, aval, name=name, source=source)
        if self.current_pass is not None:
            node.meta.setdefault(MADE_BY, self.current_pass)
            node.meta.setdefault(ORIGIN, None)
        return node

    def replace_all_uses_with(self, old, new):
        # A node new in this pass, or one whose value the pass changed (a scan result
        # now summed in the loop), takes the place of ``old``: it holds old's value.
        mine = new.meta.get(ORIGIN)
        if old.meta.get(ORIGIN) is not None and (
                (mine is None and new.meta.get(MADE_BY) == self.current_pass)
                or (mine is not None and _shape(mine) != _shape(new))):
            new.meta[ORIGIN] = old.meta[ORIGIN]
            new.meta[MADE_BY] = self.current_pass
        super().replace_all_uses_with(old, new)

    def copy(self, name=None, mapping=None):
        new = super().copy(name, mapping)
        new.__class__ = TrackedGraph
        return new


def _fingerprint(node):
    """What a pass may change in place: op, inputs and params (by identity)."""
    return (node.op, tuple(id(i) for i in node.inputs),
            tuple(sorted((k, id(v)) for k, v in node.params.items())))


def _run(graph, name, fn=None):
    """Run the pass ``fn`` (None: ``name`` looked up in ``pipeline.PASSES`` now) on
    ``graph``, noting in ``meta`` the nodes it changes in place."""
    before = {n: _fingerprint(n) for n in graph.nodes}
    graph.current_pass = name
    try:
        changed = (fn or pipeline.PASSES[name])(graph)
    finally:
        graph.current_pass = None
    for node in graph.nodes:
        old = before.get(node)
        if old is not None and old != _fingerprint(node):
            node.meta[MADE_BY] = name
        origin = node.meta.get(ORIGIN)
        if origin is not None and _shape(origin) != _shape(node):
            node.meta[ORIGIN] = None      # no longer the traced value (an emptied stack)
    return changed


def _shape(node):
    return None if node.avals is not None else tuple(node.shape or ())


def _pass_list(passes, backend):
    """The function's passes as ``(name, function or None)``, filtered for ``backend`` as
    ``concrete._optimize`` filters them (None: the pass of that name in
    ``pipeline.PASSES``, looked up when it runs)."""
    chosen = passes if passes is not None else (config.default_passes or
                                                pipeline.DEFAULT_PIPELINE)
    if not all(getattr(backend, need) for need in _NEEDS.values()):
        chosen = [p for p in chosen if _supported(p, backend)]
    found = []
    for p in chosen:
        if isinstance(p, str) and p != "cleanup" and p not in pipeline.PASSES:
            raise InvalidArgumentError(f"unknown pass {p!r}; known: {', '.join(pipeline.PASSES)}")
        found.append((p, None) if isinstance(p, str) else (p.__name__, p))
    return found


def tracked_optimize(unoptimized, passes, backend):
    """The optimized copy of ``unoptimized`` with provenance in each node's ``meta``, and
    (``.rewritten``) a copy of it before the lowering steps (None if none ran)."""
    mapping: dict[Node, Node] = {}
    graph = unoptimized.copy(mapping=mapping)
    graph.__class__ = TrackedGraph
    graph.backend = unoptimized.backend
    for old, new in mapping.items():
        new.meta[ORIGIN] = old
        new.meta.pop(MADE_BY, None)
    graph.rewritten = None
    for name, fn in _pass_list(passes, backend):
        if name in LOWERING_STEPS and graph.rewritten is None:
            graph.rewritten = graph.copy(name=f"{graph.name}_rewritten")
        if name == "cleanup":
            for _ in range(pipeline.MAX_ROUNDS):
                if not any([bool(_run(graph, step)) for step in pipeline.CLEANUP]):
                    break
        else:
            _run(graph, name, fn)
    return graph
