"""safetensors files for modules and optimizer state (en.nn.save / load_into)."""
import json
import struct

import numpy as np
import pytest
import safetensors.numpy

import engine as en


def _model(seed):
    return en.nn.Sequential(en.nn.Linear(3, 4, generator=seed), en.nn.BatchNorm(4),
                            en.nn.Linear(4, 2, generator=seed + 1))


def _train(model, opt, steps=3):
    x = en.tensor(np.random.default_rng(0).standard_normal((6, 3)).astype("float32"))
    for _ in range(steps):
        opt.minimize(lambda: en.mean(model(x) ** 2), model.trainable_variables)


def test_module_round_trip_and_file_is_standard_safetensors(tmp_path):
    model = _model(0)
    _train(model, en.optim.SGD(0.1))
    path = tmp_path / "model.safetensors"
    en.nn.save(model, path)
    # any safetensors reader sees one tensor per variable, under its dotted name
    arrays = safetensors.numpy.load_file(str(path))
    assert set(arrays) == {name for name, _ in model.named_variables()}
    for name, var in model.named_variables():
        np.testing.assert_array_equal(arrays[name], var.numpy())
    other = en.nn.load_into(_model(5), path)
    for (_, a), (_, b) in zip(model.named_variables(), other.named_variables()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("suffix", ["npz", "safetensors"])
@pytest.mark.parametrize("make", [lambda: en.optim.Adam(0.01), lambda: en.optim.SGD(0.1, momentum=0.9),
                                  lambda: en.optim.RMSprop(0.01)])
def test_optimizer_state_round_trip_continues_identically(tmp_path, suffix, make):
    model, opt = _model(0), make()
    _train(model, opt)
    en.nn.save(model, tmp_path / f"m.{suffix}")
    en.nn.save(opt, tmp_path / f"o.{suffix}")
    # the reference: keep training the original
    _train(model, opt, steps=2)
    restored, opt2 = _model(9), make()
    en.nn.load_into(restored, tmp_path / f"m.{suffix}")
    en.nn.load_into(opt2, tmp_path / f"o.{suffix}", variables=restored.trainable_variables)
    assert int(opt2.iterations.numpy()) == 3
    _train(restored, opt2, steps=2)
    for (_, a), (_, b) in zip(model.named_variables(), restored.named_variables()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("suffix", ["npz", "safetensors"])
def test_lbfgs_history_round_trip(tmp_path, suffix):
    target = np.array([1.0, -2.0, 0.5])

    def run(w, opt, steps):
        for _ in range(steps):
            opt.minimize(lambda: en.sum((w - target) ** 4.0 + w * w), w)

    w, opt = en.Variable(np.zeros(3)), en.optim.LBFGS(history=3)
    run(w, opt, 3)
    en.nn.save(opt, tmp_path / f"l.{suffix}")
    saved_w = w.numpy().copy()
    run(w, opt, 3)
    w2 = en.Variable(saved_w)
    opt2 = en.nn.load_into(en.optim.LBFGS(history=3), tmp_path / f"l.{suffix}", variables=w2)
    run(w2, opt2, 3)
    assert w2.numpy().tobytes() == w.numpy().tobytes()


def test_optimizer_without_variables_is_told_to_build(tmp_path):
    model, opt = _model(0), en.optim.Adam(0.01)
    _train(model, opt, steps=1)
    en.nn.save(opt, tmp_path / "o.safetensors")
    with pytest.raises(en.LoadError, match="variables=model.trainable_variables"):
        en.nn.load_into(en.optim.Adam(0.01), tmp_path / "o.safetensors")


def test_mismatched_file_changes_nothing(tmp_path):
    en.nn.save(en.nn.Linear(3, 5, generator=0), tmp_path / "w.safetensors")
    target = en.nn.Linear(3, 4, generator=1)
    before = target.weight.numpy().copy()
    with pytest.raises(en.LoadError, match=r"'weight' is float32\[3, 5\]"):
        en.nn.load_into(target, tmp_path / "w.safetensors")
    np.testing.assert_array_equal(target.weight.numpy(), before)


def test_dtype_numpy_cannot_hold_is_named(tmp_path):
    header = json.dumps({"weight": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}})
    raw = struct.pack("<Q", len(header)) + header.encode() + b"\0" * 4
    (tmp_path / "bf16.safetensors").write_bytes(raw)
    with pytest.raises(en.LoadError, match="BF16"):
        en.nn.load_into(en.nn.Linear(1, 2), tmp_path / "bf16.safetensors")


def test_save_refuses_other_objects(tmp_path):
    with pytest.raises(en.ArgumentTypeError, match="Module or an en.optim optimizer"):
        en.nn.save([1, 2], tmp_path / "x.safetensors")


def test_without_the_safetensors_package_the_error_says_so(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)     # import fails
    with pytest.raises(en.UnsupportedError, match="pip install safetensors"):
        en.nn.save(en.nn.Linear(2, 1), tmp_path / "w.safetensors")
    en.nn.save(en.nn.Linear(2, 1), tmp_path / "w.npz")                # needs nothing more
