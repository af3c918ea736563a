"""Every en.nn layer against a numpy reference implementation, eagerly and traced, with
gradients (input and parameters) against central finite differences of that reference."""
import math

import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference


# ---- numpy references ---------------------------------------------------------------------
def np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def same_pads(size, k, s):
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def ref_conv2d(x, w, b, stride, padding):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    sh, sw = stride
    if padding == "same":
        oh, top, bottom = same_pads(h, kh, sh)
        ow, left, right = same_pads(wd, kw, sw)
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    else:
        oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out + b


def ref_pool(x, k, s, padding, kind):
    n, h, wd, c = x.shape
    if padding == "same":
        oh, top, bottom = same_pads(h, k, s)
        ow, left, right = same_pads(wd, k, s)
    else:
        oh, ow, top, left = (h - k) // s + 1, (wd - k) // s + 1, 0, 0
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s - top, j * s - left
            rows = slice(max(r0, 0), min(r0 + k, h))
            cols = slice(max(c0, 0), min(c0 + k, wd))
            window = x[:, rows, cols, :]      # padded positions are simply left out
            out[:, i, j, :] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


def ref_layer_norm(x, g, b, k, eps=1e-5):
    axes = tuple(range(-k, 0))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def ref_batch_norm(x, g, b, eps=1e-5):
    axes = tuple(range(x.ndim - 1))
    mu, var = x.mean(axis=axes), x.var(axis=axes)
    return (x - mu) / np.sqrt(var + eps) * g + b


def ref_lstm_cell(x, h, c, p):
    z = x @ p["weight_ih"] + p["bias_ih"] + h @ p["weight_hh"] + p["bias_hh"]
    i, f, g, o = np.split(z, 4, axis=-1)
    c2 = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
    return np_sigmoid(o) * np.tanh(c2), c2


def ref_gru_cell(x, h, p):
    xr, xz, xn = np.split(x @ p["weight_ih"] + p["bias_ih"], 3, axis=-1)
    hr, hz, hn = np.split(h @ p["weight_hh"] + p["bias_hh"], 3, axis=-1)
    r, z = np_sigmoid(xr + hr), np_sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def strip(params, prefix):
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def ref_rnn_gru(x, p):
    h = np.zeros((x.shape[0], p["cell.weight_hh"].shape[0]))
    outs = []
    for t in range(x.shape[1]):
        h = ref_gru_cell(x[:, t], h, strip(p, "cell."))
        outs.append(h)
    return np.stack(outs, axis=1)


def ref_rnn_lstm(x, p):
    hid = p["cell.weight_hh"].shape[0]
    h = c = np.zeros((x.shape[0], hid))
    outs = []
    for t in reversed(range(x.shape[1])):      # reverse=True, batch_first=True
        h, c = ref_lstm_cell(x[:, t], h, c, strip(p, "cell."))
        outs.insert(0, h)
    return np.stack(outs, axis=1)


def ref_gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


F64 = "float64"
RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.normal(size=shape)


class Case:
    def __init__(self, name, make, x, ref, first=False):
        # first: the layer returns (output, state); compare the output.
        self.name, self.make, self.x, self.ref, self.first = name, make, x, ref, first

    def run(self, layer, x):
        y = layer(x)
        return y[0] if self.first else y


