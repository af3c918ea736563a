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
import math
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
IN_MEMORY_BYTES = 1 << 30
PROJECT_WORKERS = (1, 2, 4, 8, 16, 64)
# The targets as the summary words them; stated in the README ("Targets" under "Results").
TARGET_TEXTS = ("Dask with 2 workers within 1.25x of numpy in one process at 60000 rows",
                "Dask with 2 workers faster than hand-written dask.array")
# The projection's network: 10 Gb/s Ethernet, every worker's copy of the shared values
# through one link (an upper bound: Dask also copies them between workers).
LINK_BYTES_PER_S = 1.25e9


def configs(args):
    quick = getattr(args, "quick", False)
    sizes = [6000] if quick else [60000]
    if getattr(args, "full", False):
        sizes.append(600000)
    # Data that fits comfortably is kept in the workers' memory (persisted), as a user
    # would; bigger data is read from its chunk files on every iteration.
    return [{"rows": n, "iterations": 3 if quick else 6,
             "data": "memory" if n * 784 * 4 <= IN_MEMORY_BYTES else "disk"} for n in sizes]


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


def _noop(*_):
    return None


def _scheduler_cost(client, chunks, repeats=5):
    """Seconds per task of this cluster's scheduler, measured with a graph of no-op tasks
    shaped like one iteration's (a shared key, one task per chunk, a tree of combines)."""
    import dask
    best = float("inf")
    for _ in range(repeats):
        shared = dask.delayed(list([0]), pure=False)
        level = [dask.delayed(_noop)(shared, i) for i in range(chunks)]
        while len(level) > 1:
            level = [dask.delayed(_noop)(*level[i:i + 8]) for i in range(0, len(level), 8)]
        tasks = len(dict(level[0].__dask_graph__()))
        t = time.perf_counter()
        client.compute(level[0]).result()
        best = min(best, (time.perf_counter() - t) / tasks)
    return best


def _chunk_time(paths, repeats=5):
    """Seconds for one chunk's loss and gradient (the work of one task) in this process."""
    params = [en.Variable(a) for a in lbfgs.initial_weights()]

    def loss_and_grads(xb):
        with en.GradientTape() as tape:
            loss = lbfgs.engine_loss(xb, *params)
        return loss, tape.gradient(loss, params)
    grad = en.function(loss_and_grads)
    xb = en.tensor(np.load(paths[0][0]))
    grad(xb)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        grad(xb)
        times.append(time.perf_counter() - t)
    return min(times)


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
        chunk_s = _chunk_time(paths)
        for mode in modes:
            step, params, opt = _engine_iteration()
            cluster = client = None
            extra = {"chunks": len(paths), "chunk_ms": chunk_s * 1e3,
                     "workers": 2 if mode in ("dask2", "dask_array") else 1}
            try:
                if mode == "numpy":
                    x = en.tensor(np.concatenate([np.load(p) for p, _ in paths]))
                    call = lambda: float(step(x))  # noqa: E731
                    extra.update(tasks_per_iteration=0, bytes_to_workers_per_iteration=0)
                elif mode in ("dask1", "dask2", "dask_array"):
                    workers = 1 if mode == "dask1" else 2
                    cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
                    client = Client(cluster)
                    x_dask = _dask_array(paths)
                    if config["data"] == "memory":
                        x_dask = client.persist(x_dask)
                        from distributed import wait
                        wait(x_dask)
                    if mode == "dask_array":
                        call, _ = _hand_written(x_dask, params, opt)
                        graph = {}
                        for v in _hand_written_graph(x_dask, params):
                            graph.update(dict(v.__dask_graph__()))
                        tasks = len(graph)
                        per_worker = sum(p.numpy().nbytes for p in params)
                    else:
                        x = en.tensor(x_dask)
                        call = lambda: float(step(x))  # noqa: E731
                        call()                          # warm up: traces, worker imports
                        concrete = step.get_concrete_function(x)
                        tasks = len(concrete.task_graph([x]))
                        per_worker = concrete.shared_nbytes([x])
                    extra.update(tasks_per_iteration=tasks,
                                 bytes_to_workers_per_iteration=per_worker * workers,
                                 task_overhead_ms=_scheduler_cost(client, len(paths)) * 1e3)
                else:
                    continue
                if mode in ("numpy", "dask_array"):
                    call()                              # warm up: traces, worker imports
                times = []
                for _ in range(config["iterations"]):
                    t = time.perf_counter()
                    loss = call()
                    times.append(time.perf_counter() - t)
                    tick()
                extra["last_loss"] = loss
                out.append(result(NAME, config, mode, times, extra=extra))
            finally:
                if client is not None:
                    client.close()
                    cluster.close()
    return out


