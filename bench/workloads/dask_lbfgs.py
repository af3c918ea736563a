"""Full-batch L-BFGS on data that lives in Dask chunks: one engine process vs a cluster.

The autoencoder of the ``lbfgs`` workload (784-32-784, sigmoid, mean squared
error, float32), one L-BFGS iteration (history 5) per timed call, at 60000
rows (``--full``: also 600000 rows, generated into ``.npy`` chunk files on
disk and read per chunk):

``numpy``       the iteration as an ``en.function`` on one numpy array (one process)
``dask1``       the same ``en.function`` on a Dask array, LocalCluster of 1 worker
``dask2``       ... of 2 workers (1 thread each)
``dask_array``  the same loss and gradient written by hand with ``dask.array``
                (a Dask task per op and chunk), then the same L-BFGS step on numpy:
                the overhead reference

Each record's notes give the tasks per iteration and the bytes sent to the
workers per iteration (the shared parameters). The projection for N machines
comes from the measured per-chunk time and the scheduler's overhead per task:
``time(N) ~ chunks * per_chunk / N + tasks * per_task``.

Run alone with ``python -m bench dask``; not part of the default run (it starts
clusters). Needs ``pip install '.[dask]'``.
"""
import os
import tempfile
import time

import numpy as np

import engine as en

from . import lbfgs

NAME = "dask"
DESCRIPTION = ("L-BFGS on the autoencoder over Dask chunks: numpy in one process vs a "
               "LocalCluster of 1 and 2 workers vs hand-written dask.array")
MODES = ["numpy", "dask1", "dask2", "dask_array"]
IN_DEFAULT_RUN = False
CHUNK_ROWS = 7500


def configs(args):
    quick = getattr(args, "quick", False)
    sizes = [6000] if quick else [60000]
    if getattr(args, "full", False):
        sizes.append(600000)
    return [{"rows": n, "iterations": 3 if quick else 6} for n in sizes]


def _data(rows, folder):
    """The first ``rows`` synthetic MNIST images in ``.npy`` files of CHUNK_ROWS rows each
    (the same rows repeated past 60000) and, for the numpy mode, all of them in memory
    when that is small."""
    base = en.data.synthetic_mnist(min(rows, 60000), seed=0)[0].reshape(-1, 784)
    base = base.astype(np.float32)
    paths = []
    for i, start in enumerate(range(0, rows, CHUNK_ROWS)):
        idx = np.arange(start, min(rows, start + CHUNK_ROWS)) % len(base)
        path = os.path.join(folder, f"chunk{i:04d}.npy")
        np.save(path, base[idx])
        paths.append((path, len(idx)))
    return paths


def _dask_array(paths):
    import dask
    import dask.array as da
    return da.concatenate([da.from_delayed(dask.delayed(np.load)(p), (n, 784), dtype=np.float32)
                           for p, n in paths])


def _engine_iteration():
    w, b1, b2 = lbfgs.initial_weights()
    params = [en.Variable(w), en.Variable(b1), en.Variable(b2)]
    opt = en.optim.LBFGS(lr=1.0, history=5).build(params)
    return en.function(lambda xb: opt.minimize(lambda: lbfgs.engine_loss(xb, *params), params)), \
        params, opt


def _hand_written(x, params, opt):
    """Loss and gradient by hand in dask.array, the L-BFGS step on numpy."""
    import dask
    import dask.array as da

    def iteration():
        w, b1, b2 = [p.numpy() for p in params]
        h = 1 / (1 + da.exp(-(x @ w + b1)))
        y = 1 / (1 + da.exp(-(h @ w.T + b2)))
        n = x.shape[0] * x.shape[1]
        dz2 = (2.0 / n) * (y - x) * y * (1 - y)
        dz1 = (dz2 @ w) * h * (1 - h)
        loss = da.mean((y - x) ** 2)
        gw, gb1, gb2 = dz2.T @ h + x.T @ dz1, dz1.sum(axis=0), dz2.sum(axis=0)
        loss, gw, gb1, gb2 = dask.compute(loss, gw, gb1, gb2)
        opt.step([en.tensor(gw.astype(np.float32)), en.tensor(gb1.astype(np.float32)),
                  en.tensor(gb2.astype(np.float32))], params)
        return float(loss)
    return iteration, da


def run(config, modes, args, tick):
    from bench.common import result

    try:
        from distributed import Client, LocalCluster   # optional: pip install '.[dask]'
    except ImportError as err:
        return [result(NAME, config, mode, [], skipped=f"dask not installed ({err})")
                for mode in modes]

    out = []
    with tempfile.TemporaryDirectory() as folder:
        paths = _data(config["rows"], folder)
        x_dask = _dask_array(paths)
        for mode in modes:
            step, params, opt = _engine_iteration()
            cluster = client = None
            try:
                if mode == "numpy":
                    x = en.tensor(np.concatenate([np.load(p) for p, _ in paths]))
                    call = lambda: float(step(x))  # noqa: E731
                    tasks = shared_bytes = 0
                elif mode in ("dask1", "dask2", "dask_array"):
                    workers = 1 if mode == "dask1" else 2
                    cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
                    client = Client(cluster)
                    if mode == "dask_array":
                        call, da = _hand_written(x_dask, params, opt)
                        tasks = len(dict((x_dask @ np.zeros((784, 32), np.float32)
                                          ).sum().__dask_graph__()))
                        shared_bytes = sum(p.numpy().nbytes for p in params)
                    else:
                        x = en.tensor(x_dask)
                        call = lambda: float(step(x))  # noqa: E731
                        call()
                        tasks = len(step.get_concrete_function(x).task_graph([x]))
                        shared_bytes = sum(p.numpy().nbytes for p in params) + 784 * 32 * 4
                else:
                    continue
                call()                                  # warm up: traces, worker imports
                times = []
                for _ in range(config["iterations"]):
                    t = time.perf_counter()
                    loss = call()
                    times.append(time.perf_counter() - t)
                    tick()
                out.append(result(NAME, config, mode, times,
                                  extra={"tasks_per_iteration": tasks,
                                         "bytes_to_workers_per_iteration": shared_bytes,
                                         "chunks": len(paths), "last_loss": loss}))
            finally:
                if client is not None:
                    client.close()
                    cluster.close()
    return out
