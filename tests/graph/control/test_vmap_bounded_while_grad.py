"""Gradients of ``vmap`` of a bounded ``while_loop`` (``max_steps=``) on a batched
condition: each example stops at its own trip count, and its gradient is that of its
own loop (graph/control/bounded_loops.py, engine/transforms/batching_loops.py).

References: a Python loop over the examples of eager per-example gradients, and
central differences of the same loop in numpy; float32 and float64; eagerly and
inside en.function; ``grad(vmap)``, ``vmap(grad)`` and forward over reverse. JAX (a
fori_loop of conds, as JAX writes a differentiable bounded while) is an extra
comparison.
"""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.finite_diff import central_difference

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=3e-5, atol=3e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}
FD = {np.float32: dict(rtol=3e-4, atol=3e-5), np.float64: dict(rtol=1e-6, atol=1e-8)}
BOUND = 12
# Trip counts 4, 1, 0, 10 and the bound: every example stops at a step of its own.
SCALES = np.array([1.0, 3.0, 40.0, 0.3, 0.01])


def grow(x, a, max_steps=BOUND):
    """``v <- v * a + x * x`` while ``sum(v) < 10``, at most ``max_steps`` times."""
    return en.while_loop(lambda i, v: en.sum(v) < 10.0, lambda i, v: (i + 1, v * a + x * x),
                         (0, x), max_steps=max_steps)


def loss(x, a):
    i, v = grow(x, a)
    return en.sum(en.sin(v) * v)


def np_grow(x, a, max_steps=BOUND):
    i, v = 0, x
    while np.sum(v) < 10.0 and i < max_steps:
        i, v = i + 1, v * a + x * x
    return i, v


def np_loss(x, a):
    return np.sum(np.sin(np_grow(x, a)[1]) * np_grow(x, a)[1])


def _data(dtype):
    X = (np.array([0.6, 0.9, -0.2]) * SCALES[:, None]).astype(dtype)
    return X, np.asarray(1.3, dtype)


def _both(f):
    return [("eager", f), ("graph", en.function(f))]


def test_the_examples_stop_at_their_own_steps():
    X, a = _data(np.float64)
    counts = [np_grow(x, a)[0] for x in X]
    assert counts == [4, 1, 0, 10, BOUND], counts
    for _how, f in _both(en.vmap(lambda x: grow(x, en.tensor(a))[0])):
        assert f(en.tensor(X)).numpy().tolist() == counts


