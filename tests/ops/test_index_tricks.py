"""``en.r_`` and ``en.c_`` against numpy's ``np.r_`` and ``np.c_``: slices (steps, complex
steps as linspace counts), numbers, arrays and tensors, the directives ('0,2', '0,2,0',
'r', 'c', an axis), dtypes; inside ``en.function`` and differentiated."""
import numpy as np
import pytest

import engine as en

A = np.array([[0, 1, 2], [3, 4, 5]])


def _arr(m, v):
    return np.asarray(v) if m is np else en.tensor(np.asarray(v))


CASES = {
    "slices, numbers, arrays": lambda m: m.r_[1:4, 0, _arr(m, [7, 8])],
    "complex step is a count": lambda m: m.r_[-1:1:6j, [0] * 3, 5, 6],
    "stop only": lambda m: m.r_[:3],
    "float step": lambda m: m.r_[0:2:0.5, 7],
    "two ranges": lambda m: m.r_[0:1:5j, 5:10],
    "axis directive": lambda m: m.r_["-1", _arr(m, A), _arr(m, A)],
    "ndmin directive": lambda m: m.r_["0,2", _arr(m, [1, 2, 3]), _arr(m, [4, 5, 6])],
    "trans1d 0": lambda m: m.r_["0,2,0", _arr(m, [1, 2, 3]), _arr(m, [4, 5, 6])],
    "trans1d axis 1": lambda m: m.r_["1,2,0", _arr(m, [1, 2, 3]), _arr(m, [4, 5, 6])],
    "trans1d -1 mixed": lambda m: m.r_["0,2,-1", _arr(m, [1, 2, 3]), _arr(m, [[4, 5, 6]])],
    "ndmin 3": lambda m: m.r_["1,3", _arr(m, [1, 2]), _arr(m, [[3, 4]])],
    "columns": lambda m: m.c_[_arr(m, [1, 2, 3]), _arr(m, [4, 5, 6])],
    "c_ rows with numbers": lambda m: m.c_[_arr(m, [[1, 2, 3]]), 0, 0, _arr(m, [[4, 5, 6]])],
    "c_ matrices": lambda m: m.c_[_arr(m, A), _arr(m, A)],
    "c_ slice and floats": lambda m: m.c_[0:3, _arr(m, [1.5, 2, 3])],
    "weak number": lambda m: m.r_[_arr(m, np.float32([1, 2])), 3.0],
    "numpy scalar is strong": lambda m: m.r_[_arr(m, np.float32([1, 2])), np.float64(3.0)],
    "int and bool": lambda m: m.r_[_arr(m, [True, False]), 2],
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_numpy(name):
    want = np.asarray(CASES[name](np))
    got = CASES[name](en).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("directive,shape", [("r", (1, 6)), ("c", (6, 1))])
def test_matrix_directives_give_2d(directive, shape):
    want = np.asarray(np.r_[directive, [1, 2, 3], [4, 5, 6]])
    got = en.r_[directive, en.tensor([1, 2, 3]), en.tensor([4, 5, 6])]
    assert got.shape == shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_traced_and_differentiated():
    f = en.function(lambda a, b: en.c_[a, b * 2.0])
    a, b = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(f(en.tensor(a), en.tensor(b)).numpy(), np.c_[a, b * 2.0])
    g = en.grad(lambda t: en.sum(en.r_[t, 0.0, t] * en.tensor(np.arange(7.0))))(en.tensor(a))
    np.testing.assert_array_equal(g.numpy(), np.arange(3.0) + np.arange(4.0, 7.0))


def test_bad_directives_are_refused():
    with pytest.raises(en.InvalidArgumentError, match="r_: unknown special directive 'x'"):
        en.r_["x", en.ones(2)]
    with pytest.raises(en.InvalidArgumentError, match="must be the first entry"):
        en.r_[en.ones(2), "0"]
    with pytest.raises(en.InvalidArgumentError, match="c_: nothing to concatenate"):
        en.c_[()]
