"""The direct C convolution loops (graph/lowering/c/c_window.py: conv_direct and
conv_filter_direct, chosen by engine/ops/conv.py where a window holds at most
cost.conv_direct_max_taps values) and the max-pool gradient's store form for windows
that never overlap, against window loops in float64, the im2col kernels and finite
differences: strides, padding, dilation, output counts off the vector width, float32
and float64."""
import itertools

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import hot_swap
from engine.graph.lowering.c import c_pool, c_window
from engine.ops import batch_split, conv, pooling
from support.window_reference import check_strided_conv_gradients, loop_conv

pytestmark = pytest.mark.skipif(not c_window.installed(), reason="no C compiler")

CASES = [  # (N, H, W, C, O, kernel, strides, padding, dilation)
    (3, 9, 8, 1, 16, (3, 3), (1, 1), "same", (1, 1)),        # one channel, one vector
    (2, 7, 9, 3, 5, (3, 3), (1, 1), "same", (1, 1)),         # O below the vector width
    (2, 8, 7, 4, 37, (3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2)),  # 2 vectors and a tail
    (2, 10, 9, 2, 32, (2, 2), (1, 2), "valid", (2, 1)),
    (1, 6, 11, 16, 33, (3, 3), (2, 2), "same", (1, 1)),      # 13 pixels: blocks of 8 and 5
    (2, 8, 7, 17, 20, (3, 2), (1, 1), ((1, 0), (1, 0)), (1, 1)),  # input gradient: 1 + tail
]


def _pads(case):
    n, h, w, c, o, khw, strides, padding, dilation = case
    return conv._spatial("t", (h, w), khw, strides, padding, [], dilation)[1]


def _loop_filter_grad(x, g, khw, strides, pads, dilation):
    """Each filter tap's sum over the windows of input times cotangent, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    oh, ow = g.shape[1:3]
    dw = np.zeros((*khw, x.shape[3], g.shape[3]))
    for a, b in itertools.product(range(khw[0]), range(khw[1])):
        r, c = a * dilation[0], b * dilation[1]
        taps = xp[:, r:r + strides[0] * (oh - 1) + 1:strides[0],
                  c:c + strides[1] * (ow - 1) + 1:strides[1]]
        dw[a, b] = np.einsum("nhwc,nhwo->co", taps, g.astype(np.float64))
    return dw


def _loop_input_grad(g, w, x_shape, strides, pads, dilation):
    """Each window's cotangent times the filters added back at its taps, in float64."""
    n, h, wd, c = x_shape
    kh, kw = w.shape[:2]
    dxp = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c))
    for i, j, a, b in itertools.product(range(g.shape[1]), range(g.shape[2]), range(kh),
                                        range(kw)):
        r, s = i * strides[0] + a * dilation[0], j * strides[1] + b * dilation[1]
        dxp[:, r, s] += g[:, i, j].astype(np.float64) @ w[a, b].astype(np.float64).T
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]


@pytest.fixture
def direct(monkeypatch):
    """The direct loops for every convolution here, partial vector blocks included (the
    ops leave those to im2col: their scalar loop is slow, not wrong)."""
    monkeypatch.setattr(c_window.conv_direct, "block", 1)
    with en.config.cost.override(conv_direct_max_taps=1 << 20,
                                 conv_direct_filter_max_sums=1 << 30):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_direct_loops_match_window_loops(case, dtype, direct):
    n, h, w, c, o, khw, strides, padding, dilation = case
    rng = np.random.default_rng(o)
    x = rng.standard_normal((n, h, w, c)).astype(dtype)
    f = rng.standard_normal((*khw, c, o)).astype(dtype)
    pads = _pads(case)
    p = dict(strides=strides, padding=padding, dilation=dilation, groups=1)
    out = conv._conv2d_impl(x, f, **p)
    want = loop_conv(x, f, strides, pads, dilation)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    assert out.dtype == dtype
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    g = rng.standard_normal(out.shape).astype(dtype)
    dw = conv._bp_filter_impl(x, g, kernel_hw=khw, **p)
    assert dw.dtype == dtype
    np.testing.assert_allclose(dw, _loop_filter_grad(x, g, khw, strides, pads, dilation),
                               rtol=tol * 5, atol=tol * 5)
    dx = conv._bp_input_impl(g, f, input_hw=(h, w), **p)
    assert dx.dtype == dtype
    np.testing.assert_allclose(dx, _loop_input_grad(g, f, x.shape, strides, pads, dilation),
                               rtol=tol * 5, atol=tol * 5)


