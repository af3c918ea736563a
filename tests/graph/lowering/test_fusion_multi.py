"""Multi-output fusion: elementwise regions that feed one another run as one kernel with
several results (``graph/lowering/fusion_groups.py``), checked against numpy references."""
import networkx as nx
import numpy as np

import engine as en
from engine.op import Op
from engine.graph.ir.graph_ops import placeholder_op, unpack_op
from engine.graph.ir.graph import Graph
from engine.graph.lowering.memory_planning import plan_memory
from support.pass_helpers import assert_matches, fused_nodes


def _multi(graph):
    return [n for n in fused_nodes(graph) if n.op.multiple_results]


def _autoencoder_tail(z, b, x):
    """The autoencoder's loss and its gradient with respect to ``z``, as the tape makes it."""
    def loss(z):
        y = en.sigmoid(z + b)
        return en.mean(en.square(y - x))
    return en.value_and_grad(loss)(z)


def _autoencoder_tail_numpy(z, b, x):
    y = 1.0 / (1.0 + np.exp(-(z + b)))
    d = y - x
    return np.mean(d * d), 2.0 * d / d.size * y * (1.0 - y)


def test_autoencoder_tail_is_one_kernel_with_two_results():
    rng = np.random.default_rng(0)
    # (64, 32) takes the one-pass small path, (3000, 100) the block loop (two blocks).
    for shape in [(64, 32), (3000, 100)]:
        z, x = rng.standard_normal(shape), rng.random(shape)
        b = rng.standard_normal(shape[1])
        f = en.function(_autoencoder_tail)
        args = [en.tensor(a) for a in (z, b, x)]
        loss, grad = f(*args)
        want_loss, want_grad = _autoencoder_tail_numpy(z, b, x)
        np.testing.assert_allclose(float(loss), want_loss, rtol=1e-12)
        np.testing.assert_allclose(grad.numpy(), want_grad, rtol=1e-10, atol=1e-18)
        graph = f.graph_for(*args)
        (node,) = _multi(graph)
        assert len(node.avals) == 2
        assert {"sigmoid", "sub", "square", "mean", "sigmoid_grad"} <= set(node.meta["fused_ops"])
        # y and d stay inside the kernel: one fused node does all the elementwise work.
        assert len(fused_nodes(graph)) == 1
        graph.lint()


def test_a_result_used_inside_the_graph_gets_a_planned_buffer_and_survives_later_calls():
    rng = np.random.default_rng(1)
    w = en.tensor(rng.standard_normal((50, 20)))

    def f(x, b):
        y = en.sigmoid(x + b)
        d = y - 1.0
        return en.mean(d * d), en.matmul(d * y * 3.0, w)

    def ref(x, b):
        y = 1.0 / (1.0 + np.exp(-(x + b)))
        d = y - 1.0
        return np.mean(d * d), (d * y * 3.0) @ w.numpy()

    g = en.function(f)
    kept = []
    for k in range(3):
        x, b = rng.standard_normal((40, 50)), rng.standard_normal(50)
        out = g(en.tensor(x), en.tensor(b))
        assert_matches(out, ref(x, b), f"call {k}")
        kept.append((out, [o.numpy().copy() for o in out]))
    for out, copies in kept:    # later calls never wrote into earlier results
        for o, saved in zip(out, copies):
            assert np.array_equal(o.numpy(), saved)
    graph = g.graph_for(en.tensor(x), en.tensor(b))
    (node,) = _multi(graph)
    buffers = graph.memory_plan.out_buffers_of[node]
    assert buffers[0] is None          # the loss is returned to the caller: never planned
    assert buffers[1] is not None      # the product's input lives in a reused buffer


def test_a_full_reduction_is_never_used_inside_its_own_kernel():
    # sum(2 a) feeds a * s: in one loop s would be used before it is known.
    def f(x):
        a = en.exp(x)
        s = en.sum(a * 2.0)
        return a * s + a

    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    g = en.function(f)
    got = g(en.tensor(x)).numpy()
    a = np.exp(x)
    np.testing.assert_allclose(got, a * np.sum(2.0 * a) + a, rtol=1e-12)
    g.graph_for(en.tensor(x)).lint()


