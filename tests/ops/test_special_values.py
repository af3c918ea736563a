"""IEEE special values and complex inputs where the Array API standard defines the
result: complex inverse trigonometric / hyperbolic functions and base-2/10 logs
(numpy's complex kernels), complex ``expm1`` (C99's special values, which numpy's
kernel misses), and floor division with an infinite operand (``floor(x / y)``).
References: numpy where it follows the standard, else the standard's table or a
closed form."""
import math

import numpy as np
import pytest

import engine as en

INF, NAN = math.inf, math.nan
COMPLEX_UNARY = ["arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh", "cosh",
                 "sinh", "tan", "log2", "log10", "exp2"]


def _complex_sample(dtype):
    rng = np.random.default_rng(0)
    z = rng.uniform(-3, 3, 12) + 1j * rng.uniform(-3, 3, 12)
    return np.concatenate([z, [0j, 1 + 0j, -1 + 0j, 2j, -0.5 - 0.5j]]).astype(dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_complex_unary_functions_match_numpy(name, dtype):
    z = _complex_sample(dtype)
    fn = getattr(en, name)
    want = getattr(np, name)(z)
    for got in (fn(en.tensor(z)), en.function(fn)(en.tensor(z))):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5 if dtype == "complex64" else 1e-13)


def test_complex_unary_refuses_a_gradient():
    def f(x):
        return en.sum(en.abs(en.arccos(en.cast(x, "complex128"))))
    with pytest.raises(en.NotDifferentiableError, match="complex"):
        en.grad(f)(en.tensor([0.5]))


# The standard's (C99's) table for complex expm1: input, result.
EXPM1_CASES = [
    (complex(0.0, 0.0), complex(0.0, 0.0)),
    (complex(INF, 0.0), complex(INF, 0.0)),
    (complex(-INF, INF), complex(-1.0, 0.0)),
    (complex(-INF, NAN), complex(-1.0, 0.0)),
    (complex(NAN, 0.0), complex(NAN, 0.0)),
    (complex(NAN, -0.0), complex(NAN, -0.0)),
    (complex(710.0, 0.0), complex(INF, 0.0)),   # exp overflows; the zero stays
]


def _same(got, want):
    """Equal as the standard compares special values: NaN matches NaN, zeros by sign."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if math.isnan(w):
            assert math.isnan(g), (got, want)
        else:
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (got, want)


@pytest.mark.parametrize("z,want", EXPM1_CASES)
def test_complex_expm1_special_values(z, want):
    _same(complex(en.expm1(en.tensor(np.complex128(z))).numpy()), want)
    _same(complex(en.function(en.expm1)(en.tensor(np.array([z]))).numpy()[0]), want)


def test_complex_expm1_infinite_with_nan_and_infinite_imaginary():
    got = en.expm1(en.tensor(np.array([complex(INF, INF), complex(INF, NAN)]))).numpy()
    assert np.all(np.isinf(got.real)) and np.all(np.isnan(got.imag))


def test_complex_expm1_is_accurate_near_zero():
    z = np.array([1e-10 + 1e-10j, -3e-9 + 2e-12j, 1e-7 - 1e-7j])
    series = z + z ** 2 / 2 + z ** 3 / 6     # exp(z) - 1 to well below one ulp here
    np.testing.assert_allclose(en.expm1(en.tensor(z)).numpy(), series, rtol=1e-14)
    away = np.array([0.5 + 2j, -3 - 1j, 4 + 0.25j])
    np.testing.assert_allclose(en.expm1(en.tensor(away)).numpy(), np.exp(away) - 1, rtol=1e-14)
    assert en.expm1(en.tensor(away.astype("complex64"))).dtype == np.complex64


def test_real_expm1_is_numpys():
    x = np.array([-2.0, -1e-12, 0.0, 1e-9, 3.0, INF, -INF])
    np.testing.assert_array_equal(en.expm1(en.tensor(x)).numpy(), np.expm1(x))
    assert en.expm1(en.tensor([1, 2])).dtype == np.float64


FLOOR_DIVIDE = [  # x, y, the standard's x // y (numpy: nan, nan, nan, nan, -1, -1)
    (INF, 2.0, INF), (INF, -2.0, -INF), (-INF, 2.0, -INF), (-INF, -2.0, INF),
    (1.0, -INF, -0.0), (-1.0, INF, -0.0), (1.0, INF, 0.0), (INF, INF, NAN), (NAN, 1.0, NAN),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_with_an_infinite_operand_is_floor_of_the_quotient(dtype):
    x = np.array([c[0] for c in FLOOR_DIVIDE], dtype)
    y = np.array([c[1] for c in FLOOR_DIVIDE], dtype)
    want = np.array([c[2] for c in FLOOR_DIVIDE], dtype)
    with np.errstate(all="ignore"):
        assert np.array_equal(np.floor(x / y), want, equal_nan=True)   # the closed form
    traced = en.function(lambda a, b: a // b)
    for got in (en.floor_divide(en.tensor(x), en.tensor(y)), en.tensor(x) // en.tensor(y),
                traced(en.tensor(x), en.tensor(y))):
        got = got.numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        real = ~np.isnan(want)   # zeros and infinities by sign
        np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))
    for i, (a, b, w) in enumerate(FLOOR_DIVIDE):   # one element at a time, 0-d
        got = float(en.floor_divide(en.tensor(x[i]), en.tensor(y[i])).numpy())
        assert (math.isnan(got) and math.isnan(w)) or (got == w and
                                                        math.copysign(1, got) == math.copysign(1, w))


def test_floor_divide_on_finite_inputs_is_numpys():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=50) * 10, rng.normal(size=50)
    np.testing.assert_array_equal(en.floor_divide(en.tensor(x), en.tensor(y)).numpy(),
                                  np.floor_divide(x, y))
    ix, iy = np.array([7, -7, 7, -7, 5]), np.array([2, 2, -2, -2, 0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(en.floor_divide(en.tensor(ix), en.tensor(iy)).numpy(),
                                      np.floor_divide(ix, iy))
    assert (en.tensor([INF]) // 2).dtype == np.float64
    big = np.array([1e308, 1e308, -3.0])     # quotients overflow: numpy's inf stays
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(en.floor_divide(en.tensor(big), 0.5).numpy(),
                                      np.floor_divide(big, 0.5))
