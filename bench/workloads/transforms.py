"""Function transformations: forward mode, per-example gradients, Hessian-vector products.

Three cases, every variant timed side by side in this process:

``jvp``       the tied-weight autoencoder loss (``autoencoder.engine_loss``,
              float32) and its JVP along a random direction in (W, b1, b2):
              ``forward`` (the loss alone), ``jvp`` (native rules) and
              ``jvp_fallback`` (every op through the double-VJP trick), eagerly
              and traced (``graph_``); ``torch`` runs ``torch.func.jvp``;
              ``numpy_forward_floor`` and ``numpy_jvp_floor`` run the matrix
              products alone (2 for the loss, 5 for the loss and its JVP: the
              tangent of ``h @ W.T`` is ``dh @ W.T + h @ dW.T``), into preallocated
              outputs. At batches 100, 256, 1000 and 10000.
              Target: the traced JVP costs at most 2x the traced forward pass.
``per_example``  gradients of a 784-100-10 tanh MLP's cross-entropy for each of
              256 examples: ``loop`` (a Python loop of ``en.grad``, eager),
              ``loop_traced`` (a Python loop calling ``en.function(en.grad(...))``
              once per example), ``vmap`` (``vmap(grad(loss), in_axes=(None, 0,
              0))`` eager) and ``graph_vmap`` (the same under ``en.function``),
              against ``numpy`` (the same gradients written by hand, batched: the
              work no engine can skip, dominated by writing the 256 x 784 x 100
              gradient of the first layer), ``numpy_outer_floor`` (that gradient's
              outer products alone, written into a preallocated array: the floor
              under every mode), ``numpy_write_floor`` (an array of that size
              filled, by ``memset``: the memory bandwidth floor),
              ``torch.func.vmap(torch.func.grad)``
              and ``jax.jit(jax.vmap(jax.grad))`` when installed. Target:
              graph_vmap >= 20x faster than the (eager) loop.
``hvp``       Hessian-vector products of the autoencoder loss, ``jvp(grad(loss))``
              (forward over reverse), against two gradient evaluations
              (``two_grads``: the gradient at two points), eager and traced.
``jvp_scan``, ``hvp_scan``  the same two through ``en.scan``: a 50-step tanh RNN's
              loss, its JVP and its forward-over-reverse HVP, traced, JAX beside
              (``bench/workloads/transforms_loops.py``). Targets: graph_jvp at most
              2x graph_forward; graph_hvp at most 1x graph_two_grads.
``per_example_scan``, ``vmap_scan_compile``  per-example gradients of a 50-step RNN
              by ``vmap(grad)`` (one batched forward and backward scan), and tracing
              and compiling ``vmap`` of a 1000-step scan against the scan alone (time
              and nodes), JAX beside (``bench/workloads/transforms_vmap.py``).

Every variant's result is first checked against a reference (the native JVP
against the fallback and central differences; per-example gradients against
the loop; the HVP against central differences of the gradient). Each record
also holds ``page_faults_per_call`` (minor faults of one call, the median of
two, measured apart from the timing).

Run alone with ``python -m bench.workloads.transforms [--quick]``.
"""
import resource
import statistics
import sys

import numpy as np

from .autoencoder import engine_loss, settled
from .transforms_loops import hvp_scan_variants, jvp_scan_variants
from .transforms_vmap import per_example_scan_variants, vmap_scan_compile_variants

NAME = "transforms"
DESCRIPTION = "jvp, per-example gradients (vmap of grad), Hessian-vector products"
MODES = ["eager", "graph", "torch", "jax"]

# (case, batches, repeats by batch (default 20), repeats with --quick)
_CASES = [("jvp", (100, 256, 1000, 10000), {10000: 5}, 5),
          ("per_example", (256,), {256: 10}, 3), ("hvp", (256,), {}, 5),
          ("jvp_scan", (32,), {}, 5), ("hvp_scan", (32,), {}, 5),
          ("per_example_scan", (32,), {}, 5), ("vmap_scan_compile", (32,), {}, 3)]
