"""The neural-network ops beyond what the op database checks: dropout's random stream in
both modes, one_hot's inferred class count, embedding's frozen padding row, batch_norm's
running statistics, fusion and ONNX export of the activations, and (where torch is
installed) agreement with ``torch.nn.functional`` beside the numpy references."""
import math

import numpy as np
import pytest

import engine as en
from op_db import conv as op_db_conv
from support.pass_helpers import fused_nodes

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


# ---- activations and losses: numpy's closed forms, and torch too where it is installed -----------
try:
    import torch
    import torch.nn.functional as TF
except ImportError:   # torch is an optional, extra reference; the numpy forms always run
    torch = None


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _reduce(terms, reduction, denominator=None):
    if reduction == "none":
        return terms
    total = terms.sum()
    return total if reduction == "sum" else total / (terms.size if denominator is None else denominator)


def test_activations_and_losses_match_closed_forms_and_torch():
    x = _x(5, 4)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    cases = [   # (ours, numpy's closed form, torch's function of the same arguments or None)
        (en.silu(x), x * _sigmoid(x), lambda t: TF.silu(t(x))),
        (en.elu(x, 0.4), np.where(x > 0, x, 0.4 * np.expm1(x)), lambda t: TF.elu(t(x), 0.4)),
        (en.leaky_relu(x, 0.3), np.where(x > 0, x, 0.3 * x), lambda t: TF.leaky_relu(t(x), 0.3)),
        (en.softplus(x, 1.5, 1.0), np.where(1.5 * x > 1.0, x, np.log1p(np.exp(1.5 * x)) / 1.5),
         lambda t: TF.softplus(t(x), 1.5, 1.0)),
        (en.gelu(x, approximate="tanh"),
         0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
         lambda t: TF.gelu(t(x), approximate="tanh")),
        (en.layer_norm(x, 4), (x - mean) / np.sqrt(var + 1e-5), lambda t: TF.layer_norm(t(x), (4,))),
        (en.batch_norm(x, training=True), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5),
         lambda t: TF.batch_norm(t(x), None, None, training=True)),
    ]
    logp = np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True))
    target, w = np.array([0, 3, -100, 1, 2]), RNG.uniform(0.5, 2, 4)
    p, y, pw = RNG.uniform(0.05, 0.95, (5, 4)), RNG.uniform(0, 1, (5, 4)), RNG.uniform(0.5, 2, 4)
    kept = target != -100                       # -100: the ignored class, as in PyTorch
    weight = np.where(kept, w[np.where(kept, target, 0)], 0.0)
    nll = -weight * logp[np.arange(5), np.where(kept, target, 0)]
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    bce_logits = -(pw * y * np.log(_sigmoid(x)) + (1 - y) * np.log(1 - _sigmoid(x)))
    for red in ("mean", "sum", "none"):
        cases += [
            (en.nll_loss(logp, target, w, ignore_index=-100, reduction=red),
             _reduce(nll, red, weight.sum()),
             lambda t, red=red: TF.nll_loss(t(logp), t(target), weight=t(w), reduction=red)),
            (en.binary_cross_entropy(p, y, reduction=red), _reduce(bce, red),
             lambda t, red=red: TF.binary_cross_entropy(t(p), t(y), reduction=red)),
            (en.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction=red),
             _reduce(bce_logits, red),
             lambda t, red=red: TF.binary_cross_entropy_with_logits(t(x), t(y), pos_weight=t(pw),
                                                                    reduction=red)),
        ]
    for ours, closed_form, theirs in cases:
        np.testing.assert_allclose(ours.numpy(), closed_form, rtol=1e-10, atol=1e-12)
        if torch is not None:
            np.testing.assert_allclose(ours.numpy(), theirs(torch.tensor).numpy(), rtol=1e-10,
                                       atol=1e-12)


# ---- convolution and pooling: ONNX, and torch as an extra reference ---------------------------------
def _onnx_run(fn, args, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    path = str(tmp_path / "m.onnx")
    en.export_onnx(en.function(fn), path, *args)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), args)})


CONV_OPTIONS = [dict(padding=1, dilation=2, groups=2, stride=2),
                dict(padding=((0, 1), (2, 0)), groups=2), dict(padding="same", stride=2, groups=2)]
TRANSPOSE_OPTIONS = [dict(stride=2, padding=1, output_padding=1, groups=2),
                     dict(stride=(2, 1), dilation=2), dict(padding="same", stride=2)]