@pytest.mark.parametrize("dtype", DTYPES)
def test_grad_of_vmap_against_the_loop_and_finite_differences(dtype):
    X, a = _data(dtype)

    def total(X, a):
        return en.sum(en.vmap(loss, in_axes=(0, None))(X, a))
    per_example = [en.grad(loss, argnums=(0, 1))(en.tensor(x), en.tensor(a)) for x in X]
    X64, a64 = X.astype(np.float64), float(a)
    for _how, f in _both(en.grad(total, argnums=(0, 1))):
        g_x, g_a = f(en.tensor(X), en.tensor(a))
        assert g_x.dtype == dtype and g_a.dtype == dtype
        np.testing.assert_allclose(g_x.numpy(), np.stack([p[0].numpy() for p in per_example]),
                                   **TOL[dtype])
        np.testing.assert_allclose(g_a.numpy(), sum(p[1].numpy() for p in per_example),
                                   **TOL[dtype])
        fd_x = central_difference(lambda v: sum(np_loss(r, a64) for r in v), X64)
        fd_a = central_difference(lambda v: sum(np_loss(r, v) for r in X64), a64)
        np.testing.assert_allclose(g_x.numpy(), fd_x, **FD[dtype])
        np.testing.assert_allclose(g_a.numpy(), fd_a, **FD[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_of_grad_against_the_loop_and_finite_differences(dtype):
    X, a = _data(dtype)
    grads = en.grad(loss, argnums=(0, 1))
    for _how, f in _both(en.vmap(grads, in_axes=(0, None))):
        g_x, g_a = f(en.tensor(X), en.tensor(a))
        for b, x in enumerate(X):
            want = grads(en.tensor(x), en.tensor(a))
            np.testing.assert_allclose(g_x.numpy()[b], want[0].numpy(), **TOL[dtype])
            np.testing.assert_allclose(g_a.numpy()[b], want[1].numpy(), **TOL[dtype])
            x64 = x.astype(np.float64)
            fd = central_difference(lambda v, x64=x64: np_loss(x64, v), float(a))
            np.testing.assert_allclose(g_a.numpy()[b], fd, **FD[dtype])


def test_forward_over_reverse_against_finite_differences():
    X, a = _data(np.float64)
    T = np.random.default_rng(46).standard_normal(X.shape)

    def total(X):
        return en.sum(en.vmap(loss, in_axes=(0, None))(X, en.tensor(a)))
    hvp = en.function(lambda X, T: en.jvp(en.grad(total), (X,), (T,))[1])
    got = hvp(en.tensor(X), en.tensor(T)).numpy()
    eps = 1e-6
    grad = en.grad(total)
    want = (grad(en.tensor(X + eps * T)).numpy() - grad(en.tensor(X - eps * T)).numpy()) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nested_vmaps_against_the_loop_and_finite_differences(dtype):
    # vmap(vmap(...)): each element of both batches stops at its own step.
    X, a = _data(dtype)
    X2 = np.stack([X, X * 0.5])
    at = en.tensor(a)

    def one(x):
        return loss(x, at)

    def total(X2):
        return en.sum(en.vmap(en.vmap(one))(X2))
    want = np.stack([[en.grad(one)(en.tensor(x)).numpy() for x in row] for row in X2])
    fd = central_difference(lambda v: sum(np_loss(x, float(a)) for x in v.reshape(-1, 3)),
                            X2.astype(np.float64))
    np.testing.assert_allclose(want, fd, **FD[dtype])
    for _how, f in _both(en.grad(total)) + _both(en.vmap(en.vmap(en.grad(one)))):
        np.testing.assert_allclose(f(en.tensor(X2)).numpy(), want, **TOL[dtype])


# ---- a body with no finite value past an example's end ------------------------------------------
def root_loss(x):
    """``v <- 1.5 sqrt(v - 1)`` while ``v > 1``: past its end an example's body would
    take the root of a negative number (a NaN, and an infinite derivative)."""
    i, v = en.while_loop(lambda i, v: v > 1.0, lambda i, v: (i + 1, en.sqrt(v - 1.0) * 1.5),
                         (0, x), max_steps=20)
    return v * v


def np_root_loss(x):
    v, i = x, 0
    while v > 1.0 and i < 20:
        v, i = np.sqrt(v - 1.0) * 1.5, i + 1
    return v * v


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_example_past_its_end_gets_its_own_loops_gradient(dtype):
    # Trip counts 2, 3 and 1: the first and last examples idle while the second runs on.
    X = np.array([5.0, 30.0, 1.5], dtype)
    want = [float(en.grad(root_loss)(en.tensor(x))) for x in X]
    fd = [central_difference(np_root_loss, np.float64(x)) for x in X]
    np.testing.assert_allclose(want, fd, **FD[dtype])

    def total(X):
        return en.sum(en.vmap(root_loss)(X))
    for _how, f in _both(en.grad(total)) + _both(en.vmap(en.grad(root_loss))):
        got = f(en.tensor(X)).numpy()
        np.testing.assert_allclose(got, want, **TOL[dtype])


def rnn_of_roots(xs, w):
    """A scan whose step runs the bounded root loop on its state: each example and step
    stops at a trip count of its own, inside a loop that is differentiated later."""
    def step(h, x):
        _, v = en.while_loop(lambda i, v: en.min(v) > 1.0,
                             lambda i, v: (i + 1, en.sqrt(v - 1.0) * 1.5),
                             (0, h * h + x * x + 1.2), max_steps=6)
        h = en.tanh(v * w + h)
        return h, h
    return en.sum(en.scan(step, en.zeros(2, dtype=xs.dtype), xs)[0] ** 2)


def np_rnn_of_roots(xs, w):
    h = np.zeros(2)
    for x in xs:
        i, v = 0, h * h + x * x + 1.2
        while np.min(v) > 1.0 and i < 6:
            i, v = i + 1, np.sqrt(v - 1.0) * 1.5
        h = np.tanh(v * w + h)
    return np.sum(h ** 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_bounded_loop_inside_a_scan_body_under_vmap(dtype):
    X = (np.random.default_rng(46).standard_normal((3, 4, 2)) * 3).astype(dtype)
    w = np.array([0.3, -0.2], dtype)
    grads = en.grad(rnn_of_roots, argnums=(0, 1))
    want = [grads(en.tensor(x), en.tensor(w)) for x in X]
    for b, x in enumerate(X):
        fd = central_difference(lambda v, x=x: np_rnn_of_roots(x.astype(np.float64), v),
                                w.astype(np.float64))
        np.testing.assert_allclose(want[b][1].numpy(), fd, **FD[dtype])

    def total(X, w):
        return en.sum(en.vmap(rnn_of_roots, in_axes=(0, None))(X, w))
    for _how, f in _both(en.vmap(grads, in_axes=(0, None))) + _both(
            en.grad(total, argnums=(0, 1))):
        g_x, g_w = f(en.tensor(X), en.tensor(w))
        np.testing.assert_allclose(g_x.numpy(), np.stack([g[0].numpy() for g in want]),
                                   **TOL[dtype])
        w_rows = np.stack([g[1].numpy() for g in want])
        np.testing.assert_allclose(g_w.numpy(), w_rows if g_w.ndim == 2 else w_rows.sum(0),
                                   **TOL[dtype])


# ---- one scan each way, whatever the bound ---------------------------------------------------------
def test_node_counts_do_not_grow_with_the_bound():
    X, a = _data(np.float64)
    counts = {}
    for bound in (10, 100):
        def total(X, bound=bound):
            return en.sum(en.vmap(lambda x: en.sum(grow(x, en.tensor(a), bound)[1] ** 2))(X))
        for name, fn in (("grad(vmap)", en.grad(total)),
                         ("vmap(grad)", en.vmap(en.grad(
                             lambda x, bound=bound: en.sum(grow(x, en.tensor(a), bound)[1]))))):
            graph = en.function(fn).get_concrete_function(en.tensor(X)).unoptimized_graph
            assert sum(n.op.name == "scan" for n in graph.nodes) == 2, name
            counts[bound, name] = len(graph.nodes)
    assert counts[10, "grad(vmap)"] == counts[100, "grad(vmap)"], counts
    assert counts[10, "vmap(grad)"] == counts[100, "vmap(grad)"], counts


# ---- without a bound: the refusals say what to do ---------------------------------------------------
def test_without_a_bound_the_gradient_is_refused_with_what_to_do():
    X = en.tensor(_data(np.float64)[0])

    def halve(x):
        return en.while_loop(lambda v: en.sum(v) > 1.0, lambda v: (v * 0.5,), (x,))[0]

    def total(X):
        return en.sum(en.vmap(halve)(X))
    for fn in (en.grad(total), en.vmap(en.grad(lambda x: en.sum(halve(x))))):
        with pytest.raises(en.NotDifferentiableError, match="max_steps=N.*fori_loop"):
            en.function(fn)(X)


# ---- JAX, an extra comparison -----------------------------------------------------------------------
def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    X, a = _data(np.float64)

    def jax_loss(x, a):
        def step(_, c):   # the bounded while as JAX writes a differentiable one
            active, v = c
            active = jnp.logical_and(active, jnp.sum(v) < 10.0)
            return active, jax.lax.cond(active, lambda v: v * a + x * x, lambda v: v, v)
        v = jax.lax.fori_loop(0, BOUND, step, (True, x))[1]
        return jnp.sum(jnp.sin(v) * v)
    want = jax.jit(jax.vmap(jax.grad(jax_loss, argnums=(0, 1)), in_axes=(0, None)))(X, a)
    got = en.function(en.vmap(en.grad(loss, argnums=(0, 1)), in_axes=(0, None)))(
        en.tensor(X), en.tensor(a))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-12, atol=1e-12)


# ---- the compiled lowerings -------------------------------------------------------------------------
@pytest.mark.parametrize("lowering", ["numba", "c"])
def test_compiled_lowerings_keep_each_examples_gradient(monkeypatch, lowering):
    if lowering == "numba":
        import_numba()
    X = np.array([5.0, 30.0, 1.5])
    want = [float(en.grad(root_loss)(en.tensor(x))) for x in X]

    def total(X):
        return en.sum(en.vmap(root_loss)(X))
    monkeypatch.setattr(en.config, "lowering", lowering)
    for fn in (en.grad(total), en.vmap(en.grad(root_loss))):
        np.testing.assert_allclose(en.function(fn)(en.tensor(X)).numpy(), want,
                                   **TOL[np.float64])
