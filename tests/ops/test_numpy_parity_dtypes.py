"""Values and dtypes numpy gives at the edges: complex and over-corrected variances,
float16 means, fill values of numpy scalars, narrow integer running sums and rint of
integers. Each case is compared with numpy itself."""
import warnings

import numpy as np
import pytest

import engine as en


def _same(got, want):
    got = np.asarray(got)
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_and_std_of_complex_input_are_real_as_numpy(dtype, axis):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no ComplexWarning: nothing is discarded
        _same(en.var(en.tensor(x), axis=axis), np.var(x, axis=axis))
        _same(en.std(en.tensor(x), axis=axis, ddof=1), np.std(x, axis=axis, ddof=1))


@pytest.mark.parametrize("ddof", [3, 4, 7])
def test_var_with_ddof_past_the_count_is_never_negative(ddof):
    x = np.array([1.0, 2.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(en.var(en.tensor(x), ddof=ddof), np.var(x, ddof=ddof))
        _same(en.std(en.tensor(x), ddof=ddof), np.std(x, ddof=ddof))
        _same(en.var(en.tensor(np.zeros(0)), ddof=1), np.var(np.zeros(0), ddof=1))
        traced = en.function(lambda t: en.var(t, ddof=ddof))
        _same(traced(en.tensor(x)), np.var(x, ddof=ddof))


@pytest.mark.parametrize("x", [np.ones(70000, np.float16), np.full(100000, 0.1, np.float16),
                               np.full(8, 30000, np.float16)],
                         ids=["count-over-65504", "sum-over-65504", "large-values"])
def test_float16_mean_is_summed_in_float32_as_numpy(x):
    want = np.mean(x)
    _same(en.mean(en.tensor(x)), want)
    # In a graph the mean follows an elementwise op it could be fused with.
    _same(en.function(lambda t: en.mean(t * 1.0))(en.tensor(x)), want)
    cols = np.stack([x, x], axis=1)
    _same(en.mean(en.tensor(cols), axis=0), np.mean(cols, axis=0))


@pytest.mark.parametrize("value", [np.complex64(1j), np.float32(1.5), np.int8(3),
                                   np.array(3, np.int8), np.bool_(True),
                                   np.uint64(2 ** 63 + 5), 2, 2.5, True, 1j])
def test_full_takes_the_dtype_of_a_numpy_fill_value(value):
    got = en.full((2, 3), value).numpy()
    want = np.full((2, 3), value)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "float32"])
def test_running_sums_wrap_in_the_requested_integer_dtype(name, dtype):
    x = np.array([[100, 100, 100], [7, -3, 120]], dtype=np.int8)
    for axis in (None, 0, 1):
        want = getattr(np, name)(x, axis=axis, dtype=dtype)
        got = getattr(en, name)(en.tensor(x), axis=axis, dtype=dtype).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    want = np.cumulative_sum(x[0], dtype=dtype, include_initial=True)
    got = en.cumulative_sum(en.tensor(x[0]), dtype=dtype, include_initial=True).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "uint16", "int32",
                                   "int64", "float16", "float32"])
def test_rint_of_integers_is_a_float_as_numpy(dtype):
    x = np.array([0, 1, 1], dtype=dtype)
    want = np.rint(x)
    for got in (en.rint(en.tensor(x)), np.rint(en.tensor(x))):
        got = np.asarray(got)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    if dtype != "bool":   # round keeps an integer dtype, as np.round does
        assert en.round(en.tensor(x)).dtype == np.round(x).dtype
    assert np.asarray(en.rint(3)).dtype == np.asarray(np.rint(3)).dtype


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "float32", "float64"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_take_numpy_dtype(name, dtype, axis):
    x = np.array([[100, 100, 100], [1, 2, 3]], np.int8)
    for keepdims in (False, True):
        want = getattr(np, name)(x, axis=axis, dtype=dtype, keepdims=keepdims)
        got = getattr(en, name)(en.tensor(x), axis=axis, dtype=dtype, keepdims=keepdims)
        _same(got, want)


def test_mean_of_bools_is_a_float64_fraction():
    x = np.array([[True, False, True], [False, False, True]])
    for axis in (None, 0, 1):
        _same(en.mean(en.tensor(x), axis=axis), np.mean(x, axis=axis))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like"])
@pytest.mark.parametrize("dtype", [None, "int32", "float32", "bool"])
def test_like_constructors_take_a_dtype(name, dtype):
    x = np.array([[1.5, 2.5, 3.5]])
    want = getattr(np, name)(x, dtype=dtype)
    for got in (getattr(en, name)(en.tensor(x), dtype=dtype),
                en.function(lambda t: getattr(en, name)(t, dtype=dtype))(en.tensor(x))):
        got = got.numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
