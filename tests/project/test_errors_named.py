"""Bad arguments are refused at the call, naming the op, the inputs and the user's line,
in both modes (eagerly and while tracing)."""
import numpy as np
import pytest

import engine as en

HERE = "test_errors_named.py"


def _both_modes(fn, *args):
    """Run ``fn(*args)`` eagerly, then while tracing (the arguments captured, so arrays
    reach the op itself); yield the errors."""
    for mode in ("eager", "graph"):
        with pytest.raises(en.EngineError) as info:
            if mode == "eager":
                fn(*args)
            else:
                en.function(lambda: fn(*args))()
        yield mode, info.value


def _check(err, *words):
    text = str(err)
    for w in words:
        assert w in text, (w, text)
    assert HERE in text, text          # the user's line


def test_transpose_with_an_axis_out_of_range():
    x = en.ones((2, 3))
    for mode, err in _both_modes(lambda t: en.transpose(t, (0, 3)), x):
        assert isinstance(err, en.ShapeError) and not isinstance(err, IndexError)
        _check(err, "transpose", "(0, 3)", "float64[2,3]")
    for mode, err in _both_modes(lambda t: en.transpose(t, (0, -3)), x):
        _check(err, "transpose", "(0, -3)")
    assert en.transpose(x, (-1, 0)).shape == (3, 2)     # negative axes in range still work


def test_transpose_axes_must_be_integers():
    with pytest.raises(TypeError) as info:
        en.transpose(en.ones((2, 3)), (1.0, 0))
    assert isinstance(info.value, en.ShapeError)
    _check(info.value, "transpose", "1.0")


def test_integer_to_negative_integer_power():
    i = en.tensor([1, 2, 3])
    for mode, err in _both_modes(lambda t: t ** -2, i):
        assert isinstance(err, ValueError)
        _check(err, "pow", "int64[3]", "-2")
    with pytest.raises(ValueError) as info:
        i ** en.tensor([1, -1, 2])
    _check(info.value, "pow", "int64[3], int64[3]")
    with pytest.raises(ValueError) as info:
        2 ** en.tensor([-1])
    _check(info.value, "pow")
    assert (i ** 2).numpy().tolist() == [1, 4, 9]
    assert np.allclose((en.cast(i, "float64") ** -2).numpy(), [1.0, 0.25, 1 / 9])


@pytest.mark.parametrize("name, call", [
    ("exp", lambda a: en.exp(a)),
    ("add", lambda a: en.add(en.ones((2,)), a)),
    ("matmul", lambda a: en.matmul(en.ones((2, 2)), a.reshape(2, 1) if a.ndim == 1 else a)),
    ("sum", lambda a: en.sum(a)),
])
@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble, np.dtype("U1")])
def test_unsupported_dtypes_are_refused_naming_the_op(name, call, dtype):
    a = np.zeros(2, dtype=dtype)
    for mode, err in _both_modes(call, a):
        assert isinstance(err, en.DTypeError)
        _check(err, f"{name}:", str(np.dtype(dtype)))


@pytest.mark.parametrize("dtype", ["complex256", "float128", object, "U1"])
def test_cast_to_an_unsupported_dtype_names_the_op(dtype):
    x = en.ones((2, 3))
    for mode, err in _both_modes(lambda t: en.cast(t, dtype), x):
        assert isinstance(err, en.DTypeError)
        _check(err, "cast", "float64[2,3]")
    with pytest.raises(en.DTypeError) as info:
        x.astype(dtype)
    _check(info.value, "cast")


@pytest.mark.parametrize("big", [2 ** 40, -2 ** 40, 2 ** 63, 2 ** 70, -2 ** 70])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_comparing_with_an_int_too_large_for_the_dtype_follows_numpy(big, dtype):
    a = np.array([-5, 0, 7, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype=dtype)
    t = en.tensor(a)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        want = getattr(a, op)(big)
        assert getattr(t, op)(big).numpy().tolist() == want.tolist(), op
        f = en.function(lambda x: getattr(x, op)(big))
        assert f(t).numpy().tolist() == want.tolist(), op
    assert en.less(big, t).numpy().tolist() == np.less(big, a).tolist()


def test_arithmetic_with_an_int_too_large_for_the_dtype_names_the_op():
    t = en.tensor([1, 2], dtype="int32")
    for mode, err in _both_modes(lambda x: x + 2 ** 40, t):
        assert isinstance(err, OverflowError)
        _check(err, "add", "int32[2]", "1099511627776")


@pytest.mark.parametrize("make", [lambda s: en.ones(s), lambda s: en.zeros(s),
                                  lambda s: en.full(s, 1.0), lambda s: en.reshape(en.ones(2), s)])
@pytest.mark.parametrize("shape", [(2.5,), (2.0,), (1, np.float64(2.0))])
def test_fractional_dimensions_are_a_type_error(make, shape):
    for mode, err in _both_modes(lambda: make(shape)):
        assert isinstance(err, TypeError) and isinstance(err, en.ShapeError)
        _check(err, "shape", "not an integer")
    assert en.ones((np.int64(2), 1)).shape == (2, 1)


def test_function_argument_of_unsupported_dtype_names_the_function():
    def my_fn(x):
        return x

    with pytest.raises(en.DTypeError) as info:
        en.function(my_fn)(np.zeros(2, np.longdouble))
    _check(info.value, "my_fn", "argument 0", "float128")
