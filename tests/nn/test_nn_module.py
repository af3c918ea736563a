"""en.nn.Module: variable discovery, state dicts, the safe file format, modes, repr, and
training steps traced once for a fixed and for a None batch dimension."""
import doctest
import io
import json
import os
import zipfile

import numpy as np
import pytest

import engine as en
from engine import nn as enn


class Block(en.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = en.nn.Linear(3, 4, generator=0)
        self.norms = [en.nn.LayerNorm(4), en.nn.BatchNorm(4)]
        self.extra = {"scale": en.Variable(np.float32(2.0), name="scale"),
                      "head": en.nn.Linear(4, 2, generator=1)}
        self.tied = self.fc.weight            # the same variable again: listed once
        self._cache = en.Variable(0.0)        # private: not walked
        self.note = "not a variable"

    def forward(self, x):
        h = self.norms[1](self.norms[0](self.fc(x)))
        return self.extra["head"](h * self.extra["scale"])


def test_named_variables_walk_attributes_lists_and_dicts():
    names = [n for n, _ in Block().named_variables()]
    assert names == ["fc.weight", "fc.bias", "norms.0.weight", "norms.0.bias", "norms.1.weight",
                     "norms.1.bias", "norms.1.running_mean", "norms.1.running_var",
                     "extra.scale", "extra.head.weight", "extra.head.bias"]
    m = Block()
    trainable = {id(v) for v in m.trainable_variables}
    assert id(m.norms[1].running_mean) not in trainable and id(m.fc.weight) in trainable
    assert len(m.variables) == 11 and len(m.trainable_variables) == 9
    assert m.num_parameters() == 12 + 4 + 8 + 16 + 1 + 8 + 2
    assert [n for n, _ in m.named_modules()] == ["", "fc", "norms.0", "norms.1", "extra.head"]


def test_train_and_eval_reach_every_submodule():
    m = Block()
    assert m.eval() is m
    assert not any(sub.training for sub in m.modules())
    m.train()
    assert all(sub.training for sub in m.modules())


def test_repr_lists_layers_and_parameter_counts():
    model = en.nn.Sequential(en.nn.Conv2D(1, 4, 3, generator=0), en.nn.ReLU(),
                             en.nn.MaxPool2D(2), en.nn.Flatten(), en.nn.Linear(36, 10, generator=1))
    text = repr(model)
    assert text.splitlines()[0] == "Sequential(  # 410 parameters"
    assert "(0): Conv2D(1, 4, kernel_size=(3, 3), stride=(1, 1), padding='valid')  # 40 parameters" in text
    assert "(1): ReLU()" in text
    assert "(4): Linear(in_features=36, out_features=10, bias=True)  # 370 parameters" in text
    assert text.endswith(")")
    nested = repr(Block())
    assert "  (norms.1): BatchNorm(4, momentum=0.1, eps=1e-05)  # 16 parameters" in nested


def test_state_dict_round_trip_and_mismatches_leave_the_module_unchanged():
    a, b = Block(), Block()
    for v in a.variables:
        v.assign(v.numpy() + 1.0)
    state = a.state_dict()
    assert list(state) == [n for n, _ in a.named_variables()]
    b.load_state_dict(state)
    for (n, va), (_, vb) in zip(a.named_variables(), b.named_variables()):
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=n)
    before = b.state_dict()
    bad_shape = dict(state, **{"fc.bias": np.zeros(5, np.float32)})
    with pytest.raises(en.LoadError, match=r"'fc.bias' is float32\[5\].*float32\[4\]"):
        b.load_state_dict(bad_shape)
    with pytest.raises(en.LoadError, match="missing \\['extra.scale'\\]"):
        b.load_state_dict({k: v for k, v in state.items() if k != "extra.scale"})
    with pytest.raises(en.LoadError, match="unexpected \\['other'\\]"):
        b.load_state_dict(dict(state, other=np.zeros(1)))
    with pytest.raises(en.LoadError, match="float64"):
        b.load_state_dict(dict(state, **{"fc.bias": np.zeros(4)}))
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v, before[k])      # all or nothing


