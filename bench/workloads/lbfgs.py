"""The reference experiment: a tied-weight autoencoder trained with full-batch L-BFGS.

    H = sigmoid(X W + b1)          X: (batch, 784), W: (784, 196)
    Y = sigmoid(H Wᵀ + b2)
    loss = mean((Y - X)²)          float32 throughout

trained with L-BFGS at a fixed step of 1 (no line search) on one fixed batch,
for every batch size in {100, 1000, 10000} (and 60000 with ``--full``) and
history in {5, 100}.
Every mode starts from the same weights and follows the conventions of
``torch.optim.LBFGS`` (first step ``-g * min(1, 1/|g|_1)``, ``H0 = s·y / y·y``
of the newest pair, ``s = t d``):

``eager``       loss and gradient eagerly, ``en.optim.LBFGS`` step eagerly
``graph_loss``  loss and gradient traced with ``en.function``; the step eager
``graph``       the whole iteration traced (two-loop recursion included; the
                history lives in variables, so one trace serves every iteration)
``numpy``       the same loop written by hand in numpy (loss, gradient, two loops)
``torch``       PyTorch eager, ``torch.optim.LBFGS(lr=1, history_size=m,
                max_iter=1, line_search_fn=None)``
``torch_loop``  PyTorch autograd with the two-loop recursion written by hand (``--full``)
``jax``         ``jax.jit(jax.value_and_grad(loss))`` with an eager L-BFGS loop (``--full``)

The modes run side by side, one iteration of each in turn, so drift in the
machine's speed hits them alike. The table shows milliseconds per iteration
over the last iterations (the history is full there when the run is longer
than the history). Every mode's loss must agree with the reference (eager)
to 1e-3 relative over the first 10 iterations; later, float32 rounding
differences between back ends are amplified by L-BFGS with a fixed step, so
the curves may drift apart.

Data: ``en.data.synthetic_mnist`` (MNIST-shaped, not the real digits) unless
``--mnist DIR`` points at the MNIST IDX files.
"""
import math
import time

import numpy as np

import engine as en

from .. import common

NAME = "lbfgs"
DESCRIPTION = ("tied-weight autoencoder 784-196-784, full-batch L-BFGS (step 1): "
               "ms per iteration, batch x history")
MODES = ["eager", "graph_loss", "graph", "numpy", "torch", "torch_loop", "jax"]

BATCHES = (100, 1000, 10000)               # the default run: fits a laptop
FULL_BATCHES = (100, 1000, 10000, 60000)    # --full
FULL_ONLY_MODES = ("torch_loop", "jax")     # --full (or --modes): the other frameworks' variants
HISTORIES = (5, 100)
QUICK_BATCHES = (100, 1000)
CHECK_ITERS = 10          # the losses of the first iterations must agree ...
CHECK_RTOL = 1e-3         # ... to this relative tolerance
N_IN, N_HID = 784, 196
N_W = N_IN * N_HID
N_PARAMS = N_W + N_HID + N_IN


class CheckFailed(AssertionError):
    """A mode's loss curve left the reference's; carries the results measured."""

    def __init__(self, message, results):
        super().__init__(message)
        self.results = results


# ---- options and configurations ------------------------------------------------
def _int_list(text):
    return tuple(int(v) for v in str(text).replace(",", " ").split())


def add_arguments(parser):
    group = parser.add_argument_group("lbfgs")
    group.add_argument("--batch", type=_int_list, default=None,
                       help="lbfgs: batch sizes, e.g. 10000 or 100,1000 "
                            f"(default {','.join(map(str, BATCHES))})")
    group.add_argument("--history", type=_int_list, default=None,
                       help=f"lbfgs: history sizes (default {','.join(map(str, HISTORIES))})")
    group.add_argument("--iters", type=int, default=None,
                       help="lbfgs: iterations per mode (default depends on batch and history)")
    group.add_argument("--timed", type=int, default=None,
                       help="lbfgs: how many of the last iterations are timed")
    group.add_argument("--mnist", default=None, metavar="DIR",
                       help="lbfgs: train on the MNIST IDX files in DIR instead of synthetic data")


def _default_iters(batch, history, quick):
    """(iterations, timed): enough to fill the history where that is affordable."""
    if quick:
        return CHECK_ITERS, 5
    if batch <= 1000:
        # Iterations of a few ms: 60 timed ones in 12 interleaved rounds, so
        # that the machine's drifts (10-30% within seconds on a shared VM)
        # average out over every mode instead of landing on one.
        return (history + 60, 60) if history <= 100 else (80, 60)
    if batch <= 10000:
        return (20, 15) if history <= 5 else (30, 20)
    return 6, 4