def test_regions_joined_through_an_unfused_op_are_not_merged():
    # a feeds b = 2a and c = (a + 1) + b @ w: merging the three regions would put
    # the matmul both after and before the fused node (a cycle).
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 4))

    def f(x):
        a = en.exp(x)
        b = a * 2.0
        return (a + 1.0) + en.matmul(b, en.tensor(w))

    x = rng.standard_normal((4, 4))
    g = en.function(f)
    a = np.exp(x)
    np.testing.assert_allclose(g(en.tensor(x)).numpy(), (a + 1.0) + (2.0 * a) @ w, rtol=1e-12)
    graph = g.graph_for(en.tensor(x))
    graph.lint()
    assert not _multi(graph)


def test_a_result_unpacked_twice_is_left_to_the_kernel_to_allocate():
    # Two unpacks of one result are one array: a buffer for one of them would be
    # freed while the other still reads it. Built by hand (tracing never makes this).
    calls = []

    def out_impl(x, out):
        calls.append(out)
        a = np.negative(x) if out[0] is None else np.negative(x, out=out[0])
        b = np.exp(x) if out[1] is None else np.exp(x, out=out[1])
        return a, b

    aval = ((3,), np.dtype(np.float64))
    two = Op("two_results", lambda x: out_impl(x, (None, None)), lambda a: [a, a], None,
             multiple_results=True, n_inputs=1, out_impl=lambda x, out: out_impl(x, out))
    g = Graph("dup")
    x = g.add(placeholder_op, [], {}, aval, name="x")
    g.inputs = [x]
    node = g.add(two, [x], {}, [aval, aval])
    first = [g.add(unpack_op, [node], {"index": 0}, aval) for _ in range(2)]
    second = g.add(unpack_op, [node], {"index": 1}, aval)
    neg = en.ops.neg_op
    g.outputs = [g.add(neg, [u], {}, aval) for u in first + [second]]
    plan = plan_memory(g)
    assert plan.out_buffers_of[node][0] is None
    assert plan.out_buffers_of[node][1] is not None


def test_a_result_overwrites_a_dying_input_only_when_the_input_is_no_longer_read():
    # z = x @ w dies at the kernel. a = 2 exp(z) is written (block by block) before
    # exp(z) + z reads z again, so a must not take z's buffer; c, written last, may.
    rng = np.random.default_rng(3)
    w1, w2 = (en.tensor(rng.standard_normal((30, 30)) * 0.3) for _ in range(2))

    def f(x):
        z = en.matmul(x, w1)
        y = en.exp(z)
        a = y * 2.0
        c = (y + z) * 0.5
        return en.matmul(a, w2) + en.matmul(c, w2)

    def ref(x):
        z = x @ w1.numpy()
        y = np.exp(z)
        return (2.0 * y) @ w2.numpy() + (0.5 * (y + z)) @ w2.numpy()

    g = en.function(f)
    for rows in (40, 20000):       # the one-pass path and the block loop
        x = rng.standard_normal((rows, 30))
        np.testing.assert_allclose(g(en.tensor(x)).numpy(), ref(x), rtol=1e-10)
        graph = g.graph_for(en.tensor(x))
        (node,) = _multi(graph)
        plan = graph.memory_plan
        may_overwrite = node.op.rules["may_overwrite"]
        z = node.inputs[may_overwrite[1][0]]
        slot_of_z = plan.views[plan.buffer_of[z]][0]
        a_buf, c_buf = plan.out_buffers_of[node]
        assert plan.views[c_buf][0] == slot_of_z      # c took over z's buffer
        assert plan.views[a_buf][0] != slot_of_z
        assert may_overwrite[0] == []    # nothing is done with before a