# jvp: issue #46's "jvp of the forward at most the cost of its products' floor" (the
# loss makes 2 products, loss and JVP 5, so a ratio to the forward pass is not the
# measure: the products alone are 2.3-2.7x the forward's; graph_jvp / graph_forward is
# still printed).
TARGETS = {"jvp": ("graph_jvp", "numpy_jvp_floor", 1.0, "at most"),
           "per_example": ("loop", "graph_vmap", 20.0, "at least"),
           "hvp": ("graph_hvp", "graph_two_grads", 1.0, "at most"),
           "jvp_scan": ("graph_jvp", "graph_forward", 2.0, "at most"),
           "hvp_scan": ("graph_hvp", "graph_two_grads", 1.0, "at most"),
           "per_example_scan": ("jax_vmap", "graph_vmap", 1.0, "at least"),
           "vmap_scan_compile": ("graph_vmap_scan", "graph_scan", 2.0, "at most")}
# The targets as check_targets words them; stated in the README ("Targets" under "Results").
TARGET_TEXTS = tuple(f"{case}: {a} / {b} {how} {need:g}" for case, (a, b, need, how)
                     in TARGETS.items())


_QUICK_BATCH = 32
# Relative errors allowed against each reference (float32 results; the finite
# differences are taken in float64).
TOLERANCE = {"rel_err_vs_fd": 2e-3, "rel_err_vs_fallback": 1e-5, "rel_err_vs_loop": 1e-5,
             "eager_fallback_rel_err": 2e-3,
             "nodes_vs_scan": 2.0}   # vmap of a scan: at most twice the scan's own nodes


def configs(args):
    quick = getattr(args, "quick", False)
    repeats = getattr(args, "repeats", None)
    if quick:
        return [{"case": case, "batch": _QUICK_BATCH, "repeats": int(repeats or short)}
                for case, _, _, short in _CASES]
    return [{"case": case, "batch": batch, "repeats": int(repeats or by_batch.get(batch, 20))}
            for case, batches, by_batch, _ in _CASES for batch in batches]


def run(config, modes, args, tick):
    from bench.common import results, time_modes

    case = config["case"]
    variants, checks, skipped = _VARIANTS[case](config, modes)
    fns = {name: settled(fn, "torch" if name.startswith("torch") else
                         "jax" if name.startswith("jax") else "numpy")
           for name, fn in variants.items()}
    for name, errs in checks.items():
        errs["agree"] = all(v <= TOLERANCE[k] for k, v in errs.items())
    for name, fn in variants.items():
        checks.setdefault(name, {})["page_faults_per_call"] = _faults_per_call(fn)
    times = time_modes(fns, config["repeats"], tick, warmup=1)
    names = list(variants) + list(skipped)
    return results(NAME, config, names, times, checks, skipped)


def _faults_per_call(fn, calls=2):
    """The median count of minor page faults (fresh pages) of one call of ``fn``."""
    fn()
    counts = []
    for _ in range(calls):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        fn()
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return statistics.median(counts)


# ---- the jvp case ----------------------------------------------------------------------------------
def _autoencoder(batch, seed=0):
    import engine as en
    from .autoencoder import Problem

    p = Problem(batch, seed)
    rng = np.random.default_rng(seed + 7)
    primals = p.tensors()
    tangents = tuple(en.tensor(rng.standard_normal(a.shape).astype(np.float32))
                     for a in p.arrays()[:3])
    return p, primals, tangents


