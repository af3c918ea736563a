"""Control flow under en.vmap without unrolling (engine/transforms/batching_loops.py).

Every transformed loop is checked against a Python loop over the examples of the
untransformed function (eagerly and inside en.function, float32 and float64);
gradients against finite differences; node counts against the scan's own; and,
where JAX is installed, values and gradients against JAX as an extra comparison.
"""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.finite_diff import numeric_grad

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def _rng():
    return np.random.default_rng(46)


def _per_example(f, *args, in_axes=None):
    """``f`` run on each example of the mapped arguments, the results stacked (numpy)."""
    in_axes = in_axes or (0,) * len(args)
    size = next(np.asarray(a).shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = []
    for b in range(size):
        call = [a if ax is None else en.tensor(np.take(np.asarray(a), b, axis=ax))
                for a, ax in zip(args, in_axes)]
        rows.append(_numpy_tree(f(*call)))
    return _stack_trees(rows)


def _numpy_tree(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_numpy_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: _numpy_tree(v) for k, v in x.items()}
    return np.asarray(x)


def _stack_trees(rows):
    first = rows[0]
    if isinstance(first, (tuple, list)):
        return type(first)(_stack_trees([r[k] for r in rows]) for k in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack_trees([r[k] for r in rows]) for k in first}
    return np.stack(rows)


def _close(got, want, dtype):
    got = _numpy_tree(got)
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            _close(g, w, dtype)
        return
    if isinstance(want, dict):
        for k in want:
            _close(got[k], want[k], dtype)
        return
    np.testing.assert_allclose(np.asarray(got), want, **TOL[dtype])


def _both(f):
    """The vmapped function eagerly and compiled by en.function."""
    return [f, en.function(f)]


def _nodes(fn, *args):
    return len(en.function(fn).get_concrete_function(*args).graph.nodes)


# ---- the functions under test ----------------------------------------------------------------
def rnn_loss(w, xs):
    """A tanh RNN over ``xs`` (time, features): the final state and every step's output."""
    def step(h, x):
        h = en.tanh(h @ w + x)
        return h, en.sum(h * h)
    h, ys = en.scan(step, en.zeros(w.shape[1], dtype=w.dtype), xs)
    return en.sum(h) + en.sum(ys)


def tree_scan(xs, a):
    """Dict carries and xs, a tuple of ys, reversed, closing over a batched ``a``."""
    def step(c, x):
        h = en.sin(c["h"] * a + x["u"])
        return {"h": h, "s": c["s"] + en.sum(h)}, (h * 2.0, en.sum(x["u"]))
    init = {"h": en.zeros(a.shape, dtype=a.dtype), "s": en.tensor(0.0, dtype=a.dtype)}
    c, (y1, y2) = en.scan(step, init, {"u": xs}, reverse=True)
    return c["s"], y1, y2


def cumulative(xs):
    return en.scan(lambda c, x: (c + x, c * x), en.tensor(0.0, dtype=xs.dtype), xs)


# ---- scan ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_scan_matches_a_loop_over_examples(dtype):
    X = _rng().standard_normal((3, 5)).astype(dtype)
    want = _per_example(cumulative, X)
    for f in _both(en.vmap(cumulative)):
        _close(f(en.tensor(X)), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_scan_pytrees_reverse_and_batched_closures(dtype):
    rng = _rng()
    X = rng.standard_normal((4, 6, 2)).astype(dtype)
    A = rng.standard_normal((4, 2)).astype(dtype)
    want = _per_example(tree_scan, X, A)
    for f in _both(en.vmap(tree_scan)):
        _close(f(en.tensor(X), en.tensor(A)), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_scan_with_length_and_no_xs(dtype):
    A = _rng().standard_normal((3, 2)).astype(dtype)

    def powers(a):
        return en.scan(lambda c, _: (c * a + 1.0, c), en.zeros(2, dtype=a.dtype), length=4)
    want = _per_example(powers, A)
    for f in _both(en.vmap(powers)):
        _close(f(en.tensor(A)), want, dtype)


def test_vmap_scan_batch_axis_not_first_and_unbatched_xs():
    rng = _rng()
    X = rng.standard_normal((5, 3))      # time 5, batch 3 (in_axes=1)
    U = rng.standard_normal((5,))        # shared by every example

    def f(xs, us):
        return en.scan(lambda c, xu: (c * 0.5 + xu[0] * xu[1], c), en.tensor(1.0), (xs, us))
    want = _per_example(lambda x: f(x, en.tensor(U)), X, in_axes=(1,))
    for g in _both(en.vmap(f, in_axes=(1, None))):
        _close(g(en.tensor(X), en.tensor(U)), want, np.float64)


def test_vmap_scan_carry_unbatched_when_the_body_keeps_it_so():
    X = _rng().standard_normal((3, 4))

    def f(xs):
        (k, s), ys = en.scan(lambda c, x: ((c[0] + 1.0, c[1] + x), x * c[0]),
                             (en.tensor(0.0), en.tensor(0.0)), xs)
        return k, s, ys
    graph_f = en.function(en.vmap(f, out_axes=(None, 0, 0)))
    k, s, ys = graph_f(en.tensor(X))
    assert k.shape == () and float(k) == 4.0     # the counter stayed one value
    _close((s, ys), _per_example(lambda x: f(x)[1:], X), np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_vmap_scan(dtype):
    rng = _rng()
    w = rng.standard_normal((3, 3)).astype(dtype) * 0.5
    X = rng.standard_normal((2, 4, 5, 3)).astype(dtype)
    want = np.array([[float(rnn_loss(en.tensor(w), en.tensor(X[i, j]))) for j in range(4)]
                     for i in range(2)])
    inner = en.vmap(rnn_loss, in_axes=(None, 0))
    for f in _both(en.vmap(inner, in_axes=(None, 0))):
        _close(f(en.tensor(w), en.tensor(X)), want, dtype)


# ---- gradients -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_grad_scan_per_example_gradients(dtype):
    rng = _rng()
    w = (rng.standard_normal((3, 3)) * 0.5).astype(dtype)
    X = rng.standard_normal((4, 5, 3)).astype(dtype)
    per_example = en.vmap(en.grad(rnn_loss, argnums=(0, 1)), in_axes=(None, 0))
    want = _per_example(en.grad(rnn_loss, argnums=(0, 1)), w, X, in_axes=(None, 0))
    for f in _both(per_example):
        _close(f(en.tensor(w), en.tensor(X)), want, dtype)


def test_vmap_grad_scan_against_finite_differences():
    rng = _rng()
    w = rng.standard_normal((3, 3)) * 0.5
    X = rng.standard_normal((3, 4, 3))
    got = en.function(en.vmap(en.grad(rnn_loss), in_axes=(None, 0)))(en.tensor(w), en.tensor(X))
    for b in range(3):
        num = numeric_grad(rnn_loss, [w, X[b]], 0)
        np.testing.assert_allclose(np.asarray(got)[b], num, rtol=1e-6, atol=1e-7)


def test_grad_vmap_scan_against_finite_differences():
    rng = _rng()
    w = rng.standard_normal((3, 3)) * 0.5
    X = rng.standard_normal((3, 4, 3))

    def total(w, X):
        return en.sum(en.vmap(rnn_loss, in_axes=(None, 0))(w, X) ** 2.0)
    got = en.function(en.grad(total, argnums=(0, 1)))(en.tensor(w), en.tensor(X))
    for i in range(2):
        num = numeric_grad(total, [w, X], i)
        np.testing.assert_allclose(np.asarray(got[i]), num, rtol=1e-6, atol=1e-7)


def test_vmap_grad_of_a_closure_over_a_batched_value():
    rng = _rng()
    A = rng.standard_normal((3, 2))
    X = rng.standard_normal((3, 4, 2))

    def loss(a, xs):
        c, _ = en.scan(lambda c, x: (en.sin(c * a + x), c), en.zeros(2), xs)
        return en.sum(c * c)
    got = en.function(en.vmap(en.grad(loss, argnums=(0, 1))))(en.tensor(A), en.tensor(X))
    for b in range(3):
        for i in range(2):
            num = numeric_grad(loss, [A[b], X[b]], i)
            np.testing.assert_allclose(np.asarray(got[i])[b], num, rtol=1e-6, atol=1e-7)


def test_second_order_through_a_vmapped_scan_against_finite_differences():
    rng = _rng()
    w = rng.standard_normal((2, 2)) * 0.5
    X = rng.standard_normal((3, 4, 2))
    v = en.tensor(rng.standard_normal((2, 2)))

    def grad_dot_v(w, xs):    # a Hessian-vector product's scalar
        return en.sum(en.grad(rnn_loss)(w, xs) * v)
    per_example = en.function(en.vmap(en.grad(grad_dot_v), in_axes=(None, 0)))
    got = np.asarray(per_example(en.tensor(w), en.tensor(X)))
    for b in range(3):
        np.testing.assert_allclose(got[b], numeric_grad(grad_dot_v, [w, X[b]], 0),
                                   rtol=1e-6, atol=1e-7)

    def outer(w, X):          # grad of vmap of grad
        return en.sum(en.vmap(en.grad(rnn_loss), in_axes=(None, 0))(w, X) ** 2.0)
    got = en.function(en.grad(outer))(en.tensor(w), en.tensor(X))
    np.testing.assert_allclose(np.asarray(got), numeric_grad(outer, [w, X], 0),
                               rtol=1e-6, atol=1e-7)


def test_vmap_grad_of_a_scan_that_prints_is_refused_by_name():
    # The backward pass runs the body again: the print would happen again. (Random draws
    # and variable writes replay the forward pass's state: test_vmap_grad_scan_state.py.)
    X = en.tensor(_rng().standard_normal((3, 4)))

    def step(c, x):
        en.print("step")
        return c * 0.5 + x, c

    def loss(xs):
        return en.scan(step, en.tensor(0.0), xs)[0]
    with pytest.raises(en.NotDifferentiableError, match="vmap\\(grad\\) of a scan.*print.*out"):
        en.function(en.vmap(en.grad(loss)))(X)


def test_vmap_jvp_scan_matches_a_loop():
    rng = _rng()
    X = rng.standard_normal((3, 6, 2))
    T = rng.standard_normal((3, 6, 2))

    def h(xs):
        return en.scan(lambda c, x: (en.tanh(c + x), c), en.zeros(2), xs)[0]

    def tangent(xs, t):
        return en.jvp(h, (xs,), (t,))[1]
    want = _per_example(tangent, X, T)
    for f in _both(en.vmap(tangent)):
        _close(f(en.tensor(X), en.tensor(T)), want, np.float64)
    outer = en.function(lambda xs, t: en.jvp(en.vmap(h), (xs,), (t,))[1])
    _close(outer(en.tensor(X), en.tensor(T)), want, np.float64)


# ---- node counts: one scan, independent of the number of steps --------------------------------
def test_node_counts_do_not_grow_with_the_steps():
    rng = _rng()

    def loss(xs):
        return en.sum(cumulative(xs)[1])
    for steps in (10, 100):
        X = en.tensor(rng.standard_normal((4, steps)))
        alone = _nodes(cumulative, X[0])
        batched = _nodes(en.vmap(cumulative), X)
        grad_alone = _nodes(en.grad(loss), X[0])
        grad_batched = _nodes(en.vmap(en.grad(loss)), X)
        assert batched <= 2 * alone, (steps, batched, alone)
        assert grad_batched <= 2 * grad_alone, (steps, grad_batched, grad_alone)
        graph = en.function(en.vmap(en.grad(loss))).get_concrete_function(X).unoptimized_graph
        assert sum(n.op.name == "scan" for n in graph.nodes) == 2   # forward and backward


# ---- while_loop --------------------------------------------------------------------------------
def doubling(x):
    """Double ``x`` until it reaches 10: a trip count per example."""
    return en.while_loop(lambda i, v: v < 10.0, lambda i, v: (i + 1, v * 2.0),
                         (en.tensor(0), x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_while_batched_predicate_per_example_trip_counts(dtype):
    X = np.array([0.5, 3.0, 20.0, 1.0, 9.99], dtype=dtype)
    want = _per_example(doubling, X)
    assert list(want[0]) == [5, 2, 0, 4, 1]
    for f in _both(en.vmap(doubling)):
        _close(f(en.tensor(X)), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_while_unbatched_predicate_is_one_loop(dtype):
    X = _rng().standard_normal((4, 3)).astype(dtype)

    def f(x):
        return en.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, en.sin(v) * 2.0),
                             (en.tensor(0), x))[1]
    want = _per_example(f, X)
    for g in _both(en.vmap(f)):
        _close(g(en.tensor(X)), want, dtype)
    graph = en.function(en.vmap(f)).get_concrete_function(en.tensor(X)).graph
    assert sum(n.op.name == "while_loop" for n in graph.nodes) == 1


def test_vmap_while_predicate_batched_by_the_body():
    # The bound is batched; the counter starts unbatched and becomes per example.
    N = np.array([1.0, 4.0, 2.0])

    def f(n):
        return en.while_loop(lambda i, s: i < n, lambda i, s: (i + 1.0, s + i),
                             (en.tensor(0.0), en.tensor(0.0)))
    want = _per_example(f, N)
    for g in _both(en.vmap(f)):
        _close(g(en.tensor(N)), want, np.float64)


# ---- cond ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_cond_unbatched_predicate_is_one_cond(dtype):
    X = _rng().standard_normal((4, 2)).astype(dtype)

    def f(flag, x):
        # the true branch's output is batched, the false one's is not: broadcast
        return en.cond(flag, lambda: x * 2.0, lambda: en.ones(2, dtype=x.dtype))
    for flag in (True, False):
        want = _per_example(lambda x, flag=flag: f(en.tensor(flag), x), X)
        for g in _both(en.vmap(f, in_axes=(None, 0))):
            _close(g(en.tensor(flag), en.tensor(X)), want, dtype)
    graph = en.function(en.vmap(f, in_axes=(None, 0))).get_concrete_function(
        en.tensor(True), en.tensor(X)).graph
    assert sum(n.op.name == "cond" for n in graph.nodes) == 1
    assert not any(n.op.name == "where" for n in graph.nodes)


@pytest.mark.parametrize("dtype", DTYPES)
def test_vmap_cond_batched_predicate_selects_per_example(dtype):
    X = np.array([-1.0, 3.0, 0.5, 2.5], dtype=dtype)

    def f(x):
        return en.cond(x > 1.0, lambda: x * 2.0, lambda: -x)
    want = _per_example(f, X)
    for g in _both(en.vmap(f)):
        _close(g(en.tensor(X)), want, dtype)


def test_vmap_grad_through_cond_against_finite_differences():
    X = np.array([[-1.0, 0.5], [3.0, 0.2]])

    def f(x):
        return en.cond(en.sum(x) > 0.0, lambda: en.sum(en.sin(x)), lambda: en.sum(x * x))
    got = en.function(en.vmap(en.grad(f)))(en.tensor(X))
    for b in range(2):
        np.testing.assert_allclose(np.asarray(got)[b], numeric_grad(f, [X[b]], 0), rtol=1e-6)


def test_forward_mode_and_vmap_of_while_and_cond_compose():
    X = np.array([[1.0, 2.0], [0.5, 0.1], [3.0, 3.0]])
    T = np.full_like(X, 0.5)

    def grow(x):     # a batched condition: a trip count per example
        return en.while_loop(lambda i, v: en.sum(v) < 10.0,
                             lambda i, v: (i + 1, v * 1.5 + 0.1), (en.tensor(0), x))[1]

    def branch(flag, x):
        return en.cond(flag, lambda: en.sin(x) * 2.0, lambda: x * x)

    def tangent(fn, x, t):
        return en.jvp(fn, (x,), (t,))[1]
    want = _per_example(lambda x, t: tangent(grow, x, t), X, T)
    for f in _both(lambda x, t: en.vmap(lambda x, t: tangent(grow, x, t))(x, t)):
        _close(f(en.tensor(X), en.tensor(T)), want, np.float64)
    for f in _both(lambda x, t: tangent(en.vmap(grow), x, t)):
        _close(f(en.tensor(X), en.tensor(T)), want, np.float64)
    for flag in (True, False):
        want = _per_example(lambda x, t, flag=flag: tangent(lambda v: branch(flag, v), x, t), X, T)
        for f in _both(lambda flag, x, t: tangent(en.vmap(lambda v: branch(flag, v)), x, t)):
            _close(f(en.tensor(flag), en.tensor(X), en.tensor(T)), want, np.float64)


# ---- compiled lowerings run the staged loops -------------------------------------------------
@pytest.mark.parametrize("lowering", ["numba", "c"])
def test_compiled_lowerings_run_vmapped_loops(monkeypatch, lowering):
    if lowering == "numba":
        import_numba()
    monkeypatch.setattr(en.config, "lowering", lowering)
    rng = _rng()
    w = rng.standard_normal((3, 3)) * 0.5
    X = rng.standard_normal((4, 5, 3))
    want = _per_example(en.grad(rnn_loss), w, X, in_axes=(None, 0))
    got = en.function(en.vmap(en.grad(rnn_loss), in_axes=(None, 0)))(en.tensor(w), en.tensor(X))
    _close(got, want, np.float64)
    N = np.array([0.5, 3.0, 20.0])
    _close(en.function(en.vmap(doubling))(en.tensor(N)), _per_example(doubling, N), np.float64)


# ---- JAX, an extra comparison ----------------------------------------------------------------
def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_vmap_grad_scan_against_jax():
    jax = _jax()
    jnp = jax.numpy
    rng = _rng()
    w = rng.standard_normal((3, 3)) * 0.5
    X = rng.standard_normal((4, 5, 3))

    def jax_loss(w, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, jnp.sum(h * h)
        h, ys = jax.lax.scan(step, jnp.zeros(3), xs)
        return jnp.sum(h) + jnp.sum(ys)
    want = jax.jit(jax.vmap(jax.grad(jax_loss, argnums=(0, 1)), in_axes=(None, 0)))(w, X)
    got = en.function(en.vmap(en.grad(rnn_loss, argnums=(0, 1)), in_axes=(None, 0)))(
        en.tensor(w), en.tensor(X))
    for g, j in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(j), rtol=1e-10, atol=1e-12)


def test_vmap_while_and_cond_against_jax():
    jax = _jax()
    X = np.array([0.5, 3.0, 20.0, 1.0])

    def jax_doubling(x):
        return jax.lax.while_loop(lambda c: c[1] < 10.0, lambda c: (c[0] + 1, c[1] * 2.0),
                                  (0, x))
    ji, jv = jax.vmap(jax_doubling)(X)
    i, v = en.function(en.vmap(doubling))(en.tensor(X))
    np.testing.assert_array_equal(np.asarray(i), np.asarray(ji))
    np.testing.assert_allclose(np.asarray(v), np.asarray(jv))

    def jax_cond(x):
        return jax.lax.cond(x > 1.0, lambda: x * 2.0, lambda: -x)
    got = en.function(en.vmap(lambda x: en.cond(x > 1.0, lambda: x * 2.0, lambda: -x)))(
        en.tensor(X))
    np.testing.assert_allclose(np.asarray(got), np.asarray(jax.vmap(jax_cond)(X)))


# ---- AutoGraph: Python control flow in a vmapped function inside en.function -----------------
def python_flow(flag, x):
    if flag > 0:                    # unbatched: one cond
        y = x * 2.0
    else:
        y = -x
    if en.sum(x) > 1.0:             # batched: both branches, selected per example
        y = y + 1.0
    total = en.tensor(0.0, dtype=x.dtype)
    for row in x:                   # one scan over the rows
        total = total + row
    i = en.tensor(0)
    while en.sum(x) * i < 5.0:      # batched: one loop, a trip count per example
        i = i + 1
    return y, total, i


@pytest.mark.parametrize("dtype", DTYPES)
def test_converted_python_control_flow_under_vmap(dtype):
    X = np.array([[1.0, 2.0], [0.5, 0.1], [3.0, 3.0], [0.2, 0.3]], dtype=dtype)
    f = en.function(en.vmap(python_flow, in_axes=(None, 0)))
    for flag in (1.0, -1.0):
        want = _per_example(lambda x, flag=flag: python_flow(en.tensor(flag), x), X)
        _close(f(en.tensor(flag), en.tensor(X)), want, dtype)
    graph = f.get_concrete_function(en.tensor(1.0), en.tensor(X)).graph
    assert sum(n.op.name == "while_loop" for n in graph.nodes) == 1
    assert sum(n.op.name == "scan" for n in graph.nodes) == 1
