"""Kernels' scratch memory: reused across calls, never visible in results."""
import numpy as np
import pytest

import engine as en
from engine import workspace


@pytest.fixture(autouse=True)
def fresh_scratch():
    workspace.release()
    yield
    workspace.release()


def test_borrowed_scratch_is_reused_and_grows_to_the_largest_request():
    with workspace.borrow((100,), np.float64) as a:
        first = a.__array_interface__["data"][0]
    with workspace.borrow((10, 10), np.float32) as b:
        assert b.__array_interface__["data"][0] == first
        assert b.shape == (10, 10) and b.dtype == np.float32
    with workspace.borrow((1000,), np.float64):
        pass
    assert workspace.held_bytes() == 8000


def test_nested_borrows_and_oversized_requests_get_their_own_arrays():
    with workspace.borrow((50,), np.float64) as outer:
        outer[...] = 1.0
        with workspace.borrow((50,), np.float64) as inner:
            inner[...] = 2.0
            assert not np.shares_memory(outer, inner)
        np.testing.assert_array_equal(outer, np.ones(50))
    workspace.release()
    previous = en.config.workspace_bytes
    en.config.workspace_bytes = 64
    try:
        with workspace.borrow((100,), np.float64):
            pass
        assert workspace.held_bytes() == 0
    finally:
        en.config.workspace_bytes = previous


def _conv_reference(x, w, pad):
    """Direct float64 cross-correlation, stride 1."""
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0))).astype(np.float64)
    kh, kw, _, o = w.shape
    n, h, wd, _ = xp.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, o))
    for a in range(kh):
        for b in range(kw):
            out += xp[:, a:a + out.shape[1], b:b + out.shape[2]] @ w[a, b]
    return out


@pytest.mark.parametrize("scratch", [1 << 30, 0])
def test_convolutions_agree_with_and_without_scratch_and_never_alias_it(scratch):
    rng = np.random.default_rng(3)
    x1, x2 = rng.standard_normal((2, 2, 7, 6, 3))
    w = rng.standard_normal((3, 3, 3, 4))
    previous = en.config.workspace_bytes
    en.config.workspace_bytes = scratch
    try:
        y1 = en.conv2d(x1, w, padding="same")
        kept = y1.numpy().copy()
        y2 = en.conv2d(x2, w, padding="same")            # reuses the same scratch
        gx, gw = en.grad(lambda x, w: en.sum(en.conv2d(x, w, padding="same") ** 2.0),
                         argnums=(0, 1))(x1, w)
    finally:
        en.config.workspace_bytes = previous
    np.testing.assert_array_equal(y1.numpy(), kept)
    np.testing.assert_allclose(y1.numpy(), _conv_reference(x1, w, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y2.numpy(), _conv_reference(x2, w, 1), rtol=1e-12, atol=1e-12)
    # Gradients against central differences of the float64 reference.
    eps = 1e-6
    loss = lambda x, w: np.sum(_conv_reference(x, w, 1) ** 2)   # noqa: E731
    for idx in [(0, 0, 0, 0), (1, 3, 2, 1), (0, 6, 5, 2)]:
        d = np.zeros_like(x1)
        d[idx] = eps
        fd = (loss(x1 + d, w) - loss(x1 - d, w)) / (2 * eps)
        np.testing.assert_allclose(gx.numpy()[idx], fd, rtol=1e-6)
    for idx in [(0, 0, 0, 0), (2, 1, 2, 3)]:
        d = np.zeros_like(w)
        d[idx] = eps
        fd = (loss(x1, w + d) - loss(x1, w - d)) / (2 * eps)
        np.testing.assert_allclose(gw.numpy()[idx], fd, rtol=1e-6)


def test_conv2d_writes_into_a_given_buffer_in_graph_mode():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)

    @en.function
    def f(x, w):
        return en.sum(en.relu(en.conv2d(x, w, padding="valid")))

    expected = np.maximum(_conv_reference(x, w, 0), 0).sum()
    for _ in range(3):
        np.testing.assert_allclose(float(f(x, w)), expected, rtol=1e-5)
    assert "k_conv2d_out(" in f.get_concrete_function(x, w).compiled.source


def test_conv2d_out_kernel_fills_a_strided_buffer_too():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 5, 5, 2))
    w = rng.standard_normal((3, 3, 2, 3))
    target = np.zeros((1, 3, 3, 6))
    out = target[..., ::2]                                   # not contiguous
    en.ops.conv2d_op.out_impl(x, w, strides=(1, 1), padding="valid", out=out)
    np.testing.assert_allclose(target[..., ::2], _conv_reference(x, w, 0), rtol=1e-12)
    np.testing.assert_array_equal(target[..., 1::2], 0.0)