def _rel_err(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def _jvp_variants(config, modes):
    import engine as en
    from engine.transforms import forward

    p, (w, b1, b2, x), (tw, tb1, tb2) = _autoencoder(config["batch"])

    def jvp(w, b1, b2, x, tw, tb1, tb2):
        return en.jvp(lambda w, b1, b2: engine_loss(w, b1, b2, x), (w, b1, b2), (tw, tb1, tb2))

    args = (w, b1, b2, x, tw, tb1, tb2)
    variants, checks, skipped = {}, {}, {}
    graph_jvp = en.function(jvp)
    graph_fallback = en.function(jvp)
    with forward.native_rules(False):
        want = jvp(*args)[1]
        graph_fallback.get_concrete_function(*args)      # traced with the fallback only
    # The reference: central differences in float64 along the tangent.
    p64 = [a.astype(np.float64) for a in p.arrays(np.float64)]
    t64 = [np.asarray(t, dtype=np.float64) for t in (tw, tb1, tb2)]
    eps = 1e-4
    plus = engine_loss(*[en.tensor(a + eps * t) for a, t in zip(p64, t64)], en.tensor(p64[3]))
    minus = engine_loss(*[en.tensor(a - eps * t) for a, t in zip(p64, t64)], en.tensor(p64[3]))
    fd = (float(plus) - float(minus)) / (2 * eps)
    if "eager" in modes:
        variants["forward"] = lambda: engine_loss(w, b1, b2, x)
        variants["jvp"] = lambda: jvp(*args)
        checks["jvp"] = {"rel_err_vs_fd": abs(float(jvp(*args)[1]) - fd) / abs(fd)}
    if "graph" in modes:
        forward_fn = en.function(engine_loss)
        variants["graph_forward"] = lambda: forward_fn(w, b1, b2, x)
        variants["graph_jvp"] = lambda: graph_jvp(*args)
        variants["graph_jvp_fallback"] = lambda: graph_fallback(*args)
        got, fb = float(graph_jvp(*args)[1]), float(graph_fallback(*args)[1])
        checks["graph_jvp"] = {"rel_err_vs_fd": abs(got - fd) / abs(fd),
                               "rel_err_vs_fallback": abs(got - fb) / abs(fb)}
        checks["graph_jvp_fallback"] = {"rel_err_vs_fd": abs(fb - fd) / abs(fd),
                                        "eager_fallback_rel_err": abs(float(want) - fd) / abs(fd)}
        variants["numpy_forward_floor"], variants["numpy_jvp_floor"] = _matmul_floors(p, tw)
    if "torch" in modes:
        made = _torch_jvp(p, (tw, tb1, tb2))
        if isinstance(made, str):
            skipped["torch_forward"] = skipped["torch_jvp"] = made
        else:
            variants["torch_forward"], variants["torch_jvp"], t_value = made
            checks["torch_jvp"] = {"rel_err_vs_fd": abs(t_value - fd) / abs(fd)}
    return variants, checks, skipped


def _matmul_floors(p, tw):
    """``(forward, jvp)``: the loss's 2 matrix products, and the 5 of the loss and its
    JVP, alone, into preallocated outputs (same shapes and dtype)."""
    w, _, _, x = p.arrays()
    tw = np.asarray(tw)
    batch, hidden = x.shape[0], w.shape[1]
    h, th = np.empty((batch, hidden), np.float32), np.empty((batch, hidden), np.float32)
    y, ty1, ty2 = (np.empty_like(x) for _ in range(3))

    def forward():
        np.matmul(x, w, out=h)
        np.matmul(h, w.T, out=y)

    def jvp():
        np.matmul(x, w, out=h)
        np.matmul(x, tw, out=th)
        np.matmul(h, w.T, out=y)
        np.matmul(th, w.T, out=ty1)
        np.matmul(h, tw.T, out=ty2)
    return forward, jvp


def _torch_jvp(p, tangents):
    from bench.common import skip_reason, torch_or_none

    torch = torch_or_none()
    if torch is None:
        return skip_reason("torch")
    w, b1, b2, x = (torch.from_numpy(np.ascontiguousarray(a)) for a in p.arrays())
    tw, tb1, tb2 = (torch.from_numpy(np.asarray(t).copy()) for t in tangents)

    def loss(w, b1, b2):
        h = torch.sigmoid(x @ w + b1)
        y = torch.sigmoid(h @ w.T + b2)
        return torch.mean((y - x) ** 2)

    def fwd():
        with torch.no_grad():
            return loss(w, b1, b2)

    def jvp():
        return torch.func.jvp(loss, (w, b1, b2), (tw, tb1, tb2))
    return fwd, jvp, float(jvp()[1])


# ---- the per-example gradient case ---------------------------------------------------------------
def _mlp_problem(batch, seed=0):
    rng = np.random.default_rng(seed)
    sizes = (784, 100, 10)
    w1 = (rng.standard_normal(sizes[:2]) / np.sqrt(sizes[0])).astype(np.float32)
    b1 = np.zeros(sizes[1], np.float32)
    w2 = (rng.standard_normal(sizes[1:]) / np.sqrt(sizes[1])).astype(np.float32)
    b2 = np.zeros(sizes[2], np.float32)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[2], size=batch)
    return (w1, b1, w2, b2), x, y


