"""A stack of matrices times one matrix (a layer's weight applied to a batch of
sequences): the kernel computes it as one product of the stack's rows, and the weight's
gradient is one product over every row, not a product per matrix summed after. Checked
against float64 references (einsum) and finite differences."""
import numpy as np
import pytest

import engine as en
from engine.ops.linalg import matmul_op
from support.finite_diff import central_difference


def _data(shape_x, shape_y, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape_x).astype(dtype), rng.standard_normal(shape_y).astype(dtype)


@pytest.mark.parametrize("shape_x", [(3, 5, 4), (2, 3, 5, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_kernels_match_the_float64_product(shape_x, dtype):
    x, y = _data(shape_x, (4, 6), dtype)
    want = np.einsum("...k,kn->...n", x.astype(np.float64), y.astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    got = matmul_op.impl(x, y)
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    out = np.empty(want.shape, dtype)
    assert matmul_op.out_impl(x, y, out) is out
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    # The weight held transposed (a view), the stack strided: the same products.
    yt = np.ascontiguousarray(y.T).T
    np.testing.assert_allclose(matmul_op.out_impl(x, yt, out), want, rtol=tol, atol=tol)
    strided = np.swapaxes(np.ascontiguousarray(np.swapaxes(x, 0, 1)), 0, 1)
    np.testing.assert_allclose(matmul_op.impl(strided, y), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape_x", [(3, 5, 4), (2, 3, 5, 4), (0, 5, 4)])
def test_weight_gradient_matches_the_closed_form_and_finite_differences(shape_x):
    x, y = _data(shape_x, (4, 6))
    w = np.random.default_rng(1).standard_normal(shape_x[:-1] + (6,))

    def loss(a, b):
        return en.sum((a @ b) * w)
    gx, gy = en.grad(loss, argnums=(0, 1))(en.tensor(x), en.tensor(y))
    lead = tuple(range(x.ndim - 1))
    np.testing.assert_allclose(gy.numpy(), np.tensordot(x, w, axes=(lead, lead)), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), np.einsum("...mn,kn->...mk", w, y), rtol=1e-12,
                               atol=1e-12)
    if x.size:
        want = central_difference(lambda b: np.sum(np.einsum("...k,kn->...n", x, b) * w), y)
        np.testing.assert_allclose(gy.numpy(), want, rtol=1e-6, atol=1e-7)
    traced = en.function(en.grad(loss, argnums=1))(en.tensor(x), en.tensor(y))
    np.testing.assert_allclose(traced.numpy(), gy.numpy(), rtol=1e-12, atol=1e-12)


def test_the_traced_weight_gradient_is_one_product_over_the_rows():
    x, y = _data((8, 16, 4), (4, 6), np.float32)

    def loss(b):
        return en.sum(en.tanh(en.tensor(x) @ b))
    graph = en.function(en.grad(loss), optimize=False).graph_for(en.tensor(y))
    products = [n for n in graph.nodes if n.op is matmul_op]
    shapes = sorted(tuple(n.shape) for n in products)
    # The forward (8, 16, 6) product, then the gradient (4, 6) from (128, 4)^T @ (128, 6).
    assert shapes == [(4, 6), (8, 16, 6)], shapes
    grad = next(n for n in products if tuple(n.shape) == (4, 6))
    assert [tuple(i.shape) for i in grad.inputs] == [(4, 128), (128, 6)]
