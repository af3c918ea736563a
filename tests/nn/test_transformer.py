"""Transformer layers: against the numpy layers of tests/support/attention_reference.py
(float32 and float64, eagerly and inside en.function), gradients against finite
differences, and against torch.nn's transformer modules with the same weights (values and
gradients)."""
import numpy as np
import pytest
from support.attention_reference import np_decoder_layer, np_encoder_layer, params_of
from support.finite_diff import numeric_grad

import engine as en

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-11)}


def _encoder_layer(dtype="float64", **kw):
    return en.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, dtype=dtype,
                                         generator=0, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")],
                         ids=["post-norm relu", "pre-norm gelu"])
def test_encoder_layer_matches_numpy(norm_first, activation, graph, dtype):
    rng = np.random.default_rng(0)
    layer = _encoder_layer(dtype, norm_first=norm_first, activation=activation)
    x = rng.normal(size=(5, 3, 8))
    pad = np.zeros((3, 5), bool)
    pad[2, 3:] = True

    def run(x):
        return layer(x, src_key_padding_mask=en.tensor(pad), is_causal=True)
    out = (en.function(run) if graph else run)(en.tensor(x.astype(dtype)))
    ref = np_encoder_layer(x, params_of(layer), 2, norm_first, activation, pad, causal=True)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.numpy(), ref, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_matches_numpy(norm_first, graph, dtype):
    rng = np.random.default_rng(1)
    layer = en.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                          norm_first=norm_first, dtype=dtype, generator=1)
    tgt, memory = rng.normal(size=(4, 2, 8)), rng.normal(size=(6, 2, 8))
    pad = np.zeros((2, 6), bool)
    pad[0, 4:] = True

    def run(tgt, memory):
        return layer(tgt, memory, memory_key_padding_mask=en.tensor(pad), tgt_is_causal=True)
    out = (en.function(run) if graph else run)(en.tensor(tgt.astype(dtype)),
                                                en.tensor(memory.astype(dtype)))
    ref = np_decoder_layer(tgt, memory, params_of(layer), 2, norm_first, causal=True,
                           memory_padding=pad)
    np.testing.assert_allclose(out.numpy(), ref, **TOL[dtype])


def test_unknown_batch_size_traces_once():
    layer = _encoder_layer("float32", batch_first=True)
    f = en.function(lambda x, pad: layer(x, src_key_padding_mask=pad, is_causal=True),
                    input_signature=[en.TensorSpec((None, 5, 8), "float32"),
                                     en.TensorSpec((None, 5), "bool")])
    for n in (1, 3):
        rng = np.random.default_rng(n)
        x = rng.normal(size=(n, 5, 8)).astype("float32")
        pad = np.zeros((n, 5), bool)
        pad[0, 3:] = True
        ref = np_encoder_layer(x.transpose(1, 0, 2).astype(np.float64), params_of(layer), 2,
                               padding=pad, causal=True).transpose(1, 0, 2)
        np.testing.assert_allclose(f(en.tensor(x), en.tensor(pad)).numpy(), ref, **TOL["float32"])
    assert f.trace_count == 1


def test_stacks_copy_the_layer_and_apply_each_then_the_norm():
    rng = np.random.default_rng(2)
    layer = _encoder_layer()
    norm = en.nn.LayerNorm(8, dtype="float64")
    norm.weight.assign(rng.normal(size=8))
    encoder = en.nn.TransformerEncoder(layer, num_layers=3, norm=norm)
    first, second = encoder.layers[0], encoder.layers[1]
    assert first.linear1.weight is not second.linear1.weight            # copies, not shared
    np.testing.assert_array_equal(first.linear1.weight.numpy(), layer.linear1.weight.numpy())
    second.linear1.weight.assign(rng.normal(size=(8, 16)))               # each its own values
    x = rng.normal(size=(4, 2, 8))
    ref = x
    for i in range(3):
        ref = np_encoder_layer(ref, params_of(encoder, f"layers.{i}."), 2)
    mean, var = ref.mean(-1, keepdims=True), ref.var(-1, keepdims=True)
    ref = (ref - mean) / np.sqrt(var + 1e-5) * norm.weight.numpy()
    np.testing.assert_allclose(encoder(en.tensor(x)).numpy(), ref, rtol=1e-10, atol=1e-11)
    names = [n for n, _ in encoder.named_variables()]
    assert names[0] == "layers.0.self_attn.in_proj_weight" and names[-2:] == ["norm.weight",
                                                                               "norm.bias"]


