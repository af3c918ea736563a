"""Loss and gradient of a tied-weight autoencoder on MNIST-shaped data, in every mode.

The model is 784 -> 196 -> 784 with one weight matrix used twice::

    H = sigmoid(X @ W + b1)
    Y = sigmoid(H @ W.T + b2)
    loss = mean((Y - X) ** 2)

and each timed call computes the loss and its gradient with respect to
``W``, ``b1`` and ``b2`` (float32) on one batch of synthetic MNIST
(``en.data.synthetic_mnist``). The modes:

``eager``           ``en.value_and_grad`` run op by op
``graph_nopass``    the same traced by ``en.function(..., optimize=False)``
``graph``           traced with every optimization pass
``graph_compiled``  ``graph`` with ``en.config.lowering = "numba"``: its large
                    fused kernels compiled into numba loop nests
                    (``graph/lowering/numba/numba_fused.py``), when numba is installed
``graph_c``         ``graph`` with ``en.config.lowering = "c"``: its fused
                    kernels compiled as C from the first call
                    (``graph/lowering/c/c_fused.py``), when a C compiler is found
``numpy``           the forward and backward written by hand, allocating freely
``numpy_prealloc``  by hand again, into buffers allocated once (``out=``), as a
                    careful programmer would write it
``torch``           PyTorch eager autograd, when installed
``numpy_matmul_floor``  the five matrix products of a loss and gradient alone
                    (``X W``, ``H W^T``, ``dZ2^T H``, ``dZ2 W``, ``X^T dZ1``: the same
                    shapes and dtype, into preallocated outputs): the floor no mode
                    can go under; the summary prints graph / floor

Before timing, every mode's loss and gradients are compared with the same
hand-written computation in float64; the largest relative error (scaled by
each array's largest entry) is recorded as ``max_rel_err`` and must stay below
``RTOL`` for ``agree`` to be true. The graph mode's record also carries the
memory plan (``fn.memory_report``) under ``memory_report``.

Thread pools: numpy (OpenBLAS), PyTorch (OpenMP) and JAX each keep worker
threads that spin for a while after a parallel call. On a small machine the
spinning workers of one library steal cores from the next library's call, so
a timed call that follows a call of another library first waits until that
library's workers are idle, and a short call is run once untimed so that its
own library's workers are awake (see :func:`settled`): each mode is timed in
its steady state, as in a loop that runs that library alone.

Run alone with ``python -m bench.workloads.autoencoder [--quick] [--batch N]``.
"""
import sys
import time

import numpy as np

from bench.common import is_baseline

NAME = "autoencoder"
DESCRIPTION = ("tied-weight autoencoder 784-196-784: loss + gradient, batch 100..10000 "
               "(60000 with --full)")
MODES = ["eager", "graph_nopass", "graph", "graph_compiled", "graph_c", "numpy",
         "numpy_prealloc", "torch", "numpy_matmul_floor"]
FLOOR = "numpy_matmul_floor"
# --full (or --modes): the compiled kernels (a cold cache compiles for about 10 s a process).
FULL_ONLY_MODES = ("graph_compiled",)

BATCHES = (100, 1000, 10000)          # the default run: fits a laptop (peak well under 3 GB)
FULL_BATCHES = (100, 1000, 10000, 60000)   # --full
QUICK_BATCHES = (100, 1000)
# A comparison mode (numpy, PyTorch) whose float32 result is off the float64 reference by
# more than RTOL but at most this (a sum over 60000 rows in another order) gets a note:
# rounding in the baseline, not a failure of the engine.
BASELINE_ROUNDING = 1e-2
HIDDEN = 196
FEATURES = 784
RTOL = 1e-4
OUTPUT_NAMES = ("loss", "dW", "db1", "db2")
# Timed repetitions per batch size (per mode): enough for a stable median
# while the largest batch stays around a minute for all modes together.
_REPEATS = {100: 30, 1000: 20, 10000: 10, 60000: 5}
_QUICK_REPEATS = 5


# ----------------------------------------------------------------------------
# interface

