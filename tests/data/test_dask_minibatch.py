"""Mini-batches drawn from Dask chunks (``en.data.batches`` / ``DataLoader`` over Dask
arrays): the same batches as over numpy, each chunk read once per epoch, and SGD
and Adam trained from them following the numpy run."""
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import engine as en  # noqa: E402


def data(rows=50, features=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features))
    y = (x @ rng.standard_normal(features) > 0).astype(np.float64)
    return x, y


def as_numpy(batch):
    return tuple(t.numpy() for t in batch)


@pytest.mark.parametrize("size,drop_last", [(1, False), (4, False), (7, True), (50, False),
                                            (64, False)])
def test_unshuffled_batches_equal_the_numpy_batches(size, drop_last):
    x, y = data()
    # x and y chunked differently: y is aligned to x's row chunks.
    dx, dy = da.from_array(x, chunks=(9, 3)), da.from_array(y, chunks=13)
    ours = [as_numpy(b) for b in en.data.batches((dx, dy), size, drop_last=drop_last)]
    ref = [as_numpy(b) for b in en.data.batches((x, y), size, drop_last=drop_last)]
    assert len(ours) == len(ref) == len(en.data.DataLoader((x, y), size, drop_last=drop_last))
    for (a, b), (c, d) in zip(ours, ref):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_shuffled_epochs_visit_every_row_once_with_rows_kept_together():
    x, y = data(rows=47)
    ids = np.arange(47.0)
    loader = en.data.DataLoader((da.from_array(x, chunks=(10, 3)), en.tensor(ids)),
                                batch_size=5, shuffle=True, seed=3)
    epochs = []
    for _ in range(2):
        batches = [as_numpy(b) for b in loader]
        assert [len(b[1]) for b in batches] == [5] * 9 + [2]
        seen = np.concatenate([b[1] for b in batches]).astype(int)
        assert sorted(seen) == list(range(47))
        for xb, idb in batches:                 # each row stays with its own id
            np.testing.assert_array_equal(xb, x[idb.astype(int)])
        epochs.append(seen)
    assert not np.array_equal(epochs[0], epochs[1])    # a new order every epoch
    again = en.data.DataLoader((da.from_array(x, chunks=(10, 3)), en.tensor(ids)),
                               batch_size=5, shuffle=True, seed=3)
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in again]), epochs[0])


def test_each_chunk_is_read_once_per_epoch():
    x, _ = data(rows=40)
    reads = []

    def load(i):
        reads.append(i)
        return x[10 * i:10 * (i + 1)]
    dx = da.concatenate([da.from_delayed(dask.delayed(load)(i), (10, 3), x.dtype)
                         for i in range(4)])
    with dask.config.set(scheduler="synchronous"):
        it = iter(en.data.batches(dx, 3, shuffle=True, seed=0))
        batches = [next(it)]
        assert len(reads) <= 2                  # the chunk in use and the next one
        batches += list(it)
    assert sorted(reads) == [0, 1, 2, 3]
    assert len(batches) == 14


def test_stopping_an_epoch_early_leaves_nothing_running():
    x, _ = data(rows=40)
    it = iter(en.data.batches(da.from_array(x, chunks=(10, 3)), 4))
    first = next(it).numpy()
    it.close()
    np.testing.assert_array_equal(first, x[:4])


def test_unknown_chunk_sizes_are_a_clear_error():
    x, _ = data(rows=20)
    dx = da.from_array(x, chunks=(5, 3))
    dx = dx[dx[:, 0] > -10]                      # a boolean mask: chunk sizes unknown
    with pytest.raises(en.ShapeError, match="compute_chunk_sizes"):
        en.data.batches(dx, 4)


def logistic_loss(w, b, xb, yb):
    z = xb @ w + b
    return en.mean(en.softplus(z) - yb * z)


@pytest.mark.parametrize("make", [lambda: en.optim.SGD(lr=0.5),
                                  lambda: en.optim.Adam(lr=0.05)], ids=["sgd", "adam"])
def test_sgd_and_adam_over_dask_chunks_on_a_cluster_follow_numpy(make):
    x, y = data(rows=60, features=4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        losses = {}
        for name, arrays in (("numpy", (x, y)),
                             ("dask", (da.from_array(x, chunks=(16, 4)),
                                       da.from_array(y, chunks=16)))):
            w, b = en.Variable(np.zeros(4)), en.Variable(np.zeros(()))
            opt = make().build([w, b])
            losses[name] = [float(opt.minimize(lambda: logistic_loss(w, b, xb, yb), [w, b]))
                            for _ in range(3)
                            for xb, yb in en.data.batches(arrays, 8)]
    assert len(losses["dask"]) == 3 * 8
    np.testing.assert_allclose(losses["dask"], losses["numpy"], rtol=1e-12)
    assert losses["numpy"][-1] < losses["numpy"][0]