def test_encoder_layer_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    layer = _encoder_layer(norm_first=True)
    x = rng.normal(size=(3, 2, 8))
    c = rng.normal(size=(3, 2, 8))
    w = layer.linear1.weight
    w0 = w.numpy().copy()

    def loss(w_value, x):
        w.assign(w_value)
        return en.sum(layer(x, is_causal=True) * c)
    with en.GradientTape() as tape:
        value = en.sum(layer(en.tensor(x), is_causal=True) * c)
    g = tape.gradient(value, w).numpy()
    np.testing.assert_allclose(g, numeric_grad(loss, [w0, x], 0), rtol=1e-6, atol=1e-8)
    w.assign(w0)
    gx = en.grad(lambda x: loss(en.tensor(w0), x))(en.tensor(x)).numpy()
    np.testing.assert_allclose(gx, numeric_grad(loss, [w0, x], 1), rtol=1e-6, atol=1e-8)


def test_dropout_in_training_only():
    layer = en.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5,
                                          dtype="float64", generator=0)
    x = en.tensor(np.random.default_rng(4).normal(size=(4, 2, 8)))
    train = layer(x).numpy()
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), np_encoder_layer(x.numpy(), params_of(layer), 2),
                               rtol=1e-10, atol=1e-11)
    assert not np.allclose(train, layer(x).numpy())


def test_square_subsequent_mask_and_errors():
    mask = en.nn.Transformer.generate_square_subsequent_mask(4).numpy()
    np.testing.assert_array_equal(mask, np.triu(np.full((4, 4), -np.inf), 1) + 0.0)
    as_torch = en.nn.Transformer.generate_square_subsequent_mask(3, None, "float64")  # (sz, device, dtype)
    assert as_torch.dtype == np.float64
    layer = _encoder_layer()
    x = en.tensor(np.random.default_rng(8).normal(size=(3, 2, 8)))
    np.testing.assert_array_equal(        # PyTorch's switches are taken and change nothing
        en.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False, mask_check=False)(x).numpy(),
        en.nn.TransformerEncoder(layer, 1)(x).numpy())
    with pytest.raises(en.InvalidArgumentError, match="TransformerEncoderLayer: activation"):
        en.nn.TransformerEncoderLayer(8, 2, activation="swish")
    with pytest.raises(en.InvalidArgumentError, match="divisible"):
        en.nn.TransformerDecoderLayer(8, 3)
    with pytest.raises(en.ArgumentTypeError, match="TransformerEncoder: expected"):
        en.nn.TransformerEncoder(en.nn.Linear(2, 2), 2)
    layer = en.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    with pytest.raises(en.ShapeError, match=r"MultiheadAttention: query must have 8 features"):
        layer(en.ones((5, 3, 6), "float32"))


# ---- against PyTorch ---------------------------------------------------------------------------
def _copy_to_torch(torch, module, t):
    """Load ``module``'s values into the torch module ``t`` by name (2-D weights transposed);
    the names must be exactly torch's state_dict keys."""
    state = {n: torch.tensor(v.numpy().T.copy() if v.ndim == 2 else v.numpy())
             for n, v in module.named_variables()}
    assert sorted(state) == sorted(t.state_dict()), "variable names differ from torch's"
    t.load_state_dict(state)


def _compare_grads(torch_params, module, grads):
    for (name, _), g in zip(module.named_variables(), grads):
        tg = torch_params[name].grad.numpy()
        np.testing.assert_allclose(g.numpy(), tg.T if tg.ndim == 2 else tg, rtol=1e-8,
                                   atol=1e-10, err_msg=name)


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
@pytest.mark.parametrize("norm_first,batch_first,bias", [(False, False, True), (True, True, True),
                                                         (False, True, False)],
                         ids=["post-norm", "pre-norm batch_first", "no bias"])
