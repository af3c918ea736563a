"""The vmap-of-loop cases of the ``transforms`` workload.

``per_example_scan``  per-example gradients of a 50-step tanh RNN's loss (float32,
              hidden 64, inputs 16; one sequence per example, the batch of the
              config), with respect to the shared (W, U, b):
              ``loop_traced`` (a Python loop calling ``en.function(en.grad(...))``
              once per example), ``graph_vmap`` (``en.function(en.vmap(en.grad(...)))``:
              one forward scan and one backward scan, batched), beside
              ``jax_vmap`` (``jax.jit(jax.vmap(jax.grad(...)))`` over ``lax.scan``).
              Checked against an eager loop over the examples. The issue's goal:
              graph_vmap at least as fast as jax_vmap.
``vmap_scan_compile``  tracing and compiling a 1000-step scan (a tanh RNN cell,
              hidden 8, inputs 4, float32): each timed call makes a fresh
              ``en.function`` and calls it once (trace, optimize, lower, one run).
              ``graph_scan`` is the scan of one sequence, ``graph_vmap_scan`` its
              ``vmap`` over the config's batch of sequences; ``jax_scan`` and
              ``jax_vmap_scan`` jit, lower, compile and run a fresh function. Each
              vmap record holds ``nodes_vs_scan``: its graph's nodes over the scan
              alone's (the goal: within 2x, in time too).
"""
import numpy as np

STEPS, HIDDEN, INPUTS = 50, 64, 16
LONG_STEPS, LONG_HIDDEN, LONG_INPUTS = 1000, 8, 4


def _rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def _rnn_arrays(batch, steps, hidden, inputs, seed=0):
    """``(W, U, b, X)`` float32, ``X`` of shape (batch, steps, inputs)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((hidden, hidden)) * (0.9 / np.sqrt(hidden))
    u = rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)
    b = rng.standard_normal(hidden) * 0.1
    x = rng.standard_normal((batch, steps, inputs))
    return [a.astype(np.float32) for a in (w, u, b, x)]


def example_loss(w, u, b, xs):
    """One sequence's loss: the mean over steps of ``sum(h * h)``,
    ``h <- tanh(h @ W + x @ U + b)``."""
    import engine as en

    def step(h, x):
        h = en.tanh(h @ w + x @ u + b)
        return h, en.sum(h * h)
    _, ys = en.scan(step, en.zeros(w.shape[0], dtype=xs.dtype), xs)
    return en.sum(ys) / xs.shape[0]


def per_example_scan_variants(config, modes):
    import engine as en

    arrays = _rnn_arrays(config["batch"], STEPS, HIDDEN, INPUTS)
    w, u, b, x = (en.tensor(a) for a in arrays)
    grad = en.grad(example_loss, argnums=(0, 1, 2))
    traced_grad = en.function(grad)
    graph_vmap = en.function(en.vmap(grad, in_axes=(None, None, None, 0)))
    rows = [grad(w, u, b, x[i]) for i in range(x.shape[0])]    # the reference: eager, a loop
    want = [np.stack([np.asarray(r[k]) for r in rows]) for k in range(3)]

    def err(got):
        return max(_rel_err(g, v) for g, v in zip(got, want))

    def loop_traced():
        return [traced_grad(w, u, b, x[i]) for i in range(x.shape[0])]
    variants, checks, skipped = {}, {}, {}
    if "graph" in modes:
        variants["loop_traced"] = loop_traced
        got = loop_traced()
        checks["loop_traced"] = {"rel_err_vs_loop": err(
            [np.stack([np.asarray(r[k]) for r in got]) for k in range(3)])}
        variants["graph_vmap"] = lambda: graph_vmap(w, u, b, x)
        checks["graph_vmap"] = {"rel_err_vs_loop": err(graph_vmap(w, u, b, x))}
    if "jax" in modes:
        made = _jax_per_example(arrays)
        if isinstance(made, str):
            skipped["jax_vmap"] = made
        else:
            variants["jax_vmap"] = made
            checks["jax_vmap"] = {"rel_err_vs_loop": err(made())}
    return variants, checks, skipped


def _jax_per_example(arrays):
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    jnp = jax.numpy
    w, u, b, x = (jnp.asarray(a) for a in arrays)

    def loss(w, u, b, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u + b)
            return h, jnp.sum(h * h)
        _, ys = jax.lax.scan(step, jnp.zeros(w.shape[0], xs.dtype), xs)
        return jnp.sum(ys) / xs.shape[0]
    per_example = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2)), in_axes=(None, None, None, 0)))
    return lambda: [np.asarray(g) for g in jax.block_until_ready(per_example(w, u, b, x))]


def long_scan(w, u, xs):
    """The final state and every step's ``sum(h)`` of a tanh RNN over ``xs`` (steps, inputs)."""
    import engine as en

    return en.scan(lambda h, x: (en.tanh(h @ w + x @ u), en.sum(h)),
                   en.zeros(w.shape[0], dtype=xs.dtype), xs)


def vmap_scan_compile_variants(config, modes):
    import engine as en

    w_np, u_np, _, x_np = _rnn_arrays(config["batch"], LONG_STEPS, LONG_HIDDEN, LONG_INPUTS)
    w, u, x = en.tensor(w_np), en.tensor(u_np), en.tensor(x_np)
    batched = en.vmap(long_scan, in_axes=(None, None, 0))

    def fresh(fn, *args):
        return lambda: en.function(fn)(*args)

    def nodes(fn, *args):
        return len(en.function(fn).get_concrete_function(*args).graph.nodes)
    variants, checks, skipped = {}, {}, {}
    if "graph" in modes:
        variants["graph_scan"] = fresh(long_scan, w, u, x[0])
        variants["graph_vmap_scan"] = fresh(batched, w, u, x)
        want = [np.stack([np.asarray(long_scan(w, u, x[i])[k]) for i in range(x.shape[0])])
                for k in range(2)]
        got = variants["graph_vmap_scan"]()
        checks["graph_vmap_scan"] = {
            "rel_err_vs_loop": max(_rel_err(g, v) for g, v in zip(got, want)),
            "nodes_vs_scan": nodes(batched, w, u, x) / nodes(long_scan, w, u, x[0])}
    if "jax" in modes:
        made = _jax_compile(w_np, u_np, x_np)
        if isinstance(made, str):
            skipped["jax_scan"] = skipped["jax_vmap_scan"] = made
        else:
            variants["jax_scan"], variants["jax_vmap_scan"] = made
    return variants, checks, skipped


def _jax_compile(w_np, u_np, x_np):
    """Fresh jit, lower, compile and one run of the scan alone and of its vmap."""
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    jnp = jax.numpy
    w, u, x = jnp.asarray(w_np), jnp.asarray(u_np), jnp.asarray(x_np)

    def make():   # a new function each time, so nothing compiled before is reused
        def one(w, u, xs):
            return jax.lax.scan(lambda h, v: (jnp.tanh(h @ w + v @ u), jnp.sum(h)),
                                jnp.zeros(w.shape[0], xs.dtype), xs)
        return one

    def scan_alone():
        f = jax.jit(make())
        return jax.block_until_ready(f.lower(w, u, x[0]).compile()(w, u, x[0]))

    def vmapped():
        f = jax.jit(jax.vmap(make(), in_axes=(None, None, 0)))
        return jax.block_until_ready(f.lower(w, u, x).compile()(w, u, x))
    return scan_alone, vmapped
