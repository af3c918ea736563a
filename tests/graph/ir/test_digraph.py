"""The graph IR's edges (graph/ir/digraph.py) against networkx's DiGraph, the reference:
random runs of adding and removing nodes and edges leave the same nodes, successors and
predecessors in the same orders, and the same answer to "is it acyclic"; removing what
is not there raises the engine's error."""
import networkx as nx
import numpy as np
import pytest

from engine.errors import EngineError
from engine.graph.ir.digraph import DiGraph


def _same(ours, ref):
    assert list(ours.nodes) == list(ref.nodes) and len(ours) == ref.number_of_nodes()
    for n in ref.nodes:
        assert n in ours
        assert list(ours.successors(n)) == list(ref.successors(n))
        assert list(ours.pred[n]) == list(ref.predecessors(n))
    assert ours.is_acyclic() == nx.is_directed_acyclic_graph(ref)


@pytest.mark.parametrize("seed", range(20))
def test_random_edits_agree_with_networkx(seed):
    rng = np.random.default_rng(seed)
    ours, ref = DiGraph(), nx.DiGraph()
    for _ in range(300):
        kind = rng.integers(4)
        u, v = (int(k) for k in rng.integers(0, 12, 2))
        if kind == 0:
            ours.add_node(u)
            ref.add_node(u)
        elif kind == 1 and (u < v or rng.random() < 0.05):     # now and then a cycle
            ours.add_edge(u, v)
            ref.add_edge(u, v)
        elif kind == 2 and ref.has_edge(u, v):
            ours.remove_edge(u, v)
            ref.remove_edge(u, v)
        elif kind == 3 and u in ref:
            ours.remove_node(u)
            ref.remove_node(u)
        assert ours.has_edge(u, v) == ref.has_edge(u, v)
        _same(ours, ref)


def test_a_cycle_is_found_and_a_chain_is_not():
    g = DiGraph()
    for u, v in [(0, 1), (1, 2), (0, 2)]:
        g.add_edge(u, v)
    assert g.is_acyclic()
    g.add_edge(2, 0)
    assert not g.is_acyclic()
    g.add_edge(3, 3)
    g.remove_edge(2, 0)
    assert not g.is_acyclic()      # the self-loop


def test_removing_what_is_not_there_raises_the_engines_error():
    g = DiGraph()
    g.add_edge("a", "b")
    with pytest.raises(EngineError, match="no edge 'b' -> 'a'"):
        g.remove_edge("b", "a")
    with pytest.raises(EngineError, match="no node 'c'"):
        g.remove_node("c")
