"""The C window kernels (graph/lowering/c/c_window.py) behind max pooling, im2col and
col2im, against loops over windows in float64 and finite differences: strides, padding,
dilation, ceil_mode, float32 and float64, ties and NaN."""
import itertools

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import hot_swap
from engine.graph.lowering.c import c_compiler, c_window
from engine.ops import native
from support.compilers import unbuilt
from support.finite_diff import numeric_grad
from support.window_reference import check_strided_conv_gradients, loop_conv

pytestmark = pytest.mark.skipif(not c_window.installed(), reason="no C compiler")

POOLS = [  # pool_size, strides, padding, dilation, ceil_mode
    ((2, 2), (2, 2), "valid", (1, 1), False),
    ((3, 3), (1, 1), "same", (1, 1), False),
    ((3, 2), (2, 1), ((1, 1), (0, 1)), (1, 1), False),
    ((3, 3), (2, 2), "valid", (2, 1), True),
    ((2, 2), (2, 2), "same", (1, 1), True),
]


def _pool_windows(x, pool, strides, padding, dilation, ceil_mode):
    """Per output position, the flat positions (into (H, W), -1 at a pad) of its taps,
    in row-major tap order, from the op's own geometry."""
    (oh, ow), pads = en.ops.conv._spatial("t", x.shape[1:3], pool, strides, padding, [],
                                          dilation, ceil_mode)
    h, w = x.shape[1:3]
    taps = np.full((oh, ow, pool[0] * pool[1]), -1)
    for i, j, a, b in itertools.product(range(oh), range(ow), range(pool[0]), range(pool[1])):
        r = i * strides[0] + a * dilation[0] - pads[0][0]
        c = j * strides[1] + b * dilation[1] - pads[1][0]
        if 0 <= r < h and 0 <= c < w:
            taps[i, j, a * pool[1] + b] = r * w + c
    return taps


def _loop_pool(x, g, *params):
    """Max pooling and its gradient, window by window: the first largest (or first NaN)."""
    n, h, w, c = x.shape
    taps = _pool_windows(x, *params)
    flat = x.reshape(n, h * w, c).astype(np.float64)
    out = np.empty((n,) + taps.shape[:2] + (c,))
    dx = np.zeros((n, h * w, c))
    for k, i, j, ch in itertools.product(range(n), range(taps.shape[0]), range(taps.shape[1]),
                                         range(c)):
        vals = np.array([flat[k, t, ch] if t >= 0 else -np.inf for t in taps[i, j]])
        best = int(np.argmax(vals))          # numpy's argmax: the first NaN, else first max
        out[k, i, j, ch] = vals[best]
        if taps[i, j, best] >= 0:
            dx[k, taps[i, j, best], ch] += g[k, i, j, ch]
    return out, dx.reshape(x.shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("params", POOLS)
def test_max_pool_and_its_gradient_match_a_window_loop(dtype, params):
    rng = np.random.default_rng(len(str(params)))
    x = rng.standard_normal((2, 7, 6, 3)).astype(dtype)
    x[0, :4, :4, 0] = 0.0                                 # ties: the first tap wins
    x[1, 2, 3, 1] = -np.inf
    pool, strides, padding, dilation, ceil_mode = params
    kw = dict(strides=strides, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    xt = en.tensor(x)
    out = en.max_pool2d(xt, pool, **kw)
    g = rng.standard_normal(out.shape).astype(dtype)
    want_out, want_dx = _loop_pool(x, g, pool, strides, padding, dilation, ceil_mode)
    np.testing.assert_array_equal(out.numpy(), want_out.astype(dtype))
    dx = en.grad(lambda t: en.sum(en.max_pool2d(t, pool, **kw) * en.tensor(g)))(xt)
    assert dx.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dx.numpy(), want_dx, rtol=tol, atol=tol)


def test_a_nan_wins_its_window_and_takes_the_gradient():
    x = np.arange(32.0).reshape(1, 4, 4, 2)
    x[0, 1, 0, 0] = np.nan
    g = np.ones((1, 2, 2, 2))
    params = ((2, 2), (2, 2), "valid", (1, 1), False)
    want_out, want_dx = _loop_pool(x, g, *params)
    got = en.max_pool2d(en.tensor(x), 2)
    np.testing.assert_array_equal(got.numpy(), want_out)
    dx = en.ops.pooling.max_pool2d_grad_op.impl(x, g, pool_size=(2, 2), strides=(2, 2),
                                                 padding="valid")
    np.testing.assert_array_equal(dx, want_dx)
    assert dx[0, 1, 0, 0] == 1.0 and dx[0, 1, 1, 0] == 0.0


def test_max_pool_gradient_matches_finite_differences_with_overlapping_windows():
    rng = np.random.default_rng(5)
    x = rng.permutation(2 * 6 * 5 * 2).reshape(2, 6, 5, 2) / 7.0     # no ties
    c = rng.standard_normal((2, 6, 5, 2))

    def loss(t):
        return en.sum(en.max_pool2d(t, 3, strides=1, padding="same") * en.tensor(c))
    np.testing.assert_allclose(en.grad(loss)(en.tensor(x)).numpy(),
                               numeric_grad(loss, (x,), 0), rtol=1e-6, atol=1e-7)


def test_gather_reads_each_window_maximum():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 5, 5, 3))
    u = rng.standard_normal((2, 5, 5, 3))
    params = dict(pool_size=(3, 3), strides=(2, 2), padding=((1, 1), (1, 1)), dilation=(1, 1),
                  ceil_mode=False)
    taps = _pool_windows(x, (3, 3), (2, 2), params["padding"], (1, 1), False)
    got = en.ops.pooling.max_pool2d_gather_op.impl(x, u, **params)
    for k, i, j, ch in itertools.product(range(2), range(3), range(3), range(3)):
        vals = [x[k].reshape(-1, 3)[t, ch] if t >= 0 else -np.inf for t in taps[i, j]]
        assert got[k, i, j, ch] == u[k].reshape(-1, 3)[taps[i, j][np.argmax(vals)], ch]


