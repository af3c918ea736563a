"""``en.export_onnx``: the exported MLP, autoencoder and GRU cell run in onnxruntime and
match eager mode; more ops through a mixed function; clear errors for the rest."""
import os

import numpy as np
import pytest

import engine as en

onnx = pytest.importorskip("onnx", reason="the optional onnx extra is not installed "
                                          "(pip install 'dualmode-engine[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed "
                                                "(pip install 'dualmode-engine[onnx]')")

from support.models import make_autoencoder, make_gru_cell, make_mlp
from support.paths import REPO

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


def _export_and_run(fn, args, tmp_path, name):
    path = str(tmp_path / f"{name}.onnx")
    en.export_onnx(fn, path, *args)
    return _run_onnx(path, [a.numpy() if isinstance(a, en.Tensor) else a for a in args])


def _close(got, want, rtol=RTOL):
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def test_sigmoid_grad_and_creation_ops(tmp_path):
    rng = np.random.default_rng(5)
    y = rng.uniform(0.05, 0.95, (3, 4)).astype("float32")
    g = rng.standard_normal((3, 4)).astype("float32")

    def f(y, g):
        return (en.ops.sigmoid_grad(y, g), en.zeros((2, 3)) + y[:2, :3],
                en.arange(4, dtype="float32") * y[0], en.eye(4, dtype="float32") + y[:1],
                en.full((3, 4), 2.5, dtype="float32") * g)
    got = _export_and_run(en.function(f), (y, g), tmp_path, "sg")
    want = [g * y * (1 - y), np.zeros((2, 3)) + y[:2, :3], np.arange(4, dtype="float32") * y[0],
            np.eye(4, dtype="float32") + y[:1], np.full((3, 4), 2.5, "float32") * g]
    for a, b in zip(got, want):
        _close(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_argmax_argmin_take_the_first_extreme(dtype, tmp_path):
    rng = np.random.default_rng(6)
    x = rng.integers(0, 3, (4, 5)).astype(dtype)    # many ties: the first index must win

    def f(x):
        return (en.argmax(x, axis=1), en.argmin(x, axis=0, keepdims=True), en.argmax(x),
                en.argmin(x, keepdims=True), en.argmax(x, axis=-1, keepdims=True))
    got = _export_and_run(en.function(f), (x,), tmp_path, f"arg_{dtype}")
    want = [np.argmax(x, axis=1), np.argmin(x, axis=0, keepdims=True), np.argmax(x),
            np.argmin(x, keepdims=True), np.argmax(x, axis=-1, keepdims=True)]
    for a, b in zip(got, want):
        _close(a, b.astype(np.int64))


def test_mean_over_a_dynamic_batch_counts_at_run_time(tmp_path):
    # mean's gradient divides by count(x), an op of its own: with an unknown batch
    # size it is not folded and exports as Shape -> Gather -> ReduceProd.
    @en.function(input_signature=[en.TensorSpec((None, 3), "float64")])
    def f(x):
        return en.ops.count(x, axes=(0,)), en.ops.count(x, axes=(0, 1), dtype="int32"), \
            en.ops.count(x, axes=())
    path = str(tmp_path / "count.onnx")
    en.export_onnx(f, path)
    for n in (1, 7):
        got = _run_onnx(path, [np.zeros((n, 3))])
        for a, b in zip(got, [np.float64(n), np.int32(n * 3), np.float64(1)]):
            _close(a, np.asarray(b))


def _conv_reference(x, w, stride, padding):
    """Direct NHWC cross-correlation with TensorFlow's padding, one output pixel at a time."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    sh, sw = stride
    if padding == "same":
        oh, ow = -(-h // sh), -(-wd // sw)
        ph = max((oh - 1) * sh + kh - h, 0)
        pw = max((ow - 1) * sw + kw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    else:
        oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, oh, ow, o), x.dtype)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def _pool_reference(x, size, stride, padding):
    n, h, wd, c = x.shape
    (kh, kw), (sh, sw) = size, stride
    if padding == "same":
        oh, ow = -(-h // sh), -(-wd // sw)
        ph = max((oh - 1) * sh + kh - h, 0)
        pw = max((ow - 1) * sw + kw - wd, 0)
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)),
                   constant_values=-np.inf)
    else:
        oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.empty((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j, :] = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :].max(axis=(1, 2))
    return out


@pytest.mark.parametrize("stride,padding", [(1, "valid"), (2, "same"), ((2, 1), "valid"),
                                            (3, "same")])
def test_conv2d_and_max_pool2d_match_direct_loops(stride, padding, tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 7, 8, 3)).astype("float32")
    w = rng.standard_normal((3, 2, 3, 4)).astype("float32")
    s = (stride, stride) if isinstance(stride, int) else stride

    def f(x, w):
        y = en.conv2d(x, w, stride=stride, padding=padding)
        return y, en.max_pool2d(y, 2, strides=stride, padding=padding)
    got = _export_and_run(en.function(f), (x, w), tmp_path, "conv")
    y = _conv_reference(x.astype(np.float64), w.astype(np.float64), s, padding)
    _close(got[0], y.astype("float32"), rtol=1e-4)
    _close(got[1], _pool_reference(got[0], (2, 2), s, padding))


def test_ops_that_do_not_export_are_listed_in_the_readme():
    from engine.graph.export.onnx_export import not_exported
    page = os.path.join(REPO, "docs", "guide", "export.md")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    missing = [name for name in not_exported() if f"`{name}`" not in text]
    assert not missing, f"docs/guide/export.md (the ONNX section) does not list {missing}"


def test_float_floor_division_by_and_of_infinities_matches_the_engine(tmp_path):
    x = en.tensor(np.array([np.inf, -np.inf, 5.0, -7.0, 7.5], np.float32))
    _check(lambda a: a // 2.0, [x], tmp_path, "floor_divide_inf_dividend")
    _check(lambda a: 3.0 // a, [x], tmp_path, "floor_divide_inf_divisor")


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_max_min_and_their_indices_see_nan_as_numpy(axis, tmp_path):
    m = en.tensor(np.array([[1.0, np.nan, 3.0], [2.0, 0.0, np.nan], [5.0, 4.0, 6.0]],
                           np.float32))
    for k, fn in enumerate([lambda a: en.max(a, axis=axis), lambda a: en.min(a, axis=axis),
                            lambda a: en.argmax(a, axis=axis), lambda a: en.argmin(a, axis=axis),
                            lambda a: en.max(a, axis=axis, keepdims=True)]):
        model_name = f"nan_reduce_{k}_{axis}"
        path = str(tmp_path / f"{model_name}.onnx")
        en.export_onnx(fn, path, m)
        (got,) = _run_onnx(path, [m])
        np.testing.assert_array_equal(got, fn(m).numpy())
