"""Control flow under forward mode inside a trace: ``jvp`` of ``scan`` is one scan,
``jvp`` of ``cond`` one cond, and reverse mode composes with both ways round.

References: the numpy loop (values), central differences of it or of the eager
gradient (tangents, Hessian-vector products), and the eager transformations,
which run the loops as Python loops of their ops. JAX is an extra comparison.
"""
import numpy as np
import pytest

import engine as en
from engine.pytree import flatten
from support.finite_diff import central_difference

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-9, atol=1e-12)}


def _rng():
    return np.random.default_rng(46)


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, want.astype(np.float64), **TOL[dtype])


# ---- the model: an elementwise recurrent cell, its parameters captured --------------------------
def cell_scan(c0, xs, a, b, reverse=False):
    """``c <- tanh(c * a + x * b)``, ``y = c * c``; a step counter rides along as an int."""
    def step(carry, x):
        i, c = carry
        c = en.tanh(c * a + x * b)
        return (i + 1, c), c * c
    (i, c), ys = en.scan(step, (en.tensor(0), c0), xs, reverse=reverse)
    return i, c, ys


def np_cell_scan(c0, xs, a, b, reverse=False):
    c, ys = c0, [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for t in order:
        c = np.tanh(c * a + xs[t] * b)
        ys[t] = c * c
    return len(xs), c, np.stack(ys)


def _inputs(dtype, steps=6, n=3):
    rng = _rng()
    return [rng.standard_normal(n).astype(dtype) * 0.5,
            rng.standard_normal((steps, n)).astype(dtype),
            rng.standard_normal(n).astype(dtype),
            np.asarray(0.7, dtype)]


def _directions(args):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(np.shape(a)).astype(a.dtype) for a in args]


def _tensors(arrays):
    return [en.tensor(a) for a in arrays]


def _jvp_all(c0, xs, a, b, tc, txs, ta, tb):
    return en.jvp(lambda *p: cell_scan(*p)[1:], (c0, xs, a, b), (tc, txs, ta, tb))


def _nodes(fn, *args):
    graph = en.function(fn).get_concrete_function(*args).unoptimized_graph
    return graph.node_count(), sum(n.op.name == "scan" for n in graph.nodes)


# ---- jvp of scan ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reverse", [False, True])
def test_jvp_of_scan_in_a_graph_matches_the_python_loop(dtype, reverse):
    args = _inputs(dtype)
    dirs = _directions(args)

    def f(c0, xs, a, b, tc, txs, ta, tb):
        return en.jvp(lambda *p: cell_scan(*p, reverse=reverse)[1:], (c0, xs, a, b),
                      (tc, txs, ta, tb))
    (c, ys), (dc, dys) = en.function(f)(*_tensors(args + dirs))
    # Values: the numpy loop.
    _, want_c, want_ys = np_cell_scan(*args, reverse=reverse)
    _close(c, want_c, dtype)
    _close(ys, want_ys, dtype)
    # Tangents: the eager jvp (a Python loop of forward-mode ops) ...
    (_, _), (ec, eys) = en.jvp(lambda *p: cell_scan(*p, reverse=reverse)[1:],
                               tuple(_tensors(args)), tuple(_tensors(dirs)))
    _close(dc, ec.numpy(), dtype)
    _close(dys, eys.numpy(), dtype)
    # ... and central differences of the numpy loop along the direction (float64).
    a64 = [np.asarray(x, np.float64) for x in args]
    d64 = [np.asarray(x, np.float64) for x in dirs]
    w = np.random.default_rng(3).standard_normal(want_ys.shape)

    def along(s):
        moved = [x + s * d for x, d in zip(a64, d64)]
        return np.sum(np_cell_scan(*moved, reverse=reverse)[2] * w)
    fd = float(central_difference(along, np.float64(0.0)))
    np.testing.assert_allclose(float(np.sum(np.asarray(dys, np.float64) * w)), fd,
                               rtol=1e-6 if dtype == np.float64 else 1e-3)


