"""examples/digits.py: the MLP and the CNN reach 97% test accuracy on scikit-learn's digits,
eagerly and with a traced step, and a saved-and-reloaded model predicts the same."""
import importlib.util
import os
import struct

import numpy as np
import pytest
from support.paths import REPO

pytest.importorskip("sklearn")

ROOT = REPO


@pytest.fixture(scope="module")
def digits():
    spec = importlib.util.spec_from_file_location("digits_example",
                                                  os.path.join(ROOT, "examples", "digits.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(digits):
    return digits.load_data(seed=0)


@pytest.mark.parametrize("model,mode,epochs", [("mlp", "eager", 20), ("mlp", "graph", 20),
                                               ("cnn", "graph", 8)])
def test_reaches_97_percent_and_reloads(digits, data, model, mode, epochs):
    result = digits.run(model, mode, epochs=epochs, data=data, progress=False, verbose=False)
    assert result["accuracy"] >= 0.97, result
    assert result["reloaded_same"]
    if mode == "graph":
        assert result["traces"] == 1          # one trace for every batch size (None batch dim)


def test_split_is_the_digits_test_split(data):
    (x, y), (xt, yt), side = data
    assert side == 8 and x.shape[1:] == (8, 8, 1) and len(x) + len(xt) == 1797
    assert len(xt) == 449 and x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0


def _write_idx(path, array, magic):
    with open(path, "wb") as f:
        f.write(struct.pack(">i", magic) + b"".join(struct.pack(">i", d) for d in array.shape))
        f.write(array.astype(np.uint8).tobytes())


def test_reads_mnist_idx_files_from_a_directory(digits, tmp_path, data):
    (x, y), (xt, yt), _ = data
    for prefix, images, labels in (("train", x, y), ("t10k", xt, yt)):
        _write_idx(tmp_path / f"{prefix}-images-idx3-ubyte", np.round(images[..., 0] * 255), 2051)
        _write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte", labels, 2049)
    (mx, my), (mxt, myt), side = digits.load_data(str(tmp_path))
    assert side == 8 and mx.shape == x.shape and mxt.shape == xt.shape
    np.testing.assert_array_equal(my, y)
    np.testing.assert_allclose(mx, np.round(x * 255) / 255, atol=1e-6)


def test_the_pytorch_twin_trains_on_the_same_batches_and_the_timing_line_names_each_run(
        digits, data):
    torch = pytest.importorskip("torch")
    # The twin is the same architecture: its parameter count is the engine model's.
    side = data[2]
    for name in ("mlp", "cnn"):
        twin = digits.torch_model(torch, name, side)
        ours = digits.MODELS[name](side)
        assert sum(p.numel() for p in twin.parameters()) == \
            ours.num_parameters(trainable_only=True)
    theirs = digits.torch_run("mlp", data, epochs=3)
    steps = 3 * -(-len(data[0][0]) // 32)
    assert theirs["steps"] == steps and theirs["accuracy"] >= 0.9, theirs
    mine = digits.run("mlp", "graph", epochs=1, data=data, progress=False, verbose=False)
    line = digits.timing_line([mine], theirs)
    assert line.startswith("ms per training step") and "graph " in line and "PyTorch " in line
