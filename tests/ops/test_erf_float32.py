"""float32 erf computed in float32 (engine/ops/erf_kernel.py's erf_float32), against
``math.erf`` in float64 over a dense grid, the tiny and subnormal inputs included."""
import math

import numpy as np

import engine as en
from engine.ops import erf_kernel


def _ulps(got, x):
    want = np.array([math.erf(float(v)) for v in x])
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(np.asarray(got, np.float64) - want) / spacing


def _grid():
    return np.concatenate([np.linspace(-6.0, 6.0, 400001),
                           np.geomspace(1e-45, 6.0, 4001), -np.geomspace(1e-45, 6.0, 4001),
                           [1.0, -1.0, 4.0, -4.0, np.nextafter(1.0, 0.0)]]).astype(np.float32)


def test_float32_erf_is_within_two_ulps_of_math_erf():
    x = _grid()
    got = en.erf(en.tensor(x)).numpy()
    assert got.dtype == np.float32
    ulps = _ulps(got, x)
    assert ulps.max() <= 2.0, f"{ulps.max()} ulps at x = {x[ulps.argmax()]}"
    assert np.mean(ulps > 1.0) < 0.01          # nearly every value within one ulp


def test_float32_erf_special_values_keep_their_signs():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 30.0, -30.0], np.float32)
    got = en.erf(en.tensor(x)).numpy()
    np.testing.assert_array_equal(got, [np.nan, 1.0, -1.0, 0.0, -0.0, 1.0, -1.0])
    assert np.signbit(got[4]) and not np.signbit(got[3])


def test_float32_erf_is_odd_and_monotonic():
    x = np.linspace(0.0, 5.0, 100001, dtype=np.float32)
    y = erf_kernel.erf_numpy(x)
    np.testing.assert_array_equal(erf_kernel.erf_numpy(-x), -y)
    assert np.all(np.diff(y) >= 0.0)


def test_the_out_kernel_and_a_traced_erf_agree_with_eager():
    x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32) * 2.0
    out = np.empty_like(x)
    assert erf_kernel.erf_numpy(x, out=out) is out
    eager = en.erf(en.tensor(x)).numpy()
    np.testing.assert_array_equal(out, eager)
    traced = en.function(lambda t: en.erf(t) * 2.0)(en.tensor(x)).numpy()
    np.testing.assert_allclose(traced, eager * 2.0, rtol=1e-7)


def test_float32_exact_gelu_matches_a_float64_reference():
    # gelu is x * (1 + erf(x / sqrt 2)) / 2 in float32, as PyTorch's: where erf is near -1
    # the sum cancels, so the error bound has a term in |x| times float32's eps.
    x = np.linspace(-8.0, 8.0, 20001).astype(np.float32)
    xd = x.astype(np.float64)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in xd]))
    pdf = np.exp(-0.5 * xd ** 2) / math.sqrt(2.0 * math.pi)
    eps = float(np.finfo(np.float32).eps)
    got = en.gelu(en.tensor(x)).numpy()
    assert got.dtype == np.float32
    want = xd * cdf
    assert np.all(np.abs(got - want) <= 4 * eps * (np.abs(want) + np.abs(xd)))
    g = en.grad(lambda t: en.sum(en.gelu(t)))(en.tensor(x)).numpy()
    want = cdf + xd * pdf
    assert np.all(np.abs(g - want) <= 8 * eps * (np.abs(want) + np.abs(xd)))


def test_a_zero_dimensional_float32_erf():
    got = en.erf(en.tensor(np.float32(0.5))).numpy()
    assert got.shape == () and got.dtype == np.float32
    assert abs(float(got) - math.erf(0.5)) <= float(np.spacing(np.float32(0.52)))