def _int_list(text):
    return tuple(int(v) for v in str(text).replace(",", " ").split())


def add_arguments(parser):
    # Options are shared by the workloads that define them (the runner adds each
    # name once), so these match the other workloads' --batch format.
    parser.add_argument("--batch", type=_int_list, default=None,
                        help="batch sizes, e.g. 60000 or 100,1000 (autoencoder default "
                             "100,1000,10000,60000; gc uses the first, default 10000)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed repetitions per mode (gc: iterations per mode)")
    parser.add_argument("--no-first-call", action="store_true",
                        help="autoencoder: do not time the graph's first call in a fresh process")


def batches_from(args):
    """The ``--batch`` sizes as a list of ints (``None`` when not given)."""
    value = getattr(args, "batch", None)
    if value is None:
        return None
    out = []
    for v in (value if isinstance(value, (list, tuple)) else [value]):
        out.extend(v if isinstance(v, (list, tuple)) else [v])
    return [int(v) for v in out] or None


def configs(args):
    quick = getattr(args, "quick", False)
    full = getattr(args, "full", False)
    batches = batches_from(args) or (QUICK_BATCHES if quick else FULL_BATCHES if full else BATCHES)
    repeats = getattr(args, "repeats", None)
    return [{"batch": int(b),
             "repeats": int(repeats or (_QUICK_REPEATS if quick else _REPEATS.get(int(b), 5)))}
            for b in batches]


def run(config, modes, args, tick):
    from bench.common import results, time_modes

    batch = config["batch"]
    problem = Problem(batch)
    reference = numpy_loss_and_grad(*problem.arrays(np.float64))
    fns, skipped, extras = {}, {}, {}
    for mode in modes:
        made = make_mode(mode, problem)
        if isinstance(made, str):
            skipped[mode] = made
            continue
        step, to_numpy = made
        got = to_numpy(step())                 # the check run doubles as a warm-up
        if mode == FLOOR:   # the products give dW alone (its two halves, summed)
            extras[mode] = agreement(reference[1:2], got, names=OUTPUT_NAMES[1:2], mode=mode)
        else:
            extras[mode] = agreement(reference, got, names=OUTPUT_NAMES, mode=mode)
        fns[mode] = settled(step, "torch" if mode == "torch" else "numpy")
    if "graph" in fns:
        extras["graph"]["memory_report"] = problem.graph_fn.memory_report(*problem.tensors())
        if not getattr(args, "no_first_call", False):
            from bench.first_call import measure
            extras["graph"]["first_call"] = measure(batch)
    times = time_modes(fns, config["repeats"], tick, warmup=1)
    return results(NAME, config, modes, times, extras, skipped)


# The targets the README states ("Targets" under "Results"; tests/test_bench_targets.py
# checks that each text is there): (batch, faster mode, slower mode, at least this
# speed-up, text); None: every batch measured.
TARGETS = [
    (None, "graph", "graph_nopass", 1.0, "graph never slower than graph_nopass"),
    (None, "graph", "torch", 1.0, "graph not slower than torch at any batch"),
]
# Ceilings: (smallest batch judged, mode, baseline, at most this ratio of medians, text).
CEILINGS = [
    (1000, "graph", FLOOR, 1.2,
     "graph at most 1.2x the five matrix products alone (numpy_matmul_floor) from batch 1000"),
]
# The first call of the graph mode (trace, passes, lowering, run) in a fresh process,
# from batch 1000 down: (largest batch judged, at most these seconds, text).
FIRST_CALL = (1000, 0.1, "first call of graph (trace, compile, run) in a fresh process at most "
                         "0.1 s up to batch 1000")
TARGET_TEXTS = tuple(t[-1] for t in TARGETS) + tuple(c[-1] for c in CEILINGS) + FIRST_CALL[-1:]
# Ratios reported without a verdict (no stated target): (faster mode, slower mode).
RATIOS = [("graph", "eager"), ("graph", "numpy_prealloc")]