def test_jvp_of_scan_keeps_the_integer_carry_and_needs_no_tangent_for_xs():
    args = _inputs(np.float64)

    def f(c0, xs, a, b):   # only the parameter a carries a tangent
        return en.jvp(lambda a: cell_scan(c0, xs, a, b), (a,), (en.ones_like(a),))
    (i, c, ys), (di, dc, dys) = en.function(f)(*_tensors(args))
    assert int(i) == len(args[1]) and i.dtype == np.int64
    assert not np.any(np.asarray(di))
    (_, _, _), (_, ec, eys) = f(*_tensors(args))
    _close(dc, ec.numpy(), np.float64)
    _close(dys, eys.numpy(), np.float64)


def test_jvp_of_scan_takes_the_structures_and_dtypes_of_the_scan_in_a_trace():
    # A Python scalar carry is weakly typed (float32 beside float32 tensors), a dict carry
    # keeps its keys, an integer y gets no tangent: as en.scan in a trace without jvp.
    x = en.tensor(np.array([0.5, -1.0, 2.0], np.float32))
    xs = en.tensor(np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32))

    def f(x, xs):
        def step(c, r):
            a = en.sin(c["a"] * r) + x
            return {"a": a, "s": c["s"] + 1.0}, (en.sum(a), en.sum(en.cast(r > 0, "int64")))
        return en.scan(step, {"a": x, "s": 0.0}, xs)
    plain = en.function(f)(x, xs)
    primal, tangent = en.function(lambda x, xs: en.jvp(lambda x: f(x, xs), (x,),
                                                       (en.ones_like(x),)))(x, xs)
    for p, q in zip(flatten(primal)[0], flatten(plain)[0]):
        assert p.dtype == q.dtype
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert tangent[0]["s"].dtype == np.float32 and float(tangent[0]["s"]) == 0.0
    assert tangent[1][1].dtype == np.int64 and not np.any(tangent[1][1].numpy())
    eager = en.jvp(lambda x: f(x, xs), (x,), (en.ones_like(x),))[1]
    _close(tangent[0]["a"], eager[0]["a"].numpy(), np.float32)
    _close(tangent[1][0], eager[1][0].numpy(), np.float32)


def test_jvp_of_scan_is_one_scan_whatever_the_number_of_steps():
    counts = {}
    for steps in (10, 100):
        args = _tensors(_inputs(np.float64, steps))
        dirs = _tensors(_directions([a.numpy() for a in args]))
        own = _nodes(lambda c0, xs, a, b: cell_scan(c0, xs, a, b)[1:], *args)
        counts[steps] = _nodes(_jvp_all, *args, *dirs)
        assert counts[steps][1] == 1, counts
        assert counts[steps][0] <= 2 * own[0] + 4, (counts, own)
    assert counts[10] == counts[100]


# ---- reverse mode with it ---------------------------------------------------------------------------
def _loss(c0, xs, a, b):
    _, c, ys = cell_scan(c0, xs, a, b)
    return en.sum(ys) + en.sum(c * c)


def _np_loss(c0, xs, a, b):
    _, c, ys = np_cell_scan(c0, xs, a, b)
    return np.sum(ys) + np.sum(c * c)


def _hvp(c0, xs, a, b, tc, txs, ta, tb):
    """Forward over reverse: the Hessian of the loss times (tc, txs, ta, tb)."""
    return en.jvp(en.grad(_loss, argnums=(0, 1, 2, 3)), (c0, xs, a, b), (tc, txs, ta, tb))[1]


