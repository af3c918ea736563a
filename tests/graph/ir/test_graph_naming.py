"""Node names in a graph: unique, readable, and found in O(1) however often a name
repeats (trying ``add_1``, ``add_2``, ... in turn made tracing quadratic); the
topological order the passes walk. Linearity is checked by counting probes of
the name set, never by timing."""
import networkx as nx
import numpy as np

import engine as en
from engine.graph.ir.graph_ops import placeholder_op
from engine.graph.ir.graph import Graph


class _CountingSet(set):
    """A set that counts membership tests (the probes ``_unique_name`` makes)."""
    probes = 0

    def __contains__(self, item):
        self.probes += 1
        return super().__contains__(item)


def _aval():
    return ((2,), np.dtype(np.float32))


def test_repeated_names_cost_a_bounded_number_of_probes_each():
    g = Graph("g")
    g.names = _CountingSet()
    op = placeholder_op
    n = 5000
    for _ in range(n):
        g.add(op, [], {}, _aval(), name="x")
    names = [node.name for node in g.nodes]
    assert len(set(names)) == n
    assert names[:3] == ["x", "x_1", "x_2"] and names[-1] == f"x_{n - 1}"
    assert g.names.probes <= 3 * n      # was n * (n + 1) / 2: 12.5 million here


def test_a_name_taken_explicitly_is_skipped_and_an_erased_name_is_not_reused_wrongly():
    g = Graph("g")
    op = placeholder_op
    a = g.add(op, [], {}, _aval(), name="add_1")
    names = [g.add(op, [], {}, _aval(), name="add").name for _ in range(3)]
    assert names == ["add", "add_2", "add_3"]
    assert a.name == "add_1"
    odd = g.add(op, [], {}, _aval(), name="1 odd-name")
    assert odd.name == "v_1_odd_name"
    assert len({n.name for n in g.nodes}) == len(g)


def test_the_topological_order_is_networkxs_lexicographic_one_after_the_passes():
    def f(x, w):
        for _ in range(30):
            x = en.tanh(x @ w + 0.1) * 0.5 + x
        return en.sum(x * x)
    fn = en.function(lambda x, w: en.value_and_grad(lambda w: f(x, w))(w))
    c = fn.get_concrete_function(en.tensor(np.ones((4, 8), np.float32)),
                                 en.tensor(np.eye(8, dtype=np.float32)))
    for graph in (c.unoptimized_graph, c.graph):
        want = list(nx.lexicographical_topological_sort(graph._g, key=lambda n: n.id))
        assert graph.topo_order() == want
