"""Models written in several styles, against JAX and PyTorch: ``python -m bench styles``.

The engine is fast on the models its benchmarks were tuned on; this family asks
whether it stays fast on the same models written differently (issue #47). The
models (:mod:`bench.workloads.styles_data`): an LSTM three ways (``concat`` +
``split``, eight separate products, ``en.nn.LSTMCell`` in ``en.nn.RNN``), a GRU
with a matrix per gate, a tanh RNN with a hand-written layer norm (each 50 steps
over ``en.scan``, batch 32, hidden 64, float32), the 50-step tanh RNN unrolled,
a CNN step (batch 64, 28x28x1, conv 16 - pool - conv 32 - pool - linear) and a
transformer block step (batch 32, seq 32, width 64, 4 heads, exact GELU). Every
timed call computes the loss and the gradient of every weight.

Each framework runs in a process of its own (:mod:`bench.workloads.styles_worker`),
one after the other, so no library's threads or caches touch another's timing;
the first call is timed there with the engine's and numba's caches pointed at an
empty folder. The modes:

``graph``  one ``en.function`` of ``en.value_and_grad`` (the default lowering)
``eager``  the same Python run eagerly
``jax``    ``jax.jit(jax.value_and_grad(...))``, recurrent models over ``lax.scan``
``torch``  PyTorch eager autograd

Every mode's loss and gradients are compared with JAX's (PyTorch's without JAX, the
engine's eager mode without either):
``max_rel_err`` is the largest of ``max|g - ref| / max|ref|`` over the gradients.

Not in the default run (each model starts four processes): ``python -m bench styles``,
or alone ``python -m bench.workloads.styles [--quick] [--styles-models cnn,transformer]``.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from . import styles_data

NAME = "styles"
DESCRIPTION = ("models in several styles (LSTM three ways, GRU, tanh RNN with layer norm, "
               "unrolled RNN, CNN, transformer block) against JAX and PyTorch, each in its "
               "own process")
MODES = ["graph", "eager", "jax", "torch"]
IN_DEFAULT_RUN = False     # 32 processes, each importing its framework: run when named
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGREE_RTOL = 2e-3          # float32 sums in other orders, 50 steps deep


def add_arguments(parser):
    group = parser.add_argument_group("styles")
    group.add_argument("--styles-models", default=None, metavar="M1,M2",
                       help=f"styles: models to run (default all: {', '.join(styles_data.MODELS)})")
    group.add_argument("--repeats", type=int, default=None,
                       help="timed calls per mode (default: the workload's own)")


def configs(args):
    chosen = getattr(args, "styles_models", None)
    models = chosen.split(",") if chosen else list(styles_data.MODELS)
    unknown = [m for m in models if m not in styles_data.MODELS]
    if unknown:
        raise ValueError(f"styles: unknown model(s) {unknown}; known: {styles_data.MODELS}")
    quick = getattr(args, "quick", False)
    repeats = int(getattr(args, "repeats", None) or (3 if quick else 20))
    return [{"model": m, "repeats": repeats, "quick": quick} for m in models]


def _available(mode):
    module = {"jax": "jax", "torch": "torch"}.get(mode)
    if module is None:
        return None
    from bench.common import skip_reason
    try:
        __import__(module)
    except ImportError:
        return skip_reason(module)
    return None


def run_worker(model, mode, repeats, quick, folder, timeout=600):
    """The worker's record for one mode (a dict with ``error`` when it failed)."""
    grads = os.path.join(folder, f"{mode}.npz")
    cache = tempfile.mkdtemp(prefix=f"cache-{mode}-", dir=folder)   # an empty cache
    env = dict(os.environ, ENGINE_CACHE_DIR=cache, NUMBA_CACHE_DIR=cache)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "bench.workloads.styles_worker", model, mode,
           "--repeats", str(repeats), "--grads", grads] + (["--quick"] if quick else [])
    try:
        out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"no result in {timeout} s"}
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}
    rec = json.loads(lines[-1])
    with np.load(grads) as saved:
        rec["arrays"] = [saved[k] for k in sorted(saved.files, key=lambda k: int(k[4:]))]
    return rec


def max_rel_err(arrays, reference):
    """The largest ``max|a - r| / max|r|`` over the loss and the gradients."""
    worst = 0.0
    for a, r in zip(arrays, reference):
        a, r = np.asarray(a, np.float64), np.asarray(r, np.float64)
        worst = max(worst, float(np.max(np.abs(a - r)) / max(np.max(np.abs(r)), 1e-30)))
    return worst


