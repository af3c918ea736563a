"""LSTM, GRU and SimpleRNN layers: against a numpy implementation of PyTorch's equations
written here (float32 and float64, eagerly and inside en.function), gradients against
finite differences, and against torch.nn.LSTM / GRU / RNN with the same weights."""
import numpy as np
import pytest
from support.finite_diff import numeric_grad

import engine as en


# ---- numpy reference ------------------------------------------------------------------------
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(kind, x, state, w_ih, w_hh, b_ih, b_hh):
    """One step of PyTorch's cell with (in, gates * H) weights: ``(h_new, state_new)``."""
    h = state[0] if kind == "LSTM" else state
    gi, gh = x @ w_ih + b_ih, h @ w_hh + b_hh
    if kind == "LSTM":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c = _sigmoid(f) * state[1] + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        return h, (h, c)
    if kind == "GRU":
        xr, xz, xn = np.split(gi, 3, axis=-1)
        hr, hz, hn = np.split(gh, 3, axis=-1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        return h, h
    h = np.tanh(gi + gh) if kind == "tanh" else np.maximum(gi + gh, 0.0)
    return h, h


def np_rnn(kind, layer, x, hx=None):
    """The whole layer on time-major ``x`` (L, N, F): ``(output, h_n)`` (``(h_n, c_n)``)."""
    p = {name: v.numpy().astype(np.float64) for name, v in layer.named_variables()}
    dirs = 2 if layer.bidirectional else 1
    n, hid = x.shape[1], layer.hidden_size
    zeros = np.zeros((layer.num_layers * dirs, n, hid))
    if hx is None:
        hx = (zeros, zeros) if kind == "LSTM" else zeros
    finals = []
    for lay in range(layer.num_layers):
        outs = []
        for d, suffix in enumerate(("", "_reverse")[:dirs]):
            k = lay * dirs + d
            state = (hx[0][k], hx[1][k]) if kind == "LSTM" else hx[k]
            w = [p[f"{name}_l{lay}{suffix}"] if f"{name}_l{lay}{suffix}" in p else 0.0
                 for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            ys = [None] * x.shape[0]
            for t in steps:
                ys[t], state = np_cell(kind, x[t], state, *w)
            outs.append(np.stack(ys))
            finals.append(state)
        x = np.concatenate(outs, axis=-1)
    if kind == "LSTM":
        return x, (np.stack([h for h, _ in finals]), np.stack([c for _, c in finals]))
    return x, np.stack(finals)


def make(kind, *args, **kwargs):
    if kind == "LSTM":
        return en.nn.LSTM(*args, **kwargs)
    if kind == "GRU":
        return en.nn.GRU(*args, **kwargs)
    return en.nn.SimpleRNN(*args, nonlinearity=kind, **kwargs)


def _flat(h):
    return list(h) if isinstance(h, tuple) else [h]


KINDS = ["LSTM", "GRU", "tanh", "relu"]
SETTINGS = [dict(), dict(num_layers=2), dict(bidirectional=True),
            dict(num_layers=2, bidirectional=True, batch_first=True), dict(bias=False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("settings", SETTINGS, ids=["one", "two layers", "bidirectional",
                                                    "deep bidirectional batch_first", "no bias"])
@pytest.mark.parametrize("kind", KINDS)
def test_layer_matches_numpy(kind, settings, graph, dtype):
    rng = np.random.default_rng(0)
    layer = make(kind, 3, 4, dtype=dtype, generator=1, **settings)
    x = rng.normal(size=(5, 2, 3))              # (L, N, F)
    feed = x.transpose(1, 0, 2) if settings.get("batch_first") else x
    fn = en.function(layer) if graph else layer
    out, h_n = fn(en.tensor(feed.astype(dtype)))
    ref, ref_h = np_rnn(kind, layer, x)
    if settings.get("batch_first"):
        ref = ref.transpose(1, 0, 2)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-11, atol=1e-12)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.numpy(), ref, **tol)
    for got, want in zip(_flat(h_n), _flat(ref_h)):
        np.testing.assert_allclose(got.numpy(), want, **tol)


@pytest.mark.parametrize("kind", KINDS)
def test_initial_states_and_unbatched_inputs(kind):
    rng = np.random.default_rng(2)
    layer = make(kind, 3, 4, num_layers=2, bidirectional=True, dtype="float64", generator=3)
    x = rng.normal(size=(6, 2, 3))
    h0 = rng.normal(size=(4, 2, 4))
    hx = (h0, rng.normal(size=(4, 2, 4))) if kind == "LSTM" else h0
    out, h_n = layer(en.tensor(x), tuple(map(en.tensor, hx)) if kind == "LSTM" else en.tensor(hx))
    ref, ref_h = np_rnn(kind, layer, x, hx)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
    for got, want in zip(_flat(h_n), _flat(ref_h)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    # Unbatched: (L, F) with states (layers * directions, H), the batch axis dropped.
    one_hx = (hx[0][:, 1], hx[1][:, 1]) if kind == "LSTM" else hx[:, 1]
    one, one_h = layer(en.tensor(x[:, 1]), tuple(map(en.tensor, one_hx)) if kind == "LSTM"
                       else en.tensor(one_hx))
    np.testing.assert_allclose(one.numpy(), ref[:, 1], rtol=1e-12, atol=1e-12)
    for got, want in zip(_flat(one_h), _flat(ref_h)):
        np.testing.assert_allclose(got.numpy(), want[:, 1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_gradients_match_finite_differences(kind):
    rng = np.random.default_rng(4)
    layer = make(kind, 2, 3, bidirectional=True, dtype="float64", generator=5)
    x = rng.normal(size=(4, 2, 2))
    c = rng.normal(size=(4, 2, 6))
    w = layer.weight_hh_l0_reverse

    def loss(w_value, x):
        w.assign(w_value)
        return en.sum(layer(x)[0] * c)
    w0 = w.numpy().copy()
    with en.GradientTape() as tape:
        value = en.sum(layer(en.tensor(x))[0] * c)
    g = tape.gradient(value, w).numpy()
    np.testing.assert_allclose(g, numeric_grad(loss, [w0, x], 0), rtol=1e-6, atol=1e-8)
    w.assign(w0)
    gx = en.grad(lambda x: loss(en.tensor(w0), x))(en.tensor(x)).numpy()
    np.testing.assert_allclose(gx, numeric_grad(loss, [w0, x], 1), rtol=1e-6, atol=1e-8)


def test_one_scan_node_per_layer_when_traced():
    layer = en.nn.LSTM(3, 4, num_layers=2, bidirectional=True, generator=0)
    f = en.function(layer)
    graph = f.graph_for(en.ones((5, 2, 3), "float32"))
    scans = [n for n in graph.nodes if n.op.name == "scan"]
    assert len(scans) == 2                    # both directions of a layer share one scan


def test_unknown_batch_size_traces_once():
    layer = en.nn.GRU(3, 4, batch_first=True, generator=0)
    f = en.function(layer, input_signature=[en.TensorSpec((None, 5, 3), "float32")])
    for n in (1, 4):
        x = np.random.default_rng(n).normal(size=(n, 5, 3)).astype("float32")
        out, h = f(en.tensor(x))
        ref, ref_h = np_rnn("GRU", layer, x.transpose(1, 0, 2).astype(np.float64))
        np.testing.assert_allclose(out.numpy(), ref.transpose(1, 0, 2), rtol=2e-5, atol=2e-6)
    assert f.trace_count == 1


def test_dropout_between_layers_only_in_training():
    layer = en.nn.LSTM(3, 4, num_layers=2, dropout=0.5, dtype="float64", generator=0)
    x = np.random.default_rng(6).normal(size=(5, 2, 3))
    train_out = layer(en.tensor(x))[0].numpy()
    layer.eval()
    eval_out = layer(en.tensor(x))[0].numpy()
    np.testing.assert_allclose(eval_out, np_rnn("LSTM", layer, x)[0], rtol=1e-12, atol=1e-12)
    assert not np.allclose(train_out, eval_out)


def test_names_match_pytorch_and_existing_rnn_api_still_works():
    lstm = en.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    names = [n for n, _ in lstm.named_variables()]
    assert names[:8] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                         "bias_hh_l0_reverse"]
    assert lstm.weight_ih_l1.shape == (8, 16) and lstm.weight_hh_l1.shape == (4, 16)
    assert isinstance(en.nn.RNN(3, 4, nonlinearity="relu"), en.nn.SimpleRNN)
    cell_rnn = en.nn.RNN(en.nn.LSTMCell(3, 4, generator=0))          # the cell API, unchanged
    outputs, (h, c) = cell_rnn(en.ones((2, 5, 3), "float32"))
    assert outputs.shape == (2, 5, 4) and h.shape == (2, 4)


def test_errors_name_the_layer_and_shapes():
    lstm = en.nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(en.ShapeError, match=r"LSTM: expected inputs \(L, N, H_in\).*H_in = 3, "
                                            r"got input float32\[5,2,6\]") as info:
        lstm(en.ones((5, 2, 6), "float32"))
    assert "test_rnn_layers.py" in str(info.value)
    with pytest.raises(en.ShapeError, match=r"h_0 must be \(2, 2, 4\)"):
        lstm(en.ones((5, 2, 3), "float32"), (en.ones((1, 2, 4), "float32"),) * 2)
    with pytest.raises(en.InvalidArgumentError, match="dropout"):
        en.nn.GRU(3, 4, dropout=1.0)
    with pytest.raises(en.InvalidArgumentError, match="nonlinearity"):
        en.nn.SimpleRNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(en.UnimplementedError, match="LSTM: proj_size"):
        en.nn.LSTM(3, 4, proj_size=2)


def _torch_layer(torch, kind, layer):
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU}.get(kind, torch.nn.RNN)
    extra = {} if kind in ("LSTM", "GRU") else dict(nonlinearity=kind)
    t = cls(layer.input_size, layer.hidden_size, num_layers=layer.num_layers, bias=layer.bias,
            batch_first=layer.batch_first, bidirectional=layer.bidirectional,
            dtype=torch.float64, **extra)
    t.load_state_dict({n: torch.tensor(v.numpy().T.copy() if v.ndim == 2 else v.numpy())
                       for n, v in layer.named_variables()})
    return t


@pytest.mark.parametrize("settings", SETTINGS[1:], ids=["two layers", "bidirectional",
                                                        "deep bidirectional batch_first",
                                                        "no bias"])
@pytest.mark.parametrize("kind", KINDS)
def test_layer_matches_torch(kind, settings):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    layer = make(kind, 3, 4, dtype="float64", generator=8, **settings)
    t = _torch_layer(torch, kind, layer)
    x = rng.normal(size=(2, 5, 3) if layer.batch_first else (5, 2, 3))
    dirs = 2 if layer.bidirectional else 1
    h0 = rng.normal(size=(layer.num_layers * dirs, 2, 4))
    c0 = rng.normal(size=h0.shape)
    tx, th, tc = (torch.tensor(a, requires_grad=True) for a in (x, h0, c0))
    t_out, t_h = t(tx, (th, tc) if kind == "LSTM" else th)
    c_out = rng.normal(size=t_out.shape)
    c_h = rng.normal(size=h0.shape)
    t_last = t_h[0] if kind == "LSTM" else t_h
    ((t_out * torch.tensor(c_out)).sum() + (t_last * torch.tensor(c_h)).sum()).backward()
    ex, eh, ec = (en.tensor(a) for a in (x, h0, c0))
    with en.GradientTape() as tape:
        for a in (ex, eh, ec):
            tape.watch(a)
        out, h_n = layer(ex, (eh, ec) if kind == "LSTM" else eh)
        last = h_n[0] if kind == "LSTM" else h_n
        loss = en.sum(out * c_out) + en.sum(last * c_h)
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for got, want in zip(_flat(h_n), _flat(t_h)):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    named = layer.named_variables()
    grads = tape.gradient(loss, [ex, eh, ec] + [v for _, v in named])
    np.testing.assert_allclose(grads[0].numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(grads[1].numpy(), th.grad.numpy(), rtol=1e-9, atol=1e-11)
    if kind == "LSTM":
        np.testing.assert_allclose(grads[2].numpy(), tc.grad.numpy(), rtol=1e-9, atol=1e-11)
    t_params = dict(t.named_parameters())
    for (name, _), g in zip(named, grads[3:]):
        tg = t_params[name].grad.numpy()
        np.testing.assert_allclose(g.numpy(), tg.T if tg.ndim == 2 else tg, rtol=1e-9,
                                   atol=1e-11, err_msg=name)


def test_lstm_loads_a_torch_state_dict():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    t = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, dtype=torch.float64)
    layer = en.nn.LSTM(3, 4, num_layers=2, bidirectional=True, dtype="float64")
    en.nn.load_torch_state_dict(layer, t.state_dict())
    x = np.random.default_rng(9).normal(size=(5, 2, 3))
    np.testing.assert_allclose(layer(en.tensor(x))[0].numpy(),
                               t(torch.tensor(x))[0].detach().numpy(), rtol=1e-10, atol=1e-12)


# ---- cells with returns="state" (PyTorch's cells' results) ---------------------------------------
def _cell(kind, **kw):
    if kind == "LSTM":
        return en.nn.LSTMCell(3, 4, dtype="float64", generator=0, **kw)
    if kind == "GRU":
        return en.nn.GRUCell(3, 4, dtype="float64", generator=0, **kw)
    return en.nn.RNNCell(3, 4, nonlinearity=kind, dtype="float64", generator=0, **kw)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("kind", KINDS)
def test_cells_return_the_state_alone_with_returns_state(kind, graph):
    rng = np.random.default_rng(10)
    cell = _cell(kind, returns="state")
    x, h = rng.normal(size=(2, 3)), rng.normal(size=(2, 4))
    state = (h, rng.normal(size=(2, 4))) if kind == "LSTM" else h
    w = [getattr(cell, n).numpy() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    _, ref = np_cell(kind, x, state, *w)
    run = en.function(cell) if graph else cell
    got = run(en.tensor(x), tuple(map(en.tensor, state)) if kind == "LSTM" else en.tensor(state))
    for g, r in zip(_flat(got), _flat(ref)):
        np.testing.assert_allclose(g.numpy(), r, rtol=1e-12, atol=1e-12)
    default = _cell(kind)                 # the engine's form: (output, state)
    out, new_state = default(en.tensor(x), tuple(map(en.tensor, state)) if kind == "LSTM"
                             else en.tensor(state))
    np.testing.assert_allclose(out.numpy(), _flat(ref)[0], rtol=1e-12, atol=1e-12)
    with pytest.raises(en.InvalidArgumentError, match="returns"):
        _cell(kind, returns="h")


@pytest.mark.parametrize("kind", KINDS)
def test_cells_match_torch(kind):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    cell = _cell(kind, returns="state")
    if kind in ("LSTM", "GRU"):
        t = getattr(torch.nn, f"{kind}Cell")(3, 4, dtype=torch.float64)
    else:
        t = torch.nn.RNNCell(3, 4, nonlinearity=kind, dtype=torch.float64)
    t.load_state_dict({n: torch.tensor(v.numpy().T.copy() if v.ndim == 2 else v.numpy())
                       for n, v in cell.named_variables()})
    x, h, c = (rng.normal(size=s) for s in [(2, 3), (2, 4), (2, 4)])
    tx, th, tc = (torch.tensor(a, requires_grad=True) for a in (x, h, c))
    t_new = t(tx, (th, tc)) if kind == "LSTM" else t(tx, th)
    weights = [rng.normal(size=(2, 4)) for _ in _flat(t_new)]
    sum((a * torch.tensor(w)).sum() for a, w in zip(_flat(t_new), weights)).backward()
    ex, eh, ec = (en.tensor(a) for a in (x, h, c))
    with en.GradientTape() as tape:
        for a in (ex, eh, ec):
            tape.watch(a)
        new = cell(ex, (eh, ec)) if kind == "LSTM" else cell(ex, eh)
        loss = sum(en.sum(a * w) for a, w in zip(_flat(new), weights))
    for got, want in zip(_flat(new), _flat(t_new)):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    grads = tape.gradient(loss, [ex, eh] + cell.variables)
    np.testing.assert_allclose(grads[0].numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[1].numpy(), th.grad.numpy(), rtol=1e-10, atol=1e-12)
    t_params = dict(t.named_parameters())
    for (name, _), g in zip(cell.named_variables(), grads[2:]):
        tg = t_params[name].grad.numpy()
        np.testing.assert_allclose(g.numpy(), tg.T if tg.ndim == 2 else tg, rtol=1e-10,
                                   atol=1e-12, err_msg=name)


def test_rnn_runs_an_rnn_cell():
    cell = en.nn.RNNCell(3, 4, dtype="float64", generator=0)
    x = np.random.default_rng(12).normal(size=(2, 5, 3))
    outputs, last = en.nn.RNN(cell)(en.tensor(x))
    h = np.zeros((2, 4))
    w = [getattr(cell, n).numpy() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    for t in range(5):
        h, _ = np_cell("tanh", x[:, t], h, *w)
        np.testing.assert_allclose(outputs.numpy()[:, t], h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(last.numpy(), h, rtol=1e-12, atol=1e-12)
