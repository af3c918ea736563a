"""en.save / en.export_onnx of an en.nn.Module: example inputs required (and the error says
so), and the saved graph takes any batch size."""
import os

import numpy as np
import pytest

import engine as en


def _mlp():
    return en.nn.Sequential(en.nn.Linear(3, 5, generator=0), en.nn.ReLU(),
                            en.nn.Linear(5, 2, generator=1))


def _numpy_mlp(model, x):
    w0, b0, w1, b1 = (v.numpy() for v in model.variables)
    return np.maximum(x @ w0 + b0, 0) @ w1 + b1


def test_missing_example_inputs_say_what_to_pass(tmp_path):
    with pytest.raises(en.ArgumentTypeError, match=r"pass one batch after the path.*TensorSpec"):
        en.save(_mlp(), tmp_path / "m.json")
    with pytest.raises(en.ArgumentTypeError, match="en.export_onnx"):
        en.export_onnx(_mlp(), tmp_path / "m.onnx")


def test_reloaded_module_takes_any_batch_size(tmp_path):
    model = _mlp()
    en.save(model, tmp_path / "m.json", en.ones((4, 3), dtype="float32"))
    loaded = en.load(tmp_path / "m.json")
    for n in (1, 4, 9):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype("float32")
        np.testing.assert_allclose(loaded(en.tensor(x)).numpy(), _numpy_mlp(model, x),
                                   rtol=1e-5, atol=1e-6)


def test_onnx_export_of_module_has_a_dynamic_batch(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    model = _mlp()
    en.export_onnx(model, os.fspath(tmp_path / "m.onnx"), en.ones((4, 3), dtype="float32"))
    session = ort.InferenceSession(os.fspath(tmp_path / "m.onnx"))
    x = np.random.default_rng(0).standard_normal((7, 3)).astype("float32")
    (out,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(out, _numpy_mlp(model, x), rtol=1e-5, atol=1e-6)


def test_module_needing_its_batch_size_keeps_the_example_shapes(tmp_path):
    class FixedBatch(en.nn.Module):
        def forward(self, x):
            return x + en.ones((int(x.shape[0]), 1), dtype=x.dtype)

    with pytest.warns(UserWarning, match="for the example's shapes only"):
        en.save(FixedBatch(), tmp_path / "f.json", en.zeros((2, 3), dtype="float32"))
    loaded = en.load(tmp_path / "f.json")
    np.testing.assert_array_equal(loaded(en.zeros((2, 3), dtype="float32")).numpy(),
                                  np.ones((2, 3), "float32"))