def check_targets(results):
    """``[(text, ok, detail)]`` for the targets whose modes and batches were measured."""
    med = {(r["config"]["batch"], r["mode"]): r["median_ms"] for r in results
           if r["workload"] == NAME and r.get("median_ms") is not None}
    batches = sorted({b for b, _ in med})
    out = []
    for batch, fast, slow, need, text in TARGETS:
        ratios = [(b, med[(b, slow)] / med[(b, fast)]) for b in batches
                  if (batch is None or b == batch) and (b, fast) in med and (b, slow) in med]
        if not ratios:
            continue
        ok = all(ratio >= need for _, ratio in ratios)
        detail = ", ".join(f"{b}: {ratio:.2f}x" for b, ratio in ratios)
        out.append((text, ok, detail))
    for smallest, mode, base, most, text in CEILINGS:
        ratios = [(b, med[(b, mode)] / med[(b, base)]) for b in batches
                  if b >= smallest and (b, mode) in med and (b, base) in med]
        if ratios:
            out.append((text, all(ratio <= most for _, ratio in ratios),
                        ", ".join(f"{b}: {ratio:.2f}x" for b, ratio in ratios)))
    return out


def summary(results, args=None):
    """Lines printed under the runner's table: agreement, memory plan, targets."""
    mine = [r for r in results if r["workload"] == NAME]
    if not mine:
        return ""
    lines = ["autoencoder: ms per loss + gradient (W, b1, b2), float32; every mode checked "
             f"against a float64 numpy reference (max relative error <= {RTOL:g})"]
    bad = [f"{r['mode']} at {r['config']['batch']} ({r.get('worst')} {r['max_rel_err']:.1e})"
           for r in mine if r.get("agree") is False]
    engine = [r["max_rel_err"] for r in mine
              if r.get("max_rel_err") is not None and not is_baseline(r["mode"])]
    lines.append("autoencoder: agreement " + (
        f"FAILED: {', '.join(bad)}" if bad else
        f"ok (the engine's modes within {max(engine, default=0):.1e})"))
    for r in mine:
        if r.get("rounding_note"):
            lines.append(f"autoencoder {r['mode']} at batch {r['config']['batch']}: "
                         + r["rounding_note"].removeprefix("note: "))
    for r in mine:
        rep = r.get("memory_report")
        if rep:
            lines.append(f"autoencoder batch={r['config']['batch']} graph memory plan: "
                         f"{rep.get('buffer_bytes', 0) / 2**20:.1f} MiB in {rep.get('buffers')} "
                         f"buffers (unplanned peak {rep.get('unplanned_peak_bytes', 0) / 2**20:.1f}"
                         f" MiB), {rep.get('in_place')} values in place")
    firsts = [r["first_call"] for r in mine if r.get("first_call")]
    for rec in firsts:
        if "error" in rec:
            lines.append(f"autoencoder batch={rec['batch']} first call: failed ({rec['error']})")
            continue
        ms = {k: rec[k] * 1e3 for k in ("trace_s", "passes_s", "lower_s", "rest_s", "steady_s")}
        lines.append(f"autoencoder batch={rec['batch']} first call of graph in a fresh process: "
                     f"{rec['first_s']:.3f} s (trace {ms['trace_s']:.1f} ms, passes "
                     f"{ms['passes_s']:.1f} ms, lowering {ms['lower_s']:.1f} ms, the run and the "
                     f"rest {ms['rest_s']:.1f} ms; a later call {ms['steady_s']:.1f} ms; "
                     f"import engine {rec['import_s']:.2f} s)")
    for text, ok, detail in check_targets(mine):
        lines.append(f"autoencoder target {'met' if ok else 'MISSED'}: {text} ({detail})")
    judged = [rec for rec in firsts if "error" not in rec and rec["batch"] <= FIRST_CALL[0]]
    if judged:
        ok = all(rec["first_s"] <= FIRST_CALL[1] for rec in judged)
        detail = ", ".join(f"{rec['batch']}: {rec['first_s']:.3f} s" for rec in judged)
        lines.append(f"autoencoder target {'met' if ok else 'MISSED'}: {FIRST_CALL[2]} ({detail})")
    med = {(r["config"]["batch"], r["mode"]): r["median_ms"] for r in mine
           if r.get("median_ms") is not None}
    for mode in ("graph", "graph_compiled", "graph_c"):
        floor = [f"{b}: {med[(b, mode)] / med[(b, FLOOR)]:.2f}x"
                 for b in sorted({b for b, _ in med}) if (b, mode) in med and (b, FLOOR) in med]
        if floor:
            lines.append(f"autoencoder {mode} / matrix-product floor (the mode's time over the "
                         "five products alone): " + ", ".join(floor))
    for fast, slow in RATIOS:
        pairs = [f"{b}: {med[(b, slow)] / med[(b, fast)]:.2f}x" for b in sorted({b for b, _ in med})
                 if (b, fast) in med and (b, slow) in med]
        if pairs:
            lines.append(f"autoencoder speed-up of {fast} over {slow} (no target): "
                         + ", ".join(pairs))
    return "\n".join(lines)


