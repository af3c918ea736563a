"""Linear regression by gradient descent against the closed form.

    loss(w) = 0.5 * mean((X w - y)²)          X: (n, d + 1) with a column of ones

solved by three methods with a fixed learning rate ``eta``:

``batch``      full-batch gradient descent (every update sees all n examples)
``minibatch``  mini-batch gradient descent (batches of 32, reshuffled each epoch)
``sgd``        stochastic gradient descent (batch 1)

and compared with the optimum from ``numpy.linalg.lstsq``. Each mode trains
from zero weights on the same batches in the same order:

``eager``  ``en.optim.SGD.minimize`` eagerly
``graph``  the same update step traced once with ``en.function``
``numpy``  the gradient ``Xᵀ(X w - y) / b`` written by hand
``torch``  ``torch.optim.SGD`` with autograd (when PyTorch is installed)

The table shows the time of a whole training run (the batches are made
beforehand, outside the timing); the notes give the time per update and the
final loss gap to the optimum. A separate, untimed run records the loss
curve against updates and against the time spent in updates, which the plot
shows (``least_squares.png``). Data: a fixed random regression problem
(standard normal features, noise 0.1), float64.
"""
import time

import numpy as np

import engine as en

from .. import common

NAME = "least_squares"
DESCRIPTION = ("linear regression by batch GD, mini-batch GD and SGD (fixed eta) vs "
               "numpy.linalg.lstsq: time and loss gap")
MODES = ["eager", "graph", "numpy", "torch"]
METHODS = ("batch", "minibatch", "sgd")
BATCH_SIZE = {"batch": None, "minibatch": 32, "sgd": 1}
ETA = {"batch": 0.2, "minibatch": 0.05, "sgd": 0.01}
NOISE = 0.1
CURVE_POINTS = 40


def add_arguments(parser):
    group = parser.add_argument_group("least_squares")
    group.add_argument("--eta", type=float, default=None,
                       help="least_squares: learning rate for every method "
                            f"(default per method: {ETA})")
    group.add_argument("--method", default=None,
                       help=f"least_squares: comma-separated methods (default {','.join(METHODS)})")


def configs(args):
    quick = getattr(args, "quick", False)
    n, d = (1000, 20) if quick else (5000, 50)
    # Passes over the data: cheap full-batch updates need many of them.
    epochs = {"batch": 60, "minibatch": 2, "sgd": 1} if quick else \
        {"batch": 300, "minibatch": 10, "sgd": 2}
    repeats = 2 if quick else 3
    methods = METHODS
    if getattr(args, "method", None):
        methods = tuple(m.strip() for m in args.method.split(",") if m.strip())
        bad = [m for m in methods if m not in METHODS]
        if bad:
            raise ValueError(f"least_squares: unknown method(s) {bad}; methods are {METHODS}")
    eta = getattr(args, "eta", None)
    return [{"method": m, "n": n, "d": d, "epochs": epochs[m],
             "eta": eta if eta is not None else ETA[m], "repeats": repeats} for m in methods]


# ---- data -----------------------------------------------------------------------------
def make_problem(n, d, seed=0):
    """``(X, y, w_opt, loss_opt)``: a regression problem and its least-squares optimum."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.standard_normal((n, d)), np.ones((n, 1))], axis=1)
    w_true = rng.standard_normal(d + 1)
    y = x @ w_true + NOISE * rng.standard_normal(n)
    w_opt = np.linalg.lstsq(x, y, rcond=None)[0]
    return x, y, w_opt, loss_np(x, y, w_opt)


def loss_np(x, y, w):
    r = x @ w - y
    return 0.5 * float(np.mean(r * r))


def make_batches(x, y, method, epochs, seed=0):
    """Every update's batch, epoch after epoch, as engine tensors (``en.data.batches``)."""
    out = []
    for epoch in range(epochs):
        out.extend(en.data.batches((x, y), BATCH_SIZE[method], shuffle=method != "batch",
                                   seed=seed + epoch))
    return out