@pytest.mark.parametrize("case", CASES[:3])
def test_direct_loops_write_into_out_buffers(case, direct):
    n, h, w, c, o, khw, strides, padding, dilation = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    f = rng.standard_normal((*khw, c, o)).astype(np.float32)
    p = dict(strides=strides, padding=padding, dilation=dilation, groups=1)
    want = conv._conv2d_impl(x, f, **p)
    out = np.full(want.shape, np.nan, np.float32)
    assert conv.conv2d_op.out_impl(x, f, out=out, **p) is out
    np.testing.assert_array_equal(out, want)
    g = rng.standard_normal(want.shape).astype(np.float32)
    dw = np.full(f.shape, np.nan, np.float32)
    conv.conv2d_backprop_filter_op.out_impl(x, g, out=dw, kernel_hw=khw, **p)
    np.testing.assert_array_equal(dw, conv._bp_filter_impl(x, g, kernel_hw=khw, **p))
    dx = np.full(x.shape, np.nan, np.float32)
    conv.conv2d_backprop_input_op.out_impl(g, f, out=dx, input_hw=(h, w), **p)
    np.testing.assert_array_equal(dx, conv._bp_input_impl(g, f, input_hw=(h, w), **p))


@pytest.mark.parametrize("case", CASES[:2] + CASES[4:])
def test_direct_loops_agree_with_im2col(case, monkeypatch):
    monkeypatch.setattr(c_window.conv_direct, "block", 1)
    n, h, w, c, o, khw, strides, padding, dilation = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    f = rng.standard_normal((*khw, c, o)).astype(np.float32)
    g = rng.standard_normal(loop_conv(x, f, strides, _pads(case), dilation).shape)
    g = g.astype(np.float32)
    p = dict(strides=strides, padding=padding, dilation=dilation, groups=1)

    def all_three():
        return (conv._conv2d_impl(x, f, **p), conv._bp_filter_impl(x, g, kernel_hw=khw, **p),
                conv._bp_input_impl(g, f, input_hw=(h, w), **p))
    with en.config.cost.override(conv_direct_max_taps=1 << 20,
                                 conv_direct_filter_max_sums=1 << 30):
        got = all_three()
    with en.config.cost.override(conv_direct_max_taps=0):
        want = all_three()
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_direct_gradients_match_finite_differences(direct):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 5, 2))
    w = rng.standard_normal((3, 3, 2, 18))
    c = rng.standard_normal((2, 3, 3, 18))
    check_strided_conv_gradients(x, w, c)


def test_the_threshold_picks_the_kernel(monkeypatch):
    calls = []
    kernel = c_window.conv_direct

    def counting(*args, **kwargs):
        calls.append(1)
        return kernel(*args, **kwargs)
    monkeypatch.setitem(en.ops.native.KERNELS["conv_direct"], np.dtype(np.float32), counting)
    x, w = np.ones((1, 5, 5, 2), np.float32), np.ones((3, 3, 2, 4), np.float32)
    with en.config.cost.override(conv_direct_max_taps=18):
        conv._conv2d_impl(x, w, strides=(1, 1), padding="same")
    assert calls == [1]
    with en.config.cost.override(conv_direct_max_taps=17):
        conv._conv2d_impl(x, w, strides=(1, 1), padding="same")
    with en.config.cost.override(conv_direct_max_taps=1 << 20):
        conv._conv2d_impl(np.ones((1, 5, 5, 4), np.float32), w, strides=(1, 1),
                          padding="same", groups=2)
    assert calls == [1]