def test_save_and_load_into_round_trip(tmp_path):
    a, b = Block(), Block()
    for v in b.variables:
        v.assign(np.zeros(v.shape, v.dtype))
    path = tmp_path / "model.npz"
    en.nn.save(a, path)
    assert os.listdir(tmp_path) == ["model.npz"]         # no temporary file left behind
    en.nn.load_into(b, path)
    for (n, va), (_, vb) in zip(a.named_variables(), b.named_variables()):
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=n)
    x = en.ones((2, 3), dtype="float32")
    np.testing.assert_array_equal(a.eval()(x).numpy(), b.eval()(x).numpy())
    with np.load(path, allow_pickle=False) as z:          # a plain npz, no pickle needed
        assert "v0" in z.files
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(zf.read("meta.json"))
    assert [e["name"] for e in meta["variables"]][:2] == ["fc.weight", "fc.bias"]
    assert meta["variables"][0]["shape"] == [3, 4] and meta["variables"][0]["dtype"] == "float32"


def _rewrite(path, out, meta_fn=None, arrays=None):
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(members["meta.json"])
    if meta_fn:
        meta_fn(meta)
    members["meta.json"] = json.dumps(meta).encode()
    for key, value in (arrays or {}).items():
        buf = io.BytesIO()
        np.lib.format.write_array(buf, value)
        members[key] = buf.getvalue()
    with zipfile.ZipFile(out, "w") as zf:
        for n, data in members.items():
            zf.writestr(n, data)


def test_load_into_rejects_mismatched_and_hostile_files(tmp_path):
    model = en.nn.Linear(3, 2, generator=0)
    path = tmp_path / "m.npz"
    en.nn.save(model, path)
    before = model.weight.numpy().copy()
    with pytest.raises(en.LoadError, match=r"weight.*float32\[3, 2\].*float32\[4, 2\]"):
        en.nn.load_into(en.nn.Linear(4, 2), path)
    with pytest.raises(en.LoadError, match="missing"):
        en.nn.load_into(en.nn.Sequential(en.nn.Linear(3, 2)), path)
    # The JSON says (3, 2) but the array member holds something else: caught from its header.
    lying = tmp_path / "lying.npz"
    _rewrite(path, lying, arrays={"v0.npy": np.zeros((1000, 1000), np.float32)})
    with pytest.raises(en.LoadError, match=r"v0.npy is float32\[1000, 1000\]"):
        en.nn.load_into(model, lying)
    objects = tmp_path / "objects.npz"
    _rewrite(path, objects, meta_fn=lambda m: m["variables"][0].update(dtype="object"))
    with pytest.raises(en.LoadError, match="unsupported dtype"):
        en.nn.load_into(model, objects)
    versioned = tmp_path / "v9.npz"
    _rewrite(path, versioned, meta_fn=lambda m: m.update(version=9))
    with pytest.raises(en.LoadError, match="version 9"):
        en.nn.load_into(model, versioned)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file")
    with pytest.raises(en.LoadError, match="not a saved module"):
        en.nn.load_into(model, garbage)
    graph_file = tmp_path / "plain.npz"
    np.savez(graph_file, a=np.zeros(2))
    with pytest.raises(en.LoadError, match="meta.json"):
        en.nn.load_into(model, graph_file)
    np.testing.assert_array_equal(model.weight.numpy(), before)
    with pytest.raises(FileNotFoundError):
        en.nn.load_into(model, tmp_path / "missing.npz")


def test_save_failure_leaves_old_file_and_no_temporary(tmp_path, monkeypatch):
    model = en.nn.Linear(2, 2, generator=0)
    path = tmp_path / "m.npz"
    en.nn.save(model, path)
    old = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    model.weight.assign(np.ones((2, 2), np.float32))
    with pytest.raises(OSError, match="disk full"):
        en.nn.save(model, path)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["m.npz"]


# ---- training steps -------------------------------------------------------------------------
def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    return x, y


def _model():
    return en.nn.Sequential(en.nn.Linear(6, 8, generator=0), en.nn.BatchNorm(8), en.nn.Tanh(),
                            en.nn.Linear(8, 2, generator=1))