def plot(results, out_dir):
    """Median time against batch size, one line per mode, min-max bars, on log-log axes."""
    from bench.common import legend_outside, mode_style, pyplot_or_none, save_figure, spread_bars

    plt = pyplot_or_none()
    rows = [r for r in results if r["workload"] == NAME and r.get("median_ms") is not None]
    if plt is None or not rows:
        return []
    fig, ax = plt.subplots(figsize=(7, 5))
    for i, mode in enumerate(MODES):
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["config"]["batch"])
        if mine:
            med, bars = spread_bars(mine)
            nudge = 1.0 + 0.025 * (i - (len(MODES) - 1) / 2)   # bars side by side, not stacked
            ax.errorbar([r["config"]["batch"] * nudge for r in mine], med, yerr=bars,
                        label=mode, capsize=3, markersize=4, **mode_style(i))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size")
    ax.set_ylabel("ms per loss + gradient (median, bars: min-max)")
    ax.set_title("tied-weight autoencoder 784-196-784, float32")
    ax.grid(True, which="both", alpha=0.3)
    legend_outside(fig, ax)
    return [save_figure(fig, out_dir, "autoencoder.png", dpi=120, bbox_inches="tight")]


# ----------------------------------------------------------------------------
# the problem and its modes

class Problem:
    """One batch of synthetic MNIST and initial parameters (float32), shared by all modes."""

    def __init__(self, batch, seed=0):
        import engine as en

        self.batch = batch
        self.x, _ = en.data.synthetic_mnist(batch, seed=seed)
        rng = np.random.default_rng(seed + 1)
        limit = np.sqrt(6.0 / (FEATURES + HIDDEN))           # Glorot uniform
        self.w = rng.uniform(-limit, limit, (FEATURES, HIDDEN)).astype(np.float32)
        self.b1 = rng.uniform(-0.1, 0.1, HIDDEN).astype(np.float32)
        self.b2 = rng.uniform(-0.1, 0.1, FEATURES).astype(np.float32)
        self._tensors = None
        self.graph_fn = None

    def arrays(self, dtype=np.float32):
        """``(W, b1, b2, X)`` as numpy arrays of ``dtype``."""
        return tuple(a.astype(dtype) for a in (self.w, self.b1, self.b2, self.x))

    def tensors(self):
        """``(W, b1, b2, X)`` as engine tensors (made once)."""
        if self._tensors is None:
            import engine as en
            self._tensors = tuple(en.tensor(a) for a in self.arrays())
        return self._tensors


def engine_loss(w, b1, b2, x):
    """The loss written with engine ops, as a user would write it."""
    import engine as en

    h = en.sigmoid(x @ w + b1)
    y = en.sigmoid(h @ en.transpose(w) + b2)
    return en.mean((y - x) ** 2.0)


