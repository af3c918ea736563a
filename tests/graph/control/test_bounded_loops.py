"""Loops that reverse mode differentiates in a graph: ``while_loop(..., max_steps=)`` and
``fori_loop`` (graph/control/bounded_loops.py).

References: the same loop in numpy (values), central differences of it (gradients,
Hessian-vector products), the eager transformations (Python loops). JAX is an
extra comparison.
"""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.finite_diff import central_difference

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _close(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, np.asarray(want, np.float64), **TOL[dtype])


# ---- while_loop with max_steps --------------------------------------------------------------------
def grow(x, a, max_steps=40):
    """``v <- v * a + x * x`` while ``sum(v) < 10``, at most ``max_steps`` times; counts steps."""
    i, v = en.while_loop(lambda i, v: en.sum(v) < 10.0, lambda i, v: (i + 1, v * a + x * x),
                         (0, x), max_steps=max_steps)
    return i, v


def np_grow(x, a, max_steps=40):
    i, v = 0, x
    while np.sum(v) < 10.0 and i < max_steps:
        i, v = i + 1, v * a + x * x
    return i, v


def _args(dtype, scale=1.0):
    return [np.array([0.3, 0.5, -0.2], dtype) * scale, np.asarray(1.4, dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("max_steps", [40, 3, 0])
def test_bounded_while_loop_equals_the_python_loop(dtype, max_steps):
    x, a = _args(dtype)
    want_i, want_v = np_grow(x.astype(np.float64), float(a), max_steps)
    for run in (lambda *p: grow(*p, max_steps=max_steps),
                en.function(lambda *p: grow(*p, max_steps=max_steps))):
        i, v = run(en.tensor(x), en.tensor(a))
        assert int(i) == want_i
        _close(v.numpy(), want_v, dtype)


@pytest.mark.parametrize("max_steps", [40, 3])
def test_vmap_of_a_bounded_while_loop_stops_each_example_at_its_condition_or_the_bound(max_steps):
    # A batched condition, eagerly and in a graph: per-example trip counts, capped.
    scales = np.array([0.5, 1.0, 3.0, 40.0])
    x, a = _args(np.float64)
    want = [np_grow(x * s, float(a), max_steps) for s in scales]
    for run in (en.vmap(lambda x: grow(x, en.tensor(a), max_steps)),
                en.function(en.vmap(lambda x: grow(x, en.tensor(a), max_steps)))):
        i, v = run(en.tensor(x[None, :] * scales[:, None]))
        assert i.numpy().tolist() == [w[0] for w in want]
        _close(v.numpy(), np.stack([w[1] for w in want]), np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_of_bounded_while_loop_in_a_graph(dtype):
    def loss(x, a):
        return en.sum(grow(x, a)[1] ** 2)

    def np_loss(x, a):
        return np.sum(np_grow(x, a)[1] ** 2)
    x, a = _args(dtype)
    got = en.function(en.grad(loss, argnums=(0, 1)))(en.tensor(x), en.tensor(a))
    eager = en.grad(loss, argnums=(0, 1))(en.tensor(x), en.tensor(a))
    x64, a64 = x.astype(np.float64), np.float64(a)
    want = [central_difference(lambda v: np_loss(v, a64), x64),
            central_difference(lambda v: np_loss(x64, v), a64)]
    for g, e, w in zip(got, eager, want):
        _close(g.numpy(), e.numpy(), dtype)
        np.testing.assert_allclose(np.asarray(g, np.float64), w,
                                   rtol=1e-6 if dtype == np.float64 else 1e-3)


def test_second_order_through_bounded_while_loop():
    def loss(x, a):
        return en.sum(grow(x, a)[1] ** 2)
    x, a = _args(np.float64)
    t = np.array([0.4, -1.0, 0.2])
    hvp = en.function(lambda x, a: en.jvp(en.grad(loss), (x, a), (en.tensor(t),
                                                                 en.zeros_like(a)))[1])
    grad_of_jvp = en.function(en.grad(
        lambda x, a: en.jvp(lambda x: loss(x, a), (x,), (en.tensor(t),))[1]))
    w = np.array([1.0, 0.5, -2.0])
    g = en.grad(loss)
    fd = central_difference(lambda s: np.sum(g(en.tensor(x + s * t), en.tensor(a)).numpy() * w),
                            np.float64(0.0), eps=1e-5)
    for f in (hvp, grad_of_jvp):
        got = f(en.tensor(x), en.tensor(a)).numpy()
        np.testing.assert_allclose(np.sum(got * w), float(fd), rtol=1e-6)


def test_a_bounded_while_loop_under_jvp_in_a_graph_is_one_scan():
    f = en.function(lambda x, a, t: en.jvp(lambda x: grow(x, a)[1], (x,), (t,)))
    x, a = _args(np.float64)
    t = np.array([1.0, 0.0, 2.0])
    v, dv = f(en.tensor(x), en.tensor(a), en.tensor(t))
    fd = [central_difference(lambda s, k=k: np_grow(x + s * t, float(a))[1][k], np.float64(0.0))
          for k in range(3)]
    np.testing.assert_allclose(dv.numpy(), np.array(fd, np.float64), rtol=1e-6)
    graph = f.get_concrete_function(en.tensor(x), en.tensor(a), en.tensor(t)).unoptimized_graph
    assert [n.op.name for n in graph.nodes].count("scan") == 1


def test_max_steps_is_checked():
    x = en.tensor(1.0)
    with pytest.raises(en.ArgumentTypeError, match="while_loop: max_steps must be a Python int"):
        en.while_loop(lambda v: v < 3.0, lambda v: (v * 2.0,), (x,), max_steps=2.5)
    with pytest.raises(en.ArgumentTypeError, match="while_loop: max_steps"):
        en.while_loop(lambda v: v < 3.0, lambda v: (v * 2.0,), (x,), max_steps=en.tensor(3))
    with pytest.raises(en.InvalidArgumentError, match="max_steps must be >= 0, got -1"):
        en.while_loop(lambda v: v < 3.0, lambda v: (v * 2.0,), (x,), max_steps=-1)
    with pytest.raises(en.ShapeError, match="while_loop: the body must return loop variables"):
        en.function(lambda x: en.while_loop(lambda v: en.sum(v) < 3.0,
                                            lambda v: (en.concatenate([v, v]),), (x,),
                                            max_steps=4))(en.tensor([1.0]))


def test_without_a_bound_the_refusal_says_what_to_do():
    def loss(x):
        return en.while_loop(lambda v: v < 3.0, lambda v: (v * 2.0,), (x,))[0]
    with pytest.raises(en.NotDifferentiableError) as err:
        en.function(en.grad(loss))(en.tensor(1.0))
    for hint in ("max_steps=", "en.fori_loop", "en.scan"):
        assert hint in str(err.value)
    # With the bound the same loop differentiates: 1 -> 2 -> 4, d/dx (4x) = 4.
    bounded = en.function(en.grad(lambda x: en.while_loop(
        lambda v: v < 3.0, lambda v: (v * 2.0,), (x,), max_steps=10)[0]))
    assert float(bounded(en.tensor(1.0))) == 4.0


# ---- fori_loop ------------------------------------------------------------------------------------
def spin(x, w, lower=1, upper=6):
    return en.fori_loop(lower, upper,
                        lambda i, v: en.sin(v * w) + en.cast(i, v.dtype) * 0.1, x)


def np_spin(x, w, lower=1, upper=6):
    v = x
    for i in range(lower, upper):
        v = np.sin(v * w) + i * 0.1
    return v


@pytest.mark.parametrize("dtype", DTYPES)
def test_fori_loop_with_static_bounds_equals_the_python_loop_and_differentiates(dtype):
    x, w = np.array([0.3, -1.2], dtype), np.asarray(0.9, dtype)
    want = np_spin(x.astype(np.float64), float(w))
    _close(spin(en.tensor(x), en.tensor(w)).numpy(), want, dtype)
    _close(en.function(spin)(en.tensor(x), en.tensor(w)).numpy(), want, dtype)

    def loss(x, w):
        return en.sum(spin(x, w) ** 2)
    got = en.function(en.grad(loss, argnums=(0, 1)))(en.tensor(x), en.tensor(w))
    x64, w64 = x.astype(np.float64), np.float64(w)
    fds = [central_difference(lambda v: np.sum(np_spin(v, w64) ** 2), x64),
           central_difference(lambda v: np.sum(np_spin(x64, v) ** 2), w64)]
    for g, fd in zip(got, fds):
        assert g.dtype == dtype
        np.testing.assert_allclose(np.asarray(g, np.float64), fd,
                                   rtol=1e-6 if dtype == np.float64 else 1e-3)


def test_fori_loop_index_and_empty_range():
    seen = en.fori_loop(2, 5, lambda i, acc: acc + i, en.tensor(0))
    assert int(seen) == 2 + 3 + 4 and seen.dtype == np.int64
    traced = en.function(lambda a: en.fori_loop(2, 5, lambda i, acc: acc + i, a))(en.tensor(0))
    assert int(traced) == 9
    x = en.tensor([1.0, 2.0])
    assert en.function(lambda x: en.fori_loop(3, 3, lambda i, v: v * 2.0, x))(x).tolist() == \
        [1.0, 2.0]
    assert en.fori_loop(4, 1, lambda i, v: v * 2.0, x).tolist() == [1.0, 2.0]


def test_fori_loop_with_traced_bounds_is_a_while_loop():
    f = en.function(lambda x, n: en.fori_loop(0, n, lambda i, v: v * 1.5, x))
    for n in (0, 1, 4):
        assert float(f(en.tensor(2.0), en.tensor(n))) == 2.0 * 1.5 ** n
    assert f.trace_count == 1
    graph = f.get_concrete_function(en.tensor(2.0), en.tensor(3)).unoptimized_graph
    assert any(n.op.name == "while_loop" for n in graph.nodes)
    assert float(en.fori_loop(0, en.tensor(3), lambda i, v: v * 1.5, en.tensor(2.0))) == 6.75
    with pytest.raises(en.NotDifferentiableError, match="max_steps="):
        en.function(en.grad(lambda x, n: en.fori_loop(0, n, lambda i, v: v * 1.5, x)))(
            en.tensor(2.0), en.tensor(3))


def test_fori_loop_checks_its_arguments():
    with pytest.raises(en.ArgumentTypeError, match="fori_loop: upper must be a Python int"):
        en.fori_loop(0, 2.5, lambda i, v: v, en.tensor(1.0))
    with pytest.raises(en.ArgumentTypeError, match="fori_loop: lower must be a Python int"):
        en.fori_loop(en.tensor(0.0), 3, lambda i, v: v, en.tensor(1.0))
    with pytest.raises(en.ArgumentTypeError, match="fori_loop: body_fn must be a function"):
        en.fori_loop(0, 3, None, en.tensor(1.0))


def _nodes(fn, *args):
    graph = en.function(fn).get_concrete_function(*args).unoptimized_graph
    return graph.node_count(), sum(n.op.name == "scan" for n in graph.nodes)


def test_gradient_of_fori_loop_is_two_scans_whatever_the_number_of_steps():
    x, w = en.tensor([0.3, -1.2]), en.tensor(0.9)
    counts = {}
    for steps in (10, 100):
        def loss(x, w, steps=steps):
            return en.sum(spin(x, w, 0, steps))

        def by_scan(x, w, steps=steps):   # the same loop written as a scan
            def step(v, i):
                return en.sin(v * w) + en.cast(i, v.dtype) * 0.1, ()
            return en.sum(en.scan(step, x, en.arange(steps))[0])
        own = _nodes(en.grad(by_scan, argnums=(0, 1)), x, w)
        counts[steps] = _nodes(en.grad(loss, argnums=(0, 1)), x, w)
        assert counts[steps][1] == 2, counts
        assert counts[steps][0] <= 2 * own[0], (counts, own)
    assert counts[10] == counts[100]


def test_per_example_gradients_of_bounded_loops_under_vmap():
    # Each example stops at its own step (the cond's predicate is batched).
    X = np.array([[0.5, 0.2], [3.0, 4.0], [0.01, 0.02]])
    a = en.tensor(1.7)

    def loss(x):
        return en.sum(grow(x, a)[1] ** 2) + en.sum(spin(x, a))
    got = en.function(en.vmap(en.grad(loss)))(en.tensor(X))
    for row, x in zip(got.numpy(), X):
        _close(row, en.grad(loss)(en.tensor(x)).numpy(), np.float64)
        fd = central_difference(lambda v: np.sum(np_grow(v, 1.7)[1] ** 2)
                                + np.sum(np_spin(v, 1.7)), x)
        np.testing.assert_allclose(row, fd, rtol=1e-6)


# ---- checkpoint -----------------------------------------------------------------------------------
@pytest.mark.parametrize("loop", ["fori_loop", "while_loop"])
def test_checkpoint_of_a_bounded_loop(loop):
    x, w = np.array([0.3, 0.5, -0.2]), np.float64(0.9)
    if loop == "fori_loop":
        def f(x, w):
            return en.sum(spin(x, w) ** 2)
    else:
        def f(x, w):
            return en.sum(grow(x, w)[1] ** 2)
    want = en.grad(f, argnums=(0, 1))(en.tensor(x), en.tensor(w))
    for g in (en.grad(en.checkpoint(f), argnums=(0, 1)),
              en.function(en.grad(en.checkpoint(f), argnums=(0, 1)))):
        for got, w_ in zip(g(en.tensor(x), en.tensor(w)), want):
            _close(got.numpy(), w_.numpy(), np.float64)
    t = np.array([1.0, -1.0, 0.5])
    hvp = en.function(lambda x, w: en.jvp(en.grad(en.checkpoint(f)), (x, w),
                                          (en.tensor(t), en.zeros_like(w)))[1])
    eager = en.jvp(en.grad(f), (en.tensor(x), en.tensor(w)), (en.tensor(t), en.tensor(0.0)))[1]
    _close(hvp(en.tensor(x), en.tensor(w)).numpy(), eager.numpy(), np.float64)


# ---- compiled lowerings run the staged loops ----------------------------------------------------
@pytest.mark.parametrize("lowering", ["numba", "c"])
def test_compiled_lowerings_run_the_bounded_loops(monkeypatch, lowering):
    if lowering == "numba":
        import_numba()
    x, a = _args(np.float64)

    def loss(x, a):
        return en.sum(grow(x, a)[1] ** 2) + en.sum(spin(x, a))
    want = en.grad(loss, argnums=(0, 1))(en.tensor(x), en.tensor(a))
    monkeypatch.setattr(en.config, "lowering", lowering)
    got = en.function(en.grad(loss, argnums=(0, 1)))(en.tensor(x), en.tensor(a))
    for g, w in zip(got, want):
        _close(g.numpy(), w.numpy(), np.float64)


# ---- JAX, an extra comparison ----------------------------------------------------------------------
def test_fori_loop_and_bounded_while_against_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x, a = _args(np.float64)

    def jax_spin_loss(x, w):
        v = jax.lax.fori_loop(1, 6, lambda i, v: jnp.sin(v * w) + i * 0.1, x)
        return jnp.sum(v ** 2)

    def jax_grow_loss(x, a):
        # The bounded while as JAX writes a reverse-differentiable one: a fori_loop of conds.
        def step(i, c):
            active, v = c
            active = jnp.logical_and(active, jnp.sum(v) < 10.0)
            return active, jax.lax.cond(active, lambda v: v * a + x * x, lambda v: v, v)
        return jnp.sum(jax.lax.fori_loop(0, 40, step, (True, x))[1] ** 2)
    with jax.enable_x64(True):
        want_spin = jax.grad(jax_spin_loss, argnums=(0, 1))(x, a)
        want_grow = jax.grad(jax_grow_loss, argnums=(0, 1))(x, a)
    got_spin = en.function(en.grad(lambda x, w: en.sum(spin(x, w) ** 2), argnums=(0, 1)))(
        en.tensor(x), en.tensor(a))
    got_grow = en.function(en.grad(lambda x, a: en.sum(grow(x, a)[1] ** 2), argnums=(0, 1)))(
        en.tensor(x), en.tensor(a))
    for got, want in ((got_spin, want_spin), (got_grow, want_grow)):
        for g, j in zip(got, want):
            np.testing.assert_allclose(g.numpy(), np.asarray(j), rtol=1e-10, atol=1e-12)
