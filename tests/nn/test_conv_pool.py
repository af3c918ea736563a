"""``conv2d`` and ``max_pool2d`` (NHWC) against direct loops over the output positions
("valid" and "same" padding, strides), their errors, and finite-difference gradients
(float64, first and second order); max-pool ties go to the first maximum."""
import itertools

import numpy as np
import pytest

import engine as en
from support.finite_diff import grad_checker

RNG = np.random.default_rng(0)
check_grads = grad_checker(RNG)


# ---- conv2d / max_pool2d --------------------------------------------------------------------------
def _tf_pads(size, k, s, padding):
    if padding == "valid":
        return (size - k) // s + 1, 0
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2


def ref_conv2d(x, w, stride, padding):
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    oh, pt = _tf_pads(h, kh, sh, padding)
    ow, pl = _tf_pads(wd, kw, sw, padding)
    out = np.zeros((n, oh, ow, o))
    for i, j in itertools.product(range(oh), range(ow)):
        for a, b in itertools.product(range(kh), range(kw)):
            r, q = i * sh + a - pt, j * sw + b - pl
            if 0 <= r < h and 0 <= q < wd:
                out[:, i, j] += x[:, r, q] @ w[a, b]
    return out


def ref_max_pool(x, pool, strides, padding):
    n, h, wd, c = x.shape
    oh, pt = _tf_pads(h, pool[0], strides[0], padding)
    ow, pl = _tf_pads(wd, pool[1], strides[1], padding)
    out = np.full((n, oh, ow, c), -np.inf)
    for i, j in itertools.product(range(oh), range(ow)):
        for a, b in itertools.product(range(pool[0]), range(pool[1])):
            r, q = i * strides[0] + a - pt, j * strides[1] + b - pl
            if 0 <= r < h and 0 <= q < wd:
                out[:, i, j] = np.maximum(out[:, i, j], x[:, r, q])
    return out


CONV_CASES = [((2, 5, 6, 3), (3, 3, 3, 4), 1, "valid"), ((2, 5, 6, 3), (3, 3, 3, 4), 1, "same"),
              ((1, 7, 6, 2), (3, 2, 2, 3), 2, "same"), ((1, 7, 8, 2), (2, 3, 2, 1), (2, 3), "valid"),
              ((1, 4, 4, 1), (1, 1, 1, 2), 3, "same"), ((2, 6, 5, 2), (4, 4, 2, 2), 2, "same")]


@pytest.mark.parametrize("xs,ws,stride,padding", CONV_CASES)
def test_conv2d_matches_reference(xs, ws, stride, padding):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    got = en.conv2d(x, w, stride=stride, padding=padding)
    np.testing.assert_allclose(got.numpy(), ref_conv2d(x, w, stride, padding), rtol=1e-10, atol=1e-12)
    got32 = en.conv2d(x.astype(np.float32), w.astype(np.float32), stride, padding)
    assert got32.dtype == np.float32


@pytest.mark.parametrize("xs,ws,stride,padding", CONV_CASES)
def test_conv2d_gradients(xs, ws, stride, padding):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    check_grads(lambda x, w: en.conv2d(x, w, stride, padding), x, w)


@pytest.mark.parametrize("xs,ws,stride,padding", CONV_CASES[1:3])
def test_conv2d_second_order(xs, ws, stride, padding):
    x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
    check_grads(lambda x, w: en.conv2d(x, w, stride, padding), x, w, order=2, rtol=1e-4, atol=1e-5)


def test_conv2d_errors():
    with pytest.raises(en.ShapeError, match="channels"):
        en.conv2d(np.ones((1, 4, 4, 3)), np.ones((3, 3, 2, 1)))
    with pytest.raises(en.ShapeError):
        en.conv2d(np.ones((4, 4, 3)), np.ones((3, 3, 3, 1)))
    with pytest.raises(en.ShapeError, match="larger"):
        en.conv2d(np.ones((1, 2, 4, 3)), np.ones((3, 3, 3, 1)))
    with pytest.raises(en.ShapeError, match="padding"):
        en.conv2d(np.ones((1, 4, 4, 3)), np.ones((3, 3, 3, 1)), padding="full")
    with pytest.raises(en.DTypeError):
        en.conv2d(np.ones((1, 4, 4, 3), np.int64), np.ones((3, 3, 3, 1), np.int64))


POOL_CASES = [((2, 4, 6, 3), 2, None, "valid"), ((1, 5, 5, 2), 3, 2, "same"),
              ((1, 5, 7, 2), (2, 3), (1, 2), "valid"), ((1, 6, 5, 1), 3, 1, "same")]


@pytest.mark.parametrize("xs,pool,strides,padding", POOL_CASES)
def test_max_pool_matches_reference_and_gradients(xs, pool, strides, padding):
    x = RNG.standard_normal(xs)
    p = (pool, pool) if isinstance(pool, int) else pool
    s = p if strides is None else ((strides, strides) if isinstance(strides, int) else strides)
    got = en.max_pool2d(x, pool, strides, padding)
    np.testing.assert_array_equal(got.numpy(), ref_max_pool(x, p, s, padding))
    check_grads(lambda x: en.max_pool2d(x, pool, strides, padding), x)
    check_grads(lambda x: en.max_pool2d(x, pool, strides, padding) ** 2.0, x, order=2)


def test_max_pool_ties_go_to_the_first_maximum():
    x = en.tensor(np.ones((1, 2, 2, 1)))
    g = en.grad(lambda x: en.sum(en.max_pool2d(x)))(x)
    np.testing.assert_array_equal(g.numpy()[0, :, :, 0], [[1.0, 0.0], [0.0, 0.0]])


def test_max_pool_errors():
    with pytest.raises(en.ShapeError):
        en.max_pool2d(np.ones((1, 1, 4, 1)), 2)
    with pytest.raises(en.ShapeError):
        en.max_pool2d(np.ones((4, 4, 1)))
    with pytest.raises(en.DTypeError):
        en.max_pool2d(np.ones((1, 4, 4, 1), np.bool_))
    with pytest.raises(en.NotDifferentiableError):      # integers pool, without a gradient
        en.grad(lambda x: en.sum(en.max_pool2d(x)))(np.ones((1, 4, 4, 1), np.int32))
