"""Gradients through a loop nested in a scan's body when the nested loop writes a
variable (graph/control/interpret.py): the scan's backward pass takes the nested
loop's results from the forward pass and still differentiates through them (they
were constants to it before: a silent wrong gradient).

References: central differences of the same loops in numpy, and the eager gradient;
float32 and float64; the variable's final value is the forward pass's alone.
"""
import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference

DTYPES = [np.float32, np.float64]
FD = {np.float32: dict(rtol=3e-4, atol=3e-5), np.float64: dict(rtol=1e-6, atol=1e-8)}
INNER = 2


def make_loss(count):
    """A scan whose step runs a 2-step scan that adds one to ``count`` and scales its
    carry by it."""
    def loss(xs, w):
        def inner(c, _):
            count.assign_add(1.0)
            return c * count.read() * 0.1, ()

        def step(h, x):
            h2, _ = en.scan(inner, h + x, None, length=INNER)
            return en.sin(h2 * w + x), h
        return en.sum(en.scan(step, en.zeros(2, dtype=xs.dtype), xs)[0] ** 2)
    return loss


def np_loss(xs, w):
    h, count = np.zeros(2), 0.0
    for x in xs:
        c = h + x
        for _ in range(INNER):
            count += 1.0
            c = c * count * 0.1
        h = np.sin(c * w + x)
    return np.sum(h ** 2)


def _data(dtype):
    rng = np.random.default_rng(46)
    return rng.standard_normal((3, 4, 2)).astype(dtype), np.array([0.7, -0.4], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_through_a_nested_loop_that_writes_a_variable(dtype):
    X, w = _data(dtype)
    count = en.Variable(np.asarray(0.0, dtype), name="count", trainable=False)
    grads = en.grad(make_loss(count), argnums=(0, 1))
    x, x64, w64 = X[0], X[0].astype(np.float64), w.astype(np.float64)
    fd_x = central_difference(lambda v: np_loss(v, w64), x64)
    fd_w = central_difference(lambda v: np_loss(x64, v), w64)
    for f in (grads, en.function(grads)):
        count.assign(0.0)
        g_x, g_w = f(en.tensor(x), en.tensor(w))
        assert float(count.numpy()) == X.shape[1] * INNER   # the forward pass's writes only
        np.testing.assert_allclose(g_x.numpy(), fd_x, **FD[dtype])
        np.testing.assert_allclose(g_w.numpy(), fd_w, **FD[dtype])


def test_gradient_of_vmap_through_a_nested_loop_that_writes_a_variable():
    # vmap is one call: the steps write once for the whole batch.
    X, w = _data(np.float64)
    count = en.Variable(np.asarray(0.0), name="count", trainable=False)
    loss = make_loss(count)

    def total(X, w):
        return en.sum(en.vmap(loss, in_axes=(0, None))(X, w))
    want = central_difference(lambda v: sum(np_loss(x, v) for x in X), w)
    for f in (en.grad(total, argnums=1), en.function(en.grad(total, argnums=1))):
        count.assign(0.0)
        np.testing.assert_allclose(f(en.tensor(X), en.tensor(w)).numpy(), want, **FD[np.float64])
        assert float(count.numpy()) == X.shape[1] * INNER