def test_layers_match_torch(kind, norm_first, batch_first, bias):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first, batch_first=batch_first,
              bias=bias, activation="gelu")
    if kind == "encoder":
        layer = en.nn.TransformerEncoderLayer(8, 2, dtype="float64", generator=2, **kw)
        t = torch.nn.TransformerEncoderLayer(8, 2, dtype=torch.float64, **kw)
    else:
        layer = en.nn.TransformerDecoderLayer(8, 2, dtype="float64", generator=2, **kw)
        t = torch.nn.TransformerDecoderLayer(8, 2, dtype=torch.float64, **kw)
    _copy_to_torch(torch, layer, t)
    shape = (lambda n: (2, n, 8)) if batch_first else (lambda n: (n, 2, 8))
    x, memory = rng.normal(size=shape(5)), rng.normal(size=shape(6))
    pad = np.zeros((2, 5 if kind == "encoder" else 6), bool)
    pad[1, -2:] = True
    if kind == "encoder":       # torch wants both masks of one type: float (0 or -inf)
        pad = np.where(pad, -np.inf, 0.0)
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    tx, tm = torch.tensor(x, requires_grad=True), torch.tensor(memory, requires_grad=True)
    if kind == "encoder":
        t_out = t(tx, src_mask=torch.tensor(causal), src_key_padding_mask=torch.tensor(pad))
    else:
        t_out = t(tx, tm, tgt_mask=torch.tensor(causal),
                  memory_key_padding_mask=torch.tensor(pad))
    c = rng.normal(size=t_out.shape)
    (t_out * torch.tensor(c)).sum().backward()
    ex, em = en.tensor(x), en.tensor(memory)
    with en.GradientTape() as tape:
        tape.watch(ex)
        tape.watch(em)
        if kind == "encoder":
            out = layer(ex, src_mask=en.tensor(causal), src_key_padding_mask=en.tensor(pad))
        else:
            out = layer(ex, em, tgt_mask=en.tensor(causal),
                        memory_key_padding_mask=en.tensor(pad))
        loss = en.sum(out * c)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-11)
    grads = tape.gradient(loss, [ex, em] + layer.variables)
    np.testing.assert_allclose(grads[0].numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    if kind == "decoder":
        np.testing.assert_allclose(grads[1].numpy(), tm.grad.numpy(), rtol=1e-8, atol=1e-10)
    _compare_grads(dict(t.named_parameters()), layer, grads[2:])


def test_transformer_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=16, dropout=0.0, batch_first=True)
    model = en.nn.Transformer(dtype="float64", generator=3, **kw)
    t = torch.nn.Transformer(dtype=torch.float64, **kw)
    _copy_to_torch(torch, model, t)
    src, tgt = rng.normal(size=(2, 6, 8)), rng.normal(size=(2, 4, 8))
    mask = en.nn.Transformer.generate_square_subsequent_mask(4, dtype="float64")
    ts = torch.tensor(src, requires_grad=True)
    t_out = t(ts, torch.tensor(tgt), tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(
        4, dtype=torch.float64))
    c = rng.normal(size=t_out.shape)
    (t_out * torch.tensor(c)).sum().backward()
    es = en.tensor(src)
    with en.GradientTape() as tape:
        tape.watch(es)
        out = model(es, en.tensor(tgt), tgt_mask=mask)
        loss = en.sum(out * c)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-11)
    grads = tape.gradient(loss, [es] + model.variables)
    np.testing.assert_allclose(grads[0].numpy(), ts.grad.numpy(), rtol=1e-8, atol=1e-10)
    _compare_grads(dict(t.named_parameters()), model, grads[1:])
    traced = en.function(lambda s, g: model(s, g, tgt_mask=mask))
    np.testing.assert_allclose(traced(es, en.tensor(tgt)).numpy(), out.numpy(), rtol=1e-12,
                               atol=1e-12)


def test_torch_state_dict_loads_by_name():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                         dtype=torch.float64)
    layer = _encoder_layer()
    en.nn.load_torch_state_dict(layer, t.state_dict())
    x = np.random.default_rng(7).normal(size=(5, 2, 8))
    np.testing.assert_allclose(layer(en.tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10, atol=1e-11)