def make_mode(mode, problem):
    """``(step, to_numpy)`` for ``mode``: ``step()`` runs one loss + gradient and
    ``to_numpy(step())`` gives ``(loss, dW, db1, db2)`` as numpy; or a skip reason."""
    if mode in ("eager", "graph", "graph_nopass", "graph_compiled", "graph_c"):
        import engine as en

        vg = en.value_and_grad(engine_loss, argnums=(0, 1, 2))
        args = problem.tensors()
        if mode == "graph":
            vg = problem.graph_fn = en.function(vg)
        elif mode == "graph_nopass":
            vg = en.function(vg, optimize=False)
        elif mode == "graph_compiled":
            return _compiled_mode(en, vg, args)
        elif mode == "graph_c":
            return _c_mode(en, vg, args)
        return (lambda: vg(*args)), _engine_to_numpy
    if mode == "numpy":
        args = problem.arrays()
        return (lambda: numpy_loss_and_grad(*args)), _identity
    if mode == "numpy_prealloc":
        stepper = PreallocatedNumpy(*problem.arrays())
        return stepper.step, _identity
    if mode == FLOOR:
        floor = MatmulFloor(*problem.arrays())
        return floor.step, floor.weight_gradient
    if mode == "torch":
        from bench.common import skip_reason, torch_or_none

        torch = torch_or_none()
        if torch is None:
            return skip_reason("torch")
        return _torch_step(torch, problem), _torch_to_numpy
    raise ValueError(f"{NAME}: unknown mode {mode!r}")


def _compiled_mode(en, vg, args):
    """``graph_compiled``: traced (and compiled) now, with the numba lowering on."""
    from engine.graph.lowering.numba.lowering import numba_available
    if not numba_available():
        return "numba is not installed (pip install '.[jit]')"
    return _lowered_mode(en, vg, args, "numba", "no fused kernel could be written")


def _c_mode(en, vg, args):
    """``graph_c``: traced (and its kernels compiled as C) now, with the C lowering on."""
    from engine.graph.lowering.c.c_fused import available
    if not available():
        return "no C compiler found (gcc or cc)"
    return _lowered_mode(en, vg, args, "c", "no fused kernel could be written in C")


def _lowered_mode(en, vg, args, lowering, nothing):
    """``vg`` traced now under ``en.config.lowering = lowering``; a skip reason where no
    kernel of that back end came of it."""
    fn = en.function(vg)
    previous = en.config.lowering
    en.config.lowering = lowering
    try:
        graph = fn.graph_for(*args)
    finally:
        en.config.lowering = previous
    if not [n for n in graph.nodes if n.meta.get("backend") == lowering]:
        return "nothing compiled: " + nothing
    return (lambda: fn(*args)), _engine_to_numpy


def _identity(out):
    return out


def _engine_to_numpy(out):
    value, grads = out
    return (np.asarray(value),) + tuple(np.asarray(g) for g in grads)


def _torch_to_numpy(out):
    return tuple(t.detach().numpy() for t in out)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_loss_and_grad(w, b1, b2, x):
    """Loss and ``(dW, db1, db2)`` by hand in numpy, allocating as it goes."""
    h = _sigmoid(x @ w + b1)
    y = _sigmoid(h @ w.T + b2)
    r = y - x
    loss = np.mean(r * r)
    dz2 = (2.0 / r.size) * r * y * (1.0 - y)          # d loss / d (H W^T + b2)
    dz1 = (dz2 @ w) * h * (1.0 - h)                   # d loss / d (X W + b1)
    dw = x.T @ dz1 + dz2.T @ h                        # W is used twice
    return loss, dw, dz1.sum(axis=0), dz2.sum(axis=0)


def _sigmoid_(a):
    """Sigmoid in place."""
    np.negative(a, out=a)
    np.exp(a, out=a)
    a += 1.0
    np.divide(1.0, a, out=a)   # twice as fast as np.reciprocal on large arrays
    return a


