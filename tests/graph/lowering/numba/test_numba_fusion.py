"""The optional numba lowering of fused kernels agrees with the default numpy lowering."""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba

numba = import_numba()


@pytest.fixture
def numba_backend(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numba_ufunc")


def _fused_nodes(fn, *args):
    graph = fn.graph_for(*args)
    return [n for n in graph.nodes if n.op.name.startswith("fused")]


def layer(x, w, b):
    h = en.sigmoid(x @ w + b)
    return en.sum(en.where(h > 0.5, h * 2.0, en.tanh(h) - 1.0) ** 2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numba_kernels_match_numpy_kernels(numba_backend, dtype):
    rng = np.random.default_rng(0)
    x = en.tensor(rng.standard_normal((300, 40)), dtype=dtype)
    w = en.tensor(rng.standard_normal((40, 700)) * 0.1, dtype=dtype)
    b = en.tensor(rng.standard_normal(700), dtype=dtype)
    jitted = en.function(en.value_and_grad(layer, argnums=(0, 1, 2)))
    fused = [n for n in _fused_nodes(jitted, x, w, b) if n.op.elementwise]
    # Kernels that end in a reduction keep the numpy lowering (a ufunc cannot reduce).
    assert fused and all(n.meta["backend"] == "numba" for n in fused)
    en.config.lowering = "auto"
    plain = en.function(en.value_and_grad(layer, argnums=(0, 1, 2)))
    assert all(n.meta["backend"] == "numpy" for n in _fused_nodes(plain, x, w, b))
    rtol = 1e-12 if dtype == "float64" else 2e-5
    (v1, g1), (v2, g2) = jitted(x, w, b), plain(x, w, b)
    assert v1.dtype == v2.dtype == np.dtype(dtype)
    np.testing.assert_allclose(v1.numpy(), v2.numpy(), rtol=rtol)
    for a, c in zip(g1, g2):
        assert a.dtype == c.dtype
        # float32: numba evaluates some steps more exactly; sums of 300 terms cancel.
        # float64: where the CPU has FMA, numba fuses multiply-adds numpy rounds twice, so
        # an element near zero after cancellation differs in its last bits.
        atol = 2e-5 if dtype == "float32" else 1e-14 * float(np.abs(c.numpy()).max())
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=rtol, atol=atol)


def test_numba_kernel_against_numpy_reference_with_broadcasting(numba_backend):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((50, 1, 30))
    b = rng.standard_normal((20, 30))
    f = en.function(lambda x, y: en.exp(-en.square(x - y)) * 3.0 + en.maximum(x, y))
    got = f(en.tensor(a), en.tensor(b)).numpy()
    want = np.exp(-np.square(a - b)) * 3.0 + np.maximum(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert _fused_nodes(f, en.tensor(a), en.tensor(b))[0].meta["backend"] == "numba"


def test_ops_without_a_scalar_form_keep_the_numpy_lowering(numba_backend):
    x = en.tensor(np.arange(6.0))
    f = en.function(lambda v: en.exp(v) + 1.0)
    node = _fused_nodes(f, x)[0]
    assert node.meta["backend"] == "numba"
    # Drop the scalar form of exp: the same region must fall back to numpy.
    saved = en.ops.exp_op.rules.pop("scalar_form")
    try:
        g = en.function(lambda v: en.exp(v) + 1.0)
        node = _fused_nodes(g, x)[0]
        assert node.meta["backend"] == "numpy"
        np.testing.assert_allclose(g(x).numpy(), np.exp(np.arange(6.0)) + 1.0, rtol=1e-15)
    finally:
        en.ops.exp_op.rules["scalar_form"] = saved
