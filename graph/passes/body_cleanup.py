"""The cleanup passes inside control-flow bodies: ``scan``, ``while_loop`` and ``cond``.

A loop's body is a graph of its own (a :class:`SubGraph` in the node's params) that
the pipeline's passes never saw: a backward scan made by ``vmap(grad(...))`` kept
duplicate products (no CSE), chains of size-1 ``expand_dims``/``reshape``/``sum``
(no simplification) and nodes nothing reads (no DCE), and ran them every step.
This pass runs one round of the cleanup stage's passes (``simplify``, ``cse``,
``constant_folding``, ``dce``... the list ``graph/lowering/pipeline.py`` puts in
``CLEANUP_PASSES``, this pass among them, so nested bodies are cleaned too) in each
body; the cleanup stage repeats it with the others until nothing changes.

A body keeps its inputs and outputs (the node's signature does not change here;
``scan_dead_results`` removes what nothing reads), and its side effects: the passes
never remove, merge or reorder a node with effects (variable writes, prints) or a
random draw's replayed value. A changed body is a copy (``body_copy.py``): the
unoptimized graph keeps its own.

Example:
    >>> import engine as en
    >>> def f(xs):
    ...     return en.scan(lambda c, x: (c + x * 2.0 + x * 2.0, c), 0.0, xs)[0]
    >>> g = en.function(f, passes=["cleanup"]).graph_for(en.ones(4))
    >>> body = next(n for n in g.nodes if n.op.name == "scan").params["body"].graph
    >>> sorted(n.op.name for n in body.nodes if n not in body.inputs)
    ['add', 'add', 'constant', 'mul']
"""
from .body_copy import bodies, private_body, set_body

# The cleanup stage's passes, in its order: graph/lowering/pipeline.py fills this (the
# pipeline is a later stage, which imports this module).
CLEANUP_PASSES: list = []


def _one_round(body):
    """Run each cleanup pass once on ``body``'s graph; True if any changed it."""
    graph = body.graph
    n_real = len(graph.outputs) - len(body.replay)
    changed = False
    for run in CLEANUP_PASSES:
        graph.notes = []
        changed |= bool(run(graph))
    # CSE may have merged a replayed node with its twin: the outputs say which is left.
    body.replay = list(graph.outputs[n_real:])
    return changed


def body_cleanup(graph):
    """One round of the cleanup passes in every body of every control-flow node of
    ``graph`` (see the module docstring). Returns True if any body changed."""
    changed = removed = 0
    for node in graph.topo_order():
        for key, body in bodies(node):
            work = private_body(node, body)
            before = work.graph.node_count()
            if _one_round(work):
                set_body(node, key, work)
                changed += 1
                removed += before - work.graph.node_count()
    if changed:
        graph.notes.append(f"cleaned {changed} loop or branch bod{'ies' if changed > 1 else 'y'}"
                           f" ({removed} nodes fewer)")
    return bool(changed)