def _grad_of_jvp(c0, xs, a, b, tc, txs, ta, tb):
    """Reverse over forward: the gradient of the loss's directional derivative."""
    def slope(c0, xs, a, b):
        return en.jvp(_loss, (c0, xs, a, b), (tc, txs, ta, tb))[1]
    return en.grad(slope, argnums=(0, 1, 2, 3))(c0, xs, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("how", [_hvp, _grad_of_jvp], ids=["jvp_of_grad", "grad_of_jvp"])
def test_hessian_vector_products_through_scan(dtype, how):
    args = _inputs(dtype)
    dirs = _directions(args)
    got = en.function(how)(*_tensors(args + dirs))
    eager = how(*_tensors(args + dirs))
    for g, e in zip(got, eager):
        _close(g, e.numpy(), dtype)
    # Central differences of the eager gradient along the direction (float64), projected.
    a64 = [np.asarray(x, np.float64) for x in args]
    d64 = [np.asarray(x, np.float64) for x in dirs]
    ws = [np.random.default_rng(5 + k).standard_normal(np.shape(x)) for k, x in enumerate(args)]
    grad = en.grad(_loss, argnums=(0, 1, 2, 3))

    def along(s):
        gs = grad(*_tensors([x + s * d for x, d in zip(a64, d64)]))
        return sum(np.sum(g.numpy() * w) for g, w in zip(gs, ws))
    fd = float(central_difference(along, np.float64(0.0), eps=1e-5))
    got_proj = sum(np.sum(np.asarray(g, np.float64) * w) for g, w in zip(got, ws))
    np.testing.assert_allclose(got_proj, fd, rtol=1e-6 if dtype == np.float64 else 2e-3)


def test_the_gradient_of_the_loss_through_scan_against_finite_differences():
    args = [np.asarray(x, np.float64) for x in _inputs(np.float64)]
    got = en.function(en.grad(_loss, argnums=(0, 1, 2, 3)))(*_tensors(args))
    for k, g in enumerate(got):
        def at(v, k=k):
            moved = list(args)
            moved[k] = v
            return _np_loss(*moved)
        np.testing.assert_allclose(g.numpy(), central_difference(at, args[k]), rtol=1e-6,
                                   atol=1e-8)


@pytest.mark.parametrize("how", [_hvp, _grad_of_jvp], ids=["jvp_of_grad", "grad_of_jvp"])
def test_second_order_through_scan_is_two_scans_whatever_the_number_of_steps(how):
    counts = {}
    for steps in (10, 100):
        args = _tensors(_inputs(np.float64, steps))
        dirs = _tensors(_directions([a.numpy() for a in args]))
        own = _nodes(en.grad(_loss, argnums=(0, 1, 2, 3)), *args)
        counts[steps] = _nodes(how, *args, *dirs)
        assert counts[steps][1] == 2, counts     # the forward scan and the backward scan
        assert counts[steps][0] <= 2 * own[0], (counts, own)
    assert counts[10] == counts[100]


def test_jvp_of_grad_of_nested_scans():
    def inner_outer(x, w):
        def outer(c, row):
            def inner(d, v):
                return en.sin(d * w + v), ()
            d, _ = en.scan(inner, c, row)
            return d, ()
        return en.sum(en.scan(outer, x[0], x)[0])
    rng = _rng()
    x, w = rng.standard_normal((4, 4)) * 0.5, np.float64(0.8)
    t = rng.standard_normal((4, 4))

    def hvp(x, w, t):
        return en.jvp(en.grad(inner_outer), (x, w), (t, en.zeros_like(w)))[1]
    got = en.function(hvp)(*_tensors([x, w, t]))
    want = hvp(*_tensors([x, w, t]))
    _close(got, want.numpy(), np.float64)
    g = en.grad(inner_outer)
    ws = rng.standard_normal((4, 4))
    fd = central_difference(lambda s: np.sum(g(en.tensor(x + s * t), en.tensor(w)).numpy() * ws),
                            np.float64(0.0), eps=1e-5)
    np.testing.assert_allclose(np.sum(got.numpy() * ws), float(fd), rtol=1e-6)


def test_jvp_of_jvp_of_scan():
    def f(x):
        return en.scan(lambda c, _: (en.sin(c) * x, ()), x, None, length=5)[0]

    def second(x):
        return en.jvp(lambda y: en.jvp(f, (y,), (en.ones_like(y),))[1], (x,),
                      (en.ones_like(x),))[1]
    for x in (0.3, 1.2):
        want = central_difference(
            lambda y: central_difference(lambda z: _np_sin_loop(float(z)), y, eps=1e-4),
            np.float64(x), eps=1e-4)
        np.testing.assert_allclose(float(en.function(second)(en.tensor(x))), float(want),
                                   rtol=1e-5)
        np.testing.assert_allclose(float(en.function(second)(en.tensor(x))),
                                   float(second(en.tensor(x))), rtol=1e-12)


def _np_sin_loop(x):
    c = x
    for _ in range(5):
        c = np.sin(c) * x
    return c


# ---- cond ------------------------------------------------------------------------------------------
def branchy(x, w):
    """``sin(x) * w`` where ``sum(x) > 0``, else ``x * w * w``; the branches capture w."""
    return en.cond(en.sum(x) > 0, lambda: en.sin(x) * w, lambda: x * w * w)


def np_branchy(x, w):
    return np.sin(x) * w if np.sum(x) > 0 else x * w * w


@pytest.mark.parametrize("dtype", DTYPES)
def test_jvp_of_cond_in_a_graph_is_one_cond_over_primals_and_tangents(dtype):
    f = en.function(lambda x, w, tx, tw: en.jvp(branchy, (x, w), (tx, tw)))
    rng = _rng()
    tx, tw = rng.standard_normal(3).astype(dtype), np.asarray(0.3, dtype)
    for sign in (1.0, -1.0):    # both branches, one trace
        x, w = (sign * np.abs(rng.standard_normal(3))).astype(dtype), np.asarray(1.3, dtype)
        y, dy = f(*_tensors([x, w, tx, tw]))
        _close(y, np_branchy(x, w), dtype)
        x64, w64 = x.astype(np.float64), float(w)
        want = (np.cos(x64) * tx * w64 + np.sin(x64) * float(tw) if sign > 0
                else tx * w64 * w64 + x64 * 2 * w64 * float(tw))
        _close(dy, want, dtype)
    assert f.trace_count == 1
    graph = f.get_concrete_function(*_tensors([x, w, tx, tw])).unoptimized_graph
    names = [n.op.name for n in graph.nodes]
    assert names.count("cond") == 1 and "where" not in names, names


def _cond_loss(x, w):
    y = branchy(x, w)
    return en.sum(y * y)


def _np_cond_loss(x, w):
    y = np_branchy(x, w)
    return np.sum(y * y)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_second_order_through_cond(sign):
    rng = _rng()
    x, w = sign * np.abs(rng.standard_normal(3)), np.float64(1.3)
    tx, tw = rng.standard_normal(3), np.float64(-0.4)

    def hvp(x, w):
        return en.jvp(en.grad(_cond_loss, argnums=(0, 1)), (x, w), (en.tensor(tx),
                                                                    en.tensor(tw)))[1]

    def grad_of_jvp(x, w):
        return en.grad(lambda x, w: en.jvp(_cond_loss, (x, w), (en.tensor(tx), en.tensor(tw)))[1],
                       argnums=(0, 1))(x, w)
    grad = en.grad(_cond_loss, argnums=(0, 1))
    ws = [rng.standard_normal(3), np.float64(0.9)]

    def along(s):
        gs = grad(en.tensor(x + s * tx), en.tensor(w + s * tw))
        return sum(np.sum(g.numpy() * c) for g, c in zip(gs, ws))
    fd = float(central_difference(along, np.float64(0.0), eps=1e-5))
    for how in (hvp, grad_of_jvp):
        f = en.function(how)
        got = f(en.tensor(x), en.tensor(w))
        for g, e in zip(got, how(en.tensor(x), en.tensor(w))):
            _close(g, e.numpy(), np.float64)
        np.testing.assert_allclose(sum(np.sum(g.numpy() * c) for g, c in zip(got, ws)), fd,
                                   rtol=1e-6)
        names = [n.op.name for n in f.get_concrete_function(en.tensor(x), en.tensor(w))
                 .unoptimized_graph.nodes]
        assert "where" not in names and names.count("cond") == 2, names


def test_gradient_through_cond_against_finite_differences():
    x, w = np.array([0.4, -0.2, 0.9]), 1.3
    got = en.function(en.grad(_cond_loss))(en.tensor(x), en.tensor(w))
    np.testing.assert_allclose(got.numpy(), central_difference(lambda v: _np_cond_loss(v, w), x),
                               rtol=1e-7)


@pytest.mark.parametrize("kind", ["variable", "watched tensor"])
def test_hvp_through_scan_and_cond_of_a_weight_from_outside_and_a_rebound_name(kind):
    # A tape begun inside the jvp watches a weight from outside the jvp (a variable, or a
    # tensor it is told to watch) that the bodies read, and the cond's branches read the
    # name `c` that its own result then rebinds.
    weight = np.array([0.5, -0.3])
    W = en.Variable(weight) if kind == "variable" else en.tensor(weight)
    xs = en.tensor(np.random.default_rng(0).standard_normal((5, 2)))

    def loss(x):
        c, _ = en.scan(lambda c, r: (en.tanh(c * W + r * x), ()), x, xs)
        c = en.cond(en.sum(c) > -100.0, lambda: c * W, lambda: c)
        return en.sum(c * c)

    def hvp(x, t):
        def grads(x):
            with en.GradientTape() as tape:
                tape.watch([x] if kind == "variable" else [x, W])
                value = loss(x)
            return tape.gradient(value, [W, x])
        return en.jvp(grads, (x,), (t,))[1]
    x, t = np.array([0.2, 0.4]), np.array([1.0, -1.0])
    got = en.function(hvp)(en.tensor(x), en.tensor(t))
    want = hvp(en.tensor(x), en.tensor(t))
    for g, w in zip(got, want):
        _close(g, w.numpy(), np.float64)

    def grads_at(v):
        with en.GradientTape() as tape:
            tape.watch([v] if kind == "variable" else [v, W])
            value = loss(v)
        return tape.gradient(value, [W, v])
    for k in range(2):
        fd = central_difference(
            lambda s, k=k: float(np.sum(grads_at(en.tensor(x + s * t))[k].numpy())),
            np.float64(0.0), eps=1e-5)
        np.testing.assert_allclose(float(np.sum(got[k].numpy())), float(fd), rtol=1e-6)


# ---- checkpoint ------------------------------------------------------------------------------------
def test_checkpoint_of_a_scan_under_grad_and_jvp_of_grad():
    args = _inputs(np.float64)
    dirs = _directions(args)
    block = en.checkpoint(_loss)

    def hvp(c0, xs, a, b, tc, txs, ta, tb):
        return en.jvp(en.grad(block, argnums=(0, 1, 2, 3)), (c0, xs, a, b),
                      (tc, txs, ta, tb))[1]
    for g, want in zip(en.function(hvp)(*_tensors(args + dirs)), _hvp(*_tensors(args + dirs))):
        _close(g, want.numpy(), np.float64)
    got = en.function(en.grad(block, argnums=(2,)))(*_tensors(args))
    want = en.grad(_loss, argnums=(2,))(*_tensors(args))
    _close(got[0], want[0].numpy(), np.float64)


# ---- AutoGraph: functions handed to a transformation are converted ------------------------------
def with_if(x):
    if en.sum(x) > 0:
        y = x * 2.0
    else:
        y = -x * x
    return en.sum(y * y)


def with_for(x):
    total = en.zeros_like(x[0])
    for row in x:
        total = en.sin(total + row)
    return en.sum(total)


def _np_with_for(x):
    total = np.zeros_like(x[0])
    for row in x:
        total = np.sin(total + row)
    return np.sum(total)


@pytest.mark.parametrize("fn", [with_if, with_for])
def test_functions_handed_to_transformations_in_a_graph_are_converted(fn):
    rng = _rng()
    x = rng.standard_normal((3, 2))
    t = rng.standard_normal((3, 2))
    cases = {
        "jvp": lambda x, t: en.jvp(fn, (x,), (t,))[1],
        "grad": lambda x, t: en.grad(fn)(x),
        "jvp_of_grad": lambda x, t: en.jvp(en.grad(fn), (x,), (t,))[1],
    }
    for name, g in cases.items():
        got = en.function(g)(en.tensor(x), en.tensor(t))
        want = g(en.tensor(x), en.tensor(t))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, err_msg=name)
    # vmap: against the function on each example (eagerly an `if` on a batched value has
    # no one value; converted, it is selected per example).
    batch = np.stack([x, -x, 2.0 * x])
    got = en.function(lambda b: en.vmap(fn)(b))(en.tensor(batch))
    want = [float(fn(en.tensor(b))) for b in batch]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    if fn is with_for:   # the loop is one scan under the transformation
        f = en.function(cases["jvp"])
        graph = f.get_concrete_function(en.tensor(x), en.tensor(t)).unoptimized_graph
        assert sum(n.op.name == "scan" for n in graph.nodes) == 1
        fd = central_difference(lambda s: _np_with_for(x + s * t), np.float64(0.0))
        np.testing.assert_allclose(float(f(en.tensor(x), en.tensor(t))), float(fd), rtol=1e-7)


