"""Converting a tensor that a tape (or ``jvp``) differentiates into a numpy array is
refused at the user's line, where it used to drop that path from the gradient;
the explicit ways to read values (``float``, ``.item()``, ``.numpy()``) still work."""
import inspect

import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference


def _raises_here(fn, *args):
    """Call ``fn``; assert it refuses the conversion, naming this file and a line of ``fn``."""
    with pytest.raises(en.NotDifferentiableError) as info:
        fn(*args)
    message = str(info.value)
    assert "numpy array" in message and "t.numpy()" in message
    lines, first = inspect.getsourcelines(fn)
    assert any(f"{__file__}:{first + i}" in message for i in range(len(lines))), message
    return message


W = np.array([0.5, -1.0, 2.0])


def test_np_asarray_of_a_differentiated_tensor_raises():
    def loss(w):
        return np.sum(np.asarray(w) * w)
    message = _raises_here(en.grad(loss), en.tensor(W))
    assert "float64[3] tensor" in message and "GradientTape" in message


def test_an_ndarray_method_on_a_differentiated_tensor_raises():
    def loss(w):
        return np.ones(3).dot(w)
    _raises_here(en.grad(loss), en.tensor(W))


def test_writing_a_differentiated_tensor_into_a_numpy_buffer_raises():
    def loss(w):
        buf = np.zeros(3)
        buf[:] = w
        return en.sum(en.tensor(buf) * w)
    _raises_here(en.grad(loss), en.tensor(W))


def test_a_watched_variable_converted_by_numpy_raises():
    v = en.Variable(W)

    def step():
        with en.GradientTape() as tape:
            tape.watch(v)
            return np.ones(3).dot(v)
    assert "float64[3] variable" in _raises_here(step)


def test_np_asarray_under_jvp_raises():
    def run():
        return en.jvp(lambda w: np.sum(np.asarray(w) * w), (en.tensor(W),), (en.ones(3),))
    assert "en.jvp" in _raises_here(run)


def test_scalars_for_logging_and_explicit_values_still_work():
    logged = []

    def loss(w):
        y = en.sum(w * w)
        logged.append((float(y), y.item(), int(w[0] > 0), w.numpy().copy(), w.tolist()))
        return y
    g = en.grad(loss)(en.tensor(W))
    np.testing.assert_allclose(g.numpy(), 2 * W)
    (f, item, positive, values, as_list), = logged
    assert f == item == pytest.approx(np.sum(W * W))
    assert positive == 1 and as_list == W.tolist()
    np.testing.assert_array_equal(values, W)


def test_a_stopped_tensor_and_tensors_outside_a_tape_convert():
    # stop_gradient is the explicit way to use values as a constant: d/dw sum(c * w) = c.
    g = en.grad(lambda w: np.sum(np.asarray(en.stop_gradient(w)) * w))(en.tensor(W))
    np.testing.assert_allclose(g.numpy(), W)
    np.testing.assert_array_equal(np.asarray(en.tensor(W)), W)
    with en.GradientTape() as tape:
        w = en.tensor(W)
        tape.watch(w)
        other = en.tensor(W) * 2.0       # not made from a watched tensor
        np.testing.assert_array_equal(np.asarray(other), 2 * W)


def _net(x, w1, w2, use_ndarray_method):
    """A two-layer net in numpy, the data a numpy array, the weights tensors."""
    h = x.dot(w1) if use_ndarray_method else np.dot(x, w1)   # the method converts w1
    return np.mean((np.tanh(h) @ w2 - 1.0) ** 2)


def test_a_numpy_net_either_differentiates_right_or_raises():
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(3,))
    g1 = en.grad(lambda a: _net(x, a, en.tensor(w2), False))(en.tensor(w1))
    expected = central_difference(lambda a: _net(x, a, w2, False), w1)
    np.testing.assert_allclose(g1.numpy(), expected, rtol=1e-6, atol=1e-8)
    with pytest.raises(en.NotDifferentiableError, match="numpy array"):
        en.grad(lambda a: _net(x, a, en.tensor(w2), True))(en.tensor(w1))
