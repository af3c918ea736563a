"""Eager ops on Dask tensors read each source chunk no more often than the same
computation written in ``dask.array``.

The source is a Dask array whose chunks are made by a function that counts its
calls; the reference count is that of the same computation in plain
``dask.array`` (and the values are checked against numpy).
"""
import threading

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dask  # noqa: E402

import engine as en  # noqa: E402


class CountedSource:
    """A Dask array over ``base`` in chunks of ``rows`` rows, counting chunk reads."""

    def __init__(self, base, rows):
        self.reads = []
        lock = threading.Lock()

        def load(block, block_info=None):
            with lock:
                self.reads.append(block_info[0]["chunk-location"])
            return block

        meta = np.empty((0,) * base.ndim, base.dtype)
        self.array = da.from_array(base, chunks=(rows,) + base.shape[1:]).map_blocks(
            load, dtype=base.dtype, meta=meta)

    def count(self):
        n = len(self.reads)
        self.reads.clear()
        return n


def test_a_product_of_the_data_with_itself_reads_each_chunk_as_dask_does():
    base = np.random.default_rng(0).random((40, 6))
    src = CountedSource(base, 10)
    ref = (src.array.T @ src.array).compute()
    dask_reads = src.count()
    x = en.tensor(src.array)
    ours = (en.transpose(x) @ x).numpy()
    assert src.count() <= dask_reads == 4
    np.testing.assert_allclose(ours, base.T @ base, rtol=1e-12)
    np.testing.assert_allclose(ref, base.T @ base, rtol=1e-12)


def test_a_whole_array_op_shares_the_chunks_with_the_other_results():
    # sort along the rows runs as one task on the whole column; computed beside a
    # sum of the same data, the chunks are still read once.
    base = np.random.default_rng(1).random((40, 3))
    src = CountedSource(base, 10)
    x = en.tensor(src.array) * 2.0
    s, total = en.compute(en.sort(x, axis=0), en.sum(x))
    assert src.count() == 4
    np.testing.assert_allclose(s.numpy(), np.sort(base * 2.0, axis=0), rtol=1e-12)
    np.testing.assert_allclose(float(total), (base * 2.0).sum(), rtol=1e-12)


def _autoencoder(seed=2):
    rng = np.random.default_rng(seed)
    w = en.Variable(rng.normal(0, 0.3, (6, 3)))
    b1 = en.Variable(rng.normal(0, 0.1, 3))
    b2 = en.Variable(rng.normal(0, 0.1, 6))

    def loss(x):
        h = en.sigmoid(en.matmul(x, w) + b1)
        y = en.sigmoid(en.matmul(h, en.transpose(w)) + b2)
        return en.mean(en.square(y - x))
    return loss, [w, b1, b2]


def _by_hand(x, w, b1, b2):
    """The autoencoder's loss and gradients written in dask.array (or numpy)."""
    def sigmoid(z):
        return 1 / (1 + np.exp(-z))
    h = sigmoid(x @ w + b1)
    y = sigmoid(h @ w.T + b2)
    dz2 = 2 * (y - x) / x.size * y * (1 - y)
    dz1 = (dz2 @ w) * h * (1 - h)
    return ((y - x) ** 2).mean(), x.T @ dz1 + dz2.T @ h, dz1.sum(axis=0), dz2.sum(axis=0)


def test_eager_gradients_and_lbfgs_steps_read_each_chunk_once_per_computation():
    base = np.random.default_rng(3).random((40, 6))
    src = CountedSource(base, 10)
    loss, params = _autoencoder()
    # The reference: the loss and its gradients written in dask.array, one computation.
    hand = dask.compute(*_by_hand(src.array, *[p.numpy() for p in params]))
    dask_reads = src.count()
    assert dask_reads == 4
    x = en.tensor(src.array)
    with en.GradientTape() as tape:
        value = loss(x)
    found = en.compute(value, *tape.gradient(value, params))
    assert src.count() <= dask_reads
    for ours, ref, closed in zip(found, hand, _by_hand(base, *[p.numpy() for p in params])):
        np.testing.assert_allclose(ours.numpy(), closed, rtol=1e-10)
        np.testing.assert_allclose(ref, closed, rtol=1e-10)
    # Three eager L-BFGS steps: one computation each, so each chunk is read three times.
    opt = en.optim.LBFGS(history=3).build(params)
    losses = [float(opt.minimize(lambda: loss(x), params)) for _ in range(3)]
    assert src.count() <= 3 * dask_reads
    ref_loss, ref_params = _autoencoder()
    ref_opt = en.optim.LBFGS(history=3).build(ref_params)
    xn = en.tensor(base)
    ref_losses = [float(ref_opt.minimize(lambda: ref_loss(xn), ref_params)) for _ in range(3)]
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-10)