def _hand_written_graph(x, params):
    """The dask.array expressions one hand-written iteration computes (for counting)."""
    import dask.array as da
    w, b1, b2 = [p.numpy() for p in params]
    h = 1 / (1 + da.exp(-(x @ w + b1)))
    y = 1 / (1 + da.exp(-(h @ w.T + b2)))
    dz2 = (y - x) * y * (1 - y)
    dz1 = (dz2 @ w) * h * (1 - h)
    return [da.mean((y - x) ** 2), dz2.T @ h + x.T @ dz1, dz1.sum(axis=0), dz2.sum(axis=0)]


def projection(rec, numpy_ms, workers):
    """Projected ms per iteration on ``workers`` machines (one worker each) from a
    measured Dask record: the chunks' work split over the workers, plus the
    scheduler's cost per task, plus the client's share (the L-BFGS step and the
    free part: the numpy time less its chunks' work), plus sending the shared values
    to every worker. Returns the four terms."""
    chunks, chunk_ms = rec["chunks"], rec["chunk_ms"]
    compute = math.ceil(chunks / workers) * chunk_ms
    scheduler = rec["tasks_per_iteration"] * rec["task_overhead_ms"]
    client = max(numpy_ms - chunks * chunk_ms, 0.0)
    per_worker = rec["bytes_to_workers_per_iteration"] / rec["workers"]
    network = per_worker * workers / LINK_BYTES_PER_S * 1e3
    return compute, scheduler, client, network


def summary(results, args=None):
    """Per size: the time per iteration of every mode against numpy, the tasks and
    bytes per iteration, the targets, and the projection to N machines."""
    mine = [r for r in results if r.get("workload") == NAME and r.get("median_ms")]
    lines = []
    for rows in sorted({r["config"]["rows"] for r in mine}):
        recs = {r["mode"]: r for r in mine if r["config"]["rows"] == rows}
        base = recs.get("numpy")
        where = next(iter(recs.values()))["config"].get("data", "disk")
        lines.append(f"dask, {rows} rows ({where}, chunks of {CHUNK_ROWS} rows):")
        lines.append(f"  {'mode':<11} {'ms/iter':>9} {'min-max':>15} {'x numpy':>8} "
                     f"{'tasks/iter':>10} {'bytes to workers/iter':>22}")
        for mode, r in recs.items():
            ratio = f"{r['median_ms'] / base['median_ms']:.2f}" if base else "-"
            lines.append(f"  {mode:<11} {r['median_ms']:>9.1f} "
                         f"{r['min_ms']:>7.1f}-{r['max_ms']:<7.1f} {ratio:>8} "
                         f"{r['tasks_per_iteration']:>10} "
                         f"{r['bytes_to_workers_per_iteration']:>22,}")
        d2, hand = recs.get("dask2"), recs.get("dask_array")
        if base and d2 and rows == 60000:
            q = d2["median_ms"] / base["median_ms"]
            lines.append(f"  target {'met' if q <= 1.25 else 'MISSED'}: {TARGET_TEXTS[0]} "
                         f"({q:.2f}x)")
        if d2 and hand:
            q = hand["median_ms"] / d2["median_ms"]
            lines.append(f"  target {'met' if q > 1 else 'MISSED'}: {TARGET_TEXTS[1]} "
                         f"({q:.2f}x)")
        if base and d2:
            cl = projection(d2, base["median_ms"], 1)[2]
            lines.append(f"  projection to N machines, one worker each (measured: "
                         f"{d2['chunk_ms']:.1f} ms per chunk, {d2['task_overhead_ms']:.2f} ms "
                         f"per task, {d2['tasks_per_iteration']} tasks, {cl:.1f} ms on the "
                         f"client; shared values at {LINK_BYTES_PER_S / 1e9:g} GB/s):")
            for n in PROJECT_WORKERS:
                terms = projection(d2, base["median_ms"], n)
                top = max(zip(terms, ("chunk work", "scheduler", "client", "network")))[1]
                lines.append(f"    N={n:<3} {sum(terms):8.1f} ms  (chunks {terms[0]:.1f} + "
                             f"scheduler {terms[1]:.1f} + client {terms[2]:.1f} + network "
                             f"{terms[3]:.1f}; {top} dominates)")
    return "\n".join(lines)