def run(config, modes, args, tick):
    from bench.common import result

    records, skipped = {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-styles-") as folder:
        for mode in modes:
            why = _available(mode)
            rec = {"error": why} if why else run_worker(
                config["model"], mode, config["repeats"], config["quick"], folder)
            if rec.get("error"):
                skipped[mode] = rec["error"]
            else:
                records[mode] = rec
            tick()
    ref_mode = next((m for m in ("jax", "torch", "eager") if m in records), None)
    out = []
    for mode in modes:
        if mode in skipped:
            out.append(result(NAME, config, mode, [], skipped=skipped[mode]))
            continue
        rec = records[mode]
        extra = {"first_call_s": rec["first_call_s"], "loss": rec["loss"]}
        if ref_mode is not None:
            err = max_rel_err(rec["arrays"], records[ref_mode]["arrays"])
            extra.update(max_rel_err=err, agree=err <= AGREE_RTOL, reference=ref_mode)
        out.append(result(NAME, config, mode, rec["times_s"], extra=extra))
    return out


# The targets (docs/performance.md, "Targets"): (models, mode, baseline, factor, text): the
# mode's median at most factor times the baseline's.
TARGETS = [
    (styles_data.RECURRENT[:-1], "graph", "jax", 1.0,
     "each recurrent cell at most JAX's `jit(value_and_grad)` over `lax.scan`"),
    (("tanh_unrolled",), "graph", "jax", 1.0, "the unrolled tanh RNN at most JAX's"),
    (("cnn",), "graph", "torch", 1.2, "the CNN step at most 1.2x PyTorch eager"),
    (("transformer",), "graph", "torch", 1.0, "the transformer step at most PyTorch eager"),
]
FIRST_CALL_FACTOR = 1.5
FIRST_CALL_TEXT = "its first call at most 1.5x JAX's"      # each recurrent cell's
TARGET_TEXTS = tuple(t[4] for t in TARGETS) + (FIRST_CALL_TEXT,)


def _by_model(results):
    table = {}
    for r in results:
        if r["workload"] == NAME:
            table.setdefault(r["config"]["model"], {})[r["mode"]] = r
    return table


def table_lines(results):
    """The family's own table: steady medians, first calls, ratios to JAX and PyTorch."""
    def ms(r):
        return "-" if r is None or r.get("median_ms") is None else f"{r['median_ms']:.2f}"

    def first(r):
        return "-" if r is None or r.get("first_call_s") is None else f"{r['first_call_s']:.2f}"

    def ratio(a, b):
        if a is None or b is None or a.get("median_ms") is None or b.get("median_ms") is None:
            return "-"
        return f"{a['median_ms'] / b['median_ms']:.2f}"
    head = ("| model | graph ms | eager ms | jax ms | torch ms | graph/jax | graph/torch "
            "| first call s: graph | jax | torch | max rel err |")
    lines = [head, "|" + "---|" * 11]
    for model, rows in _by_model(results).items():
        g, e, j, t = (rows.get(m) for m in ("graph", "eager", "jax", "torch"))
        errs = [r.get("max_rel_err") for r in rows.values() if r.get("max_rel_err") is not None]
        err = f"{max(errs):.1e}" if errs else "-"
        lines.append(f"| {model} | {ms(g)} | {ms(e)} | {ms(j)} | {ms(t)} | {ratio(g, j)} | "
                     f"{ratio(g, t)} | {first(g)} | {first(j)} | {first(t)} | {err} |")
    return lines


def summary(results, args=None):
    table = _by_model(results)
    if not table:
        return ""
    lines = ["styles: steady median ms (first call in a fresh process, empty caches):"]
    lines += table_lines(results)
    bad = [f"{m} {mode}" for m, rows in table.items() for mode, r in rows.items()
           if r.get("agree") is False]
    lines.append("styles: " + (f"gradients DISAGREE: {', '.join(bad)}" if bad else
                               f"losses and gradients agree within {AGREE_RTOL:g}"))
    for models, mode, base, factor, text in TARGETS:
        for model in models:
            rows = table.get(model, {})
            a, b = rows.get(mode), rows.get(base)
            if not a or not b or a.get("median_ms") is None or b.get("median_ms") is None:
                continue
            ok = a["median_ms"] <= factor * b["median_ms"]
            lines.append(f"styles {model} target {'met' if ok else 'MISSED'}: {text} ({mode} "
                         f"{a['median_ms']:.2f} vs {base} {b['median_ms']:.2f} ms)")
    for model in styles_data.RECURRENT[:-1]:        # first call: at most 1.5x JAX's
        rows = table.get(model, {})
        a, b = rows.get("graph"), rows.get("jax")
        if a and b and a.get("first_call_s") and b.get("first_call_s"):
            ok = a["first_call_s"] <= FIRST_CALL_FACTOR * b["first_call_s"]
            lines.append(f"styles {model} target {'met' if ok else 'MISSED'}: "
                         f"{FIRST_CALL_TEXT} (graph {a['first_call_s']:.2f} vs jax "
                         f"{b['first_call_s']:.2f} s)")
    return "\n".join(lines)


if __name__ == "__main__":
    import runpy

    sys.argv = ["python -m bench", NAME] + sys.argv[1:]
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
