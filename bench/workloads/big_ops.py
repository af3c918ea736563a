"""Big single ops, where the arithmetic dwarfs any framework's overhead.

Three cases, each timed in every mode:

``matmul``      float32 (1024, 1024) @ (1024, 1024), about 2 GFLOP
``conv2d``      NHWC (32, 64, 64, 32) input, (3, 3, 32, 64) HWIO filters,
                stride 1, "same" padding: about 4.8 GFLOP
``conv2d_vjp``  that convolution's output and its gradients with respect to
                the input and the filters for a given output cotangent

Modes: ``eager`` (one engine op, or a tape), ``graph`` (the same under
``en.function``), ``numpy`` (``@``, and a hand-written im2col convolution with
its two gradients), ``torch`` (``torch.nn.functional.conv2d`` on NCHW copies
made outside the timed region), ``jax`` (``jax.jit`` of ``jnp.matmul`` and
``lax.conv_general_dilated``, waited on with ``block_until_ready``; ``--full`` only).

The point: for ops this big every mode should cost about the same, so each
record carries ``spread`` (slowest median / fastest median over the modes
that ran, the same number on each record of a case) and ``within_10pct``.
Every mode's outputs are first checked against a float64 numpy reference
(``max_rel_err``, ``agree``; see ``bench.workloads.autoencoder.agreement``).
A call that follows another library's call is timed after a pause that lets
that library's spinning worker threads go idle, and after one untimed call
that wakes its own (``autoencoder.settled``).

Run alone with ``python -m bench.workloads.big_ops [--quick]``.
"""
import sys

import numpy as np

from .autoencoder import agreement, settled

NAME = "big_ops"
DESCRIPTION = "big matmul and conv2d (forward and gradient): every mode should cost the same"
MODES = ["eager", "graph", "numpy", "torch", "jax"]
FULL_ONLY_MODES = ("jax",)     # --full (or --modes): every framework

# (op, sizes, repeats, quick repeats)
_CASES = [
    ("matmul", {"m": 1024, "k": 1024, "n": 1024}, 20, 5),
    ("conv2d", {"n": 32, "h": 64, "w": 64, "c": 32, "o": 64, "k": 3}, 10, 3),
    ("conv2d_vjp", {"n": 32, "h": 64, "w": 64, "c": 32, "o": 64, "k": 3}, 6, 2),
]
_QUICK_BATCH = 8          # conv batch under --quick
SPREAD_TARGET = 1.10
# The target the README states ("Targets" under "Results").
TARGET_TEXTS = ("every mode within 10% of the fastest",)


def configs(args):
    quick = getattr(args, "quick", False)
    repeats = getattr(args, "repeats", None)
    out = []
    for op, sizes, full, short in _CASES:
        sizes = dict(sizes)
        if quick and op != "matmul":
            sizes["n"] = _QUICK_BATCH
        out.append({"op": op, **sizes, "repeats": int(repeats or (short if quick else full))})
    return out


def run(config, modes, args, tick):
    from bench.common import result, time_modes

    inputs = make_inputs(config)
    reference = _as_tuple(numpy_case(config, inputs, np.float64)())
    fns, skipped, extras = {}, {}, {}
    for mode in modes:
        made = make_mode(mode, config, inputs)
        if isinstance(made, str):
            skipped[mode] = made
            continue
        step, to_numpy = made
        names = ("out",) if len(reference) == 1 else ("y", "dx", "dw")
        extras[mode] = agreement(reference, to_numpy(step()), names=names, mode=mode)
        fns[mode] = settled(step, mode if mode in ("torch", "jax") else "numpy")
    times = time_modes(fns, config["repeats"], tick, warmup=1)
    medians = {m: float(np.median(t)) for m, t in times.items()}
    spread = max(medians.values()) / min(medians.values()) if medians else None
    out = []
    for mode in modes:
        if mode in skipped:
            out.append(result(NAME, config, mode, [], skipped=skipped[mode]))
            continue
        extra = dict(extras[mode], spread=spread,
                     within_10pct=bool(spread is not None and spread <= SPREAD_TARGET),
                     gflops=flops(config) / medians[mode] / 1e9)
        out.append(result(NAME, config, mode, times[mode], extra=extra))
    return out


