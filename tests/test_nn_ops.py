"""The neural-network ops beyond what the op database checks: dropout's random stream in
both modes, one_hot's inferred class count, embedding's frozen padding row, batch_norm's
running statistics, fusion and ONNX export of the activations, and (where torch is
installed) agreement with ``torch.nn.functional`` as an extra, independent reference."""
import math

import numpy as np
import pytest

import engine as en
from pass_helpers import fused_nodes

F = en.nn.functional
RNG = np.random.default_rng(0)


def _x(*shape):
    return RNG.standard_normal(shape)


# ---- dropout ------------------------------------------------------------------------------------
def test_dropout_draws_the_same_stream_eagerly_and_traced():
    x = en.tensor(np.ones((40, 30)))
    eager_gen, traced_gen = en.random.Generator(11), en.random.Generator(11)
    traced = en.function(lambda x: F.dropout(x, 0.25, traced_gen))
    for _ in range(3):    # each call draws the next mask, in both modes alike
        want = F.dropout(x, 0.25, eager_gen).numpy()
        np.testing.assert_array_equal(traced(x).numpy(), want)
    assert set(np.unique(want)) == {0.0, 1 / 0.75}
    np.testing.assert_array_equal(F.dropout(x, 0.25, eager_gen, training=False).numpy(), x.numpy())


def test_dropout_gradient_is_the_kept_mask_scaled_and_default_stream_is_seedable():
    x = en.tensor(_x(8, 9))
    en.random.set_seed(3)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = F.dropout(x, 0.5)
        total = en.sum(y)
    g = tape.gradient(total, x).numpy()
    kept = y.numpy() != 0
    np.testing.assert_allclose(g, kept * 2.0)
    en.random.set_seed(3)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), y.numpy())
    with pytest.raises(ValueError, match="rate"):
        F.dropout(x, 1.0)
    with pytest.raises(en.DTypeError, match="dropout"):
        F.dropout(en.tensor([1, 2]), 0.5)


# ---- one_hot, embedding ---------------------------------------------------------------------------
def test_one_hot_infers_the_class_count_eagerly_and_asks_for_it_when_tracing():
    np.testing.assert_array_equal(en.one_hot(en.tensor([1, 3])).numpy(), np.eye(4, dtype=int)[[1, 3]])
    with pytest.raises(en.TracingError, match="num_classes"):
        en.function(lambda t: en.one_hot(t))(en.tensor([0, 1]))
    traced = en.function(lambda t: en.one_hot(t, 3, dtype="float32"))(en.tensor([2, 0]))
    np.testing.assert_array_equal(traced.numpy(), np.eye(3, dtype="float32")[[2, 0]])


def test_embedding_padding_row_gets_no_gradient():
    w = en.tensor(_x(4, 3))
    ids = en.tensor([[1, 2, 1], [0, 1, 3]])
    for fn in (lambda w: en.sum(en.embedding(ids, w, padding_idx=1) * 2.0),
               en.function(lambda w: en.sum(en.embedding(ids, w, padding_idx=1) * 2.0))):
        g = en.grad(fn)(w).numpy()
        np.testing.assert_array_equal(g, np.array([[2.0] * 3, [0.0] * 3, [2.0] * 3, [2.0] * 3]))
    layer = en.nn.Embedding(5, 2, padding_idx=-1, generator=0)
    np.testing.assert_array_equal(layer.weight.numpy()[4], [0.0, 0.0])


# ---- batch_norm ---------------------------------------------------------------------------------------
def test_batch_norm_updates_running_statistics_in_both_modes():
    x = _x(6, 2, 3)
    mean0, var0 = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)
    batch_mean, batch_var = x.mean(axis=(0, 1)), x.var(axis=(0, 1), ddof=1)
    for run in (lambda f: f, en.function):
        rm, rv = en.Variable(mean0.copy(), trainable=False), en.Variable(var0.copy(), trainable=False)
        y = run(lambda x: en.batch_norm(x, rm, rv, training=True, momentum=0.2))(en.tensor(x))
        np.testing.assert_allclose(rm.numpy(), 0.8 * mean0 + 0.2 * batch_mean, rtol=1e-12)
        np.testing.assert_allclose(rv.numpy(), 0.8 * var0 + 0.2 * batch_var, rtol=1e-12)
        want = (x - x.mean(axis=(0, 1))) / np.sqrt(x.var(axis=(0, 1)) + 1e-5)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-10)