def mlp_example_loss(params, x, y):
    """The cross-entropy of one example (``x`` of shape (784,), ``y`` a class id)."""
    import engine as en

    w1, b1, w2, b2 = params
    logits = en.tanh(x @ w1 + b1) @ w2 + b2
    return en.cross_entropy(logits[None], y[None])


def _per_example_variants(config, modes):
    import engine as en

    params_np, x_np, y_np = _mlp_problem(config["batch"])
    params = tuple(en.tensor(a) for a in params_np)
    x, y = en.tensor(x_np), en.tensor(y_np)
    grad = en.grad(mlp_example_loss)
    per_example = en.vmap(grad, in_axes=(None, 0, 0))
    traced = en.function(per_example)

    traced_grad = en.function(grad)

    def loop():
        return [grad(params, x[i], y[i]) for i in range(x.shape[0])]

    def loop_traced():
        return [traced_grad(params, x[i], y[i]) for i in range(x.shape[0])]
    want = loop()
    want = [np.stack([np.asarray(g[k]) for g in want]) for k in range(4)]

    def err(got):
        return max(_rel_err(g, w) for g, w in zip(got, want))
    variants, checks, skipped = {}, {}, {}
    if "eager" in modes:
        variants["loop"] = loop
        variants["vmap"] = lambda: per_example(params, x, y)
        checks["vmap"] = {"rel_err_vs_loop": err(per_example(params, x, y))}
    if "graph" in modes:
        if "loop" not in variants:
            variants["loop"] = loop
        variants["loop_traced"] = loop_traced
        checks["loop_traced"] = {"rel_err_vs_loop": err(
            [np.stack([np.asarray(g[k]) for g in loop_traced()]) for k in range(4)])}
        variants["graph_vmap"] = lambda: traced(params, x, y)
        checks["graph_vmap"] = {"rel_err_vs_loop": err(traced(params, x, y))}
        variants["numpy"] = lambda: numpy_per_example(params_np, x_np, y_np)
        checks["numpy"] = {"rel_err_vs_loop": err(numpy_per_example(params_np, x_np, y_np))}
        outer = _outer_floor(x_np, np.asarray(traced(params, x, y)[1]))
        variants["numpy_outer_floor"] = outer
        checks["numpy_outer_floor"] = {"rel_err_vs_loop": _rel_err(outer(), want[0])}
        variants["numpy_write_floor"] = _write_floor(want[0].shape)
    if "torch" in modes:
        made = _torch_per_example(params_np, x_np, y_np)
        if isinstance(made, str):
            skipped["torch_vmap"] = made
        else:
            variants["torch_vmap"] = made
            checks["torch_vmap"] = {"rel_err_vs_loop": err([t.numpy() for t in made()])}
    if "jax" in modes:
        made = _jax_per_example(params_np, x_np, y_np)
        if isinstance(made, str):
            skipped["jax_vmap"] = made
        else:
            variants["jax_vmap"] = made
            checks["jax_vmap"] = {"rel_err_vs_loop": err([np.asarray(t) for t in made()])}
    return variants, checks, skipped


def numpy_per_example(params, x, y):
    """The per-example gradients of ``mlp_example_loss`` by hand in numpy, batched over the
    rows of ``x``: ``(dW1, db1, dW2, db2)`` with a leading batch axis. The weight
    gradients are outer products, one per example (``dW1`` alone is batch x 784 x 100)."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0                    # d loss / d logits, per example
    dh = (p @ w2.T) * (1.0 - h * h)
    return (x[:, :, None] * dh[:, None, :], dh, h[:, :, None] * p[:, None, :], p)


def _outer_floor(x, dh):
    """The first layer's per-example weight gradients alone: ``x[b] (outer) dh[b]`` for every
    example, written into one preallocated (batch, 784, 100) array (no fresh pages)."""
    out = np.empty((x.shape[0], x.shape[1], dh.shape[1]), np.float32)

    def run():
        return np.multiply(x[:, :, None], dh[:, None, :], out=out)
    return run


def _write_floor(shape):
    """Writing an array of the first layer's gradients' size and nothing else (``fill``,
    which numpy runs as ``memset``): the memory bandwidth floor of any mode's output."""
    out = np.empty(shape, np.float32)

    def run():
        out.fill(0.0)
        return out
    return run


