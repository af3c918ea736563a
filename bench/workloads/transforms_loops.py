"""The loop cases of the ``transforms`` workload: forward mode through ``en.scan``.

``jvp_scan``  a 50-step tanh RNN's loss (float32, hidden 64, inputs 16, the batch
              of the config) and its JVP along a random direction in (W, U, b):
              ``graph_forward`` and ``graph_jvp`` (``en.function`` of each; the JVP
              is one scan over primals and tangents), beside ``jax_forward`` and
              ``jax_jvp`` (``jax.jit`` over ``lax.scan``). Target: graph_jvp at
              most 2x graph_forward.
``hvp_scan``  the Hessian-vector product of that loss by forward over reverse,
              ``jvp(grad(loss))`` (one forward scan, one backward scan), against
              two gradient evaluations (``two_grads``), traced; JAX's
              ``jit(jvp(grad))`` and two ``jit(grad)`` calls beside. Target:
              graph_hvp at most 1x graph_two_grads.

Each variant is checked against central differences in float64 (of the loss for
the JVP, of the gradient for the HVP) before it is timed.
"""
import numpy as np

STEPS, HIDDEN, INPUTS = 50, 64, 16


def rnn_problem(batch, seed=0, dtype=np.float32):
    """``(W, U, b, xs)`` and a direction ``(tW, tU, tb)``, as numpy arrays."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((HIDDEN, HIDDEN)) * (0.9 / np.sqrt(HIDDEN))
    u = rng.standard_normal((INPUTS, HIDDEN)) / np.sqrt(INPUTS)
    b = rng.standard_normal(HIDDEN) * 0.1
    xs = rng.standard_normal((STEPS, batch, INPUTS))
    direction = [rng.standard_normal(a.shape) * 0.1 for a in (w, u, b)]
    return [a.astype(dtype) for a in (w, u, b, xs)], [a.astype(dtype) for a in direction]


def rnn_loss(w, u, b, xs):
    """The mean over steps and examples of ``sum(h * h)``, ``h <- tanh(h @ W + x @ U + b)``."""
    import engine as en

    def step(h, x):
        h = en.tanh(h @ w + x @ u + b)
        return h, en.sum(h * h)
    h0 = en.zeros((xs.shape[1], w.shape[0]), dtype=xs.dtype)
    _, ys = en.scan(step, h0, xs)
    return en.sum(ys) / (xs.shape[0] * xs.shape[1])


def _rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def _fd(fn, arrays, direction, eps=1e-4):
    """Central differences of ``fn`` (engine, float64) at ``arrays`` along ``direction``."""
    import engine as en

    a64 = [np.asarray(a, np.float64) for a in arrays]
    d64 = [np.asarray(d, np.float64) for d in direction] + [0.0] * (len(a64) - len(direction))
    plus = fn(*[en.tensor(a + eps * d) for a, d in zip(a64, d64)])
    minus = fn(*[en.tensor(a - eps * d) for a, d in zip(a64, d64)])
    if isinstance(plus, (tuple, list)):
        return [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus)]
    return (float(plus) - float(minus)) / (2 * eps)


def jvp_scan_variants(config, modes):
    import engine as en

    arrays, direction = rnn_problem(config["batch"])
    args = [en.tensor(a) for a in arrays + direction]

    def jvp(w, u, b, xs, tw, tu, tb):
        return en.jvp(lambda w, u, b: rnn_loss(w, u, b, xs), (w, u, b), (tw, tu, tb))
    want = _fd(rnn_loss, arrays, direction)
    variants, checks, skipped = {}, {}, {}
    if "graph" in modes:
        forward_fn, jvp_fn = en.function(rnn_loss), en.function(jvp)
        variants["graph_forward"] = lambda: forward_fn(*args[:4])
        variants["graph_jvp"] = lambda: jvp_fn(*args)
        checks["graph_jvp"] = {"rel_err_vs_fd": _rel_err(float(jvp_fn(*args)[1]), want)}
    if "jax" in modes:
        made = _jax_rnn(arrays, direction)
        if isinstance(made, str):
            skipped["jax_forward"] = skipped["jax_jvp"] = made
        else:
            variants["jax_forward"], variants["jax_jvp"] = made["forward"], made["jvp"]
            checks["jax_jvp"] = {"rel_err_vs_fd": _rel_err(float(made["jvp"]()[1]), want)}
    return variants, checks, skipped


def hvp_scan_variants(config, modes):
    import engine as en

    arrays, direction = rnn_problem(config["batch"])
    args = [en.tensor(a) for a in arrays + direction]
    grad = en.grad(rnn_loss, argnums=(0, 1, 2))

    def hvp(w, u, b, xs, tw, tu, tb):
        return en.jvp(lambda w, u, b: grad(w, u, b, xs), (w, u, b), (tw, tu, tb))[1]

    def two_grads(w, w2, u, b, xs):
        return grad(w, u, b, xs), grad(w2, u, b, xs)
    w2 = en.tensor(arrays[0] + np.float32(1e-3))
    want = _fd(grad, arrays, direction)

    def err(got):
        return max(_rel_err(g, f) for g, f in zip(got, want))
    variants, checks, skipped = {}, {}, {}
    if "graph" in modes:
        hvp_fn, two_fn = en.function(hvp), en.function(two_grads)
        variants["graph_hvp"] = lambda: hvp_fn(*args)
        variants["graph_two_grads"] = lambda: two_fn(args[0], w2, *args[1:4])
        checks["graph_hvp"] = {"rel_err_vs_fd": err(hvp_fn(*args))}
    if "jax" in modes:
        made = _jax_rnn(arrays, direction)
        if isinstance(made, str):
            skipped["jax_hvp"] = skipped["jax_two_grads"] = made
        else:
            variants["jax_hvp"], variants["jax_two_grads"] = made["hvp"], made["two_grads"]
            checks["jax_hvp"] = {"rel_err_vs_fd": err(made["hvp"]())}
    return variants, checks, skipped


def _jax_rnn(arrays, direction):
    """JAX's jitted forward, JVP, HVP and two gradients of the same loss, or a skip reason."""
    from bench.common import jax_or_none, skip_reason

    jax = jax_or_none()
    if jax is None:
        return skip_reason("jax")
    jnp = jax.numpy
    w, u, b, xs = (jnp.asarray(a) for a in arrays)
    tw, tu, tb = (jnp.asarray(t) for t in direction)
    w2 = w + np.float32(1e-3)

    def loss(w, u, b):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u + b)
            return h, jnp.sum(h * h)
        _, ys = jax.lax.scan(step, jnp.zeros((xs.shape[1], w.shape[0]), xs.dtype), xs)
        return jnp.sum(ys) / (xs.shape[0] * xs.shape[1])
    grad = jax.grad(loss, argnums=(0, 1, 2))
    forward = jax.jit(loss)
    jvp = jax.jit(lambda w, u, b: jax.jvp(loss, (w, u, b), (tw, tu, tb)))
    hvp = jax.jit(lambda w, u, b: jax.jvp(grad, (w, u, b), (tw, tu, tb))[1])
    grad_fn = jax.jit(grad)

    def ready(x):
        return jax.block_until_ready(x)
    return {"forward": lambda: ready(forward(w, u, b)),
            "jvp": lambda: ready(jvp(w, u, b)),
            "hvp": lambda: ready(hvp(w, u, b)),
            "two_grads": lambda: ready((grad_fn(w, u, b), grad_fn(w2, u, b)))}
