"""max pooling's gradient and its adjoint computed one window tap at a time
(engine/ops/max_pool_taps.py): against a per-window numpy loop, finite differences and
the flat-index kernels they replaced (on ties, NaN, padding, dilation, ceil_mode)."""
import itertools

import numpy as np
import pytest

import engine as en
from engine.ops import pooling
from support.finite_diff import central_difference

# (pool_size, strides, padding, dilation, ceil_mode)
GEOMETRIES = [((2, 2), (2, 2), "valid", (1, 1), False),
              ((3, 3), (1, 1), "valid", (1, 1), False),        # overlapping windows
              ((3, 2), (2, 1), ((1, 1), (1, 0)), (1, 1), False),
              ((2, 2), (2, 2), "valid", (1, 1), True),           # ceil_mode's extra pads
              ((2, 2), (1, 2), "valid", (2, 1), False),          # dilation
              ((3, 3), (2, 2), "same", (1, 1), False)]


def _params(geometry):
    pool, strides, padding, dilation, ceil_mode = geometry
    return dict(pool_size=pool, strides=strides, padding=padding, dilation=dilation,
                ceil_mode=ceil_mode)


def _loop_grad(x, g, pool_size, strides, padding, dilation, ceil_mode):
    """Window by window: the cotangent goes to the first maximum in row-major order."""
    (oh, ow), pads = pooling._geometry(x.shape[1:3], pool_size, strides, padding, dilation,
                                       ceil_mode)
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)),
                constant_values=-np.inf)
    dxp = np.zeros_like(xp)
    for n, i, j, c in itertools.product(range(x.shape[0]), range(oh), range(ow),
                                        range(x.shape[3])):
        taps = [(i * strides[0] + a * dilation[0], j * strides[1] + b * dilation[1])
                for a in range(pool_size[0]) for b in range(pool_size[1])]
        best = max(range(len(taps)), key=lambda k: (xp[n, taps[k][0], taps[k][1], c], -k))
        r, s = taps[best]
        dxp[n, r, s, c] += g[n, i, j, c]
    h, w = x.shape[1:3]
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + w]


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_with_many_ties_matches_a_window_loop_and_the_flat_kernel(geometry, dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(2, 7, 6, 3)).astype(dtype)     # ties in most windows
    p = _params(geometry)
    out = en.max_pool2d(en.tensor(x), p["pool_size"], p["strides"], p["padding"],
                        p["dilation"], p["ceil_mode"])
    g = rng.standard_normal(out.shape).astype(dtype)
    got = en.ops.pooling.max_pool2d_grad_op.impl(x, g, **p)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_allclose(got, _loop_grad(x, g, **p), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, pooling.pool_grad_flat(x, g, **p), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_gather_matches_the_flat_kernel_on_ties(geometry):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, size=(2, 7, 6, 2)).astype(np.float64)
    u = rng.standard_normal(x.shape)
    p = _params(geometry)
    got = en.ops.pooling.max_pool2d_gather_op.impl(x, u, **p)
    np.testing.assert_array_equal(got, pooling.gather_flat(x, u, **p))


@pytest.mark.parametrize("geometry", GEOMETRIES[:3])
def test_gradient_matches_finite_differences(geometry):
    rng = np.random.default_rng(2)
    x = rng.permutation(2 * 6 * 5 * 2).reshape(2, 6, 5, 2) * 0.1    # distinct values
    p = _params(geometry)
    args = (p["pool_size"], p["strides"], p["padding"], p["dilation"], p["ceil_mode"])
    c = rng.standard_normal(en.max_pool2d(en.tensor(x), *args).shape)

    def loss(t):
        return en.sum(en.max_pool2d(t, *args) * c)
    got = en.grad(loss)(en.tensor(x)).numpy()
    want = central_difference(lambda a: loss(en.tensor(a)).numpy(), x, eps=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    traced = en.function(en.grad(loss))(en.tensor(x)).numpy()
    np.testing.assert_allclose(traced, got, rtol=1e-12)


def test_nan_windows_fall_back_to_the_flat_kernel():
    x = np.arange(32.0).reshape(1, 4, 4, 2)
    x[0, 1, 0, 0] = np.nan
    g = np.ones((1, 2, 2, 2))
    p = _params(GEOMETRIES[0])
    got = en.ops.pooling.max_pool2d_grad_op.impl(x, g, **p)
    np.testing.assert_array_equal(got, pooling.pool_grad_flat(x, g, **p))
    assert got[0, 1, 0, 0] == 1.0          # the NaN is the window's maximum, as argmax says


def test_second_order_gradient_through_the_gather():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 4, 1))

    def f(t):
        return en.sum(en.max_pool2d(t * t, 2) ** 2.0)
    hess_diag = en.grad(lambda t: en.sum(en.grad(f)(t)))(en.tensor(x)).numpy()
    want = central_difference(lambda a: en.sum(en.grad(f)(en.tensor(a))).numpy(), x, eps=1e-5)
    np.testing.assert_allclose(hess_diag, want, rtol=1e-5, atol=1e-6)
