"""erf and GELU in the C lowering: the vectorizable float32 erf (``erf32`` in
``c_source.C_MATH``) against ``math.erf`` over every float32 range, and GELU (both forms)
written in C through its params-dependent scalar form, alone or with its gradient,
against closed forms in float64."""
import importlib
import math

import numpy as np
import pytest

import engine as en
from engine import scalar_forms
from support.compilers import needs_c_compiler
from support.finite_diff import central_difference

pytestmark = needs_c_compiler


@pytest.fixture
def c_kernels(monkeypatch):
    """C fused kernels from the first call (a small graph would be one C function)."""
    monkeypatch.setattr(en.config, "lowering", "c")
    monkeypatch.setattr(importlib.import_module("engine.graph.lowering.plugin").get("c"),
                        "writes_graphs", False)


def _backends(graph):
    return [n.meta.get("backend") for n in graph.nodes if "kernel_source" in n.meta]


def _erf64(x):
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, np.float64))


def _gelu64(x, approximate):
    x = np.asarray(x, np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _erf64(x / math.sqrt(2.0)))


def test_erf32_is_within_a_few_ulp_of_math_erf(c_kernels):
    # Both branches, their seam at 0.921875, the clamp at 4, tiny and huge values,
    # signed zeros, infinities and NaN.
    x = np.concatenate([np.linspace(-6, 6, 200_001), np.geomspace(1e-30, 1, 2000),
                        -np.geomspace(1e-30, 1, 2000),
                        np.nextafter(np.float32(0.921875), [0, 2], dtype=np.float32),
                        [0.0, -0.0, 3.99, 4.0, 4.01, 1e30, -1e30]]).astype(np.float32)
    f = en.function(lambda t: en.erf(t) * 2.0)
    assert _backends(f.graph_for(en.tensor(x))) == ["c"]
    got = f(en.tensor(x)).numpy().astype(np.float64) / 2.0
    want = _erf64(x)
    ulps = np.abs(got - want) / np.spacing(np.abs(want).astype(np.float32))
    assert ulps.max() <= 3.0, (ulps.max(), x[ulps.argmax()])
    assert np.signbit(got[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()
    special = np.array([np.inf, -np.inf, np.nan], np.float32)
    got = f(en.tensor(special)).numpy() / 2.0
    np.testing.assert_array_equal(got, [1.0, -1.0, np.nan])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_a_lone_gelu_is_one_c_kernel_matching_its_closed_form(c_kernels, approximate, dtype):
    x = np.random.default_rng(0).normal(0, 3, (64, 129)).astype(dtype)
    f = en.function(lambda t: en.gelu(t, approximate=approximate))
    assert _backends(f.graph_for(en.tensor(x))) == ["c"]
    got = f(en.tensor(x)).numpy()
    assert got.dtype == dtype
    rtol, atol = (2e-6, 1e-6) if dtype == np.float32 else (1e-12, 1e-14)
    np.testing.assert_allclose(got, _gelu64(x, approximate), rtol=rtol, atol=atol)
    np.testing.assert_allclose(got, en.gelu(en.tensor(x), approximate=approximate).numpy(),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradient_in_c_kernels_matches_finite_differences(c_kernels, approximate):
    x = np.random.default_rng(1).normal(0, 2, (8, 33))
    w = np.random.default_rng(2).normal(0, 1, (8, 33))

    def loss(t):
        return en.sum(en.gelu(t, approximate=approximate) * w)
    f = en.function(en.grad(loss))
    got = f(en.tensor(x)).numpy()
    assert "c" in _backends(f.graph_for(en.tensor(x)))
    want = central_difference(lambda a: np.sum(_gelu64(a, approximate) * w), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_scalar_forms_read_params_only_where_the_rule_takes_them():
    gelu, exp = en.REGISTRY["gelu"], en.REGISTRY["exp"]
    avals = [((3,), np.dtype("float32"))]
    assert scalar_forms.takes_params(gelu.rules["scalar_form"])
    assert "math.erf" in scalar_forms.resolve(gelu, avals, avals[0][1], {"approximate": "none"})
    assert "np.tanh" in scalar_forms.resolve(gelu, avals, avals[0][1], {"approximate": "tanh"})
    # A consumer that has no params to give gets no form (the op is not compiled).
    assert scalar_forms.resolve(gelu, avals, avals[0][1]) is None
    assert scalar_forms.resolve(exp, avals, avals[0][1], {"unused": 1}) == exp.rules["scalar_form"]


def test_only_a_lone_op_of_several_numpy_passes_gets_a_kernel(c_kernels):
    x = en.tensor(np.ones((16, 16), np.float32))
    kernels = _backends(en.function(lambda t: en.exp(t)).graph_for(x))
    assert kernels == []          # one ufunc: a kernel would only wrap it
    kernels = _backends(en.function(lambda t: en.gelu(t)).graph_for(x))
    assert kernels == ["c"]
    en.config.lowering = "numpy"  # nothing would compile it: the op's own kernel runs
    assert _backends(en.function(lambda t: en.gelu(t)).graph_for(x)) == []