def test_direct_loops_take_whole_blocks_within_the_bounds():
    assert not conv.runs_direct(np.dtype(np.float32), 2, 1, 16)
    assert not conv.runs_direct(np.dtype(np.float32), 1, 1, 24)       # a partial block
    assert conv.runs_direct(np.dtype(np.float32), 1, 9, 32)
    with en.config.cost.override(conv_direct_filter_max_sums=9 * 32 - 1):
        assert not conv.runs_direct(np.dtype(np.float32), 1, 9, 32, filter_grad=True)
        assert conv.runs_direct(np.dtype(np.float32), 1, 9, 32)


# ---- max-pool gradient of windows that never overlap (stored, not added) ------------------------
APART = [  # input (H, W), pool, strides, padding, ceil_mode
    ((8, 6), (2, 2), (2, 2), "valid", False),     # the windows cover the input
    ((7, 5), (2, 2), (2, 2), "valid", False),     # a last row and column no window reads
    ((7, 5), (2, 2), (2, 2), "valid", True),      # ceil_mode: pads past the end
    ((9, 9), (2, 2), (3, 3), "valid", False),     # gaps between windows
    ((6, 7), (3, 2), (3, 2), ((1, 1), (1, 0)), False),
]


def _loop_pool(x, g, pool, strides, pads, dilation=(1, 1)):
    """Each window's maximum and the cotangent added at it, window by window in float64:
    the first NaN, else the first largest (numpy's argmax); a pad never wins."""
    out = np.full(g.shape, -np.inf)
    dx = np.zeros(x.shape)
    for n, i, j, c in itertools.product(*(range(s) for s in g.shape)):
        where = None
        for a, b in itertools.product(range(pool[0]), range(pool[1])):
            r = i * strides[0] + a * dilation[0] - pads[0][0]
            s = j * strides[1] + b * dilation[1] - pads[1][0]
            if not (0 <= r < x.shape[1] and 0 <= s < x.shape[2]):
                continue
            v = x[n, r, s, c]
            if where is None or (not np.isnan(out[n, i, j, c]) and
                                 (v > out[n, i, j, c] or np.isnan(v))):
                out[n, i, j, c], where = v, (r, s)
        if where is not None:
            dx[n, where[0], where[1], c] += g[n, i, j, c]
    return out, dx


def _hostile(rng, shape, dtype):
    """Values with ties (a block of zeros), an -inf and NaNs."""
    x = rng.standard_normal(shape).astype(dtype)
    x[0, :3, :3] = 0.0
    x[1, 1, 2, 0] = -np.inf
    x[0, 4, 1, shape[3] - 1] = np.nan
    x[1, 2, 2, :2] = np.nan
    return x


@pytest.mark.parametrize("channels", [3, 16, 32])           # 16, 32: whole vectors
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", APART)
def test_pool_gradient_of_windows_apart(case, dtype, channels):
    hw, pool, strides, padding, ceil_mode = case
    rng = np.random.default_rng(4)
    x = _hostile(rng, (2, *hw, channels), dtype)
    p = dict(pool_size=pool, strides=strides, padding=padding, dilation=(1, 1),
             ceil_mode=ceil_mode)
    (oh, ow), pads = pooling._geometry(hw, pool, strides, padding, (1, 1), ceil_mode)
    g = rng.standard_normal((2, oh, ow, channels)).astype(dtype)
    geo = conv._window_geometry(x.shape, pool, strides, pads, (1, 1))
    assert c_window._apart(geo)
    out = np.full(x.shape, np.nan, dtype)                 # nothing may be left unwritten
    got = pooling.max_pool2d_grad_op.out_impl(x, g, out=out, **p)
    assert got is out
    np.testing.assert_array_equal(out, _loop_pool(x, g, pool, strides, pads)[1].astype(dtype))