class PreallocatedNumpy:
    """The hand-written loss and gradient again, with every buffer allocated once.

    Two (batch, 784) and two (batch, 196) work arrays are reused by every
    call; the outputs are overwritten in place too (copy them to keep them).
    """

    def __init__(self, w, b1, b2, x):
        self.w, self.b1, self.b2, self.x = w, b1, b2, x
        n = x.shape[0]
        dt = x.dtype
        self.h = np.empty((n, HIDDEN), dt)          # H, then 1 - H
        self.dh = np.empty((n, HIDDEN), dt)         # dH, then dZ1
        self.y = np.empty((n, FEATURES), dt)        # Y, then 1 - Y
        self.r = np.empty((n, FEATURES), dt)        # Y - X, then dZ2
        self.dw = np.empty_like(w)
        self.dw_tmp = np.empty_like(w)
        self.db1 = np.empty_like(b1)
        self.db2 = np.empty_like(b2)
        self.scale = dt.type(2.0 / (n * FEATURES))

    def step(self):
        w, x, h, dh, y, r = self.w, self.x, self.h, self.dh, self.y, self.r
        np.matmul(x, w, out=h)
        h += self.b1
        _sigmoid_(h)
        np.matmul(h, w.T, out=y)
        y += self.b2
        _sigmoid_(y)
        np.subtract(y, x, out=r)
        # einsum needs no (batch, 784) temporary; np.vdot(r, r) would be quicker,
        # but its float32 BLAS sum is 0.6% off at batch 60000.
        loss = np.einsum("ij,ij->", r, r) / r.size
        # dZ2 = scale * r * y * (1 - y), written into r
        r *= y
        np.subtract(1.0, y, out=y)
        r *= y
        r *= self.scale
        np.sum(r, axis=0, out=self.db2)
        np.matmul(r.T, h, out=self.dw)                 # dZ2^T H
        np.matmul(r, w, out=dh)                        # dH
        dh *= h
        np.subtract(1.0, h, out=h)
        dh *= h                                        # dZ1
        np.sum(dh, axis=0, out=self.db1)
        np.matmul(x.T, dh, out=self.dw_tmp)            # X^T dZ1
        self.dw += self.dw_tmp
        return loss, self.dw, self.db1, self.db2


class MatmulFloor:
    """The five matrix products of one loss and gradient, and nothing else.

    The operands are the true ``H``, ``dZ1`` and ``dZ2`` of the problem
    (computed once by hand, untimed), so the weight gradient the products give
    (``dZ2^T H + X^T dZ1``) is checked against the reference like every mode.
    Each product writes into an output allocated once, as BLAS calls in a
    tight loop would.
    """

    def __init__(self, w, b1, b2, x):
        self.w, self.x = w, x
        self.h = _sigmoid(x @ w + b1)
        y = _sigmoid(self.h @ w.T + b2)
        r = y - x
        self.dz2 = ((2.0 / r.size) * r * y * (1.0 - y)).astype(x.dtype)
        self.dz1 = ((self.dz2 @ w) * self.h * (1.0 - self.h)).astype(x.dtype)
        n = x.shape[0]
        self.z1 = np.empty((n, HIDDEN), x.dtype)
        self.z2 = np.empty((n, FEATURES), x.dtype)
        self.dh = np.empty((n, HIDDEN), x.dtype)
        self.dw_decoder = np.empty_like(w)
        self.dw_encoder = np.empty_like(w)

    def step(self):
        w, x, h = self.w, self.x, self.h
        np.matmul(x, w, out=self.z1)                        # forward: X W
        np.matmul(h, w.T, out=self.z2)                      # forward: H W^T
        np.matmul(self.dz2.T, h, out=self.dw_decoder)       # backward: dZ2^T H
        np.matmul(self.dz2, w, out=self.dh)                 # backward: dZ2 W
        np.matmul(x.T, self.dz1, out=self.dw_encoder)       # backward: X^T dZ1
        return self.dw_decoder, self.dw_encoder

    def weight_gradient(self, out):
        """``(dW,)`` from a step's two halves (untimed)."""
        return (out[0] + out[1],)


def _torch_step(torch, problem):
    w, b1, b2 = (torch.tensor(a, requires_grad=True) for a in problem.arrays()[:3])
    x = torch.from_numpy(problem.x)

    def step():
        h = torch.sigmoid(x @ w + b1)
        y = torch.sigmoid(h @ w.t() + b2)
        loss = ((y - x) ** 2).mean()
        dw, db1, db2 = torch.autograd.grad(loss, (w, b1, b2))
        return loss, dw, db1, db2
    return step


