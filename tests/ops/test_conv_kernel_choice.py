"""The convolution kernels picked by shape (engine/ops/conv.py): the single-channel
im2col copied tap by tap, and conv2d_backprop_input's two forms (the full correlation,
the scatter where the input has few channels), against a loop over windows."""
import itertools

import numpy as np
import pytest

import engine as en
from engine.ops import conv
from support.finite_diff import numeric_grad


def _loop_conv(x, w, pad):
    """A direct NHWC x HWIO cross-correlation, stride 1, ``pad`` zeros on each side."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    kh, kw, _, o = w.shape
    n, h, wd, _ = xp.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, o))
    for i, j in itertools.product(range(out.shape[1]), range(out.shape[2])):
        out[:, i, j] = np.einsum("nabc,abco->no", xp[:, i:i + kh, j:j + kw], w)
    return out


def _loop_input_grad(g, w, hw, pad):
    """The adjoint of :func:`_loop_conv` in its input, window by window."""
    kh, kw, c, _ = w.shape
    n = g.shape[0]
    dxp = np.zeros((n, hw[0] + 2 * pad, hw[1] + 2 * pad, c))
    for i, j in itertools.product(range(g.shape[1]), range(g.shape[2])):
        dxp[:, i:i + kh, j:j + kw] += np.einsum("no,abco->nabc", g[:, i, j], w)
    return dxp[:, pad:pad + hw[0], pad:pad + hw[1]]


@pytest.mark.parametrize("c,o", [(1, 16), (1, 3), (2, 16), (16, 32), (8, 8)])
def test_conv_and_its_input_gradient_match_a_window_loop(c, o):
    rng = np.random.default_rng(c * 100 + o)
    x = rng.standard_normal((3, 9, 8, c)).astype(np.float32)
    w = rng.standard_normal((3, 3, c, o)).astype(np.float32)
    got = en.conv2d(en.tensor(x), en.tensor(w), padding="same").numpy()
    np.testing.assert_allclose(got, _loop_conv(x, w, 1), rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(got.shape).astype(np.float32)
    dx = en.ops.conv2d_backprop_input(en.tensor(g), en.tensor(w), (9, 8), padding="same")
    np.testing.assert_allclose(dx.numpy(), _loop_input_grad(g, w, (9, 8), 1), rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("c,o", [(1, 16), (4, 8), (8, 4)])
def test_both_input_gradient_forms_agree(c, o):
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 3, c, o))
    g = rng.standard_normal((2, 6, 5, o))
    pads = ((1, 1), (1, 1))
    full = conv._bp_input_full(g, w, (6, 5), pads)
    scatter = conv._bp_input_scatter(g, w, (6, 5), (1, 1), pads, (1, 1), 1)
    np.testing.assert_allclose(full, scatter, rtol=1e-12, atol=1e-12)


def test_single_channel_filter_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 6, 1))
    w = rng.standard_normal((3, 3, 1, 5))
    c = rng.standard_normal((2, 5, 6, 5))

    def loss(xt, wt):
        return en.sum(en.conv2d(xt, wt, padding="same") * c)
    gx, gw = en.grad(loss, argnums=(0, 1))(en.tensor(x), en.tensor(w))
    np.testing.assert_allclose(gx.numpy(), numeric_grad(loss, (x, w), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), numeric_grad(loss, (x, w), 1), rtol=1e-6, atol=1e-7)


def test_the_input_gradient_is_skipped_where_the_input_needs_none():
    # conv2d's VJP takes ``needs``: a first layer's images get no transposed convolution.
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 5, 6, 3))
    w = rng.standard_normal((3, 3, 3, 4))
    c = rng.standard_normal((2, 5, 6, 4))

    def loss(xt, wt):
        return en.sum(en.conv2d(xt, wt, padding="same") * c)
    g = en.tensor(c)
    params = dict(strides=(1, 1), padding="same", dilation=(1, 1), groups=1)
    gx, gw = conv.conv2d_op.vjp(g, None, en.tensor(x), en.tensor(w), needs=(False, True),
                                **params)
    assert gx is None
    np.testing.assert_allclose(gw.numpy(), numeric_grad(loss, (x, w), 1), rtol=1e-6, atol=1e-7)
    gx, gw = conv.conv2d_op.vjp(g, None, en.tensor(x), en.tensor(w), needs=(True, False),
                                **params)
    assert gw is None
    np.testing.assert_allclose(gx.numpy(), numeric_grad(loss, (x, w), 0), rtol=1e-6, atol=1e-7)