CASES = [
    Case("linear", lambda: en.nn.Linear(4, 3, dtype=F64, generator=1), _x(5, 4),
         lambda x, p: x @ p["weight"] + p["bias"]),
    Case("linear_3d_no_bias", lambda: en.nn.Linear(4, 2, bias=False, dtype=F64, generator=2),
         _x(2, 3, 4), lambda x, p: x @ p["weight"]),
    Case("conv_valid", lambda: en.nn.Conv2D(2, 3, 3, dtype=F64, generator=3), _x(2, 5, 5, 2),
         lambda x, p: ref_conv2d(x, p["weight"], p["bias"], (1, 1), "valid")),
    Case("conv_same_stride2", lambda: en.nn.Conv2D(2, 2, (3, 2), stride=2, padding="same",
                                                   dtype=F64, generator=4), _x(1, 5, 6, 2),
         lambda x, p: ref_conv2d(x, p["weight"], p["bias"], (2, 2), "same")),
    Case("maxpool", lambda: en.nn.MaxPool2D(2), _x(2, 4, 6, 3),
         lambda x, p: ref_pool(x, 2, 2, "valid", "max")),
    Case("maxpool_same_3_2", lambda: en.nn.MaxPool2D(3, 2, "same"), _x(1, 5, 5, 2),
         lambda x, p: ref_pool(x, 3, 2, "same", "max")),
    Case("avgpool", lambda: en.nn.AvgPool2D(2), _x(2, 4, 6, 3),
         lambda x, p: ref_pool(x, 2, 2, "valid", "avg")),
    Case("avgpool_same_3_2", lambda: en.nn.AvgPool2D(3, 2, "same"), _x(1, 5, 6, 2),
         lambda x, p: ref_pool(x, 3, 2, "same", "avg")),
    Case("avgpool_overlap_valid", lambda: en.nn.AvgPool2D(3, 1), _x(1, 5, 4, 2),
         lambda x, p: ref_pool(x, 3, 1, "valid", "avg")),
    Case("flatten", lambda: en.nn.Flatten(), _x(2, 3, 2, 2), lambda x, p: x.reshape(2, -1)),
    Case("layer_norm", lambda: _perturbed(en.nn.LayerNorm(5, dtype=F64)), _x(3, 5),
         lambda x, p: ref_layer_norm(x, p["weight"], p["bias"], 1)),
    Case("layer_norm_2d", lambda: _perturbed(en.nn.LayerNorm((2, 3), dtype=F64)), _x(4, 2, 3),
         lambda x, p: ref_layer_norm(x, p["weight"], p["bias"], 2)),
    Case("batch_norm_train", lambda: _perturbed(en.nn.BatchNorm(3, dtype=F64)), _x(6, 3),
         lambda x, p: ref_batch_norm(x, p["weight"], p["bias"])),
    Case("batch_norm_train_nhwc", lambda: _perturbed(en.nn.BatchNorm(2, dtype=F64)),
         _x(2, 3, 3, 2), lambda x, p: ref_batch_norm(x, p["weight"], p["bias"])),
    Case("batch_norm_eval", lambda: _with_stats(en.nn.BatchNorm(3, dtype=F64)), _x(4, 3),
         lambda x, p: (x - p["running_mean"]) / np.sqrt(p["running_var"] + 1e-5) * p["weight"]
         + p["bias"]),
    Case("lstm_cell", lambda: _perturbed(en.nn.LSTMCell(3, 2, dtype=F64, generator=5)),
         _x(4, 3), lambda x, p: ref_lstm_cell(x, np.zeros((4, 2)), np.zeros((4, 2)), p)[0], True),
    Case("gru_cell", lambda: _perturbed(en.nn.GRUCell(3, 2, dtype=F64, generator=6)),
         _x(4, 3), lambda x, p: ref_gru_cell(x, np.zeros((4, 2)), p), True),
    Case("rnn_gru", lambda: _perturbed(en.nn.RNN(en.nn.GRUCell(3, 2, dtype=F64, generator=7))),
         _x(2, 4, 3), ref_rnn_gru, True),
    Case("rnn_lstm_reverse", lambda: _perturbed(en.nn.RNN(
        en.nn.LSTMCell(2, 3, dtype=F64, generator=8), reverse=True)), _x(2, 3, 2), ref_rnn_lstm, True),
    Case("relu", lambda: en.nn.ReLU(), _x(3, 4), lambda x, p: np.maximum(x, 0)),
    Case("leaky_relu", lambda: en.nn.LeakyReLU(0.2), _x(3, 4),
         lambda x, p: np.where(x > 0, x, 0.2 * x)),
    Case("tanh", lambda: en.nn.Tanh(), _x(3, 4), lambda x, p: np.tanh(x)),
    Case("sigmoid", lambda: en.nn.Sigmoid(), _x(3, 4), lambda x, p: np_sigmoid(x)),
    Case("gelu", lambda: en.nn.GELU(), _x(3, 4), lambda x, p: ref_gelu(x)),
    Case("softmax", lambda: en.nn.Softmax(axis=0), _x(3, 4), lambda x, p: np_softmax(x, 0)),
    Case("log_softmax", lambda: en.nn.LogSoftmax(), _x(3, 4),
         lambda x, p: np.log(np_softmax(x, -1))),
    Case("sequential", lambda: en.nn.Sequential(en.nn.Linear(3, 4, dtype=F64, generator=9),
                                                en.nn.Tanh(),
                                                en.nn.Linear(4, 2, dtype=F64, generator=10)),
         _x(5, 3), lambda x, p: np.tanh(x @ p["0.weight"] + p["0.bias"]) @ p["2.weight"]
         + p["2.bias"]),
]