def _torch_per_example(params_np, x_np, y_np):
    from bench.common import skip_reason, torch_or_none

    torch = torch_or_none()
    if torch is None:
        return skip_reason("torch")
    params = tuple(torch.from_numpy(a) for a in params_np)
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        logits = torch.tanh(x @ w1 + b1) @ w2 + b2
        return torch.nn.functional.cross_entropy(logits[None], y[None])
    per_example = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: per_example(params, x, y)


def _jax_per_example(params_np, x_np, y_np):
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    jnp = jax.numpy

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        logits = jnp.tanh(x @ w1 + b1) @ w2 + b2
        return -jax.nn.log_softmax(logits)[y]
    per_example = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    params = tuple(jnp.asarray(a) for a in params_np)
    x, y = jnp.asarray(x_np), jnp.asarray(y_np)
    return lambda: jax.block_until_ready(per_example(params, x, y))


# ---- the Hessian-vector product case ------------------------------------------------------------
def _hvp_variants(config, modes):
    import engine as en

    p, (w, b1, b2, x), (tw, tb1, tb2) = _autoencoder(config["batch"])
    grad = en.grad(engine_loss, argnums=(0, 1, 2))

    def hvp(w, b1, b2, x, tw, tb1, tb2):
        return en.jvp(lambda w, b1, b2: grad(w, b1, b2, x), (w, b1, b2), (tw, tb1, tb2))[1]

    w2 = en.tensor(np.asarray(w) + np.float32(1e-3))

    def two_grads(w, w2, b1, b2, x):
        return grad(w, b1, b2, x), grad(w2, b1, b2, x)
    args = (w, b1, b2, x, tw, tb1, tb2)
    # The reference: central differences of the float64 gradient along the tangent.
    p64 = p.arrays(np.float64)
    t64 = [np.asarray(t, dtype=np.float64) for t in (tw, tb1, tb2)]
    eps = 1e-4
    gp = grad(*[en.tensor(a + eps * t) for a, t in zip(p64, t64)], en.tensor(p64[3]))
    gm = grad(*[en.tensor(a - eps * t) for a, t in zip(p64, t64)], en.tensor(p64[3]))
    fd = [(np.asarray(a) - np.asarray(b)) / (2 * eps) for a, b in zip(gp, gm)]

    def err(got):
        return max(_rel_err(g, f) for g, f in zip(got, fd))
    variants, checks = {}, {}
    if "eager" in modes:
        variants["hvp"] = lambda: hvp(*args)
        variants["two_grads"] = lambda: two_grads(w, w2, b1, b2, x)
        checks["hvp"] = {"rel_err_vs_fd": err(hvp(*args))}
    if "graph" in modes:
        g_hvp, g_two = en.function(hvp), en.function(two_grads)
        variants["graph_hvp"] = lambda: g_hvp(*args)
        variants["graph_two_grads"] = lambda: g_two(w, w2, b1, b2, x)
        checks["graph_hvp"] = {"rel_err_vs_fd": err(g_hvp(*args))}
    skipped = {}
    if "jax" in modes:
        made = _jax_hvp(p.arrays(), [np.asarray(t) for t in (tw, tb1, tb2)])
        if isinstance(made, str):
            skipped["jax_hvp"] = skipped["jax_two_grads"] = made
        else:
            variants["jax_hvp"], variants["jax_two_grads"] = made
            checks["jax_hvp"] = {"rel_err_vs_fd": err(made[0]())}
    return variants, checks, skipped


def _jax_hvp(arrays, tangents):
    """JAX's jitted forward-over-reverse HVP and two gradients of the autoencoder loss (the
    ratio the issue's HVP target is stated against), or a skip reason."""
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    jnp = jax.numpy
    w, b1, b2, x = (jnp.asarray(a) for a in arrays)
    tw, tb1, tb2 = (jnp.asarray(t) for t in tangents)
    w2 = w + np.float32(1e-3)

    def loss(w, b1, b2):
        h = jax.nn.sigmoid(x @ w + b1)
        y = jax.nn.sigmoid(h @ w.T + b2)
        return jnp.mean((y - x) ** 2.0)
    grad = jax.grad(loss, argnums=(0, 1, 2))
    hvp = jax.jit(lambda w, b1, b2: jax.jvp(grad, (w, b1, b2), (tw, tb1, tb2))[1])
    two = jax.jit(lambda w, w2, b1, b2: (grad(w, b1, b2), grad(w2, b1, b2)))
    return (lambda: [np.asarray(g) for g in jax.block_until_ready(hvp(w, b1, b2))],
            lambda: jax.block_until_ready(two(w, w2, b1, b2)))