def configs(args):
    quick = getattr(args, "quick", False)
    full = getattr(args, "full", False)
    batches = getattr(args, "batch", None) or (QUICK_BATCHES if quick else
                                               FULL_BATCHES if full else BATCHES)
    histories = getattr(args, "history", None) or ((5,) if quick else HISTORIES)
    out = []
    for b in batches:
        for m in histories:
            iters, timed = _default_iters(b, m, quick)
            if getattr(args, "iters", None):
                iters = args.iters
                timed = max(1, min(iters - 1, (iters * 2) // 3)) if iters > 1 else 1
            if getattr(args, "timed", None):
                timed = args.timed
            iters = max(iters, 2)
            timed = max(1, min(timed, iters - 1))
            out.append({"batch": int(b), "history": int(m), "iters": iters, "timed": timed})
    return out


# ---- data and initial weights ----------------------------------------------------
_DATA = {}


def load_data(batch, mnist_dir=None):
    """The first ``batch`` training images, float32 (batch, 784), and a description."""
    key = (mnist_dir, batch)
    if key not in _DATA:
        if mnist_dir:
            x = en.data.load_mnist(mnist_dir, split="train")[0]
            x = np.ascontiguousarray(x.reshape(len(x), -1)[:batch], dtype=np.float32)
            source = f"MNIST from {mnist_dir}"
        else:
            x = en.data.synthetic_mnist(batch, seed=0)[0]
            source = "synthetic MNIST (en.data.synthetic_mnist, seed 0; not the real digits)"
        if len(x) < batch:
            raise ValueError(f"lbfgs: batch {batch} is larger than the data ({len(x)} images)")
        _DATA.clear()                     # keep one data set in memory at a time
        _DATA[key] = (x, source)
    return _DATA[key]


def initial_weights(seed=0):
    """Glorot-uniform W and zero biases, float32: the start of every mode."""
    rng = np.random.default_rng(seed)
    limit = math.sqrt(6.0 / (N_IN + N_HID))
    w = rng.uniform(-limit, limit, size=(N_IN, N_HID)).astype(np.float32)
    return w, np.zeros(N_HID, np.float32), np.zeros(N_IN, np.float32)


def flat_weights(seed=0):
    return np.concatenate([a.ravel() for a in initial_weights(seed)])


# ---- the engine modes --------------------------------------------------------------
def engine_loss(x, w, b1, b2):
    h = en.sigmoid(en.matmul(x, w) + b1)
    y = en.sigmoid(en.matmul(h, en.transpose(w)) + b2)
    return en.mean(en.square(y - x))


class EngineRun:
    """``eager``, ``graph_loss`` or ``graph``: one L-BFGS iteration per call."""

    def __init__(self, mode, x, history):
        w, b1, b2 = initial_weights()
        self.params = [en.Variable(w, name="W"), en.Variable(b1, name="b1"),
                       en.Variable(b2, name="b2")]
        self.x = en.tensor(x)
        self.opt = en.optim.LBFGS(lr=1.0, history=history).build(self.params)
        self.losses = []
        params = self.params

        def loss_fn(xb):
            return engine_loss(xb, *params)

        if mode == "eager":
            self._step = lambda: self.opt.minimize(lambda: loss_fn(self.x), params)
        elif mode == "graph_loss":
            def value_and_grads(xb):
                with en.GradientTape() as tape:
                    loss = loss_fn(xb)
                return loss, tape.gradient(loss, params)
            traced = en.function(value_and_grads)

            def step():
                loss, grads = traced(self.x)
                self.opt.step(list(grads), params)
                return loss
            self._step = step
        elif mode == "graph":
            def iteration(xb):
                return self.opt.minimize(lambda: loss_fn(xb), params)
            traced = en.function(iteration)
            self._step = lambda: traced(self.x)
            self.traced = traced
        else:
            raise ValueError(mode)

    def __call__(self):
        self.losses.append(float(self._step()))


# ---- numpy -----------------------------------------------------------------------------
def _sigmoid_np(a):
    with np.errstate(over="ignore"):
        out = np.exp(-a)
    out += np.float32(1.0)
    return np.divide(np.float32(1.0), out, out=out)   # twice as fast as np.reciprocal


def numpy_loss_grad(p, x, grad):
    """Loss at the flat parameters ``p``; writes the flat gradient into ``grad``."""
    w = p[:N_W].reshape(N_IN, N_HID)
    b1, b2 = p[N_W:N_W + N_HID], p[N_W + N_HID:]
    h = _sigmoid_np(x @ w + b1)
    y = _sigmoid_np(h @ w.T + b2)
    d = y - x
    loss = np.mean(d * d)
    dz = d * np.float32(2.0 / d.size) * y * (np.float32(1.0) - y)     # d loss / d(H Wᵀ + b2)
    da = (dz @ w) * h * (np.float32(1.0) - h)                        # d loss / d(X W + b1)
    gw = grad[:N_W].reshape(N_IN, N_HID)
    np.matmul(dz.T, h, out=gw)
    gw += x.T @ da
    np.sum(da, axis=0, out=grad[N_W:N_W + N_HID])
    np.sum(dz, axis=0, out=grad[N_W + N_HID:])
    return float(loss)


class TwoLoop:
    """L-BFGS with PyTorch's conventions, on flat vectors of any array library.

    ``ops`` supplies ``dot``, ``axpy_`` (``v += a * u``, in place or not,
    returning the result), ``scale`` (``a * v`` as a new vector), ``neg``,
    ``abs_sum`` and ``scalar`` (a 0-d value to a Python float).
    """

    def __init__(self, history, ops, lr=1.0):
        self.m, self.ops, self.lr = history, ops, lr
        self.dirs, self.stps, self.ro = [], [], []
        self.h_diag = 1.0
        self.n_iter = 0
        self.d = self.t = self.prev_g = None

    def direction(self, g):
        """The step ``t d`` to add to the parameters, from the gradient ``g``."""
        o = self.ops
        self.n_iter += 1
        if self.n_iter == 1:
            d = o.neg(g)
        else:
            y = g - self.prev_g
            s = o.scale(self.t, self.d)
            ys = o.scalar(o.dot(y, s))
            if ys > 1e-10:
                if len(self.dirs) == self.m:
                    self.dirs.pop(0)
                    self.stps.pop(0)
                    self.ro.pop(0)
                self.dirs.append(y)
                self.stps.append(s)
                self.ro.append(1.0 / ys)
                self.h_diag = ys / o.scalar(o.dot(y, y))
            al = [0.0] * len(self.dirs)
            q = o.neg(g)
            for i in range(len(self.dirs) - 1, -1, -1):
                al[i] = o.scalar(o.dot(self.stps[i], q)) * self.ro[i]
                q = o.axpy_(q, -al[i], self.dirs[i])
            r = o.scale(self.h_diag, q)
            for i in range(len(self.dirs)):
                be = o.scalar(o.dot(self.dirs[i], r)) * self.ro[i]
                r = o.axpy_(r, al[i] - be, self.stps[i])
            d = r
        self.prev_g = g
        self.t = min(1.0, 1.0 / o.scalar(o.abs_sum(g))) * self.lr if self.n_iter == 1 else self.lr
        self.d = d
        return o.scale(self.t, d)


class _NumpyOps:
    dot = staticmethod(np.dot)
    neg = staticmethod(np.negative)
    scalar = staticmethod(float)

    @staticmethod
    def axpy_(v, a, u):
        v += np.float32(a) * u
        return v

    @staticmethod
    def scale(a, v):
        return np.float32(a) * v

    @staticmethod
    def abs_sum(v):
        return np.abs(v).sum()


class NumpyRun:
    """``numpy``: hand-written loss, gradient and two-loop recursion."""

    def __init__(self, x, history):
        self.x = x
        self.p = flat_weights()
        self.lbfgs = TwoLoop(history, _NumpyOps)
        self.losses = []

    def __call__(self):
        g = np.empty_like(self.p)
        self.losses.append(numpy_loss_grad(self.p, self.x, g))
        self.p += self.lbfgs.direction(g)


# ---- PyTorch -------------------------------------------------------------------------------
class TorchRun:
    """``torch``: ``torch.optim.LBFGS`` with a fixed step, one iteration per ``step``."""

    def __init__(self, torch, x, history):
        self.torch = torch
        w, b1, b2 = (torch.tensor(a, requires_grad=True) for a in initial_weights())
        self.params = [w, b1, b2]
        self.x = torch.from_numpy(x)
        self.opt = torch.optim.LBFGS(self.params, lr=1, history_size=history, max_iter=1,
                                     line_search_fn=None)
        self.losses = []

    def _closure(self):
        self.opt.zero_grad()
        w, b1, b2 = self.params
        h = self.torch.sigmoid(self.x @ w + b1)
        y = self.torch.sigmoid(h @ w.T + b2)
        loss = ((y - self.x) ** 2).mean()
        loss.backward()
        return loss

    def __call__(self):
        self.losses.append(float(self.opt.step(self._closure).detach()))


class _TorchOps:
    def __init__(self, torch):
        self.torch = torch

    @staticmethod
    def dot(a, b):
        return a.dot(b)

    @staticmethod
    def neg(v):
        return v.neg()

    @staticmethod
    def scalar(v):
        return float(v)

    @staticmethod
    def axpy_(v, a, u):
        return v.add_(u, alpha=a)

    @staticmethod
    def scale(a, v):
        return v * a

    @staticmethod
    def abs_sum(v):
        return v.abs().sum()


class TorchLoopRun:
    """``torch_loop``: PyTorch autograd for the gradient, the two loops by hand."""

    def __init__(self, torch, x, history):
        self.torch = torch
        self.p = torch.tensor(flat_weights(), requires_grad=True)
        self.x = torch.from_numpy(x)
        self.lbfgs = TwoLoop(history, _TorchOps(torch))
        self.losses = []

    def __call__(self):
        torch, p, x = self.torch, self.p, self.x
        p.grad = None
        w = p[:N_W].view(N_IN, N_HID)
        h = torch.sigmoid(x @ w + p[N_W:N_W + N_HID])
        y = torch.sigmoid(h @ w.T + p[N_W + N_HID:])
        loss = ((y - x) ** 2).mean()
        loss.backward()
        self.losses.append(float(loss.detach()))
        with torch.no_grad():
            p.add_(self.lbfgs.direction(p.grad.clone()))


# ---- JAX -------------------------------------------------------------------------------------
class _JaxOps:
    def __init__(self, jnp):
        self.jnp = jnp

    def dot(self, a, b):
        return self.jnp.dot(a, b)

    def neg(self, v):
        return -v

    @staticmethod
    def scalar(v):
        return float(v)

    @staticmethod
    def axpy_(v, a, u):
        return v + a * u

    @staticmethod
    def scale(a, v):
        return a * v

    def abs_sum(self, v):
        return self.jnp.sum(self.jnp.abs(v))


class JaxRun:
    """``jax``: a jitted ``value_and_grad`` with an eager L-BFGS loop in ``jax.numpy``."""

    def __init__(self, jax, x, history):
        import jax.numpy as jnp

        def loss(p, xb):
            w = p[:N_W].reshape(N_IN, N_HID)
            h = jax.nn.sigmoid(xb @ w + p[N_W:N_W + N_HID])
            y = jax.nn.sigmoid(h @ w.T + p[N_W + N_HID:])
            return jnp.mean((y - xb) ** 2)

        self.value_and_grad = jax.jit(jax.value_and_grad(loss))
        self.p = jnp.asarray(flat_weights())
        self.x = jnp.asarray(x)
        self.lbfgs = TwoLoop(history, _JaxOps(jnp))
        self.losses = []

    def __call__(self):
        loss, g = self.value_and_grad(self.p, self.x)
        self.losses.append(float(loss))
        self.p = self.p + self.lbfgs.direction(g)
        self.p.block_until_ready()


# ---- running a configuration ------------------------------------------------------------------
def make_run(mode, x, history):
    """The runner of one mode, or a string saying why it is skipped."""
    if mode in ("eager", "graph_loss", "graph"):
        return EngineRun(mode, x, history)
    if mode == "numpy":
        return NumpyRun(x, history)
    if mode in ("torch", "torch_loop"):
        torch = common.torch_or_none()
        if torch is None:
            return common.skip_reason("torch")
        return (TorchRun if mode == "torch" else TorchLoopRun)(torch, x, history)
    if mode == "jax":
        jax = common.jax_or_none()
        if jax is None:
            return common.skip_reason("jax")
        return JaxRun(jax, x, history)
    raise ValueError(f"lbfgs: unknown mode {mode!r}; modes are {MODES}")


class _Guarded:
    """Calls a mode's iteration; after an exception, records it and does nothing more."""

    def __init__(self, run):
        self.run = run
        self.error = None

    def __call__(self):
        if self.error is not None:
            return 0.0
        try:
            self.run()
        except Exception as err:  # reported in the results, the other modes go on
            self.error = f"{type(err).__name__}: {err}"
            return 0.0
        return None


def check_agreement(losses, reference, n=CHECK_ITERS, rtol=CHECK_RTOL):
    """``(worst relative difference, first failing iteration or None)`` over ``n`` iterations."""
    a = np.asarray(losses[:n], dtype=np.float64)
    b = np.asarray(reference[:len(a)], dtype=np.float64)
    if not len(a):
        return 0.0, None
    rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-30)
    rel = np.where(np.isfinite(rel), rel, np.inf)
    bad = np.nonzero(rel > rtol)[0]
    return float(rel.max()), (int(bad[0]) if len(bad) else None)


MAX_ROUNDS = 12


def timing_rounds(timed):
    """Rounds of blocks of about five timed iterations for ``time_modes``: each
    adds one untimed iteration per mode, so long iterations (few timed ones)
    get a single round."""
    return max(1, min(MAX_ROUNDS, timed // 5))


def run(config, modes, args, tick):
    batch, history = config["batch"], config["history"]
    iters, timed = config["iters"], config["timed"]
    x, source = load_data(batch, getattr(args, "mnist", None))
    runs, results, setup_s = {}, [], {}
    for mode in modes:
        start = time.perf_counter()
        r = make_run(mode, x, history)
        setup_s[mode] = time.perf_counter() - start
        if isinstance(r, str):
            results.append(common.result(NAME, config, mode, [], skipped=r))
        else:
            runs[mode] = r
    guarded = {mode: _Guarded(r) for mode, r in runs.items()}
    times = common.time_modes(guarded, repeats=timed, tick=tick, warmup=iters - timed,
                              rounds=timing_rounds(timed))

    ref_mode = next((m for m in ("eager", "numpy", "torch") if m in runs
                     and guarded[m].error is None), None)
    ref = runs[ref_mode].losses if ref_mode else []
    failures = []
    for mode, r in runs.items():
        g = guarded[mode]
        extra = {"loss": list(r.losses), "data": source, "setup_s": setup_s[mode],
                 "pairs": min(iters - timed, history), "reference": ref_mode}
        if g.error is not None:
            extra["error"] = g.error
            extra["note"] = f"error: {g.error}"
            results.append(common.result(NAME, config, mode, [], extra=extra))
            failures.append(f"{mode} failed: {g.error}")
            continue
        worst, bad = check_agreement(r.losses, ref)
        extra["check_rel"] = worst
        extra["check_ok"] = bad is None
        if bad is not None and common.is_baseline(mode):
            # A comparison library's own float32 rounding (or conventions): worth a note,
            # not a failure of the engine.
            extra["check_ok"] = True
            extra["note"] = extra["baseline_note"] = (
                f"note: loss {abs(r.losses[bad] / ref[bad] - 1):.1e} relative off {ref_mode}'s "
                f"at iteration {bad} (a baseline, not the engine)")
        elif bad is not None:
            extra["note"] = f"LOSS DIFFERS from {ref_mode} at iteration {bad}"
            failures.append(
                f"{mode}: loss {r.losses[bad]:.8g} at iteration {bad} differs from {ref_mode}'s "
                f"{ref[bad]:.8g} by {abs(r.losses[bad] / ref[bad] - 1):.2e} relative "
                f"(allowed {CHECK_RTOL:g} over the first {CHECK_ITERS} iterations)")
        results.append(common.result(NAME, config, mode, times[mode], extra=extra))
    order = {m: i for i, m in enumerate(MODES)}
    results.sort(key=lambda r: order.get(r["mode"], len(order)))
    if failures:
        raise CheckFailed(f"lbfgs batch={batch} history={history}: " + "; ".join(failures),
                          results)
    return results


# ---- report -------------------------------------------------------------------------------------
TARGETS = (("eager", "torch", 1.5, "eager <= 1.5x PyTorch"),
           ("eager", "numpy", 1.2, "eager <= 1.2x numpy loop"),
           ("graph", "torch", 1.0, "graph < PyTorch"),
           ("graph", "numpy", 1.0, "graph < numpy loop"))
TARGET_TEXTS = tuple(t[-1] for t in TARGETS)   # stated in the README ("Targets")


def summary(results, args=None):
    """Lines printed under the table: data, caveats, and the targets met or missed."""
    mine = [r for r in results if r["workload"] == NAME]
    if not mine:
        return ""
    lines = []
    sources = sorted({r.get("data") for r in mine if r.get("data")})
    for s in sources:
        lines.append(f"lbfgs data: {s}")
    lines.append("lbfgs: ms per iteration (loss, gradient and L-BFGS step) over 'timed' "
                 "iterations after 'iters - timed' untimed ones, so that when timing starts the "
                 "history holds min(iters - timed, history) pairs (full where iters - timed >= "
                 "history); each round of timing starts with one more untimed iteration.")
    lines.append(f"lbfgs: every engine mode's loss agrees with the reference (eager) to "
                 f"{CHECK_RTOL:g} relative over the first {CHECK_ITERS} iterations (checked); "
                 "later, float32 rounding differences between back ends are amplified by L-BFGS "
                 "with a fixed step, so the curves may drift apart.")
    for r in mine:
        if r.get("baseline_note"):
            lines.append(f"lbfgs {common.config_label(r['config'])} {r['mode']}: "
                         + r["baseline_note"].removeprefix("note: "))
    by_cfg = {}
    for r in mine:
        by_cfg.setdefault(common.config_label(r["config"]), {})[r["mode"]] = r
    for label, modes in by_cfg.items():
        verdicts = []
        for a, b, limit, text in TARGETS:
            ra, rb = modes.get(a, {}).get("median_ms"), modes.get(b, {}).get("median_ms")
            if ra is None or rb is None:
                continue
            ratio = ra / rb
            ok = ratio <= limit if limit > 1.0 else ratio < limit
            verdicts.append(f"{text}: {ratio:.2f}x {'met' if ok else 'MISSED'}")
        if verdicts:
            lines.append(f"lbfgs {label}: " + "; ".join(verdicts))
    return "\n".join(lines)


def plot(results, out_dir):
    """``lbfgs_loss.png`` (loss per iteration, one panel per configuration, saying which
    modes' curves overlap) and ``lbfgs_time.png`` (median ms per iteration, min-max bars)."""
    plt = common.pyplot_or_none()
    if plt is None:
        return []
    mine = [r for r in results if r["workload"] == NAME]
    if not mine:
        return []
    by_cfg = {}
    for r in mine:
        by_cfg.setdefault(common.config_label(r["config"]), []).append(r)
    style = {m: common.mode_style(i) for i, m in enumerate(MODES)}
    paths = []
    n = len(by_cfg)
    cols = min(n, 4)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows + 0.4), squeeze=False)
    for ax, (label, rs) in zip(axes.flat, by_cfg.items()):
        curves = {r["mode"]: r["loss"] for r in rs if r.get("loss")}
        for mode, loss in curves.items():
            ax.semilogy(range(len(loss)), loss, label=mode, lw=1, markersize=3,
                        markevery=max(1, len(loss) // 8), **style.get(mode, {}))
        title = label.replace(" iters", "\niters")
        for group in common.overlapping(curves):
            title += "\ncurves overlap: " + " = ".join(group)
        ax.set_title(title, fontsize=7)
        ax.set_xlabel("iteration")
        ax.set_ylabel("loss")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("L-BFGS autoencoder: loss per iteration")
    fig.tight_layout(rect=(0, 0.4 / (3.6 * rows + 0.4), 1, 1))
    common.legend_outside(fig)
    paths.append(common.save_figure(fig, out_dir, "lbfgs_loss.png", dpi=110))

    modes = [m for m in MODES if any(r["mode"] == m and r.get("median_ms") for r in mine)]
    labels = list(by_cfg)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(labels) * max(1, len(modes)) / 3), 4))
    width = 0.8 / max(1, len(modes))
    for i, mode in enumerate(modes):
        picked = [next((r for r in by_cfg[label] if r["mode"] == mode), {}) for label in labels]
        med, bars = common.spread_bars(picked)
        ax.bar(np.arange(len(labels)) + i * width, med, width, yerr=bars, capsize=2,
               label=mode, error_kw={"lw": 0.8})
    ax.set_xticks(np.arange(len(labels)) + width * (len(modes) - 1) / 2)
    ax.set_xticklabels([lbl.replace(" iters", "\niters") for lbl in labels], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("ms per iteration (median, bars: min-max)")
    common.legend_outside(fig, ax, fontsize=7)
    ax.set_title("L-BFGS autoencoder: time per iteration")
    paths.append(common.save_figure(fig, out_dir, "lbfgs_time.png", dpi=110, bbox_inches="tight"))
    return paths