def _perturbed(module):
    """Move every variable off its initial value (zeros/ones hide wrong formulas)."""
    rng = np.random.default_rng(42)
    for v in module.variables:
        v.assign(v.numpy() + rng.normal(scale=0.3, size=v.shape))
    return module


def _with_stats(bn):
    _perturbed(bn)
    bn.running_var.assign(np.abs(bn.running_var.numpy()) + 0.5)
    return bn.eval()


def _params(layer):
    return {name: v.numpy().copy() for name, v in layer.named_variables()}


def _ids(cases):
    return [c.name for c in cases]


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_forward_matches_numpy_eager_and_traced(case):
    layer = case.make()
    expected = case.ref(case.x, _params(layer))
    got = case.run(layer, en.tensor(case.x))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    traced = en.function(lambda x: case.run(layer, x))
    np.testing.assert_allclose(traced(en.tensor(case.x)).numpy(), expected, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_gradients_match_finite_differences(case):
    layer = case.make()
    params = _params(layer)
    names = [n for n, v in layer.named_variables() if v.trainable]
    weights = np.random.default_rng(1).normal(size=np.shape(case.ref(case.x, params)))

    def engine_grads(x):
        trainable = [dict(layer.named_variables())[n] for n in names]
        with en.GradientTape() as tape:
            tape.watch(x)
            loss = en.sum(case.run(layer, x) * en.tensor(weights))
        return tape.gradient(loss, [x] + trainable)

    def ref_loss(x, p):
        return float(np.sum(case.ref(x, p) * weights))

    expected = [central_difference(lambda x: ref_loss(x, params), case.x)]
    for n in names:
        def at(value, n=n):
            return ref_loss(case.x, {**params, n: value})
        expected.append(central_difference(at, params[n]))
    eager = engine_grads(en.tensor(case.x))
    traced = en.function(engine_grads)(en.tensor(case.x))
    for label, grads in (("eager", eager), ("traced", traced)):
        for name, g, e in zip(["input"] + names, grads, expected):
            assert g is not None, (label, name)
            np.testing.assert_allclose(g.numpy(), e, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{label} gradient of {name}")


def test_batch_norm_running_statistics_and_eval_mode():
    bn = _perturbed(en.nn.BatchNorm(3, momentum=0.2, dtype=F64))
    g, b = bn.weight.numpy(), bn.bias.numpy()
    rm, rv = bn.running_mean.numpy().copy(), bn.running_var.numpy().copy()
    xs = [_x(5, 3) * 2 + 1 for _ in range(3)]
    step = en.function(lambda x: bn(x))
    for i, x in enumerate(xs):
        (bn if i == 0 else step)(en.tensor(x))     # eager first, then traced
        rm = 0.8 * rm + 0.2 * x.mean(axis=0)
        rv = 0.8 * rv + 0.2 * x.var(axis=0, ddof=1)
        np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-12)
        np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-12)
    bn.eval()
    x = _x(4, 3)
    expected = (x - rm) / np.sqrt(rv + 1e-5) * g + b
    np.testing.assert_allclose(bn(en.tensor(x)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-12)   # eval: no update
    with pytest.raises(en.ShapeError, match="more than one value"):
        bn.train()(en.tensor(_x(1, 3)))


def test_dropout_masks_scale_and_modes():
    x = en.tensor(np.ones((200, 50)))
    drop = en.nn.Dropout(0.3, generator=5)
    y = drop(x).numpy()
    assert set(np.unique(y).round(12)) <= {0.0, round(1 / 0.7, 12)}
    assert abs((y == 0).mean() - 0.3) < 0.02
    same = en.nn.Dropout(0.3, generator=5)
    traced = en.function(lambda x: same(x))
    np.testing.assert_array_equal(traced(x).numpy(), y)      # same seed, same mask, traced
    assert not np.array_equal(traced(x).numpy(), y)          # the stream moves on
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), x.numpy())
    with pytest.raises(ValueError):
        en.nn.Dropout(1.0)


