"""Per-iteration time distribution and garbage-collector time, per mode.

Runs the autoencoder's loss and gradient (``bench.workloads.autoencoder``,
batch 10000; 1000 under ``--quick``) many times in a row in each mode and records every
iteration's time: the median, the 99th percentile, the maximum, and how
many iterations took over 2x and over 5x the median (the "hiccups").
Python's cyclic garbage collector is watched through ``gc.callbacks``: the
number of collections and the seconds spent in them per generation, and
the collector time inside the slowest iteration, so a hiccup can be blamed
on the collector or cleared of it.

The modes (``eager``, ``graph``, ``numpy``, ``torch``) run one after the other,
each in its own block of iterations (not interleaved) so that collections
are charged to the mode whose garbage they collect; ``gc.collect()`` runs
before each block so none starts with another mode's garbage.

Run alone with ``python -m bench.workloads.gc_pauses [--quick]``.
"""
import gc
import sys
import time

import numpy as np

from . import autoencoder

NAME = "gc"
DESCRIPTION = "per-iteration times (median/p99/max) and GC time: autoencoder batch 10000"
MODES = ["eager", "graph", "numpy", "torch"]

BATCH = 10000
ITERATIONS = 60           # the default run (each mode's block takes about 8 s)
FULL_ITERATIONS = 200     # --full
QUICK_BATCH = 1000        # --quick: a smaller batch, so the smoke run stays short
QUICK_ITERATIONS = 30
HICCUP = 5.0          # an iteration over HICCUP x the median is a hiccup


def configs(args):
    quick = getattr(args, "quick", False)
    full = getattr(args, "full", False)
    iterations = getattr(args, "repeats", None) or (
        QUICK_ITERATIONS if quick else FULL_ITERATIONS if full else ITERATIONS)
    batch = (autoencoder.batches_from(args) or [QUICK_BATCH if quick else BATCH])[0]
    return [{"batch": int(batch), "iterations": int(iterations)}]


def run(config, modes, args, tick):
    from bench.common import result

    problem = autoencoder.Problem(config["batch"])
    out = []
    for mode in modes:
        made = autoencoder.make_mode(mode, problem)
        if isinstance(made, str):
            out.append(result(NAME, config, mode, [], skipped=made))
            continue
        step, _ = made
        time.sleep(max(autoencoder.SETTLE_S.values()))   # the last mode's workers go idle
        step()                                  # trace / warm up, wake this mode's workers
        times, extra = time_iterations(step, config["iterations"], tick)
        out.append(result(NAME, config, mode, times, extra=extra))
        del step, made
    return out


def summary(results, args=None):
    """A table of the distributions and collector time, and the hiccup verdict."""
    mine = [r for r in results if r["workload"] == NAME and not r.get("skipped")]
    if not mine:
        return ""
    head = (f"{'gc mode':<8} {'median':>8} {'p99':>8} {'max':>8} {'max/med':>8} {'>2x':>4} "
            f"{'>' + format(HICCUP, 'g') + 'x':>4} {'gc ms':>7} {'gc max':>7} {'in slowest':>10}"
            f"  collections gen0/1/2")
    lines = [head]
    for r in mine:
        lines.append(
            f"{r['mode']:<8} {r['median_ms']:8.1f} {r['p99_ms']:8.1f} {r['max_ms']:8.1f} "
            f"{r['max_over_median']:8.2f} {r['over_2x']:4d} {r[f'over_{HICCUP:g}x']:4d} "
            f"{r['gc_ms']:7.2f} {r['gc_max_pause_ms']:7.2f} {r['gc_in_slowest_ms']:10.2f}"
            f"  {'/'.join(map(str, r['gc_counts']))}")
    hic = [r["mode"] for r in mine if r["hiccups"]]
    gc_made = [r["mode"] for r in mine if r["hiccups"] and r["gc_in_slowest_ms"] > 0.5 * (
        r["max_ms"] - r["median_ms"])]
    verdict = (f"hiccups over {HICCUP:g}x the median in: {', '.join(hic)}" if hic
               else f"no iteration over {HICCUP:g}x its mode's median")
    if hic:
        verdict += ("; the collector explains the slowest in: " + ", ".join(gc_made)) if gc_made \
            else "; not the collector (little or no GC time inside the slowest iterations)"
    lines.append(f"gc (ms, batch={mine[0]['config']['batch']}, "
                 f"{mine[0]['config']['iterations']} iterations per mode): {verdict}")
    return "\n".join(lines)


class GCWatch:
    """Collects the duration of every garbage collection while installed.

    ``events`` is a list of ``(generation, start, seconds)``.
    """

    def __init__(self):
        self.events = []
        self._start = None

    def __call__(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            self.events.append((info["generation"], self._start,
                                time.perf_counter() - self._start))
            self._start = None

    def __enter__(self):
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self)
        return False


def time_iterations(step, iterations, tick=None):
    """``(seconds per iteration, extra)``: the distribution and the GC statistics."""
    gc.collect()
    spans = []
    with GCWatch() as watch:
        for _ in range(iterations):
            start = time.perf_counter()
            step()
            spans.append((start, time.perf_counter()))
            if tick is not None:
                tick()
    times = np.array([e - s for s, e in spans])
    median = float(np.median(times))
    slowest = int(np.argmax(times))
    s0, e0 = spans[slowest]
    gc_in_slowest = sum(d for _, st, d in watch.events if s0 <= st < e0)
    per_gen = {g: [d for gen, _, d in watch.events if gen == g] for g in (0, 1, 2)}
    extra = {
        "p99_ms": float(np.percentile(times, 99)) * 1e3,
        "max_ms": float(times.max()) * 1e3,
        "max_over_median": float(times.max()) / median if median > 0 else None,
        "over_2x": int(np.sum(times > 2 * median)),
        f"over_{HICCUP:g}x": int(np.sum(times > HICCUP * median)),
        "hiccups": bool(np.any(times > HICCUP * median)),
        "gc_ms": sum(d for _, _, d in watch.events) * 1e3,
        "gc_max_pause_ms": max((d for _, _, d in watch.events), default=0.0) * 1e3,
        "gc_in_slowest_ms": gc_in_slowest * 1e3,
        "gc_counts": [len(per_gen[g]) for g in (0, 1, 2)],
        "gc_ms_by_gen": [sum(per_gen[g]) * 1e3 for g in (0, 1, 2)],
    }
    return list(times), extra


if __name__ == "__main__":
    import runpy

    sys.argv = ["python -m bench", NAME] + sys.argv[1:]
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