def _make_step(model, opt):
    def step(x, y):
        with en.GradientTape() as tape:
            loss = en.cross_entropy(model(x), y)
        opt.step(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss
    return step


@pytest.mark.parametrize("signature", [None, "none_batch"])
def test_traced_training_step_matches_eager_and_traces_once(signature):
    batches = [_data(16, seed=s) for s in range(4)]
    if signature:
        batches += [_data(n, seed=10 + n) for n in (5, 9)]   # other batch sizes, same trace
    eager_model, traced_model = _model(), _model()
    eager_step = _make_step(eager_model, en.optim.Adam(0.05))
    kwargs = {}
    if signature:
        kwargs["input_signature"] = [en.TensorSpec((None, 6), "float32"),
                                     en.TensorSpec((None,), "int64")]
    traced_step = en.function(_make_step(traced_model, en.optim.Adam(0.05)), **kwargs)
    for x, y in batches:
        le = eager_step(en.tensor(x), en.tensor(y))
        lt = traced_step(en.tensor(x), en.tensor(y))
        np.testing.assert_allclose(float(lt), float(le), rtol=1e-5)
    assert traced_step.trace_count == 1
    # Every variable, running statistics included, was read and written in program order.
    for (n, ve), (_, vt) in zip(eager_model.named_variables(), traced_model.named_variables()):
        np.testing.assert_allclose(vt.numpy(), ve.numpy(), rtol=2e-5, atol=1e-6, err_msg=n)


def test_eval_function_traced_separately_uses_running_statistics():
    model = _model()
    step = en.function(_make_step(model, en.optim.SGD(0.1)))
    x, y = _data(32)
    for _ in range(3):
        step(en.tensor(x), en.tensor(y))
    model.eval()
    predict = en.function(lambda x: model(x),
                          input_signature=[en.TensorSpec((None, 6), "float32")])
    for n in (3, 7):
        xb = x[:n]
        np.testing.assert_allclose(predict(en.tensor(xb)).numpy(), model(en.tensor(xb)).numpy(),
                                   rtol=1e-6)
    assert predict.trace_count == 1


def test_rnn_training_step_traced_with_none_batch():
    rnn = en.nn.RNN(en.nn.LSTMCell(3, 4, generator=0))
    head = en.nn.Linear(4, 1, generator=1)
    params = rnn.trainable_variables + head.trainable_variables
    opt = en.optim.RMSprop(0.01)

    @en.function(input_signature=[en.TensorSpec((None, 5, 3), "float32")])
    def step(x):
        with en.GradientTape() as tape:
            out, (h, c) = rnn(x)
            loss = en.mean(head(h) ** 2.0)
        grads = tape.gradient(loss, params)
        opt.step(grads, params)
        return loss

    rng = np.random.default_rng(0)
    losses = [float(step(en.tensor(rng.normal(size=(n, 5, 3)).astype(np.float32))))
              for n in (4, 4, 7, 2)]
    assert step.trace_count == 1
    assert all(np.isfinite(losses))


def test_docstring_examples():
    import engine.nn.activations, engine.nn.containers, engine.nn.embedding, engine.nn.init
    import engine.nn.layers, engine.nn.module, engine.nn.normalization, engine.nn.recurrent
    import engine.nn.serialization, engine.nn.functional
    for module in (enn, enn.activations, enn.containers, enn.embedding, enn.init, enn.layers,
                   enn.module, enn.normalization, enn.recurrent, enn.serialization,
                   enn.functional):
        failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert failures == 0, module.__name__


def test_old_functions_stay_reachable():
    x = en.tensor([[1.0, 2.0]])
    assert en.nn.functional.softmax is en.softmax
    assert en.nn.functional.cross_entropy is en.cross_entropy
    for name in ("softmax", "log_softmax", "logsumexp", "mse", "cross_entropy"):
        assert getattr(en, name) is getattr(en.nn.functional, name)
    np.testing.assert_allclose(en.softmax(x).numpy(), en.nn.functional.softmax(x).numpy())


def test_traced_scan_with_unknown_batch_dimension():
    """A traced scan whose per-step outputs have a None dimension stacks them at run time."""
    @en.function(input_signature=[en.TensorSpec((4, None, 2), "float64")])
    def cumulative(xs):
        return en.scan(lambda c, x: (c + x, c * 2.0), en.zeros_like(xs[0]), xs)

    xs = np.random.default_rng(0).normal(size=(4, 3, 2))
    final, ys = cumulative(en.tensor(xs))
    np.testing.assert_allclose(final.numpy(), xs.sum(axis=0), rtol=1e-12)
    expected = 2.0 * np.concatenate([np.zeros((1, 3, 2)), np.cumsum(xs, axis=0)[:-1]])
    np.testing.assert_allclose(ys.numpy(), expected, rtol=1e-12)
    final1, _ = cumulative(en.tensor(xs[:, :1]))
    np.testing.assert_allclose(final1.numpy(), xs[:, :1].sum(axis=0), rtol=1e-12)
    assert cumulative.trace_count == 1