def test_embedding_forward_gradient_eager_and_traced():
    emb = en.nn.Embedding(6, 3, dtype=F64, generator=0)
    table = emb.weight.numpy()
    ids = np.array([[0, 2, 2], [5, 1, 0]])
    weights = _x(2, 3, 3)
    expected_grad = np.zeros_like(table)
    np.add.at(expected_grad, ids, weights)

    def grads(ids):
        with en.GradientTape() as tape:
            loss = en.sum(emb(ids) * en.tensor(weights))
        return emb(ids), tape.gradient(loss, emb.weight)

    for fn in (grads, en.function(grads)):
        out, g = fn(en.tensor(ids))
        np.testing.assert_array_equal(out.numpy(), table[ids])
        np.testing.assert_allclose(g.numpy(), expected_grad, rtol=1e-12)
    with pytest.raises(en.DTypeError, match="integers"):
        emb(en.tensor([0.0]))


def test_gelu_tanh_form_is_close_to_the_erf_form():
    x = np.linspace(-5, 5, 101)
    exact = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    got = en.nn.functional.gelu(en.tensor(x), approximate="tanh").numpy()
    assert np.max(np.abs(got - exact)) < 5e-4
    # The exact form (the default) computes with the erf op.
    exact_layer = en.nn.GELU()
    np.testing.assert_allclose(exact_layer(en.tensor(x)).numpy(), exact, rtol=1e-13, atol=1e-15)


def test_layers_reject_bad_inputs_with_clear_errors():
    with pytest.raises(en.ShapeError, match="last dimension 4, got float32\\[3,5\\]") as info:
        en.nn.Linear(4, 2)(en.ones((3, 5), dtype="float32"))
    assert f"at {__file__}:" in str(info.value)           # the user's line, not the engine's
    with pytest.raises(en.ShapeError, match="test_nn_layers.py"):
        en.nn.Sequential(en.nn.Flatten(), en.nn.Linear(5, 2))(en.ones((2, 2, 2)))
    with pytest.raises(en.ShapeError, match="3 channels"):
        en.nn.Conv2D(3, 2, 3)(en.ones((1, 5, 5, 2), dtype="float32"))
    with pytest.raises(en.ShapeError, match="window 3 is larger"):
        en.nn.AvgPool2D(3)(en.ones((1, 2, 2, 1)))
    with pytest.raises(en.ShapeError, match="ending in"):
        en.nn.LayerNorm(4)(en.ones((2, 3)))
    with pytest.raises(en.ShapeError, match="RNN: expected inputs"):
        en.nn.RNN(en.nn.GRUCell(3, 2))(en.ones((2, 3)))
    with pytest.raises(ValueError, match="padding"):
        en.nn.Conv2D(1, 1, 3, padding="full")
    with pytest.raises(ValueError, match="positive int"):
        en.nn.Linear(0, 2)


def test_layers_keep_float32():
    x = en.ones((2, 6, 6, 3), dtype="float32")
    model = en.nn.Sequential(en.nn.Conv2D(3, 4, 3, padding="same", generator=0),
                             en.nn.BatchNorm(4), en.nn.ReLU(), en.nn.AvgPool2D(2),
                             en.nn.Flatten(), en.nn.LayerNorm(36), en.nn.Linear(36, 2, generator=1),
                             en.nn.GELU())
    assert model(x).dtype == np.float32
    assert all(v.dtype == np.float32 for v in model.variables)
