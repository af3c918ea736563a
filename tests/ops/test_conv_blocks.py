"""One-thread convolutions in blocks of images (``batch_split.blocks``, the bound
``cost.window_block_bytes``): the block ranges, and conv2d and its filter gradient
computed in blocks against a direct loop convolution in float64 (strides, padding,
dilation, groups; float32 and float64), with and without out= buffers; the input
gradient (product and C col2im) in blocks against the loop convolution's adjoint."""

import numpy as np
import pytest

import engine as en
from support.window_reference import loop_conv
from engine.graph.lowering.c import c_window
from engine.ops import batch_split, conv, native


def test_blocks_cover_the_batch_in_order_within_the_bound():
    with en.config.cost.override(window_block_bytes=1000):
        for n, per_image in [(7, 300), (64, 100), (5, 2000), (3, 1000)]:
            got = batch_split.blocks(n, per_image)
            assert got[0][0] == 0 and got[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(got, got[1:]))
            # every block within the bound, except single images larger than it
            assert all((hi - lo) * per_image <= 1000 or hi - lo == 1 for lo, hi in got)
            assert len(got) == min(n, -(-n * per_image // 1000))


@pytest.mark.parametrize("numerics, lowering", [("bitwise", "auto"), ("fast", "numpy")])
def test_one_block_where_native_kernels_are_ruled_out(numerics, lowering):
    previous = en.config.numerics, en.config.lowering
    try:
        en.config.numerics, en.config.lowering = numerics, lowering
        with en.config.cost.override(window_block_bytes=1):
            assert batch_split.blocks(64, 100) == [(0, 64)]
    finally:
        en.config.numerics, en.config.lowering = previous
    with en.config.cost.override(window_block_bytes=1 << 40):
        assert batch_split.blocks(64, 100) == [(0, 64)]
    assert batch_split.blocks(64, 0) == [(0, 64)]


CASES = [  # (C, O, kernel, strides, pads, dilation, groups)
    (1, 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    (4, 6, (3, 2), (2, 1), ((0, 2), (1, 0)), (1, 2), 1),
    (4, 6, (2, 2), (1, 2), ((1, 0), (0, 1)), (2, 1), 2),
]


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of one or two images, every kernel on one thread; yields the block lists."""
    seen = []
    blocks = batch_split.blocks

    def recording(n, image_bytes):
        seen.append(blocks(n, image_bytes))
        return seen[-1]
    monkeypatch.setattr(batch_split, "blocks", recording)
    monkeypatch.setattr(batch_split, "RUNNERS", [])
    # (im2col and col2im: the direct loops, which need no blocks, are left out)
    with en.config.cost.override(window_block_bytes=1, window_split_min_work=2 ** 62,
                                 conv_direct_max_taps=0):
        yield seen


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_conv_and_filter_gradient_match_loops(case, dtype, tiny_blocks):
    c, o, khw, strides, pads, dilation, groups = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 9, 8, c)).astype(dtype)
    w = rng.standard_normal((*khw, c // groups, o)).astype(dtype)
    want = loop_conv(x, w, strides, pads, dilation, groups)
    params = dict(strides=strides, padding=pads, dilation=dilation, groups=groups)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    got = conv.conv2d_op.impl(x, w, **params)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert got.dtype == dtype and len(tiny_blocks[-1]) == 5
    # d/dw of sum(conv * g) by the loop convolution's linearity, one basis filter at a time
    g = rng.standard_normal(want.shape).astype(dtype)
    basis = np.eye(w.size).reshape(w.size, *w.shape)
    want_dw = np.array([np.sum(loop_conv(x, e, strides, pads, dilation, groups) * g)
                        for e in basis]).reshape(w.shape)
    out = np.full(w.shape, np.nan, dtype)
    conv.conv2d_backprop_filter_op.out_impl(x, g, out=out, kernel_hw=khw, **params)
    np.testing.assert_allclose(out, want_dw, rtol=10 * tol, atol=10 * tol)
    np.testing.assert_allclose(conv.conv2d_backprop_filter_op.impl(x, g, kernel_hw=khw, **params),
                               want_dw, rtol=10 * tol, atol=10 * tol)
    assert len(tiny_blocks[-1]) == 5


def test_a_traced_step_in_blocks_matches_one_block():
    rng = np.random.default_rng(4)
    w = en.tensor(rng.standard_normal((3, 3, 2, 4)))
    x = en.tensor(rng.standard_normal((6, 7, 7, 2)))
    f = en.function(en.grad(lambda w, x: en.sum(en.relu(en.conv2d(x, w, padding="same")) ** 2)))
    with en.config.cost.override(window_block_bytes=1 << 40):
        whole = np.asarray(f(w, x))
    with en.config.cost.override(window_block_bytes=1):
        blocked = np.asarray(f(w, x))
    np.testing.assert_allclose(blocked, whole, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if c[-1] == 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_input_gradient_is_the_loop_convolutions_adjoint(case, dtype, tiny_blocks):
    """<conv(x, w), g> = <x, conv2d_backprop_input(g, w)> for the loop convolution."""
    c, o, khw, strides, pads, dilation, _ = case
    native.load()
    c_window.installed()       # the C col2im (where a compiler is), which runs in blocks
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 9, 8, c))
    w = rng.standard_normal((*khw, c, o)).astype(dtype)
    conv_x = loop_conv(x, w, strides, pads, dilation, 1)
    g = rng.standard_normal(conv_x.shape).astype(dtype)
    out = np.full((5, 9, 8, c), np.nan, dtype)
    params = dict(input_hw=(9, 8), strides=strides, padding=pads, dilation=dilation)
    got = conv.conv2d_backprop_input_op.out_impl(g, w, out=out, **params)
    assert got.dtype == dtype and got.shape == x.shape
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(np.sum(x * got), np.sum(conv_x * g), rtol=tol)
    # and every element: the gradient of sum(conv * g) along each basis image
    for idx in [(0, 0, 0, 0), (4, 8, 7, c - 1), (2, 4, 3, 0)]:
        e = np.zeros_like(x)
        e[idx] = 1.0
        want = np.sum(loop_conv(e, w, strides, pads, dilation, 1) * g)
        np.testing.assert_allclose(got[idx], want, rtol=tol, atol=tol)
    if native.kernel("col2im", dtype) is not None:
        assert any(len(b) == 5 for b in tiny_blocks)