_VARIANTS = {"jvp": _jvp_variants, "per_example": _per_example_variants, "hvp": _hvp_variants,
             "jvp_scan": jvp_scan_variants, "hvp_scan": hvp_scan_variants,
             "per_example_scan": per_example_scan_variants,
             "vmap_scan_compile": vmap_scan_compile_variants}


# ---- reporting -------------------------------------------------------------------------------------
def _medians(results, key="median_ms"):
    """``{(case, batch): {mode: figure}}`` of this workload's timed records."""
    out = {}
    for r in results:
        if r["workload"] == NAME and r.get(key) is not None:
            out.setdefault((r["config"]["case"], r["config"]["batch"]), {})[r["mode"]] = r[key]
    return out


def check_targets(results):
    """``[(text, ok, detail)]``: each case's ratio against its target, per batch."""
    out = []
    for (case, batch), med in _medians(results).items():
        a, b, need, how = TARGETS[case]
        if a not in med or b not in med:
            continue
        ratio = med[a] / med[b]
        ok = ratio <= need if how == "at most" else ratio >= need
        out.append((f"{case}: {a} / {b} {how} {need:g}", ok, f"{ratio:.2f} at batch {batch}"))
    return out


def summary(results, args=None):
    mine = [r for r in results if r["workload"] == NAME]
    if not mine:
        return ""
    lines = ["transforms: ratios of medians measured side by side in this process"]
    pairs = {"jvp": [("jvp", "forward"), ("graph_jvp", "graph_forward"),
                     ("graph_jvp", "numpy_jvp_floor"),
                     ("graph_jvp_fallback", "graph_forward"),
                     ("numpy_jvp_floor", "numpy_forward_floor"), ("torch_jvp", "torch_forward")],
             "per_example": [("loop", "vmap"), ("loop", "graph_vmap"),
                             ("loop_traced", "graph_vmap"), ("graph_vmap", "numpy"),
                             ("graph_vmap", "numpy_outer_floor"),
                             ("graph_vmap", "numpy_write_floor"), ("torch_vmap", "graph_vmap"),
                             ("jax_vmap", "graph_vmap")],
             "hvp": [("hvp", "two_grads"), ("graph_hvp", "graph_two_grads"),
                     ("jax_hvp", "jax_two_grads")],
             "jvp_scan": [("graph_jvp", "graph_forward"), ("jax_jvp", "jax_forward")],
             "hvp_scan": [("graph_hvp", "graph_two_grads"), ("jax_hvp", "jax_two_grads")],
             "per_example_scan": [("loop_traced", "graph_vmap"), ("graph_vmap", "jax_vmap")],
             "vmap_scan_compile": [("graph_vmap_scan", "graph_scan"),
                                   ("jax_vmap_scan", "jax_scan")]}
    low = _medians(mine, "min_ms")
    for (case, batch), med in _medians(mine).items():
        for a, b in pairs[case]:
            if a in med and b in med:
                lines.append(f"  {case} (batch {batch}): {a} / {b} = {med[a] / med[b]:.2f} "
                             f"(fastest runs: {low[(case, batch)][a] / low[(case, batch)][b]:.2f})")
    bad = [f"{r['config']['case']} {r['mode']}" for r in mine if r.get("agree") is False]
    if bad:
        lines.append(f"  agreement FAILED: {', '.join(bad)}")
    errs = [(r["config"]["case"], r["mode"], k, v) for r in mine for k, v in r.items()
            if k.startswith("rel_err")]
    if errs:
        worst = max(errs, key=lambda e: e[3])
        lines.append(f"  agreement: worst {worst[2]} {worst[3]:.1e} ({worst[0]} {worst[1]})")
    for text, ok, detail in check_targets(mine):
        lines.append(f"transforms target {'met' if ok else 'MISSED'}: {text} ({detail})")
    return "\n".join(lines)


def main(argv=None):
    import argparse

    from bench.common import format_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    out = []
    for cfg in configs(args):
        out += run(cfg, MODES, args, None)
    print(format_table(out))
    print(summary(out))


if __name__ == "__main__":
    sys.exit(main())