def summary(results, args=None):
    """One line per case: the spread between the fastest and slowest mode."""
    lines = []
    seen = set()
    for r in results:
        if r["workload"] != NAME or r.get("spread") is None:
            continue
        key = tuple(sorted(r["config"].items()))
        if key in seen:
            continue
        seen.add(key)
        case = [x for x in results if x["workload"] == NAME and x["config"] == r["config"]
                and x.get("median_ms") is not None]
        fast = min(case, key=lambda x: x["median_ms"])
        slow = max(case, key=lambda x: x["median_ms"])
        verdict = "met" if r["within_10pct"] else "MISSED"
        lines.append(f"big_ops {r['config']['op']} target {verdict}: {TARGET_TEXTS[0]} "
                     f"(spread {r['spread']:.2f}x): "
                     f"fastest {fast['mode']} {fast['median_ms']:.1f} ms "
                     f"({fast['gflops']:.0f} GFLOP/s), slowest {slow['mode']} "
                     f"{slow['median_ms']:.1f} ms; engine eager/graph vs numpy: " + ", ".join(
                         f"{m} {_ratio(case, m, 'numpy')}" for m in ("eager", "graph")))
    return "\n".join(lines)


def _ratio(case, a, b):
    ma = next((x["median_ms"] for x in case if x["mode"] == a), None)
    mb = next((x["median_ms"] for x in case if x["mode"] == b), None)
    return f"{ma / mb:.2f}x" if ma and mb else "-"


def flops(config):
    """Floating-point operations of one call (multiply-adds count two)."""
    if config["op"] == "matmul":
        return 2.0 * config["m"] * config["k"] * config["n"]
    conv = 2.0 * config["n"] * config["h"] * config["w"] * config["k"] ** 2 * config["c"] * config["o"]
    return conv * (3 if config["op"] == "conv2d_vjp" else 1)


# ----------------------------------------------------------------------------
# inputs and modes

def make_inputs(config, seed=0):
    """float32 numpy inputs: ``(a, b)`` for matmul, ``(x, w)`` or ``(x, w, g)`` for conv."""
    rng = np.random.default_rng(seed)

    def normal(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    if config["op"] == "matmul":
        return normal(config["m"], config["k"]), normal(config["k"], config["n"])
    n, h, w, c, o, k = (config[key] for key in ("n", "h", "w", "c", "o", "k"))
    x = normal(n, h, w, c)
    f = normal(k, k, c, o, scale=1.0 / np.sqrt(k * k * c))
    if config["op"] == "conv2d":
        return x, f
    return x, f, normal(n, h, w, o)


def make_mode(mode, config, inputs):
    """``(step, to_numpy)``; ``to_numpy(step())`` is a tuple of numpy arrays (NHWC);
    or a skip reason string."""
    op = config["op"]
    if mode in ("eager", "graph"):
        import engine as en

        fn = {"matmul": _en_matmul, "conv2d": _en_conv, "conv2d_vjp": _en_conv_vjp}[op]
        if mode == "graph":
            fn = en.function(fn)
        args = [en.tensor(a) for a in inputs]
        return (lambda: fn(*args)), _engine_to_numpy
    if mode == "numpy":
        return numpy_case(config, inputs, np.float32), _as_tuple
    if mode == "torch":
        return _torch_case(config, inputs)
    if mode == "jax":
        return _jax_case(config, inputs)
    raise ValueError(f"{NAME}: unknown mode {mode!r}")


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _engine_to_numpy(out):
    return tuple(np.asarray(t) for t in _as_tuple(out))


def _en_matmul(a, b):
    return a @ b


def _en_conv(x, w):
    import engine as en
    return en.conv2d(x, w, padding="same")


def _en_conv_vjp(x, w, g):
    import engine as en
    with en.GradientTape() as tape:
        tape.watch([x, w])
        y = en.conv2d(x, w, padding="same")
    gx, gw = tape.gradient(y, [x, w], output_gradients=g)
    return y, gx, gw


# ---- numpy by hand --------------------------------------------------------------
def numpy_case(config, inputs, dtype):
    """A zero-argument callable computing the case in numpy at ``dtype``."""
    arrays = [a.astype(dtype) for a in inputs]
    if config["op"] == "matmul":
        a, b = arrays
        return lambda: a @ b
    if config["op"] == "conv2d":
        x, w = arrays
        return lambda: conv2d_same(x, w)[0]
    x, w, g = arrays
    return lambda: conv2d_same_vjp(x, w, g)


def _im2col(x, k):
    """(N*H*W, K*K*C) patches of ``x`` zero-padded for a "same" KxK window (odd K)."""
    from numpy.lib.stride_tricks import sliding_window_view

    p = k // 2
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    win = sliding_window_view(xp, (k, k), axis=(1, 2))       # (N, H, W, C, K, K)
    return win.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, k * k * c)