# ---- JAX, an extra comparison ----------------------------------------------------------------------
def _jax():
    jax = pytest.importorskip("jax")
    return jax


def _jax_loss(jax):
    jnp = jax.numpy

    def loss(c0, xs, a, b):
        def step(c, x):
            c = jnp.tanh(c * a + x * b)
            return c, c * c
        c, ys = jax.lax.scan(step, c0, xs)
        return jnp.sum(ys) + jnp.sum(c * c)
    return loss


def test_jvp_and_hvp_of_scan_against_jax():
    jax = _jax()
    args = _inputs(np.float64)
    dirs = _directions(args)
    with jax.enable_x64(True):
        loss = _jax_loss(jax)
        want_t = jax.jvp(loss, tuple(args), tuple(dirs))[1]
        want_h = jax.jvp(jax.grad(loss, argnums=(0, 1, 2, 3)), tuple(args), tuple(dirs))[1]
    got_t = en.function(lambda *p: en.jvp(_loss, p[:4], p[4:])[1])(*_tensors(args + dirs))
    np.testing.assert_allclose(float(got_t), float(want_t), rtol=1e-10)
    for g, j in zip(en.function(_hvp)(*_tensors(args + dirs)), want_h):
        np.testing.assert_allclose(g.numpy(), np.asarray(j), rtol=1e-9, atol=1e-12)


def test_jvp_and_hvp_of_cond_against_jax():
    jax = _jax()
    rng = _rng()
    tx, tw = rng.standard_normal(3), np.float64(-0.4)
    jnp = jax.numpy

    def jloss(x, w):
        y = jax.lax.cond(jnp.sum(x) > 0, lambda: jnp.sin(x) * w, lambda: x * w * w)
        return jnp.sum(y * y)
    for sign in (1.0, -1.0):
        x, w = sign * np.abs(rng.standard_normal(3)), np.float64(1.3)
        with jax.enable_x64(True):
            want = jax.jvp(jax.grad(jloss, argnums=(0, 1)), (x, w), (tx, tw))[1]
        got = en.function(lambda x, w: en.jvp(en.grad(_cond_loss, argnums=(0, 1)), (x, w),
                                              (en.tensor(tx), en.tensor(tw)))[1])(
            en.tensor(x), en.tensor(w))
        for g, j in zip(got, want):
            np.testing.assert_allclose(g.numpy(), np.asarray(j), rtol=1e-10, atol=1e-12)
