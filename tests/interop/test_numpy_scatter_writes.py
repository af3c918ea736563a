"""numpy's scatters that write into their first argument, called on tensors
(engine/numpy_scatter.py): ``np.put_along_axis`` and ``ufunc.at`` for add, subtract,
multiply, maximum and minimum, against numpy on arrays: every index kind, repeated
positions, a numpy array target with tensor values, gradients through the write, inside
``en.function``, and the ufuncs refused by name."""
import numpy as np
import pytest

import engine as en

RNG = np.random.default_rng(481)
INDEXES = {
    "repeated ints": [0, 2, 2, 0, 3],
    "rows and a slice": (np.array([0, 0, 3, 1]), slice(1, 3)),
    "two arrays": (np.array([1, 1, 2]), np.array([4, 4, 0])),
    "mask": None,     # filled with x > 0
    "an int and an array": (2, np.array([0, 0, 1])),
}


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.maximum, np.minimum],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize("kind", list(INDEXES))
def test_ufunc_at_on_a_tensor_matches_numpy(ufunc, kind):
    x = RNG.standard_normal((4, 5))
    index = x > 0 if kind == "mask" else INDEXES[kind]
    values = RNG.standard_normal(np.shape(x[index]))
    want = x.copy()
    ufunc.at(want, index, values)
    t = en.tensor(x.copy())
    assert ufunc.at(t, index, en.tensor(values)) is None
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)


def test_ufunc_at_with_a_number_and_on_a_numpy_target():
    t = en.zeros(5, dtype="int64")
    np.add.at(t, [0, 0, 4], 2)
    assert t.numpy().tolist() == [4, 0, 0, 0, 2]
    target = np.zeros(3)
    np.maximum.at(target, en.tensor([1, 1]), en.tensor([2.0, 5.0]))
    assert target.tolist() == [0.0, 5.0, 0.0]


def test_put_along_axis_on_a_tensor_matches_numpy():
    x = RNG.standard_normal((3, 5))
    order = np.argsort(x, axis=1)[:, :2]
    want = x.copy()
    np.put_along_axis(want, order, -9.0, axis=1)
    t = en.tensor(x.copy())
    np.put_along_axis(t, en.tensor(order), -9.0, axis=1)
    np.testing.assert_array_equal(t.numpy(), want)
    target = x.copy()
    np.put_along_axis(target, en.tensor(order), en.tensor([[1.0, 2.0]] * 3), axis=1)
    want = x.copy()
    np.put_along_axis(want, order, np.array([[1.0, 2.0]] * 3), axis=1)
    np.testing.assert_array_equal(target, want)


def test_gradient_flows_through_the_write():
    x = RNG.standard_normal((2, 3))

    def f(t):
        y = t * 1.0
        np.maximum.at(y, [0, 0], en.stack([t[1] * 9.0, t[1] * 8.0]))
        return en.sum(y)
    want = np.ones((2, 3))
    wins = 9.0 * x[1] > x[0]
    want[0] = np.where(wins, 0.0, 1.0)
    want[1] += np.where(wins, 9.0, 0.0)
    np.testing.assert_allclose(en.grad(f)(en.tensor(x)).numpy(), want)


def test_inside_a_traced_function():
    def f(v):
        y = en.zeros(4)
        np.add.at(y, [0, 0, 3], v)
        return y
    traced = en.function(f)
    np.testing.assert_array_equal(traced(en.tensor([1.0, 2.0, 3.0])).numpy(), [3.0, 0, 0, 3.0])


def test_other_ufuncs_are_refused_by_name():
    with pytest.raises(en.UnsupportedError, match="numpy.logical_or.at is not supported"):
        np.logical_or.at(en.tensor([True, False]), [0], True)
    with pytest.raises(en.UnsupportedError, match="numpy.negative.at"):
        np.negative.at(en.ones(3), [0])
