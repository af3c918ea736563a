"""Chunked functions on a ``dask.distributed`` cluster of worker processes
(``LocalCluster``): the same results as numpy, a worker killed mid-step, and
data three times the workers' memory.
"""
import os
import threading
import time

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import dask  # noqa: E402

import engine as en  # noqa: E402


def cluster(**kwargs):
    kwargs = {"n_workers": 2, "threads_per_worker": 1, "processes": True,
              "dashboard_address": None, **kwargs}
    return distributed.LocalCluster(**kwargs)


def autoencoder(features, hidden, seed=0):
    rng = np.random.default_rng(seed)
    params = [en.Variable(rng.normal(0, 0.3, (features, hidden))),
              en.Variable(np.zeros(hidden)), en.Variable(np.zeros(features))]
    w, b1, b2 = params

    def loss(x):
        h = en.sigmoid(en.matmul(x, w) + b1)
        return en.mean(en.square(en.sigmoid(en.matmul(h, en.transpose(w)) + b2) - x))
    return loss, params


def value_and_grads(loss, params):
    def f(x):
        with en.GradientTape() as tape:
            value = loss(x)
        return value, tape.gradient(value, params)
    return en.function(f)


def _slow(block):
    time.sleep(0.15)           # long enough for a worker to die mid-computation
    return block


def test_value_and_grad_on_a_process_cluster_equals_numpy():
    x = np.random.default_rng(1).random((400, 12))
    loss, params = autoencoder(12, 3)
    f = value_and_grads(loss, params)
    ref_value, ref_grads = f(en.tensor(x))
    with cluster() as c, distributed.Client(c):
        value, grads = f(en.tensor(da.from_array(x, chunks=(50, 12))))
    np.testing.assert_allclose(float(value), float(ref_value), rtol=1e-12)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12)


def test_a_worker_killed_during_a_step_does_not_change_the_result():
    x = np.random.default_rng(2).random((480, 12))
    loss, params = autoencoder(12, 3)
    f = value_and_grads(loss, params)
    ref_value, ref_grads = f(en.tensor(x))
    data = en.tensor(da.from_array(x, chunks=(30, 12)).map_blocks(_slow))   # 16 chunks
    with cluster() as c, distributed.Client(c) as client:
        pids = client.run(os.getpid)
        victim = sorted(pids.values())[0]
        killer = threading.Timer(0.8, os.kill, (victim, 9))
        killer.start()
        value, grads = f(data)
        killer.join()
        assert victim not in client.run(os.getpid).values()   # it did die (and was replaced)
    np.testing.assert_allclose(float(value), float(ref_value), rtol=1e-12)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12)


def _load(path):
    return np.load(path)


def test_data_three_times_the_workers_memory_trains_without_a_worker_killed(tmp_path):
    # One worker of 300 MB (about 140 MB of it the interpreter, numpy, Dask and the
    # engine); 0.96 GB of float64 rows in 150 files of 6.4 MB, each read by its chunk's task.
    rows_per_file, features, files = 20_000, 40, 150
    rng = np.random.default_rng(3)
    paths = []
    for i in range(files):
        path = tmp_path / f"part{i}.npy"
        np.save(path, rng.random((rows_per_file, features)))
        paths.append(str(path))
    x = da.concatenate([da.from_delayed(dask.delayed(_load)(p), (rows_per_file, features),
                                        dtype=np.float64) for p in paths])
    assert x.nbytes > 3 * 300e6
    loss, params = autoencoder(features, 4)
    opt = en.optim.LBFGS(lr=1.0, history=3).build(params)
    step = en.function(lambda xb: opt.minimize(lambda: loss(xb), params))
    with cluster(n_workers=1, memory_limit="300MB") as c, distributed.Client(c) as client:
        pids = client.run(os.getpid)
        losses = [float(step(en.tensor(x))) for _ in range(3)]
        assert client.run(os.getpid) == pids      # the worker was never restarted
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
