"""A compiled function called under an eager tape saves what its backward reads.

After three backward passes the backward graph is split (``graph/jit/residuals.py``):
later calls return the values it reads, and the backward no longer repeats the
forward's products. Gradients are checked against the same Python function run
eagerly under a tape (an independent path: no graph, no split) and against
closed forms; the tape's in-place sums against numpy.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.ir.graph_ops import placeholder_op

RNG = np.random.default_rng(0)


def _gru(h, x, p):
    wz, uz, wh, uh, b = p
    z = en.sigmoid(x @ wz + h @ uz + b)
    c = en.tanh(x @ wh + (z * h) @ uh)
    return (1.0 - z) * h + z * c


def _params(n=6, f=5):
    shapes = [(f, n), (n, n), (f, n), (n, n), (n,)]
    return tuple(en.tensor(RNG.standard_normal(s) * 0.5) for s in shapes)


def _loop_grads(cell, p, xs, h0, watch_h0=False):
    with en.GradientTape() as tape:
        tape.watch(list(p))
        if watch_h0:
            tape.watch(h0)
        h, loss = h0, 0.0
        for x in xs:
            h = cell(h, x, p)
            loss = loss + en.sum(h * h)
    return tape.gradient(loss, list(p) + ([h0] if watch_h0 else []))


def _matmuls(concrete):
    return sum(1 for n in concrete.graph.nodes if n.op.name == "matmul")


def test_cell_in_an_eager_loop_matches_eager_before_and_after_the_split():
    p = _params()
    xs = [en.tensor(RNG.standard_normal((3, 5))) for _ in range(4)]
    h0 = en.tensor(RNG.standard_normal((3, 6)))
    cell = en.function(_gru)
    want = _loop_grads(_gru, p, xs, h0, watch_h0=True)
    for call in range(3):     # call 0 recomputes, later calls use the saved values
        got = _loop_grads(cell, p, xs, h0, watch_h0=True)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
    concrete = cell.get_concrete_function(h0, xs[0], p)
    assert concrete._saving, "the backward graph was not split"


def test_the_split_backward_does_not_repeat_the_forward_products():
    f = en.function(lambda x, w: en.sum(en.tanh(x @ w)))
    x, w = en.tensor(RNG.standard_normal((4, 3))), en.tensor(RNG.standard_normal((3, 2)))
    for _ in range(4):
        with en.GradientTape() as tape:
            tape.watch([x, w])
            y = f(x, w)
        gx, gw = tape.gradient(y, [x, w])
    t = 1.0 - np.tanh(x.numpy() @ w.numpy()) ** 2          # the closed form
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ t, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), t @ w.numpy().T, rtol=1e-12)
    concrete = f.get_concrete_function(x, w)
    recompute = concrete.backward_function((True, True)).get_concrete_function(
        x, w, *[en.ones(o.shape, dtype=o.dtype) for o in concrete.graph.outputs])
    split = concrete._saving.backward_function((True, True))
    (split_concrete,) = split._cache.values()
    assert _matmuls(recompute) == 3       # x @ w again, then the two gradient products
    assert _matmuls(split_concrete) == 2  # the two gradient products only
    saved = [n for n in split_concrete.graph.inputs if n.op is placeholder_op]
    assert len(saved) > len(recompute.graph.inputs)   # it takes the saved values


def test_only_the_gradients_asked_for_are_computed_after_the_split():
    p = _params()
    x = en.tensor(RNG.standard_normal((3, 5)))
    h = en.tensor(RNG.standard_normal((3, 6)))
    cell = en.function(_gru)
    for watch_h in (True, False, True, False, True):   # two choices of gradients, one split
        got = _loop_grads(cell, p, [x], h, watch_h0=watch_h)
        want = _loop_grads(_gru, p, [x], h, watch_h0=watch_h)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)


def test_variables_read_and_assigned_in_the_function():
    w = en.Variable(RNG.standard_normal((3, 2)), name="w")
    steps = en.Variable(0.0, name="steps", trainable=False)

    @en.function
    def f(x):
        steps.assign_add(1.0)
        return en.sum(en.sin(x @ w) * steps)

    x = en.tensor(RNG.standard_normal((4, 3)))
    for call in range(1, 4):
        with en.GradientTape() as tape:
            y = f(x)
        (gw,) = tape.gradient(y, [w])
        a = x.numpy() @ w.numpy()
        np.testing.assert_allclose(gw.numpy(), x.numpy().T @ (np.cos(a) * call), rtol=1e-12)
    assert float(steps) == 3.0


def test_random_draws_are_not_redrawn_by_the_saved_backward():
    gen = en.random.Generator(3)

    @en.function
    def f(x):
        mask = gen.uniform((4, 3)) > 0.5
        return en.sum(en.where(mask, en.exp(x), 0.0)), mask

    x = en.tensor(RNG.standard_normal((4, 3)))
    for _ in range(5):
        with en.GradientTape() as tape:
            tape.watch(x)
            y, mask = f(x)
        g = tape.gradient(y, x)
        np.testing.assert_allclose(g.numpy(), np.where(mask.numpy(), np.exp(x.numpy()), 0.0))


def test_control_flow_inside_the_saved_function():
    @en.function
    def f(x, w):
        def body(h, row):
            h = en.tanh(h * w + row)
            return h, h
        _, hs = en.scan(body, en.zeros_like(x[0]), x)
        return en.sum(hs * hs)

    x, w = en.tensor(RNG.standard_normal((5, 3))), en.tensor(RNG.standard_normal(3))

    def eager(x, w):
        h, total = np.zeros(3), 0.0
        for row in x:
            h = np.tanh(h * w + row)
            total += np.sum(h * h)
        return total
    eps = 1e-6
    want = np.array([(eager(x.numpy(), w.numpy() + eps * e) - eager(x.numpy(), w.numpy() - eps * e))
                     / (2 * eps) for e in np.eye(3)])
    for _ in range(5):
        with en.GradientTape() as tape:
            tape.watch(w)
            y = f(x, w)
        np.testing.assert_allclose(tape.gradient(y, w).numpy(), want, rtol=1e-6, atol=1e-8)


def test_higher_order_gradients_through_a_saved_call():
    f = en.function(lambda x: en.sum(en.sin(x) * x))
    x = en.tensor(RNG.standard_normal(4))
    for _ in range(5):
        with en.GradientTape() as outer:
            outer.watch(x)
            with en.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            g = inner.gradient(y, x)
            s = en.sum(g)
        h = outer.gradient(s, x)
        v = x.numpy()
        np.testing.assert_allclose(g.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-12)
        np.testing.assert_allclose(h.numpy(), 2 * np.cos(v) - v * np.sin(v), rtol=1e-12)


def test_in_place_sums_leave_seeds_and_shared_cotangents_alone():
    x = en.tensor(RNG.standard_normal((3, 3)))
    seed = en.tensor(np.ones((3, 3)))
    seed_copy = seed.numpy().copy()
    with en.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x + x            # add's VJP hands the same cotangent to both of its inputs
        z = y * 2.0 + y * 3.0 + en.sin(y)
        w = x * 4.0
    gx, gy = tape.gradient([z, w], [x, y], output_gradients=[seed, seed])
    np.testing.assert_array_equal(seed.numpy(), seed_copy)
    want_y = 5.0 + np.cos(2 * x.numpy())
    np.testing.assert_allclose(gy.numpy(), want_y, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), 2 * want_y + 4.0, rtol=1e-12)
    # the same tape again: sums are made afresh, earlier results unchanged
    gx2 = tape.gradient([z, w], x, output_gradients=[seed, seed])
    np.testing.assert_allclose(gx.numpy(), 2 * want_y + 4.0, rtol=1e-12)
    np.testing.assert_allclose(gx2.numpy(), gx.numpy(), rtol=0)


@pytest.mark.parametrize("steps", [1, 7])
def test_a_weight_used_every_step_sums_its_contributions(steps):
    w = en.tensor(RNG.standard_normal((4, 4)) * 0.3)
    x = RNG.standard_normal((2, 4))
    with en.GradientTape() as tape:
        tape.watch(w)
        h = en.tensor(x)
        for _ in range(steps):
            h = h @ w
        loss = en.sum(h)
    g = tape.gradient(loss, w).numpy()
    # d/dw of sum(x w^k) = sum_j (x w^j)^T 1 (w^(k-1-j))^T
    W, want = w.numpy(), np.zeros((4, 4))
    for j in range(steps):
        left = x @ np.linalg.matrix_power(W, j)
        right = np.ones((2, 4)) @ np.linalg.matrix_power(W, steps - 1 - j).T
        want += left.T @ right
    np.testing.assert_allclose(g, want, rtol=1e-10)


def test_a_function_with_an_input_signature_serves_every_shape_under_a_tape():
    f = en.function(lambda x: en.sum(en.reshape(x, (-1,)) ** 2.0) * en.mean(x),
                    input_signature=[en.TensorSpec((None, 3), "float64")])
    for rows in (2, 5, 2, 4):
        x = en.tensor(RNG.standard_normal((rows, 3)))
        for _ in range(2):
            with en.GradientTape() as tape:
                tape.watch(x)
                y = f(x)
            v = x.numpy()
            want = 2 * v * v.mean() + np.sum(v ** 2) / v.size
            np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-12)


def test_a_split_that_fails_leaves_the_recomputing_backward(monkeypatch):
    import engine.graph.jit.concrete as concrete_module

    def broken(*args):
        raise RuntimeError("cannot split")
    monkeypatch.setattr(concrete_module, "split_backward", broken)
    f = en.function(lambda x: en.sum(en.exp(x) * x))
    x = en.tensor(RNG.standard_normal(3))
    for _ in range(3):
        with en.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        v = x.numpy()
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.exp(v) * (v + 1), rtol=1e-12)
    concrete = f.get_concrete_function(x)
    assert concrete._saving is False and "cannot split" in concrete.split_error
