"""Mini-batching, the MNIST IDX reader and the synthetic MNIST generator."""
import gzip
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import engine as en
from support.memory_probe import peak_bytes
from engine.data import DataError
from engine.errors import DTypeError, ShapeError
from support.paths import REPO


# ---- batches / DataLoader ----------------------------------------------------------
@pytest.fixture
def xy():
    return np.arange(20.0).reshape(10, 2), np.arange(10)


def test_batches_in_order_yield_tensor_tuples(xy):
    x, y = xy
    out = list(en.data.batches((x, y), 4))
    assert [len(yb) for _, yb in out] == [4, 4, 2]
    assert all(isinstance(t, en.Tensor) for batch in out for t in batch)
    np.testing.assert_array_equal(np.concatenate([xb.numpy() for xb, _ in out]), x)
    assert out[0][1].dtype == np.int64 and out[0][0].dtype == np.float64


def test_batches_full_batch_and_stochastic(xy):
    x, y = xy
    for size in (None, 10, 50):
        (batch,) = list(en.data.batches((x, y), size))
        np.testing.assert_array_equal(batch[0].numpy(), x)
    assert len(list(en.data.batches((x, y), 1))) == 10


def test_batches_single_array_yields_tensors(xy):
    x, _ = xy
    out = list(en.data.batches(x, 3))
    assert all(isinstance(b, en.Tensor) for b in out) and out[-1].shape == (1, 2)
    out = list(en.data.batches(en.tensor(x), 5))
    assert [b.shape for b in out] == [(5, 2), (5, 2)]


def test_batches_drop_last(xy):
    assert [len(b[1]) for b in en.data.batches(xy, 4, drop_last=True)] == [4, 4]
    assert [len(b[1]) for b in en.data.batches(xy, 5, drop_last=True)] == [5, 5]


def test_batches_shuffle_is_a_deterministic_permutation(xy):
    x, y = xy
    first = [yb.numpy().tolist() for _, yb in en.data.batches((x, y), 3, shuffle=True, seed=7)]
    again = [yb.numpy().tolist() for _, yb in en.data.batches((x, y), 3, shuffle=True, seed=7)]
    other = [yb.numpy().tolist() for _, yb in en.data.batches((x, y), 3, shuffle=True, seed=8)]
    assert first == again and first != other
    flat = sum(first, [])
    assert sorted(flat) == list(range(10)) and flat != list(range(10))
    for xb, yb in en.data.batches((x, y), 3, shuffle=True, seed=7):   # rows stay paired
        np.testing.assert_array_equal(xb.numpy(), x[yb.numpy()])


def test_dataloader_epochs_reshuffle_reproducibly(xy):
    def epochs(seed):
        loader = en.data.DataLoader(xy, batch_size=4, shuffle=True, seed=seed)
        return [[yb.numpy().tolist() for _, yb in loader] for _ in range(3)]
    a, b = epochs(0), epochs(0)
    assert a == b and a[0] != a[1]
    loader = en.data.DataLoader(xy, batch_size=4, drop_last=True)
    assert len(loader) == 2 and len(list(loader)) == 2
    assert len(en.data.DataLoader(xy, batch_size=4)) == 3


def test_batches_errors(xy):
    x, y = xy
    with pytest.raises(ShapeError, match="same length"):
        en.data.batches((x, y[:-1]), 2)
    for bad in (0, -3, 2.5, True, "4"):
        with pytest.raises(DataError, match="batch_size"):
            en.data.batches((x, y), bad)
    with pytest.raises(DataError, match="empty"):
        en.data.batches((np.zeros((0, 2)),), 2)
    with pytest.raises(ShapeError, match="scalar"):
        en.data.batches((np.float64(1.0),), 1)
    with pytest.raises(DTypeError, match="float128"):
        en.data.batches((np.zeros(4, dtype=np.longdouble),), 2)
    with pytest.raises(DataError, match="no arrays"):
        en.data.DataLoader((), 2)


# ---- load_mnist ---------------------------------------------------------------------
def _idx_bytes(array, magic):
    array = np.asarray(array, dtype=np.uint8)
    return struct.pack(">i", magic) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def _write_mnist(directory, n_train=5, n_test=3, gz=False, seed=0):
    rng = np.random.default_rng(seed)
    data = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        for name, content in ((f"{prefix}-images-idx3-ubyte", _idx_bytes(images, 2051)),
                              (f"{prefix}-labels-idx1-ubyte", _idx_bytes(labels, 2049))):
            if gz:
                (directory / (name + ".gz")).write_bytes(gzip.compress(content))
            else:
                (directory / name).write_bytes(content)
        data[prefix] = (images, labels)
    return data


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_reads_idx_files(tmp_path, gz):
    data = _write_mnist(tmp_path, gz=gz)
    (x, y), (xt, yt) = en.data.load_mnist(tmp_path)
    assert x.shape == (5, 784) and x.dtype == np.float32 and y.dtype == np.int64
    assert xt.shape == (3, 784) and yt.shape == (3,)
    np.testing.assert_allclose(x, data["train"][0].reshape(5, 784) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y, data["train"][1])
    np.testing.assert_array_equal(yt, data["t10k"][1])
    assert 0.0 <= x.min() and x.max() <= 1.0
    x2, y2 = en.data.load_mnist(str(tmp_path), split="train")
    np.testing.assert_array_equal(x2, x)