def conv2d_same(x, w):
    """Stride-1 "same" convolution by im2col and one matrix product: ``(y, cols)``."""
    k, _, c, o = w.shape
    cols = _im2col(x, k)
    return (cols @ w.reshape(k * k * c, o)).reshape(x.shape[:3] + (o,)), cols


def conv2d_same_vjp(x, w, g):
    """``(y, dx, dw)``: the input gradient is the convolution of ``g`` with the
    filters flipped in space and transposed in channels; the filter gradient
    reuses the forward pass's patches."""
    k, _, c, o = w.shape
    y, cols = conv2d_same(x, w)
    dw = (cols.T @ g.reshape(-1, o)).reshape(w.shape)
    w_flip = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))   # (K, K, O, C)
    dx, _ = conv2d_same(g, w_flip)
    return y, dx, dw


# ---- torch ------------------------------------------------------------------------
def _torch_case(config, inputs):
    from bench.common import skip_reason, torch_or_none

    torch = torch_or_none()
    if torch is None:
        return skip_reason("torch")
    import torch.nn.functional as F

    if config["op"] == "matmul":
        a, b = (torch.from_numpy(v) for v in inputs)
        return (lambda: torch.matmul(a, b)), lambda out: (out.numpy(),)
    # NCHW / OIHW copies, made here, outside the timed region.
    x = torch.from_numpy(np.ascontiguousarray(inputs[0].transpose(0, 3, 1, 2)))
    w = torch.from_numpy(np.ascontiguousarray(inputs[1].transpose(3, 2, 0, 1)))
    pad = config["k"] // 2

    def nhwc(t):
        return t.detach().numpy().transpose(0, 2, 3, 1)

    if config["op"] == "conv2d":
        def step():
            with torch.no_grad():
                return F.conv2d(x, w, padding=pad)
        return step, lambda out: (nhwc(out),)
    g = torch.from_numpy(np.ascontiguousarray(inputs[2].transpose(0, 3, 1, 2)))
    x.requires_grad_(True)
    w.requires_grad_(True)

    def step_vjp():
        y = F.conv2d(x, w, padding=pad)
        gx, gw = torch.autograd.grad(y, (x, w), grad_outputs=g)
        return y, gx, gw

    def to_numpy(out):
        y, gx, gw = out
        return nhwc(y), nhwc(gx), gw.numpy().transpose(2, 3, 1, 0)
    return step_vjp, to_numpy


# ---- jax ----------------------------------------------------------------------------
def _jax_case(config, inputs):
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    import jax.numpy as jnp

    args = [jax.device_put(a) for a in inputs]
    if config["op"] == "matmul":
        fn = jax.jit(jnp.matmul)
    else:
        def conv(x, w):
            return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                dimension_numbers=("NHWC", "HWIO", "NHWC"))
        if config["op"] == "conv2d":
            fn = jax.jit(conv)
        else:
            def conv_vjp(x, w, g):
                y, pullback = jax.vjp(conv, x, w)
                return (y,) + tuple(pullback(g))
            fn = jax.jit(conv_vjp)

    def step():
        return jax.block_until_ready(fn(*args))
    return step, lambda out: tuple(np.asarray(t) for t in _as_tuple(out))


if __name__ == "__main__":
    import runpy

    sys.argv = ["python -m bench", NAME] + sys.argv[1:]
    runpy.run_module("bench", run_name="__main__", alter_sys=True)