POOL_OPTIONS = [dict(pool_size=3, strides=2, padding=1, ceil_mode=True),
                dict(pool_size=2, strides=3, padding=1, ceil_mode=True),
                dict(pool_size=3, strides=2, padding="same"), dict(pool_size=2)]


@pytest.mark.parametrize("options", CONV_OPTIONS)
def test_conv2d_options_export_to_onnx(options, tmp_path):
    x = _x(2, 9, 8, 4).astype("float32")
    w = _x(3, 3, 2, 6).astype("float32")
    (got,) = _onnx_run(lambda x, w: en.conv2d(x, w, **options), (x, w), tmp_path)
    np.testing.assert_allclose(got, en.conv2d(x, w, **options).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("options", TRANSPOSE_OPTIONS)
def test_conv_transpose2d_exports_as_conv_transpose(options, tmp_path):
    x = _x(2, 4, 5, 6).astype("float32")
    w = _x(3, 3, 2, 6).astype("float32")
    (got,) = _onnx_run(lambda x, w: en.conv_transpose2d(x, w, **options), (x, w), tmp_path)
    want = en.conv_transpose2d(x, w, **options).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("options", POOL_OPTIONS + [dict(pool_size=2, dilation=2, strides=1)])
def test_max_pool2d_and_its_indices_export_to_onnx(options, tmp_path):
    x = _x(2, 9, 8, 3).astype("float32")
    got = _onnx_run(lambda x: en.max_pool2d(x, return_indices=True, **options), (x,), tmp_path)
    out, idx = en.max_pool2d(x, return_indices=True, **options)
    np.testing.assert_array_equal(got[0], out.numpy())
    np.testing.assert_array_equal(got[1], idx.numpy())


@pytest.mark.parametrize("options", POOL_OPTIONS + [
    dict(pool_size=3, strides=2, padding=1, ceil_mode=True, count_include_pad=False)])
def test_avg_pool2d_exports_to_onnx(options, tmp_path):
    """PyTorch's window sizes, also where ONNX's ceil_mode would keep a window that starts
    in the padding (the exported model rescales by the engine's window sizes)."""
    x = _x(2, 9, 8, 3).astype("float32")
    (got,) = _onnx_run(lambda x: en.avg_pool2d(x, **options), (x,), tmp_path)
    np.testing.assert_allclose(got, en.avg_pool2d(x, **options).numpy(), rtol=1e-5, atol=1e-6)


def _nchw(x):
    return torch.tensor(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


def _nhwc(t):
    return t.detach().numpy().transpose(0, 2, 3, 1)


@pytest.mark.parametrize("options", [CONV_OPTIONS[0], dict(padding=(1, 0), groups=2),
                                     dict(stride=(1, 2), dilation=(2, 1), groups=4)])
def test_conv2d_and_its_gradients_match_loops_and_torch(options):
    """Against the loop references of the op database, and PyTorch's where installed."""
    x, w = _x(2, 9, 8, 4), _x(3, 2, 1 if options.get("groups") == 4 else 2, 8)
    ours = en.conv2d(x, w, **options)
    cot = RNG.standard_normal(ours.shape)
    gx, gw = en.grad(lambda a, b: en.sum(en.conv2d(a, b, **options) * cot), argnums=(0, 1))(
        en.tensor(x), en.tensor(w))
    want = [op_db_conv._conv2d_ref(x, w, **options),
            op_db_conv._conv2d_bp_input_ref(cot, w, x.shape[1:3], **options),
            op_db_conv._conv2d_bp_filter_ref(x, cot, w.shape[:2], **options)]
    if torch is not None:
        xt, wt = _nchw(x).requires_grad_(), torch.tensor(w.transpose(3, 2, 0, 1)).requires_grad_()
        theirs = TF.conv2d(xt, wt, **options)
        (theirs * torch.tensor(cot.transpose(0, 3, 1, 2))).sum().backward()
        want += [_nhwc(theirs), _nhwc(xt.grad), wt.grad.numpy().transpose(2, 3, 1, 0)]
    for got, ref in zip([ours, gx, gw] * 2, want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("options", TRANSPOSE_OPTIONS[:2])
def test_conv_transpose2d_matches_loops_and_torch(options):
    x, w = _x(2, 4, 5, 6), _x(3, 3, 2, 6)
    ours = en.conv_transpose2d(x, w, **options).numpy()
    np.testing.assert_allclose(ours, op_db_conv._conv_transpose2d_ref(x, w, **options),
                               rtol=1e-10, atol=1e-12)
    if torch is not None:
        theirs = TF.conv_transpose2d(_nchw(x), torch.tensor(w.transpose(3, 2, 0, 1)), **options)
        np.testing.assert_allclose(ours, _nhwc(theirs), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("options", POOL_OPTIONS[:2] + [dict(pool_size=(3, 2), strides=(2, 3),
                                                              padding=(1, 1), ceil_mode=True)])
def test_pooling_matches_loops_and_torch(options):
    x = _x(2, 7, 9, 3)
    out, idx = en.max_pool2d(x, return_indices=True, **options)
    want_out, want_idx = op_db_conv._max_pool_ref(x, return_indices=True, **options)
    np.testing.assert_array_equal(out.numpy(), want_out)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    kw = dict(kernel_size=options["pool_size"], stride=options.get("strides"),
              padding=options.get("padding", 0), ceil_mode=options.get("ceil_mode", False))
    if torch is not None:
        t_out, t_idx = TF.max_pool2d(_nchw(x), return_indices=True, **kw)
        np.testing.assert_array_equal(out.numpy(), _nhwc(t_out))
        np.testing.assert_array_equal(idx.numpy(), _nhwc(t_idx))
    for include in (True, False):
        ours = en.avg_pool2d(x, count_include_pad=include, **options).numpy()
        np.testing.assert_allclose(ours, op_db_conv._avg_pool_ref(x, count_include_pad=include,
                                                                  **options),
                                   rtol=1e-12, atol=1e-14)
        if torch is not None:
            theirs = TF.avg_pool2d(_nchw(x), count_include_pad=include, **kw)
            np.testing.assert_allclose(ours, _nhwc(theirs), rtol=1e-12, atol=1e-14)


def test_embedding_and_interpolate_export_to_onnx_as_gathers(tmp_path):
    table = _x(6, 3).astype("float32")
    ids = np.array([[0, 5, 5], [2, 1, 0]])
    image = _x(2, 3, 4, 2).astype("float32")

    def f(table, image):
        return (en.embedding(ids, table), en.interpolate(image, size=(5, 7), mode="bilinear"),
                en.interpolate(image, scale_factor=2))
    got = _onnx_run(f, (table, image), tmp_path)
    for a, b in zip(got, f(table, image)):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-6, atol=1e-6)


# ---- losses at the edges: masked classes and saturated probabilities ---------------------------
def test_a_masked_class_logit_of_minus_inf_leaves_the_loss_finite():
    # -inf masks a class out of the softmax; the loss is the target's -log p (closed form).
    logits = np.array([[-np.inf, 0.0, 1.0], [2.0, -np.inf, 0.5]])
    labels = np.array([1, 0])
    shifted = logits - logits.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    want = -logp[np.arange(2), labels].mean()
    x = en.tensor(logits)
    for got in (en.cross_entropy(x, en.tensor(labels)),
                en.nll_loss(en.log_softmax(x, axis=1), en.tensor(labels))):
        np.testing.assert_allclose(float(got), want, rtol=1e-12)
    g = en.grad(lambda z: en.cross_entropy(z, en.tensor(labels)))(x).numpy()
    probs = np.exp(logp)
    np.testing.assert_allclose(g, (probs - np.eye(3)[labels]) / 2, rtol=1e-12, atol=1e-15)


def test_binary_cross_entropy_at_saturated_probabilities_has_a_finite_gradient():
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.3])
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    loss = en.binary_cross_entropy(en.tensor(p), en.tensor(y), reduction="sum")
    # Each log clamped at -100: 100 + 100 + 0 + 0 - log(0.3).
    np.testing.assert_allclose(float(loss), 200.0 - np.log(0.3), rtol=1e-12)
    g = en.grad(lambda q: en.binary_cross_entropy(q, en.tensor(y), reduction="sum"))(
        en.tensor(p)).numpy()
    assert np.isfinite(g).all()
    # Where no log is clamped the gradient is the closed form -y/p + (1 - y)/(1 - p).
    np.testing.assert_allclose(g[2:], [1.0, -1.0, -1.0 / 0.3], rtol=1e-12)


@pytest.mark.parametrize("ids", [[-1], [0, -2], [6], [1, 7]])
def test_embedding_refuses_ids_outside_its_rows_negative_ones_too(ids):
    # PyTorch raises for both; a -1 must not quietly pick the last row.
    w = en.tensor(np.arange(12.0).reshape(6, 2))
    with pytest.raises(en.ShapeError, match=r"embedding: ids must be in \[0, 6\)"):
        en.embedding(en.tensor(ids), w)
    with pytest.raises(en.ShapeError, match="embedding"):
        en.nn.Embedding(6, 2)(en.tensor(ids))
