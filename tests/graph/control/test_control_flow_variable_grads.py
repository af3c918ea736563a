"""Gradients with respect to variables read inside control-flow bodies, in graphs.

A variable read inside a traced ``scan``, ``cond`` or converted ``if`` body used
to be invisible to the tape of the enclosing trace: its gradient came back None
in graph mode while eager mode gave the right one. References: the same code run
eagerly, and central finite differences of a numpy version of the model.
"""
import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference

XS = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, 0.1]])
W0 = np.array([0.5, -0.3])


def _rnn_numpy(w, xs):
    h, total = np.zeros(2), 0.0
    for x in xs:
        h = np.tanh(h * w + x)
        total += h.sum()
    return total


def _rnn(w, xs):
    def step(h, x):
        h = en.tanh(h * w + x)
        return h, h
    _, ys = en.scan(step, en.zeros((2,), dtype="float64"), xs)
    return en.sum(ys)


def _gradient_inside(loss_fn):
    """``tape.gradient(loss, [w])`` computed eagerly and inside an en.function."""
    w = en.Variable(W0.copy())

    def grads(xs):
        with en.GradientTape() as tape:
            loss = loss_fn(w, xs)
        return tape.gradient(loss, [w])[0]

    xs = en.tensor(XS)
    eager = grads(xs)
    graph = en.function(grads)(xs)
    return eager, graph


def test_variable_read_in_a_scan_body_gets_its_gradient_in_a_graph():
    eager, graph = _gradient_inside(_rnn)
    want = central_difference(lambda w: _rnn_numpy(w, XS), W0)
    assert graph is not None
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(graph.numpy(), want, rtol=1e-6)


def test_variable_read_in_nested_scans_gets_its_gradient_in_a_graph():
    def loss(w, xs):
        def outer(c, x):
            inner_c, _ = en.scan(lambda a, b: (en.tanh(a * w + b), a), c, en.stack([x, x * 0.5]))
            return inner_c, en.sum(inner_c)
        _, ys = en.scan(outer, en.zeros((2,), dtype="float64"), xs)
        return en.sum(ys)

    def loss_numpy(w):
        c, total = np.zeros(2), 0.0
        for x in XS:
            for b in (x, x * 0.5):
                c = np.tanh(c * w + b)
            total += c.sum()
        return total

    eager, graph = _gradient_inside(loss)
    want = central_difference(loss_numpy, W0)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(graph.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_variable_read_in_a_cond_branch_gets_its_gradient_in_a_graph(sign):
    def loss(w, xs):
        s = en.sum(xs) * sign
        return en.cond(s > 0, lambda: en.sum(en.tanh(xs * w)), lambda: en.sum(xs * w * w))

    def loss_numpy(w):
        if XS.sum() * sign > 0:
            return np.tanh(XS * w).sum()
        return (XS * w * w).sum()

    eager, graph = _gradient_inside(loss)
    want = central_difference(loss_numpy, W0)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(graph.numpy(), want, rtol=1e-6)


def test_variable_read_in_a_converted_if_gets_its_gradient_in_a_graph():
    def loss(w, xs):
        if en.sum(xs) > 0:          # a tensor condition: converted to a cond
            y = en.sum(en.tanh(xs * w))
        else:
            y = en.sum(xs * w)
        return y

    eager, graph = _gradient_inside(loss)
    want = central_difference(lambda w: np.tanh(XS * w).sum(), W0)
    np.testing.assert_allclose(graph.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-6)


def test_a_tape_outside_the_function_sees_the_variable_read_in_the_scan():
    w = en.Variable(W0.copy())
    f = en.function(lambda xs: _rnn(w, xs))
    with en.GradientTape() as tape:
        loss = f(en.tensor(XS))
    (g,) = tape.gradient(loss, [w])
    want = central_difference(lambda v: _rnn_numpy(v, XS), W0)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)


def test_a_variable_the_body_assigns_is_still_read_inside_each_step():
    # Each step must see the previous step's write: the read stays in the body.
    v = en.Variable(np.array(1.0))

    def accumulate(xs):
        def step(c, x):
            v.assign(v * 2.0 + x)
            return c + v.read(), c
        total, _ = en.scan(step, en.tensor(0.0), xs)
        return total

    xs = np.array([1.0, 0.0, -1.0])
    got = float(en.function(accumulate)(en.tensor(xs)))
    want_v, want_total = 1.0, 0.0
    for x in xs:
        want_v = want_v * 2.0 + x
        want_total += want_v
    assert got == want_total
    assert float(v.read()) == want_v