CONVS = [  # input channels, output channels, kernel, strides, pads, dilation
    (1, 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (16, 32, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    (4, 3, (3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2)),
    (3, 5, (3, 3), (2, 2), ((2, 2), (2, 2)), (2, 2)),
    (5, 7, (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("c,o,k,strides,pads,dilation", CONVS)
def test_conv_and_both_gradients_match_a_window_loop(dtype, c, o, k, strides, pads, dilation):
    rng = np.random.default_rng(c * 10 + o)
    x = rng.standard_normal((2, 9, 8, c)).astype(dtype)
    w = rng.standard_normal(k + (c, o)).astype(dtype)
    kw = dict(stride=strides, padding=pads, dilation=dilation)
    out = en.conv2d(en.tensor(x), en.tensor(w), **kw)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(out.numpy(), loop_conv(x, w, strides, pads, dilation),
                               rtol=tol, atol=tol)
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = en.ops.conv2d_backprop_input(en.tensor(g), en.tensor(w), (9, 8), **kw).numpy()
    dw = en.ops.conv2d_backprop_filter(en.tensor(x), en.tensor(g), k, **kw).numpy()
    # The adjoint identities: <conv(x, w), g> = <x, dx> = <w, dw>, and each against the loop.
    ref = float(np.sum(loop_conv(x, w, strides, pads, dilation) * g))
    assert dx.dtype == dtype and dw.dtype == dtype
    np.testing.assert_allclose(float(np.sum(x.astype(np.float64) * dx)), ref, rtol=tol * 10)
    np.testing.assert_allclose(float(np.sum(w.astype(np.float64) * dw)), ref, rtol=tol * 10)
    basis = np.zeros_like(x)
    for idx in [(0, 0, 0, 0), (1, 4, 3, c - 1), (0, 8, 7, 0)]:
        basis[...] = 0
        basis[idx] = 1
        col = float(np.sum(loop_conv(basis, w, strides, pads, dilation) * g))
        np.testing.assert_allclose(dx[idx], col, rtol=tol * 10, atol=tol * 10)


def test_conv_gradients_match_finite_differences():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 6, 5, 3))
    w = rng.standard_normal((3, 3, 3, 4))
    c = rng.standard_normal((2, 3, 3, 4))
    check_strided_conv_gradients(x, w, c)


def test_the_numpy_lowering_keeps_numpy_kernels():
    assert native.kernel("col2im", np.float32) is not None
    before = en.config.lowering
    try:
        en.config.lowering = "numpy"
        assert native.kernel("col2im", np.float32) is None
    finally:
        en.config.lowering = before
    assert native.kernel("col2im", np.int32) is None      # float32 and float64 only


def test_a_traced_cnn_step_matches_numpys_kernels():
    """Forward and gradient in en.function (C kernels writing into the graph's buffers)
    against eager mode on numpy's kernels, float64."""
    rng = np.random.default_rng(12)
    x = en.tensor(rng.standard_normal((4, 12, 12, 1)))
    params = (en.tensor(rng.standard_normal((3, 3, 1, 4))), en.tensor(rng.standard_normal(4)),
              en.tensor(rng.standard_normal((3, 3, 4, 6))))

    def loss(p, images):
        w1, b1, w2 = p
        a = en.max_pool2d(en.relu(en.conv2d(images, w1, padding="same") + b1), 2)
        a = en.max_pool2d(en.relu(en.conv2d(a, w2, padding="same")), 3, strides=2,
                          padding="same")
        return en.sum(a * a)
    step = en.value_and_grad(loss)
    traced = en.function(step)
    for _ in range(2):                                  # the second call reuses buffers
        got_loss, got_grads = traced(params, x)
    before = en.config.lowering
    try:
        en.config.lowering = "numpy"
        want_loss, want_grads = step(params, x)
    finally:
        en.config.lowering = before
    np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-12)
    for got, want in zip(got_grads, want_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_a_library_not_on_disk_builds_in_the_background(monkeypatch, tmp_path):
    """An empty cache: the first call runs numpy's kernels while the library compiles on
    the background compile thread; once built, the C kernel runs and agrees."""
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(c_compiler, "_LOADED", {})
    unbuilt(monkeypatch, c_window.LIBRARY)
    x = np.random.default_rng(3).standard_normal((2, 6, 6, 3)).astype(np.float32)
    geo = (2, 6, 6, 3, 3, 3, 2, 2, 2, 2, 1, 1, 0, 0)
    assert c_window.max_pool2d(x, geo) is None            # compiling: numpy's turn
    hot_swap.wait_for_compiles()
    got = c_window.max_pool2d(x, geo)
    np.testing.assert_array_equal(got, x.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4)))
    assert c_compiler.is_cached(c_window.SOURCES[np.dtype(np.float32)])