def test_load_mnist_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        en.data.load_mnist(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        en.data.load_mnist(tmp_path)
    _write_mnist(tmp_path)
    with pytest.raises(DataError, match="split"):
        en.data.load_mnist(tmp_path, split="validation")


@pytest.mark.parametrize("corrupt, message", [
    (lambda img, lab: (img[:-10], lab), "truncated"),
    (lambda img, lab: (img + b"\x00", lab), "too long"),
    (lambda img, lab: (img[:2], lab), "fewer than the 4-byte magic"),
    (lambda img, lab: (img[:10], lab), "truncated header"),
    (lambda img, lab: (lab, img), "bad magic number 2049"),
    (lambda img, lab: (struct.pack(">i", 0x0D03) + img[4:], lab), "type code 0x0d"),
    (lambda img, lab: (img, _idx_bytes(np.zeros(4), 2049)), "5 images but .* 4 labels"),
    (lambda img, lab: (img, _idx_bytes(np.full(5, 12), 2049)), "digits 0-9"),
])
def test_load_mnist_malformed_files(tmp_path, corrupt, message):
    _write_mnist(tmp_path)
    img_path = tmp_path / "train-images-idx3-ubyte"
    lab_path = tmp_path / "train-labels-idx1-ubyte"
    img, lab = corrupt(img_path.read_bytes(), lab_path.read_bytes())
    img_path.write_bytes(img)
    lab_path.write_bytes(lab)
    with pytest.raises(DataError, match=message):
        en.data.load_mnist(tmp_path)


def test_load_mnist_bad_gzip(tmp_path):
    _write_mnist(tmp_path, gz=True)
    path = tmp_path / "t10k-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:12])
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz: cannot read"):
        en.data.load_mnist(tmp_path)


def test_load_mnist_stops_inflating_a_gz_bomb_at_the_declared_size(tmp_path):
    # The header declares 3 labels; the gzip inflates to 64 MiB more (64 KB on disk).
    _write_mnist(tmp_path, gz=True)
    path = tmp_path / "t10k-labels-idx1-ubyte.gz"
    labels = _idx_bytes(np.arange(3), 2049)
    path.write_bytes(gzip.compress(labels + bytes(64 << 20), compresslevel=9))
    assert path.stat().st_size < 100_000

    def load():
        with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz: too long: the header "
                                            "says shape \\(3,\\), which needs 11 bytes"):
            en.data.load_mnist(tmp_path, split="test")
    assert peak_bytes(load) < 4 << 20


def test_load_mnist_refuses_a_gz_declaring_more_than_it_can_inflate_to(tmp_path):
    _write_mnist(tmp_path, gz=True)
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    header = struct.pack(">i3I", 2051, 1 << 20, 28, 28)     # 822 GB of images in 1 KB
    path.write_bytes(gzip.compress(header + bytes(1000)))

    def load():
        with pytest.raises(DataError, match="more than a .gz of .* bytes can hold .*refused "
                                            "before inflating"):
            en.data.load_mnist(tmp_path, split="test")
    assert peak_bytes(load) < 4 << 20


def test_load_mnist_refuses_a_plain_file_of_the_wrong_size_without_reading_it(tmp_path):
    _write_mnist(tmp_path)
    path = tmp_path / "t10k-labels-idx1-ubyte"
    path.write_bytes(_idx_bytes(np.arange(3), 2049) + bytes(32 << 20))

    def load():
        with pytest.raises(DataError, match="too long: .* needs 11 bytes, but the file has "
                                            f"{11 + (32 << 20)}"):
            en.data.load_mnist(tmp_path, split="test")
    assert peak_bytes(load) < 4 << 20


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_read_idx_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "t10k-labels-idx1-ubyte"
    os.mkfifo(fifo)
    code = ("import sys, engine as en\n"
            "try:\n    en.data.read_idx(sys.argv[1])\n"
            "except en.data.DataError as err:\n    print('DataError:', err)\n")
    root = REPO
    try:
        done = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True,
                              text=True, timeout=90, env=dict(os.environ, PYTHONPATH=root))
    except subprocess.TimeoutExpired:
        pytest.fail("read_idx blocked on a FIFO")
    assert "DataError: t10k-labels-idx1-ubyte: cannot read the file: " in done.stdout, done.stderr
    assert "is a FIFO (named pipe), not a regular file" in done.stdout


# ---- synthetic_mnist ------------------------------------------------------------------
def test_synthetic_mnist_shape_dtype_density():
    x, y = en.data.synthetic_mnist(3000, seed=0)
    assert x.shape == (3000, 784) and x.dtype == np.float32
    assert y.shape == (3000,) and y.dtype == np.int64
    assert 0.0 <= x.min() and x.max() == 1.0
    assert 0.17 < np.count_nonzero(x) / x.size < 0.21
    assert set(np.unique(y)) == set(range(10))
    # The classes differ: nearest class mean beats chance by far.
    means = np.stack([x[y == c].mean(axis=0) for c in range(10)])
    pred = np.argmax(x @ means.T - 0.5 * np.sum(means ** 2, axis=1), axis=1)
    assert np.mean(pred == y) > 0.6


def test_synthetic_mnist_is_deterministic():
    a, b = en.data.synthetic_mnist(500, seed=3), en.data.synthetic_mnist(500, seed=3)
    c = en.data.synthetic_mnist(500, seed=4)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    assert en.data.synthetic_mnist(0)[0].shape == (0, 784)
