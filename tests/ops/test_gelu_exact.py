"""GELU defaults to the exact erf form, as PyTorch's ``gelu`` and ``nn.GELU`` do
(issue #45 item 5): eagerly, as a layer, traced and fused, in its gradient and in
the ONNX export, all against the closed form ``x Phi(x)`` written with ``math.erf``."""
import math

import numpy as np
import pytest

import engine as en

X = np.linspace(-4.0, 4.0, 81)
_erf = np.vectorize(math.erf)


def exact_gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def tanh_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def test_the_forms_differ_enough_for_the_default_to_matter():
    # The two forms are 4.7e-4 apart on [-4, 4]: a default test at 1e-12 tells them apart.
    assert np.max(np.abs(exact_gelu(X) - tanh_gelu(X))) > 1e-4


@pytest.mark.parametrize("gelu", [en.gelu, en.nn.functional.gelu, lambda x: en.nn.GELU()(x)],
                         ids=["en.gelu", "functional.gelu", "nn.GELU"])
def test_default_is_the_exact_form(gelu):
    np.testing.assert_allclose(gelu(en.tensor(X)).numpy(), exact_gelu(X), rtol=1e-13, atol=1e-15)


def test_tanh_form_is_still_there_on_request():
    np.testing.assert_allclose(en.gelu(en.tensor(X), approximate="tanh").numpy(), tanh_gelu(X),
                               rtol=1e-13, atol=1e-15)
    layer = en.nn.GELU(approximate="tanh")
    np.testing.assert_allclose(layer(en.tensor(X)).numpy(), tanh_gelu(X), rtol=1e-13, atol=1e-15)


def test_traced_and_fused_default_is_exact():
    # gelu between two elementwise ops lands in a fused region; its params must follow.
    f = en.function(lambda x: en.gelu(x * 2.0) + 1.0)
    np.testing.assert_allclose(f(en.tensor(X)).numpy(), exact_gelu(2.0 * X) + 1.0,
                               rtol=1e-13, atol=1e-15)


def test_default_gradient_is_the_exact_forms_derivative():
    g = en.grad(lambda x: en.gelu(x).sum())(en.tensor(X)).numpy()
    h = 1e-6
    fd = (exact_gelu(X + h) - exact_gelu(X - h)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-8)


def test_onnx_export_of_the_default_is_exact(tmp_path):
    onnx = pytest.importorskip("onnx", reason="the optional onnx extra is not installed")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    x = X.astype(np.float32).reshape(9, 9)
    path = str(tmp_path / "gelu.onnx")
    en.export_onnx(en.function(lambda t: en.nn.GELU()(t)), path, en.tensor(x))
    onnx.checker.check_model(onnx.load(path))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, exact_gelu(x.astype(np.float64)), rtol=1e-6, atol=1e-6)
