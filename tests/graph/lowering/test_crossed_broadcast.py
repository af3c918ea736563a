"""A lone elementwise op whose inputs are broadcast along different axes of its result
(an outer product per leading index, ``x[:, :, None] * d[:, None, :]``) becomes a kernel
of its own, which a compiled lowering writes as one loop nest (graph/lowering/fusion.py,
``_crossed_broadcast``): numpy's loop writes such a result at a third of the memory's
speed. Values and gradients against numpy; ops broadcast along one axis only (a bias)
stay numpy's own call."""
import numpy as np
import pytest

import engine as en
from engine.graph.lowering import registry
from support.compilers import needs_c_compiler


def _ops(graph):
    return [n.op.name for n in graph.topo_order()]


def _fused_nodes(graph):
    return [n for n in graph.topo_order() if n.op.name.startswith("fused")]


def outer(x, d):
    return x[:, :, None] * d[:, None, :]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_large_outer_product_is_one_fused_kernel_with_numpys_values(dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 300)).astype(dtype)
    d = rng.standard_normal((64, 120)).astype(dtype)
    f = en.function(outer)
    graph = f.graph_for(en.tensor(x), en.tensor(d))
    assert "mul" not in _ops(graph) and len(_fused_nodes(graph)) == 1, _ops(graph)
    for _ in range(3):          # the first calls, and those after a hot swap
        np.testing.assert_array_equal(f(en.tensor(x), en.tensor(d)).numpy(),
                                      x[:, :, None] * d[:, None, :])


@needs_c_compiler
def test_the_c_lowering_writes_a_lone_outer_product():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 200)).astype("float32")
    d = rng.standard_normal((32, 50)).astype("float32")
    previous = en.config.lowering
    en.config.lowering = "c"
    try:
        f = en.function(lambda x, d: x[:, None, :] - d[:, :, None])
        graph = f.graph_for(en.tensor(x), en.tensor(d))
        (node,) = _fused_nodes(graph)
        assert node.meta["backend"] == "c"
        got = f(en.tensor(x), en.tensor(d)).numpy()
    finally:
        en.config.lowering = previous
    np.testing.assert_array_equal(got, x[:, None, :] - d[:, :, None])


def test_the_gradient_through_a_fused_outer_product_matches_the_closed_form():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 400))
    d = rng.standard_normal((16, 90))
    w = rng.standard_normal((16, 400, 90))

    def loss(x, d):
        return en.sum(outer(x, d) * en.tensor(w))
    gx, gd = en.function(en.grad(loss, argnums=(0, 1)))(en.tensor(x), en.tensor(d))
    np.testing.assert_allclose(gx.numpy(), np.einsum("bij,bj->bi", w, d), rtol=1e-9,
                               atol=1e-12)
    np.testing.assert_allclose(gd.numpy(), np.einsum("bij,bi->bj", w, x), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("shapes", [((2000, 300), (300,)), ((2000, 300), (2000, 1))],
                         ids=["bias", "column"])
def test_an_op_broadcast_along_one_axis_stays_numpys_call(shapes):
    a, b = (np.ones(s, "float32") for s in shapes)
    graph = en.function(lambda a, b: a + b).graph_for(en.tensor(a), en.tensor(b))
    assert "add" in _ops(graph) and not _fused_nodes(graph)


def test_a_small_outer_product_stays_numpys_call():
    # Below a compiled call's cost (a few thousand elements) nothing is gained.
    graph = en.function(outer).graph_for(en.ones((2, 3)), en.ones((2, 4)))
    assert "mul" in _ops(graph) and not _fused_nodes(graph)


def test_without_a_compiled_lowering_an_outer_product_stays_numpys_call(monkeypatch):
    # numpy's own kernel over row blocks would be no faster than the op itself.
    for lowering in registry.registered().values():
        if lowering.name != "numpy":
            monkeypatch.setattr(lowering, "available", lambda: False)
    graph = en.function(outer).graph_for(en.ones((64, 300)), en.ones((64, 120)))
    assert "mul" in _ops(graph) and not _fused_nodes(graph)
