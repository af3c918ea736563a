"""``en.export_onnx``: the exported MLP, autoencoder and GRU cell run in onnxruntime and
match eager mode; more ops through a mixed function; clear errors for the rest."""
import os
import sys

import numpy as np
import pytest

import engine as en

onnx = pytest.importorskip("onnx", reason="the optional onnx extra is not installed "
                                          "(pip install 'dualmode-engine[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed "
                                                "(pip install 'dualmode-engine[onnx]')")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_export import make_autoencoder, make_gru_cell, make_mlp  # noqa: E402

RTOL = 1e-5


def _run_onnx(path, args):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: np.asarray(a) for n, a in zip(names, args)})


def _check(fn, args, tmp_path, name):
    path = str(tmp_path / f"{name}.onnx")
    model = en.export_onnx(fn, path, *args)
    onnx.checker.check_model(onnx.load(path))
    assert model.opset_import[0].version == 17
    with en.run_functions_eagerly():
        expected = fn(*args)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    got = _run_onnx(path, args)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e.numpy(), rtol=RTOL, atol=1e-6)
    return model


@pytest.mark.parametrize("make", [make_mlp, make_autoencoder, make_gru_cell],
                         ids=["mlp", "autoencoder", "gru_cell"])
def test_models_match_eager_in_onnxruntime(make, tmp_path):
    fn, args = make(np.random.default_rng(0))
    model = _check(fn, args, tmp_path, fn.name)
    ops = {n.op_type for n in model.graph.node}
    assert "MatMul" in ops
    # Weights are initializers, stored once each.
    names = [i.name for i in model.graph.initializer]
    assert len(names) == len(set(names))


def test_gru_cell_steps_like_the_engine(tmp_path):
    fn, (h, x) = make_gru_cell(np.random.default_rng(1))
    path = str(tmp_path / "gru.onnx")
    en.export_onnx(fn, path, h, x)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    h_onnx = h.numpy()
    for _ in range(3):    # the one-step cell, fed its own output
        h_onnx = sess.run(None, {"x0": h_onnx, "x1": x.numpy()})[0]
        h = fn(h, x)
    np.testing.assert_allclose(h_onnx, h.numpy(), rtol=RTOL, atol=1e-6)


def test_many_ops_and_dynamic_batch(tmp_path):
    spec = [en.TensorSpec((None, 6), "float32")]

    @en.function(input_signature=spec)
    def mixed(a):
        b = a[:, 1:5:2] * 2.0 + en.log1p(en.square(a[:, ::-1][:, :2])) + en.expm1(a[..., 0:2])
        c = en.concat([b, en.transpose(b[:, :, None], (0, 2, 1))[:, 0]], axis=1)
        s = en.stack([c, c], axis=0)
        parts = en.split(a, 3, axis=1)
        m = en.mean(c, axis=1, keepdims=True) + en.max(c) - en.min(c, axis=0) + en.sum(parts[1])
        w = en.where(a[:, :4] > 0, en.reshape(c, (-1, 4)), en.zeros_like(c))
        mask = en.logical_and(a[:, :4] >= -0.5, en.logical_not(a[:, :4] == 0.0))
        r = en.maximum(en.minimum(en.abs(a), 1.0), en.sign(a)) / en.sqrt(en.exp(a) + 1.0)
        t = en.sigmoid(a) ** 2.0 + en.reciprocal(en.cos(a) + 2.0) - en.sin(a) + en.relu(-a)
        return (m, en.cast(w > 0.5, "int32"), en.prod(s, axis=0), en.broadcast_to(a[0], (3, 6)),
                en.sum(en.cast(mask, "int64")), r, t, en.squeeze(en.expand_dims(a, 1), 1),
                en.log(en.abs(a) + 1.0), en.stop_gradient(en.tanh(a)), en.neg(a) != a)
    rng = np.random.default_rng(2)
    path = str(tmp_path / "mixed.onnx")
    en.export_onnx(mixed, path)
    for n in (1, 5):
        a = rng.standard_normal((n, 6)).astype("float32")
        got = _run_onnx(path, [a])
        for g, e in zip(got, mixed(a)):
            assert g.dtype == e.dtype and g.shape == e.shape
            np.testing.assert_allclose(g, e.numpy(), rtol=RTOL, atol=1e-6)


def test_int_division_and_promotion(tmp_path):
    f = en.function(lambda i, x: (i / 2, i + x, i * 3, en.mean(i), en.sum(i > 2)))
    args = (en.tensor(np.arange(6, dtype="int32")), en.tensor(np.ones(6, "float32")))
    _check(f, args, tmp_path, "ints")


def test_unsupported_op_names_itself(tmp_path):
    f = en.function(lambda x: en.cond(en.sum(x) > 0, lambda v: v, lambda v: -v, x))
    with pytest.raises(en.EngineError, match="op 'cond'.*no ONNX equivalent"):
        en.export_onnx(f, str(tmp_path / "c.onnx"), en.ones((2,), dtype="float32"))
    v = en.Variable(np.zeros(2, "float32"))

    def bump(x):
        v.assign_add(x)
        return x
    with pytest.raises(en.EngineError, match="assign_variable"):
        en.export_onnx(en.function(bump), str(tmp_path / "a.onnx"), en.ones((2,), dtype="float32"))