# ----------------------------------------------------------------------------
# fair timing and agreement (shared by the other workloads)

# How long each library's worker threads keep spinning after a parallel call,
# measured on the 2-core machine (CPU time still burning while the caller
# sleeps): OpenBLAS (numpy) about 0.11 s (2**28 cycles), PyTorch's OpenMP
# about 0.03 s, JAX's pool none. A little margin on each.
SETTLE_S = {"numpy": 0.13, "torch": 0.04, "jax": 0.0}
# Below this many seconds per call, a call after a pause is preceded by an
# untimed one: workers that went to sleep take up to ~10 ms to wake on this
# virtual machine (PyTorch at batch 100: 1.6 ms back to back, 13 ms after a
# 50 ms pause), which would swamp a short call.
WARM_BELOW_S = 0.25
_last_pool = [None]


def settled(step, pool):
    """Wrap ``step`` for ``bench.common.time_modes``: time its steady state, alone.

    ``pool`` names the thread pool ``step`` runs on ("numpy", "torch", "jax").
    When the previous call wrapped here ran on another pool, first sleep for
    as long as that pool's workers keep spinning (``SETTLE_S``), so they do
    not steal this call's cores; then, for a short ``step``, run it once
    untimed so its own workers are awake, as in a loop that only runs this
    library. Returns the seconds the timed ``step()`` took (time_modes takes
    a returned float as the time).
    """
    last = [None]

    def timed():
        previous = _last_pool[0]
        if previous is not None and previous != pool:
            time.sleep(SETTLE_S.get(previous, 0.13))
            if last[0] is None or last[0] < WARM_BELOW_S:
                step()
        _last_pool[0] = pool
        start = time.perf_counter()
        step()
        last[0] = time.perf_counter() - start
        return last[0]
    return timed


def agreement(reference, got, rtol=RTOL, names=None, mode=None):
    """Compare ``got`` with ``reference`` (tuples of arrays): ``{"max_rel_err", "agree", "worst"}``.

    Each array's error is its largest absolute difference divided by the
    reference's largest magnitude, so entries near zero do not dominate.
    ``worst`` names the array with the largest error (``names[i]``, or its index).
    For a baseline ``mode`` (numpy, PyTorch, JAX: not the engine) an error above
    ``rtol`` but within ``BASELINE_ROUNDING`` is float32 rounding in the baseline
    (another summation order): ``agree`` stays true and ``note`` says so.
    """
    worst, worst_at = 0.0, None
    for i, (ref, val) in enumerate(zip(reference, got)):
        ref = np.asarray(ref, dtype=np.float64)
        val = np.asarray(val, dtype=np.float64)
        label = names[i] if names else i
        if ref.shape != val.shape:
            return {"max_rel_err": float("inf"), "agree": False, "worst": label,
                    "note": f"output {label}: shape {val.shape} != reference {ref.shape}"}
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        err = float(np.max(np.abs(val - ref))) if ref.size else 0.0
        rel = err / scale if scale > 0 else err
        if worst_at is None or rel > worst:
            worst, worst_at = rel, label
    ok = bool(worst <= rtol)
    out = {"max_rel_err": worst, "agree": ok, "worst": worst_at}
    if not ok and mode is not None and is_baseline(mode) and worst <= BASELINE_ROUNDING:
        out["agree"] = True
        out["rounding_note"] = out["note"] = (
            f"note: {worst_at} off the float64 reference by {worst:.1e} relative: float32 "
            f"rounding in this baseline (another summation order), not an engine error")
    elif not ok:
        out["note"] = (f"DISAGREES with the reference: {worst_at} max rel err {worst:.2e} > "
                       f"{rtol:g}")
    return out


if __name__ == "__main__":
    import runpy

    sys.argv = ["python -m bench", NAME] + sys.argv[1:]
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
