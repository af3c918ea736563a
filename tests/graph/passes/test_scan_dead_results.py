"""Unread results of loops leave them (graph/passes/scan_dead_results.py,
graph/passes/while_dead_vars.py).

Per-step results and carries nothing reads are removed from scans (and dead variables
from while loops); checked against numpy loops, a numpy BPTT of per-example RNN
gradients, central differences of it for a Hessian-vector product, and the
unoptimized graph, with the scans' results and bodies counted.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op, while_op
from engine.graph.control.interpret import interpret
from support.finite_diff import central_difference
from support.pass_helpers import assert_matches

DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 3e-5, np.float64: 1e-11}


def _scans(graph):
    return [n for n in graph.nodes if n.op is scan_op]


def _cleaned(f, *args):
    return en.function(f, passes=["cleanup"]).graph_for(*args)


def _plain(f, *args):
    return en.function(f, optimize=False).graph_for(*args)


def test_an_unread_per_step_result_and_what_only_it_needed_leave_the_loop():
    rng = np.random.default_rng(0)
    xs, w = rng.standard_normal((6, 3)), rng.standard_normal((3, 3))

    def f(xs):
        # ys: a product and an exp per step that nothing reads
        return en.scan(lambda c, x: (c * 0.5 + x, en.exp(x @ w)), en.zeros(3), xs)[0]
    (scan,) = _scans(_cleaned(f, en.tensor(xs)))
    body = scan.params["body"]
    assert len(body.out_avals) == 1 and len(scan.avals) == 2   # the carry and its stack
    assert not [n for n in body.graph.nodes if n.op.name in ("exp", "matmul")]
    assert scan.params["n_x"] == 1 and len(scan.inputs) == 2   # w is no longer captured
    c = np.zeros(3)
    for x in xs:
        c = c * 0.5 + x
    np.testing.assert_allclose(en.function(f)(xs).numpy(), c, rtol=1e-15)


def test_a_carry_that_only_feeds_itself_leaves_the_loop():
    xs = np.random.default_rng(1).standard_normal((5, 2))

    def f(xs):
        def step(carry, x):
            c, acc = carry
            return (en.tanh(c + x), acc + x * x), en.sum(c)
        (c, _), ys = en.scan(step, (en.zeros(2), en.zeros(2)), xs)
        return c, ys
    (scan,) = _scans(_cleaned(f, en.tensor(xs)))
    assert scan.params["n_carry"] == 1 and len(scan.inputs) == 2
    c, sums = np.zeros(2), []
    for x in xs:
        sums.append(c.sum())
        c = np.tanh(c + x)
    got = en.function(f)(xs)
    np.testing.assert_allclose(got[0].numpy(), c, rtol=1e-15)
    np.testing.assert_allclose(got[1].numpy(), sums, rtol=1e-15)
    assert_matches(got, en.function(f, optimize=False)(xs), "dead carry", rtol=1e-15)


def test_carries_that_feed_a_kept_result_or_each_other_stay():
    xs = np.random.default_rng(2).standard_normal((5, 2))

    def swapping(read_final):
        def f(xs):
            (a, b), ys = en.scan(lambda ab, x: ((ab[1], ab[0] + x), x * 2.0 + ab[0] * 0.0),
                                 (en.zeros(2), en.zeros(2)), xs)
            return a if read_final else ys
        return f
    # The final a is read: a needs b, b needs a.
    assert [s.params["n_carry"] for s in _scans(_cleaned(swapping(True), en.tensor(xs)))] == [2]
    # Only ys is read, and it needs a (ab[0] * 0.0 is not removed: 0 * inf is NaN): b feeds
    # a, so both stay.
    assert [s.params["n_carry"] for s in _scans(_cleaned(swapping(False), en.tensor(xs)))] == [2]
    a, b = np.zeros(2), np.zeros(2)
    for x in xs:
        a, b = b, a + x
    np.testing.assert_allclose(en.function(swapping(True))(xs).numpy(), a, rtol=1e-15)

    def both_dead(xs):
        (a, b), ys = en.scan(lambda ab, x: ((ab[1], ab[0] + x), x * 2.0),
                             (en.zeros(2), en.zeros(2)), xs)
        return ys
    (scan,) = _scans(_cleaned(both_dead, en.tensor(xs)))
    assert scan.params["n_carry"] == 0 and len(scan.inputs) == 1
    np.testing.assert_allclose(en.function(both_dead)(xs).numpy(), xs * 2.0, rtol=1e-15)


def test_summed_and_unread_indices_follow_the_removed_results():
    # The later passes' params, renumbered: run scan_sums and scan_unread first.
    xs = np.random.default_rng(3).standard_normal((6, 3))

    def f(xs):
        def step(carry, x):
            c, acc = carry
            return (c * 0.9 + x, acc + 1.0), (en.exp(x), x * c)
        (c, _), (_, prods) = en.scan(step, (en.zeros(3), en.zeros(3)), xs)
        return c, en.sum(prods, axis=0)
    passes = ["dce", "scan_sums", "scan_unread", "scan_dead_results", "dce"]
    graph = en.function(f, passes=passes).graph_for(en.tensor(xs))
    (scan,) = _scans(graph)
    p = scan.params
    assert (p["n_carry"], p["summed"], p["unread"], len(p["body"].out_avals)) == (1, (0,), (0,), 2)
    c, total = np.zeros(3), np.zeros(3)
    for x in xs:
        total += x * c
        c = c * 0.9 + x
    got = en.function(f, passes=passes)(xs)
    np.testing.assert_allclose(got[0].numpy(), c, rtol=1e-15)
    np.testing.assert_allclose(got[1].numpy(), total, rtol=1e-14)
    assert_matches(got, en.function(f, optimize=False)(xs), "renumbered", rtol=1e-14)


# ---- per-example gradients and Hessian-vector products of an RNN ---------------------

def _loss(w, u, b, xs):
    """mean over steps of sum(h * h), h <- tanh(h @ w + x @ u + b); xs: (steps, inputs)."""
    def step(h, x):
        h = en.tanh(h @ w + x @ u + b)
        return h, en.sum(h * h)
    _, ys = en.scan(step, en.zeros(w.shape[0], dtype=xs.dtype), xs)
    return en.sum(ys) / xs.shape[0]


def _numpy_grads(w, u, b, xs):
    """(dw, du, db) of ``_loss`` for one sequence, by backpropagation through time."""
    steps = len(xs)
    hs = [np.zeros(w.shape[0], w.dtype)]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ w + x @ u + b))
    dw, du, db = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
    dh = np.zeros_like(b)
    for t in range(steps, 0, -1):
        dz = (dh + 2 * hs[t] / steps) * (1 - hs[t] ** 2)
        dw += np.outer(hs[t - 1], dz)
        du += np.outer(xs[t - 1], dz)
        db += dz
        dh = w @ dz
    return dw, du, db


def _rnn(dtype, batch=3, steps=7, hidden=5, inputs=4, seed=4):
    rng = np.random.default_rng(seed)
    arrays = (rng.standard_normal((hidden, hidden)) * 0.4, rng.standard_normal((inputs, hidden)),
              rng.standard_normal(hidden) * 0.1, rng.standard_normal((batch, steps, inputs)))
    return [a.astype(dtype) for a in arrays]


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_example_rnn_gradients_compute_no_sequence_gradient(dtype):
    w, u, b, xs = _rnn(dtype)
    fn = en.vmap(en.grad(_loss, argnums=(0, 1, 2)), in_axes=(None, None, None, 0))
    args = [en.tensor(a) for a in (w, u, b, xs)]
    cleaned, plain = _scans(_cleaned(fn, *args)), _scans(_plain(fn, *args))
    # The backward scan: the sequence's gradient, a (steps, batch, inputs) stack, is gone.
    stacks = [a[0] for s in cleaned for a in s.avals]
    assert (7, 3, 4) in [a[0] for s in plain for a in s.avals] and (7, 3, 4) not in stacks
    assert sum(s.params["body"].graph.node_count() for s in cleaned) < \
        sum(s.params["body"].graph.node_count() for s in plain)
    got = en.function(fn)(*args)
    for k, want in enumerate(zip(*[_numpy_grads(w, u, b, x) for x in xs])):
        assert got[k].dtype == dtype
        np.testing.assert_allclose(got[k].numpy(), np.stack(want), rtol=RTOL[dtype],
                                   atol=RTOL[dtype] * np.abs(want).max())
    assert_matches(got, en.function(fn, optimize=False)(*args), "per-example grads",
                   rtol=RTOL[dtype])


@pytest.mark.parametrize("lowering", ["c", "numba", "numpy"])
def test_per_example_rnn_gradients_in_each_lowering(lowering, monkeypatch):
    monkeypatch.setattr(en.config, "lowering", lowering)
    w, u, b, xs = _rnn(np.float64, batch=2, steps=5, seed=5)
    fn = en.function(en.vmap(en.grad(_loss, argnums=(0, 1, 2)), in_axes=(None, None, None, 0)))
    got = fn(*[en.tensor(a) for a in (w, u, b, xs)])
    for k, want in enumerate(zip(*[_numpy_grads(w, u, b, x) for x in xs])):
        np.testing.assert_allclose(got[k].numpy(), np.stack(want), rtol=1e-11, atol=1e-13)


def test_a_hessian_vector_product_through_a_scan_matches_central_differences():
    w, u, b, xs = _rnn(np.float64, batch=1, steps=6)
    xs = xs[0]
    rng = np.random.default_rng(6)
    tw, tu, tb = (rng.standard_normal(a.shape) for a in (w, u, b))
    grad = en.grad(_loss, argnums=(0, 1, 2))

    def hvp(w, u, b, xs, tw, tu, tb):
        return en.jvp(lambda w, u, b: grad(w, u, b, xs), (w, u, b), (tw, tu, tb))[1]
    args = [en.tensor(a) for a in (w, u, b, xs, tw, tu, tb)]
    cleaned, plain = _scans(_cleaned(hvp, *args)), _scans(_plain(hvp, *args))
    # Only the tangents of the gradients are read: the backward scan's own gradients go.
    assert sum(len(s.avals) for s in cleaned) < sum(len(s.avals) for s in plain)
    got = en.function(hvp)(*args)
    eps = 1e-5
    plus = _numpy_grads(w + eps * tw, u + eps * tu, b + eps * tb, xs)
    minus = _numpy_grads(w - eps * tw, u - eps * tu, b - eps * tb, xs)
    for g, p, m in zip(got, plus, minus):
        want = (p - m) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8 * np.abs(want).max())
    assert_matches(got, en.function(hvp, optimize=False)(*args), "hvp", rtol=1e-12)


# ---- while_loop ----------------------------------------------------------------------

def test_a_while_loops_unread_variable_leaves_it():
    def f(n, x):
        def body(i, s, junk):
            return i + 1, s + x * en.cast(i, "float64"), en.exp(junk) + s
        return en.while_loop(lambda i, s, junk: i < n, body,
                             (en.tensor(0), en.tensor(0.0), en.tensor(1.0)))[1]
    args = (en.tensor(5), en.tensor(0.5))
    (loop,) = [n for n in _cleaned(f, *args).nodes if n.op is while_op]
    assert loop.params["n_vars"] == 2 and len(loop.params["body"].graph.inputs) == 3
    assert not [n for n in loop.params["body"].graph.nodes if n.op.name == "exp"]
    np.testing.assert_allclose(en.function(f)(*args).numpy(), 0.5 * sum(range(5)), rtol=1e-15)

    def read_by_cond(n, x):   # junk decides when to stop: it stays; i goes
        return en.while_loop(lambda i, s, junk: junk < 100.0,
                             lambda i, s, junk: (i + 1, s + x, junk * 2.0),
                             (en.tensor(0), en.tensor(0.0), en.tensor(1.0)))[1]
    (loop,) = [n for n in _cleaned(read_by_cond, *args).nodes if n.op is while_op]
    assert loop.params["n_vars"] == 2
    assert [a[1] for a in loop.avals] == [np.dtype("float64")] * 2
    np.testing.assert_allclose(en.function(read_by_cond)(*args).numpy(), 0.5 * 7, rtol=1e-15)


def test_a_rewritten_scan_is_a_complete_scan_whose_gradient_is_right():
    # Gradients are taken before optimization, but the rewritten node must still be a
    # scan of its own: run the cleaned graph op by op under a tape.
    rng = np.random.default_rng(7)
    w, xs = en.tensor(rng.standard_normal(2)), en.tensor(rng.standard_normal((5, 2)))

    def f(w, xs):
        def step(carry, x):
            c, acc = carry
            return (en.tanh(c * w + x), acc + x * x), (en.sum(c), en.exp(x))
        (c, _), (sums, _) = en.scan(step, (en.zeros(2), en.zeros(2)), xs)
        return en.sum(c) + en.sum(sums)
    graph = _cleaned(f, w, xs)
    (scan,) = _scans(graph)
    assert scan.params["n_carry"] == 1 and len(scan.params["body"].out_avals) == 2
    with en.GradientTape() as tape:
        tape.watch([w, xs])
        out = interpret(graph, [w, xs])[0]
    got = tape.gradient(out, [w, xs])

    def loss(w_, xs_):
        c, total = np.zeros(2), 0.0
        for x in xs_:
            total += c.sum()
            c = np.tanh(c * w_ + x)
        return c.sum() + total
    args = [w.numpy(), xs.numpy()]
    for k, g in enumerate(got):   # against central differences of the numpy loop
        want = central_difference(lambda v, k=k: loss(*(args[:k] + [v] + args[k + 1:])),
                                  args[k])
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8)