# ---- the modes: each returns train(record) -> (w, [(update, seconds in updates, w)]) ---
def _checkpoints(total):
    step = max(1, total // CURVE_POINTS)
    return set(range(0, total, step)) | {total}


def _loop(batches, step, read_w, record):
    """Call ``step(batch)`` for every batch; with ``record``, keep w at checkpoints."""
    if not record:
        for b in batches:
            step(b)
        return read_w(), []
    marks, curve, spent = _checkpoints(len(batches)), [(0, 0.0, read_w())], 0.0
    for i, b in enumerate(batches, start=1):
        start = time.perf_counter()
        step(b)
        spent += time.perf_counter() - start
        if i in marks:
            curve.append((i, spent, read_w()))
    return read_w(), curve


def engine_trainer(batches, d, eta, traced):
    # One variable, optimizer and traced step for every run (a run resets them),
    # so tracing happens in the untimed warm-up run only.
    w = en.Variable(np.zeros(d + 1), name="w")
    opt = en.optim.SGD(lr=eta).build([w])

    def update(xb, yb):
        def loss():
            r = en.matmul(xb, w) - yb
            return 0.5 * en.mean(r * r)
        return opt.minimize(loss, w)
    step = en.function(update) if traced else update

    def train(record=False):
        for v in [w] + opt.variables():
            v.assign(np.zeros(v.shape, dtype=v.dtype))
        return _loop(batches, lambda b: step(*b), lambda: w.numpy().copy(), record)
    return train


def numpy_trainer(batches, d, eta):
    arrays = [(np.asarray(xb), np.asarray(yb)) for xb, yb in batches]

    def train(record=False):
        w = np.zeros(d + 1)

        def step(b):
            xb, yb = b
            w[:] -= eta * (xb.T @ (xb @ w - yb)) / len(yb)
        return _loop(arrays, step, lambda: w.copy(), record)
    return train


def torch_trainer(torch, batches, d, eta):
    tensors = [(torch.tensor(np.asarray(xb)), torch.tensor(np.asarray(yb))) for xb, yb in batches]

    def train(record=False):
        w = torch.zeros(d + 1, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.SGD([w], lr=eta)

        def step(b):
            xb, yb = b
            opt.zero_grad()
            r = xb @ w - yb
            loss = 0.5 * (r * r).mean()
            loss.backward()
            opt.step()
        return _loop(tensors, step, lambda: w.detach().numpy().copy(), record)
    return train


def make_trainer(mode, batches, d, eta):
    if mode in ("eager", "graph"):
        return engine_trainer(batches, d, eta, traced=mode == "graph")
    if mode == "numpy":
        return numpy_trainer(batches, d, eta)
    if mode == "torch":
        torch = common.torch_or_none()
        if torch is None:
            return common.skip_reason("torch")
        return torch_trainer(torch, batches, d, eta)
    raise ValueError(f"least_squares: unknown mode {mode!r}; modes are {MODES}")


# ---- running ------------------------------------------------------------------------------
def run(config, modes, args, tick):
    x, y, w_opt, loss_opt = make_problem(config["n"], config["d"])
    batches = make_batches(x, y, config["method"], config["epochs"])
    trainers, results = {}, []
    for mode in modes:
        t = make_trainer(mode, batches, config["d"], config["eta"])
        if isinstance(t, str):
            results.append(common.result(NAME, config, mode, [], skipped=t))
        else:
            trainers[mode] = t
    finals = {}

    def timed(mode):
        def once():
            finals[mode] = trainers[mode]()[0]
        return once

    times = common.time_modes({m: timed(m) for m in trainers}, repeats=config["repeats"],
                              tick=tick, warmup=1)
    for mode, train in trainers.items():
        _, curve = train(record=True)          # untimed: the loss curve
        final = loss_np(x, y, finals[mode])
        gap = final - loss_opt
        med = float(np.median(times[mode]))
        extra = {
            "updates": len(batches),
            "us_per_update": med / len(batches) * 1e6,
            "final_loss": final,
            "optimum_loss": loss_opt,
            "gap": gap,
            "rel_gap": gap / loss_opt,
            "weight_error": float(np.linalg.norm(finals[mode] - w_opt)),
            "curve": [[i, s, loss_np(x, y, w)] for i, s, w in curve],
            "note": f"{med / len(batches) * 1e6:.1f} us/update, gap {gap:.2e}",
        }
        results.append(common.result(NAME, config, mode, times[mode], extra=extra))
    order = {m: i for i, m in enumerate(MODES)}
    results.sort(key=lambda r: order.get(r["mode"], len(order)))
    return results


def summary(results, args=None):
    mine = [r for r in results if r["workload"] == NAME and not r.get("skipped")]
    if not mine:
        return ""
    lines = ["least_squares: time of a whole training run (batches made beforehand); gap = final "
             "loss - lstsq optimum (0.5 * mean squared residual)"]
    by_method = {}
    for r in mine:
        by_method.setdefault(r["config"]["method"], []).append(r)
    for method, rs in by_method.items():
        cfg = rs[0]["config"]
        parts = [f"{r['mode']} {r['us_per_update']:.1f} us/update gap {r['gap']:.2e}" for r in rs]
        lines.append(f"least_squares {method} (eta {cfg['eta']}, {rs[0]['updates']} updates, "
                     f"optimum {rs[0]['optimum_loss']:.6f}): " + "; ".join(parts))
    return "\n".join(lines)


def plot(results, out_dir):
    plt = common.pyplot_or_none()
    mine = [r for r in results if r["workload"] == NAME and r.get("curve")]
    if plt is None or not mine:
        return []
    methods = [m for m in METHODS if any(r["config"]["method"] == m for r in mine)]
    fig, axes = plt.subplots(2, len(methods), figsize=(4.2 * len(methods), 6.4), squeeze=False)
    for j, method in enumerate(methods):
        gaps = {}
        for r in (r for r in mine if r["config"]["method"] == method):
            curve = np.asarray(r["curve"], dtype=float)
            gap = np.maximum(curve[:, 2] - r["optimum_loss"], 1e-16)
            gaps[r["mode"]] = gap
            style = common.mode_style(MODES.index(r["mode"]) if r["mode"] in MODES else 0)
            every = max(1, len(gap) // 8)
            axes[0, j].semilogy(curve[:, 0], gap, label=r["mode"], lw=1, markersize=3,
                                markevery=every, **style)
            axes[1, j].semilogy(curve[:, 1] * 1e3, gap, label=r["mode"], lw=1, markersize=3,
                                markevery=every, **style)
        title = f"{method} (eta {r['config']['eta']})"
        for group in common.overlapping(gaps):
            title += "\ncurves overlap: " + " = ".join(group)
        axes[0, j].set_title(title, fontsize=9)
        axes[0, j].set_xlabel("updates")
        axes[1, j].set_xlabel("ms spent in updates")
        axes[0, j].set_ylabel("loss - optimum")
        axes[1, j].set_ylabel("loss - optimum")
    fig.suptitle("Least squares: gap to the lstsq optimum")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    common.legend_outside(fig)
    return [common.save_figure(fig, out_dir, "least_squares.png", dpi=110)]
