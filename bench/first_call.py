"""The first call of the autoencoder's traced loss and gradient, in a fresh process.

A first call traces the function, runs the optimization passes, lowers the
graph to Python source and compiles it, then runs it. In a process that has
already traced something, caches are warm and imports are done, so the
figure is taken in a new interpreter: ``measure(batch)`` starts one
(``python -m bench.first_call --batch N``), which prints one JSON line.

What the line holds (seconds): ``import_s`` (``import engine``), ``first_s``
(the whole first call, from ``en.function`` made to the result back), and its
parts ``trace_s`` (the user's function run on placeholders: forward and the
gradient's ops), ``passes_s`` (every optimization pass, from the pass report),
``lower_s`` (source generation, ``compile`` and ``exec`` of the graph code),
and the rest (``first_s`` less those: the run and the entry code); then
``steady_s``, the median of 5 calls after it. Fused kernels are generated
and compiled inside the fusion pass, so their cost is in ``passes_s``.

Example:
    >>> from bench.first_call import measure
    >>> rec = measure(8)                          # doctest: +SKIP
    >>> sorted(rec)[:3]                           # doctest: +SKIP
    ['batch', 'first_s', 'import_s']
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(batch, timeout=300, lowering=None):
    """The first-call record for ``batch``, measured in a new Python process (a dict;
    ``{"error": text}`` when the child fails); ``lowering`` sets
    ``en.config.lowering`` there (default: the engine's default)."""
    cmd = [sys.executable, "-m", "bench.first_call", "--batch", str(batch)]
    if lowering is not None:
        cmd += ["--lowering", lowering]
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    try:
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"batch": batch, "error": f"no result in {timeout} s"}
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"batch": batch, "error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


class _Timed:
    """Adds the seconds spent in one method of a class to ``totals[key]``."""

    def __init__(self, totals, key, cls, name):
        self.totals, self.key = totals, key
        original = getattr(cls, name)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                totals[key] = totals.get(key, 0.0) + time.perf_counter() - start
        setattr(cls, name, timed)


def _child(batch, lowering=None):
    start = time.perf_counter()
    import engine as en
    import_s = time.perf_counter() - start
    if lowering is not None:
        en.config.lowering = lowering

    import numpy as np

    from bench.workloads.autoencoder import Problem, engine_loss
    from engine.graph.jit import concrete
    from engine.graph.lowering import executor

    totals = {}
    _Timed(totals, "trace_s", concrete.ConcreteFunction, "_trace")
    _Timed(totals, "lower_s", executor.CompiledGraph, "__init__")
    args = Problem(batch).tensors()
    fn = en.function(en.value_and_grad(engine_loss, argnums=(0, 1, 2)))
    start = time.perf_counter()
    value, grads = fn(*args)
    np.asarray(value)
    first_s = time.perf_counter() - start
    steady = []
    for _ in range(5):
        start = time.perf_counter()
        fn(*args)
        steady.append(time.perf_counter() - start)
    report = fn.get_concrete_function(*args).report
    passes_s = sum(r.seconds for r in report.records)
    # CompiledGraph.__init__ runs inside _optimize's caller, not inside a pass: no overlap.
    rec = {"batch": batch, "lowering": en.config.lowering,
           "import_s": import_s, "first_s": first_s,
           "trace_s": totals.get("trace_s", 0.0), "passes_s": passes_s,
           "lower_s": totals.get("lower_s", 0.0), "steady_s": float(np.median(steady))}
    rec["rest_s"] = rec["first_s"] - rec["trace_s"] - rec["passes_s"] - rec["lower_s"]
    print(json.dumps(rec))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.first_call")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--lowering", choices=("auto", "numba", "c", "numpy"), default=None,
                        help="en.config.lowering in the child (default: auto)")
    options = parser.parse_args()
    _child(options.batch, options.lowering)