# ---- graphs: fusion and ONNX --------------------------------------------------------------------------
def _activations(x):
    return (en.leaky_relu(x, 0.2) + en.elu(x, 0.7) * en.silu(x) - en.softplus(x, 2.0, 3.0)
            + en.gelu(x, approximate="tanh"))


def _activations_numpy(x):
    sig = 1 / (1 + np.exp(-x))
    soft = np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)
    gelu = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return np.where(x > 0, x, 0.2 * x) + np.where(x > 0, x, 0.7 * np.expm1(x)) * x * sig - soft + gelu


def test_activations_fuse_into_one_kernel_with_their_gradient():
    x = en.tensor(_x(50, 40))
    f = en.function(_activations)
    np.testing.assert_allclose(f(x).numpy(), _activations_numpy(x.numpy()), rtol=1e-12)
    ops = [name for node in fused_nodes(f.graph_for(x)) for name in node.meta["fused_ops"]]
    assert {"leaky_relu", "elu", "silu", "softplus", "gelu"} <= set(ops)
    g = en.function(en.grad(lambda x: en.sum(_activations(x))))(x).numpy()
    eps = 1e-6
    xv = x.numpy()
    fd = (_activations_numpy(xv + eps) - _activations_numpy(xv - eps)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_activations_export_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    x = _x(3, 7).astype("float32") * 4
    path = str(tmp_path / "act.onnx")
    en.export_onnx(en.function(lambda x: (_activations(x), en.softplus(x))), path, x)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got, soft = sess.run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, _activations_numpy(x.astype(np.float64)), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(soft, np.logaddexp(0, x.astype(np.float64)), rtol=2e-5, atol=2e-5)


# ---- torch as an extra reference (optional) --------------------------------------------------------------
try:
    import torch
    import torch.nn.functional as TF
except ImportError:   # torch is an optional, extra comparison
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (an extra check)")


@needs_torch
def test_activations_and_losses_match_torch():
    x = _x(5, 4)
    t = torch.tensor
    pairs = [
        (en.silu(x), TF.silu(t(x))), (en.elu(x, 0.4), TF.elu(t(x), 0.4)),
        (en.leaky_relu(x, 0.3), TF.leaky_relu(t(x), 0.3)),
        (en.softplus(x, 1.5, 1.0), TF.softplus(t(x), 1.5, 1.0)),
        (en.gelu(x, approximate="tanh"), TF.gelu(t(x), approximate="tanh")),
        (en.layer_norm(x, 4), TF.layer_norm(t(x), (4,))),
        (en.batch_norm(x, training=True), TF.batch_norm(t(x), None, None, training=True)),
    ]
    logp = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True))
    target, w = np.array([0, 3, -100, 1, 2]), RNG.uniform(0.5, 2, 4)
    p, y, pw = RNG.uniform(0.05, 0.95, (5, 4)), RNG.uniform(0, 1, (5, 4)), RNG.uniform(0.5, 2, 4)
    for red in ("mean", "sum", "none"):
        pairs += [
            (en.nll_loss(logp, target, w, reduction=red),
             TF.nll_loss(t(logp), t(target), weight=t(w), reduction=red)),
            (en.binary_cross_entropy(p, y, reduction=red),
             TF.binary_cross_entropy(t(p), t(y), reduction=red)),
            (en.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction=red),
             TF.binary_cross_entropy_with_logits(t(x), t(y), pos_weight=t(pw), reduction=red)),
        ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
