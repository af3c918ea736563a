"""Declared hand-offs between the graph's builders, passes and lowering: a node's side
effects are known from the moment it is added, and memory planning hands lowering a
plan object rather than marks on the graph."""
import numpy as np

import engine as en
from engine.graph.lowering.codegen import lower
from engine.graph.ir.graph import Graph
from engine.graph.lowering.pipeline import optimize
from engine.graph.lowering.memory_planning import MemoryPlan, plan_memory


def _cond_nodes(graph):
    return [n for n in graph.nodes if n.op.name == "cond"]


def test_a_control_flow_node_has_its_bodies_effects_when_added():
    v = en.Variable(np.zeros(2))

    def bump(x):
        v.assign_add(x)
        return x

    effectful = en.function(lambda x: en.cond(en.sum(x) > 0, bump, lambda x: -x, x))
    pure = en.function(lambda x: en.cond(en.sum(x) > 0, lambda x: x * 2.0, lambda x: -x, x))
    x = en.tensor(np.ones(2))
    (node,) = _cond_nodes(effectful.get_concrete_function(x).unoptimized_graph)
    (plain,) = _cond_nodes(pure.get_concrete_function(x).unoptimized_graph)
    assert node.side_effects and not plain.side_effects
    assert not node.op.side_effects            # the op has none: its params' bodies do
    # A node added anew (a copy, as every pass pipeline makes) knows it too, from its params.
    copy = Graph("copy")
    again = copy.add(node.op, [], node.params, node.aval)
    assert again.side_effects
    effectful(x)
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])   # the effect was kept and ran


def test_plan_memory_changes_nothing_and_lowering_takes_the_plan():
    rng = np.random.default_rng(0)
    w = en.tensor(rng.standard_normal((8, 8)))
    f = en.function(lambda x: en.matmul(en.exp(en.matmul(x, w)) * 2.0, w), passes=["cleanup"])
    x = en.tensor(rng.standard_normal((4, 8)))
    graph = f.graph_for(x)
    metas = {n: dict(n.meta) for n in graph.nodes}
    plan = plan_memory(graph)
    assert isinstance(plan, MemoryPlan) and plan.views
    assert graph.memory_plan is None and {n: n.meta for n in graph.nodes} == metas
    assert set(plan.buffer_of) <= set(graph.nodes)
    plain, planned = lower(graph), lower(graph, plan=plan)
    assert "_buffers" not in plain.source and "out=_b" not in plain.source
    assert planned.source.count("out=_b") == len(plan.buffer_of)
    want = (np.exp(x.numpy() @ w.numpy()) * 2.0) @ w.numpy()
    np.testing.assert_allclose(plain.build()(x.numpy())[0], want, rtol=1e-12)
    np.testing.assert_allclose(planned.build()(x.numpy(), plan.allocate())[0], want, rtol=1e-12)


def test_the_pipeline_keeps_the_plan_on_the_optimized_graph_only():
    f = en.function(lambda x: en.exp(x) * 2.0 + 1.0)
    x = en.tensor(np.ones((3, 3)))
    concrete = f.get_concrete_function(x)
    assert concrete.unoptimized_graph.memory_plan is None
    assert isinstance(concrete.graph.memory_plan, MemoryPlan)
    optimized, _ = optimize(concrete.unoptimized_graph, ["cleanup"])
    assert optimized.memory_plan is None    # no planning pass ran: nothing to hand over