OVERLAPPING = [  # input (H, W), pool, strides, padding, dilation, ceil_mode
    ((7, 6), (3, 3), (1, 1), "same", (1, 1), False),
    ((8, 7), (3, 2), (2, 1), ((1, 1), (0, 1)), (1, 1), False),
    ((9, 8), (3, 3), (2, 2), "valid", (2, 1), True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", OVERLAPPING + [c[:4] + ((1, 1), c[4]) for c in APART])
def test_pool_of_whole_channel_vectors(case, dtype):
    """The vector form of max pooling (C a multiple of the vector width) against the
    window loop, forward and gradient."""
    hw, pool, strides, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(5)
    x = _hostile(rng, (2, *hw, 16), dtype)
    p = dict(pool_size=pool, strides=strides, padding=padding, dilation=dilation,
             ceil_mode=ceil_mode)
    out = pooling._max_pool_impl(x, **p)
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = pooling._pool_grad_impl(x, g, **p)
    _, pads = pooling._geometry(hw, pool, strides, padding, dilation, ceil_mode)
    want_out, want_dx = _loop_pool(x, g, pool, strides, pads, dilation)
    np.testing.assert_array_equal(out, want_out.astype(dtype))
    np.testing.assert_allclose(dx, want_dx, rtol=1e-6, atol=1e-6)



def test_direct_loops_split_as_native_loops(monkeypatch):
    """A direct loop tells the splitter it calls no BLAS (so it may split on an idle
    machine, where an im2col product is left to OpenBLAS's threads), as the graph's
    split rule (batch_split.splits) does from the shapes alone."""
    seen = []
    threads = batch_split.threads

    def recording(work, minimum=None, blas=True):
        seen.append(blas)
        return threads(work, minimum, blas)
    monkeypatch.setattr(batch_split, "threads", recording)
    x, w = np.ones((2, 6, 6, 1), np.float32), np.ones((3, 3, 1, 16), np.float32)
    g = np.ones((2, 6, 6, 16), np.float32)
    p = dict(strides=(1, 1), padding="same", dilation=(1, 1), groups=1)
    conv._conv2d_impl(x, w, **p)
    conv._bp_filter_impl(x, g, kernel_hw=(3, 3), **p)
    conv._conv2d_impl(x, np.ones((3, 3, 1, 8), np.float32), **p)       # im2col: a product
    assert seen == [False, False, True]
    shapes = [(2, 6, 6, 1), (3, 3, 1, 16)]
    assert batch_split.WORK[conv.conv2d_op](shapes, (2, 6, 6, 16), p)[2] is False
    assert batch_split.WORK[conv.conv2d_op](shapes[:1] + [(3, 3, 1, 8)], (2, 6, 6, 8), p)[2]


def test_split_direct_loops_take_their_own_chunk_count(monkeypatch):
    # A direct loop splits its images on the C pool, an im2col product on the runner.
    asked = []

    def in_order(fn, n, count):
        asked.append(n)
        return [fn(k) for k in range(n)]

    def on_the_pool(entry, pointers, bounds, *threads):
        asked.append(len(bounds) - 1)
        return run_parts(entry, pointers, bounds, *threads)
    c_pool.ready()
    hot_swap.wait_for_compiles()
    run_parts = c_pool.run_parts
    monkeypatch.setattr(c_pool, "run_parts", on_the_pool)
    monkeypatch.setattr(batch_split, "RUNNERS", [(lambda blas=True: 2, in_order)])
    x = np.random.default_rng(6).standard_normal((6, 5, 5, 1)).astype(np.float32)
    p = dict(strides=(1, 1), padding="same", dilation=(1, 1), groups=1)
    with en.config.cost.override(window_split_min_work=0, window_split_chunks=5,
                                 window_split_native_chunks=2):
        direct = conv._conv2d_impl(x, np.ones((3, 3, 1, 16), np.float32), **p)
        im2col = conv._conv2d_impl(x, np.ones((3, 3, 1, 8), np.float32), **p)
    assert asked == [2, 5]
    want = loop_conv(x, np.ones((3, 3, 1, 16)), (1, 1), ((1, 1), (1, 1)))
    np.testing.assert_allclose(direct, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(im2col, want[..., :8], rtol=1e-5, atol=1e-5)