def _contracted(users, nodes_of):
    from engine.graph.lowering.fusion_groups import _Contracted
    preds = {n: [] for n in users}
    for n, us in users.items():
        for u in us:
            preds[u].append(n)
    dag = nx.DiGraph([(n, u) for n, us in users.items() for u in us])
    dag.add_nodes_from(users)
    order = list(nx.topological_sort(dag))
    group_of = {n: g for g, nodes in nodes_of.items() for n in nodes}
    return _Contracted(order, users, preds, group_of, nodes_of), group_of


def test_cycle_search_follows_paths_through_other_groups_wherever_they_lead():
    # Merging s_a and s_b: s_b -> x, and x shares a group with x', which leads
    # through u (outside every group, after both s nodes) to w, whose group holds
    # w1 -> s_a. Contracted, that is a cycle, though no plain path leaves the
    # merged set and comes back, and u comes after everything merged.
    users = {"w1": ["s_a"], "s_a": [], "s_b": ["x"], "x": [], "x'": ["u"], "u": ["w"], "w": []}
    groups = {"X": {"x", "x'"}, "W": {"w1", "w"}, "A": {"s_a"}, "B": {"s_b"}}
    contracted, _ = _contracted(users, groups)
    assert not contracted.merge(["A", "B"])
    contracted, _ = _contracted(users, {"A": {"s_a"}, "B": {"s_b"}})
    assert contracted.merge(["A", "B"])     # without the other groups: no cycle


def _contracts_to_a_dag(edges, group_of):
    g = nx.DiGraph()
    g.add_nodes_from({group_of.get(n, n) for e in edges for n in e})
    g.add_edges_from((group_of.get(a, a), group_of.get(b, b)) for a, b in edges
                     if group_of.get(a, a) != group_of.get(b, b))
    return nx.is_directed_acyclic_graph(g), g


def test_merges_match_networkx_and_keep_the_order_topological_on_random_graphs():
    # A random DAG, groups merged at random: each merge is accepted exactly when the
    # contracted graph (by networkx) stays acyclic, and after each the kept order is
    # a topological order of the contracted graph.
    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(8, 40))
        edges = [(f"n{a}", f"n{b}") for a in range(n) for b in range(a + 1, n)
                 if rng.random() < 2.5 / n]
        users = {f"n{i}": [] for i in range(n)}
        for a, b in edges:
            users[a].append(b)
        nodes_of = {f"g{i}": {f"n{i}"} for i in range(n)}
        contracted, group_of = _contracted(users, nodes_of)
        for _ in range(3 * n):
            live = sorted(nodes_of)
            k = int(rng.integers(2, 4))
            groups = [live[i] for i in rng.choice(len(live), size=min(k, len(live)),
                                                  replace=False)]
            if len(groups) < 2:
                break
            trial_of = dict(group_of)
            for g in groups[1:]:
                for m in nodes_of[g]:
                    trial_of[m] = groups[0]
            acyclic, _ = _contracts_to_a_dag(edges, trial_of)
            assert contracted.merge(groups, budget=10 ** 9) == acyclic
            if acyclic:
                for g in groups[1:]:
                    for m in nodes_of.pop(g):
                        group_of[m] = groups[0]
                        nodes_of[groups[0]].add(m)
                _, dag = _contracts_to_a_dag(edges, group_of)
                for a, b in dag.edges:
                    assert contracted.ord[a] < contracted.ord[b]


def test_a_search_past_its_budget_refuses_the_merge():
    # A chain a -> c1 -> ... -> c50 -> b: merging a and b is a cycle, found only by
    # walking the whole chain; with a budget of 10 vertices the merge is refused too.
    chain = [f"c{i}" for i in range(50)]
    users = {"a": [chain[0]], "b": []}
    for x, y in zip(chain, chain[1:] + ["b"]):
        users[x] = [y]
    groups = {"A": {"a"}, "B": {"b"}}
    contracted, _ = _contracted(users, groups)
    assert not contracted.merge(["A", "B"], budget=10)
    users["a"], users[chain[-1]] = [], []   # no path: a merge a small budget allows
    contracted, _ = _contracted(users, {"A": {"a"}, "B": {"b"}})
    assert contracted.merge(["A", "B"], budget=10)