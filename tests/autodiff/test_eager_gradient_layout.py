"""Eager gradients of transposed matrices come out contiguous, and values are unchanged.

The matmul VJP makes the gradient of an input that is a transposed view as
``(y gᵀ)ᵀ`` (resp. ``(gᵀ x)ᵀ``), so that the transpose's own VJP hands back a
C-contiguous array. These tests check the values against numpy in float64 and
the layout of what the tape returns.
"""
import numpy as np
import pytest

import engine as en


def _tied_autoencoder_grad(x, w):
    """Gradient of sum((x W) Wᵀ)² w.r.t. W, by hand in float64."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    h = x64 @ w64
    gy = 2.0 * (h @ w64.T)
    return x64.T @ (gy @ w64) + (h.T @ gy).T


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_tied_weight_gradient_matches_numpy_and_is_contiguous(dtype, rtol):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 12)).astype(dtype)
    w = rng.standard_normal((12, 5)).astype(dtype)
    W = en.Variable(w)
    with en.GradientTape() as tape:
        y = en.matmul(en.matmul(x, W), en.transpose(W))
        loss = en.sum(y * y)
    g = tape.gradient(loss, W).numpy()
    np.testing.assert_allclose(g, _tied_autoencoder_grad(x, w), rtol=rtol,
                               atol=rtol * 10)
    assert g.flags.c_contiguous


@pytest.mark.parametrize("side", ["left", "right"])
def test_gradient_of_a_transposed_operand(side):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 4))          # used as aᵀ: (4, 6)
    b = rng.standard_normal((6, 3)) if side == "left" else rng.standard_normal((5, 4))
    A = en.Variable(a)
    with en.GradientTape() as tape:
        at = en.transpose(A)
        out = en.matmul(at, b) if side == "left" else en.matmul(b, at)
        loss = en.sum(out * out)
    g = tape.gradient(loss, A).numpy()
    if side == "left":                        # out = aᵀ b: d/da = b (2 out)ᵀ
        ref = b @ (2.0 * (a.T @ b)).T
    else:                                     # out = b aᵀ: d/da = (2 out)ᵀ b
        ref = (2.0 * (b @ a.T)).T @ b
    np.testing.assert_allclose(g, ref, rtol=1e-12)
    assert g.flags.c_contiguous


def test_second_order_through_a_transposed_operand():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 3))
    A = en.Variable(a)
    with en.GradientTape() as outer:
        with en.GradientTape() as inner:
            loss = en.sum(en.matmul(en.transpose(A), A) ** 2.0)   # ||aᵀa||²
        g = inner.gradient(loss, A)                               # 4 a aᵀ a
        s = en.sum(g)
    hvp = outer.gradient(s, A).numpy()
    # The reference: d/da of sum(4 a aᵀ a) by central finite differences.
    def f(m):
        return np.sum(4.0 * m @ m.T @ m)
    eps = 1e-6
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        fd[i] = (f(a + d) - f(a - d)) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6)


def test_traced_gradient_equals_eager():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    W = en.Variable(w)

    def grad(xb):
        with en.GradientTape() as tape:
            y = en.sigmoid(en.matmul(en.sigmoid(en.matmul(xb, W)), en.transpose(W)))
            loss = en.mean(en.square(y - xb))
        return tape.gradient(loss, W)
    eager = grad(en.tensor(x)).numpy()
    traced = en.function(grad)(en.tensor(x)).numpy()
    np.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("n", [3, 5000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reciprocal_and_sigmoid_equal_numpy_bit_for_bit(n, dtype):
    # Large arrays take divide(1, x), small ones np.reciprocal: both exact.
    x = (np.random.default_rng(4).standard_normal(n) * 20).astype(dtype)
    np.testing.assert_array_equal(en.reciprocal(x).numpy(), np.reciprocal(x))
    with np.errstate(over="ignore"):
        ref = np.reciprocal(np.exp(-x) + dtype(1))
    np.testing.assert_array_equal(en.sigmoid(x).numpy(), ref)


def test_mean_gradient_is_one_over_count_everywhere():
    x = en.Variable(np.arange(12.0).reshape(3, 4))
    with en.GradientTape() as tape:
        loss = en.mean(x, axis=1)
    g = tape.gradient(loss, x).numpy()
    np.testing.assert_array_equal(g, np.full((3, 4), 0.25))
