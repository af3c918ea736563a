"""Constant folding is bounded per graph in work and bytes, at trace time and at load,
and gives back the kernel scratch it grew. Nodes past the budget stay in the graph
and run with it, so results match a numpy reference either way."""
import tracemalloc

import numpy as np
import pytest

import engine as en
from engine import workspace

from support import hostile_files as hf

MM = 362 ** 3      # multiply-adds of one 362x362 product


def _ops(graph, name):
    return [n for n in graph.nodes if n.op.name == name]


def _constant_bytes(graph):
    return sum(n.params["value"].nbytes for n in _ops(graph, "constant"))


def _chain_reference(n, size=362, value=0.001):
    # c @ c @ ... (n + 1 factors) of a constant matrix: every entry is size**n * value**(n+1).
    return (size ** n) * value ** (n + 1)


def test_a_chain_of_constant_matmuls_at_load_folds_only_what_the_budget_allows(tmp_path):
    n = 20
    path = str(tmp_path / "chain.json")
    hf.write(path, hf.matmul_chain(n=n))
    g = en.load(path)
    left = len(_ops(g.graph, "matmul"))
    assert left >= n - en.config.fold_work_limit // MM
    assert any("folding budget" in r.note for r in g.concrete.report.records)
    x = np.zeros((362, 362), "float32")
    np.testing.assert_allclose(g(x).numpy(), np.full((362, 362), _chain_reference(n)),
                               rtol=1e-4)


def test_a_chain_of_constant_matmuls_at_trace_time_is_bounded_too():
    n = 12

    @en.function
    def f(x):
        c = en.full((362, 362), 0.001, dtype="float32")
        y = c
        for _ in range(n):
            y = y @ c
        return x + y
    out = f(en.zeros((362, 362), dtype="float32"))
    assert len(_ops(f.get_concrete_function(en.zeros((362, 362), dtype="float32")).graph,
                    "matmul")) >= n - en.config.fold_work_limit // MM
    np.testing.assert_allclose(out.numpy(), np.full((362, 362), _chain_reference(n)), rtol=1e-4)


def test_a_convolution_of_fulls_is_not_folded_past_the_byte_budget(tmp_path):
    # im2col patches of 33*33*32*32*16 float32 = 71 MB, above fold_bytes_limit (64 MiB).
    path = str(tmp_path / "conv.json")
    hf.write(path, hf.conv_of_fulls(image=(1, 64, 64, 16), kernel=(32, 32)))
    workspace.release()
    tracemalloc.start()
    try:
        g = en.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"loading took {peak >> 20} MiB at its peak"
    assert workspace.held_bytes() == 0
    assert len(_ops(g.graph, "conv2d")) == 1
    out = g(np.zeros((1, 33, 33, 1), "float32")).numpy()
    np.testing.assert_array_equal(out, np.full((1, 33, 33, 1), 32 * 32 * 16, "float32"))
    workspace.release()


def test_scratch_grown_while_folding_is_given_back(tmp_path, monkeypatch):
    monkeypatch.setattr(en.config, "fold_bytes_limit", 1 << 30)
    path = str(tmp_path / "conv.json")
    hf.write(path, hf.conv_of_fulls(image=(1, 32, 32, 8), kernel=(16, 16)))   # 9 MB patches
    workspace.release()
    g = en.load(path)
    assert not _ops(g.graph, "conv2d")             # folded this time ...
    assert workspace.held_bytes() == 0             # ... and its scratch not kept
    np.testing.assert_array_equal(g(np.zeros((1, 17, 17, 1), "float32")).numpy(),
                                  np.full((1, 17, 17, 1), 16 * 16 * 8, "float32"))


def test_folded_constants_a_graph_keeps_are_bounded_in_bytes(tmp_path):
    n = 100     # 100 fulls of 1 MiB each, each added to the input
    path = str(tmp_path / "fulls.json")
    hf.write(path, hf.many_fulls(n))
    g = en.load(path)
    assert _constant_bytes(g.graph) <= en.config.fold_bytes_limit
    out = g(np.ones((512, 512), "float32")).numpy()
    np.testing.assert_array_equal(out, np.full((512, 512), 1.0 + n * (n - 1) / 2, "float32"))


def test_the_budget_is_configurable_and_small_folds_still_happen(monkeypatch):
    @en.function
    def f(x):
        return x + en.sum(en.ones((4, 4)) @ en.ones((4, 4)))
    g = f.get_concrete_function(en.ones(()))
    assert not _ops(g.graph, "matmul")             # 64 multiply-adds: folded
    monkeypatch.setattr(en.config, "fold_work_limit", 10)

    @en.function
    def h(x):
        return x + en.sum(en.ones((4, 4)) @ en.ones((4, 4)))
    g2 = h.get_concrete_function(en.ones(()))
    assert _ops(g2.graph, "matmul")                # over a 10-operation budget: kept
    assert float(h(en.ones(())).numpy()) == float(f(en.ones(())).numpy()) == 65.0


@pytest.mark.parametrize("make, work_at_least", [
    (lambda: en.ones((30, 40)) @ en.ones((40, 50)), 30 * 50 * 40),
    (lambda: en.conv2d(en.ones((2, 9, 9, 3)), en.ones((3, 3, 3, 4))), 2 * 7 * 7 * 4 * 27),
    (lambda: en.ops.conv2d_backprop_filter(en.ones((2, 9, 9, 3)), en.ones((2, 7, 7, 4)), (3, 3)),
     2 * 7 * 7 * 27 * 4),
    (lambda: en.ops.conv2d_backprop_input(en.ones((2, 7, 7, 4)), en.ones((3, 3, 3, 4)), (9, 9)),
     2 * 7 * 7 * 27 * 4),
    (lambda: en.max_pool2d(en.ones((2, 8, 8, 3)), 4), 2 * 2 * 2 * 3 * 16),
])
def test_cost_estimates_cover_the_contraction(make, work_at_least):
    from engine.graph.passes.fold_cost import fold_cost
    graph = en.function(make).get_concrete_function().unoptimized_graph
    node = max(graph.nodes, key=lambda n: fold_cost(n)[0])
    assert node.op.name not in ("ones", "full")
    work, nbytes = fold_cost(node)
    assert work >= work_at_least
    assert nbytes >= np.prod(node.shape) * node.dtype.itemsize
