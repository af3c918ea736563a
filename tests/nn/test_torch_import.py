"""Loading PyTorch state_dicts into engine models (en.nn.load_torch_state_dict)."""
import numpy as np
import pytest

import engine as en


def test_layouts_against_numpy_forms():
    # A state_dict made of plain arrays in PyTorch's layouts; the references are the
    # layers' definitions in numpy (no torch needed).
    rng = np.random.default_rng(0)
    w_lin = rng.standard_normal((4, 3)).astype("float32")      # (out, in)
    b_lin = rng.standard_normal(4).astype("float32")
    emb = rng.standard_normal((10, 3)).astype("float32")
    ln_w, ln_b = rng.standard_normal(4).astype("float32"), rng.standard_normal(4).astype("float32")

    class Net(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = en.nn.Embedding(10, 3, generator=0)
            self.proj = en.nn.Linear(3, 4, generator=1)
            self.norm = en.nn.LayerNorm(4)

        def forward(self, ids):
            return self.norm(self.proj(self.embed(ids)))

    net = en.nn.load_torch_state_dict(Net(), {
        "embed.weight": emb, "proj.weight": w_lin, "proj.bias": b_lin,
        "norm.weight": ln_w, "norm.bias": ln_b})
    ids = np.array([[1, 7, 3]])
    h = emb[ids] @ w_lin.T + b_lin
    ref = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * ln_w + ln_b
    np.testing.assert_allclose(net(en.tensor(ids)).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_conv_layout_against_numpy_correlation():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((2, 3, 2, 2)).astype("float32")       # (out, in, kh, kw)
    conv = en.nn.load_torch_state_dict(en.nn.Conv2D(3, 2, 2, bias=False), {"weight": w})
    x = rng.standard_normal((1, 4, 4, 3)).astype("float32")       # NHWC
    ref = np.zeros((1, 3, 3, 2), dtype="float32")
    for i in range(3):
        for j in range(3):
            ref[0, i, j] = np.einsum("hwc,ochw->o", x[0, i:i + 2, j:j + 2], w)
    np.testing.assert_allclose(conv(en.tensor(x)).numpy(), ref, rtol=1e-5, atol=1e-5)


def test_names_and_shapes_checked_before_any_change():
    model = en.nn.Sequential(en.nn.Linear(3, 4, generator=0))
    before = model[0].weight.numpy().copy()
    with pytest.raises(en.LoadError, match=r"missing \['0.bias'\].*unexpected \['0.bais'\]"):
        en.nn.load_torch_state_dict(model, {"0.weight": np.zeros((4, 3), "float32"),
                                            "0.bais": np.zeros(4, "float32")})
    with pytest.raises(en.LoadError, match="2-d"):
        en.nn.load_torch_state_dict(model, {"0.weight": np.zeros(12, "float32"),
                                            "0.bias": np.zeros(4, "float32")})
    np.testing.assert_array_equal(model[0].weight.numpy(), before)


def test_cnn_matches_torch_outputs(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                             torch.nn.ReLU(),
                             torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1,
                                                      output_padding=1))
    tm(torch.randn(8, 3, 6, 6))      # training mode: running statistics move
    tm.eval()
    from safetensors.torch import save_file
    save_file(tm.state_dict(), str(tmp_path / "cnn.safetensors"))
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype("float32")
    ref = tm(torch.from_numpy(x)).detach().numpy()
    for source in (tm.state_dict(), tmp_path / "cnn.safetensors"):
        m = en.nn.Sequential(en.nn.Conv2D(3, 4, 3, padding=1), en.nn.BatchNorm(4), en.nn.ReLU(),
                             en.nn.ConvTranspose2D(4, 2, 3, stride=2, padding=1,
                                                   output_padding=1)).eval()
        en.nn.load_torch_state_dict(m, source)
        out = m(en.tensor(x.transpose(0, 2, 3, 1))).numpy().transpose(0, 3, 1, 2)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_mlp_embedding_layernorm_and_cells_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    t_emb, t_lin, t_ln = torch.nn.Embedding(7, 5), torch.nn.Linear(5, 6), torch.nn.LayerNorm(6)
    t_lstm, t_gru = torch.nn.LSTMCell(6, 3), torch.nn.GRUCell(6, 3)
    e_emb = en.nn.load_torch_state_dict(en.nn.Embedding(7, 5), t_emb.state_dict())
    e_lin = en.nn.load_torch_state_dict(en.nn.Linear(5, 6), t_lin.state_dict())
    e_ln = en.nn.load_torch_state_dict(en.nn.LayerNorm(6), t_ln.state_dict())
    e_lstm = en.nn.load_torch_state_dict(en.nn.LSTMCell(6, 3), t_lstm.state_dict())
    e_gru = en.nn.load_torch_state_dict(en.nn.GRUCell(6, 3), t_gru.state_dict())
    ids = np.array([0, 3, 6, 2])
    with torch.no_grad():
        h = t_ln(t_lin(t_emb(torch.from_numpy(ids))))
        ref_lstm, ref_gru = t_lstm(h)[0].numpy(), t_gru(h).numpy()
    e_h = e_ln(e_lin(e_emb(en.tensor(ids))))
    np.testing.assert_allclose(e_h.numpy(), h.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e_lstm(e_h)[0].numpy(), ref_lstm, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e_gru(e_h)[0].numpy(), ref_gru, rtol=1e-5, atol=1e-5)


def test_sequence_model_of_torch_named_layers_matches_torch(tmp_path):
    """The layers with PyTorch's names declare their own tables (LSTM's gate blocks, the
    attention projections); one call loads a whole model, also from a safetensors file."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(11, 8)
            self.block = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                          batch_first=True)
            self.rnn = torch.nn.LSTM(8, 5, num_layers=2, batch_first=True, bidirectional=True)
            self.head = torch.nn.Linear(10, 3)

        def forward(self, ids):
            return self.head(self.rnn(self.block(self.embed(ids)))[0])

    class Net(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = en.nn.Embedding(11, 8)
            self.block = en.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            self.rnn = en.nn.LSTM(8, 5, num_layers=2, batch_first=True, bidirectional=True)
            self.head = en.nn.Linear(10, 3)

        def forward(self, ids):
            return self.head(self.rnn(self.block(self.embed(ids)))[0])

    torch.manual_seed(2)
    tnet = TorchNet().eval()
    save_file(tnet.state_dict(), str(tmp_path / "net.safetensors"))
    ids = np.random.default_rng(0).integers(0, 11, size=(3, 6))
    with torch.no_grad():
        want = tnet(torch.from_numpy(ids)).numpy()
    net = en.nn.load_torch_state_dict(Net().eval(), tmp_path / "net.safetensors")
    np.testing.assert_allclose(net(en.tensor(ids)).numpy(), want, rtol=1e-4, atol=1e-5)
