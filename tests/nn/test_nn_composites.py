"""The softmax family and the losses against numpy formulas, their errors and
finite-difference gradients (float64, first and second order), and the sigmoid at
extreme inputs: quiet (no overflow warning) and right, eagerly and traced."""
import warnings

import numpy as np
import pytest

import engine as en
from support.finite_diff import grad_checker

RNG = np.random.default_rng(0)
check_grads = grad_checker(RNG)


# ---- nn composites ----------------------------------------------------------------------------
def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmax_family_matches_numpy():
    x = RNG.standard_normal((3, 4)) * 5
    for axis in (0, 1, -1):
        np.testing.assert_allclose(en.softmax(x, axis).numpy(), np_softmax(x, axis), rtol=1e-12)
        np.testing.assert_allclose(en.log_softmax(x, axis).numpy(), np.log(np_softmax(x, axis)),
                                   rtol=1e-12, atol=1e-12)
    big = np.array([1000.0, 1000.0, -1000.0])
    np.testing.assert_allclose(en.softmax(big).numpy(), [0.5, 0.5, 0.0])
    np.testing.assert_allclose(float(en.logsumexp(big)), 1000.0 + np.log(2.0))
    for axis, keep in [(None, False), (0, True), ((0, 1), False), (1, False)]:
        want = np.log(np.sum(np.exp(x), axis=axis, keepdims=keep))
        got = en.logsumexp(x, axis=axis, keepdims=keep)
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    with np.errstate(divide="ignore"):
        assert float(en.logsumexp(np.array([-np.inf, -np.inf]))) == -np.inf
    assert en.softmax(np.ones(3, np.float32)).dtype == np.float32


def test_losses_match_numpy():
    p, t = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(float(en.mse(p, t)), np.mean((p - t) ** 2))
    labels = np.array([0, 2, 1, 2])
    want = -np.mean(np.log(np_softmax(p))[np.arange(4), labels])
    np.testing.assert_allclose(float(en.cross_entropy(p, labels)), want)
    onehot = np.eye(3)[labels]
    np.testing.assert_allclose(float(en.cross_entropy(p, onehot)), want)
    # the class axis elsewhere, and extra batch dims
    np.testing.assert_allclose(float(en.cross_entropy(p.T, labels, axis=0)), want)
    q = RNG.standard_normal((2, 5, 3))
    lab = RNG.integers(0, 3, size=(2, 5))
    want = -np.mean(np.take_along_axis(np.log(np_softmax(q)), lab[..., None], -1))
    np.testing.assert_allclose(float(en.cross_entropy(q, lab)), want)


def test_loss_errors():
    p = RNG.standard_normal((4, 3))
    with pytest.raises(en.ShapeError):
        en.cross_entropy(p, np.array([0, 1, 2]))
    with pytest.raises(en.ShapeError):
        en.cross_entropy(p, np.array([0, 1, 2, 3]))
    with pytest.raises(en.ShapeError):
        en.cross_entropy(p, np.ones((4, 2)))
    with pytest.raises(en.DTypeError):
        en.softmax(np.array([1, 2]))


def test_nn_gradients():
    x = RNG.standard_normal((3, 4))
    check_grads(lambda x: en.softmax(x, axis=0), x)
    check_grads(lambda x: en.log_softmax(x), x)
    check_grads(lambda x: en.logsumexp(x, axis=1), x)
    check_grads(lambda x: en.softmax(x), x, order=2)
    labels = np.array([0, 3, 1])
    check_grads(lambda x: en.cross_entropy(x, labels), x)
    probs = np_softmax(RNG.standard_normal((3, 4)))
    check_grads(lambda x, p: en.cross_entropy(x, p), x, probs)
    check_grads(lambda x, t: en.mse(x, t), x, probs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_of_extreme_inputs_is_quiet_and_right(dtype):
    # exp(-x) overflows below -88 (float32) / -709 (float64): the result is 0
    # there, as numpy gives it, with no warning.
    x = np.array([-1e4, -750.0, -100.0, -30.0, 0.0, 30.0, 1e4], dtype)
    want = np.exp(-np.logaddexp(0.0, -x.astype(np.float64)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager = en.sigmoid(x).numpy()
        traced = en.function(lambda t: en.sigmoid(t) * 1.5)(x).numpy() / 1.5
    tiny = np.finfo(dtype).tiny
    for got in (eager, traced):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=tiny)
        assert got[0] == 0.0
