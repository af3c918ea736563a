"""numpy's statistics, NaN-reductions, histograms, calculus and polynomial functions on
engine tensors (issue #48): each ``en.X`` and ``np.X(tensor)`` (dispatch) against numpy
on the same values -- dtypes, axes, keepdims, NaNs, empty and 0-d inputs --, gradients
against finite differences, and a few inside ``en.function``."""
import warnings

import numpy as np
import pytest

import engine as en
from support.finite_diff import grad_checker

T = en.tensor
RNG = np.random.default_rng(48)


def _values(shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) < 0.5
    return RNG.normal(size=shape).astype(dtype)


def _with_nans(x):
    x = np.array(x, dtype=x.dtype)
    if x.size:
        x.flat[1::3] = np.nan
    return x


def _same(got, want, what, rtol=1e-6, check_dtype=True):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g = np.asarray(g.numpy() if hasattr(g, "numpy") else g)
        w = np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape {g.shape}, numpy {w.shape}"
        if check_dtype:
            assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, numpy {w.dtype}"
        np.testing.assert_allclose(g.astype(w.dtype) if w.dtype.kind != "b" else g, w,
                                   rtol=rtol, atol=1e-12, equal_nan=True, err_msg=what)


def _both(name, args, kwargs, want, **kw):
    """``en.name`` and ``np.name`` called on tensors both give numpy's ``want``."""
    targs = [T(a) if isinstance(a, np.ndarray) else a for a in args]
    tkw = {k: T(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(getattr(en, name)(*targs, **tkw), want, f"en.{name}{kwargs}", **kw)
        _same(getattr(np, name)(*targs, **tkw), want, f"np.{name}{kwargs} (dispatch)", **kw)


def _numpy(name, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(np, name)(*args, **kwargs)


AXES = [((5,), None, False), ((5,), 0, True), ((3, 4), 1, False), ((3, 4), 0, True),
        ((2, 3, 4), (0, 2), False), ((2, 3, 4), None, True), ((), None, False),
        ((0, 3), 1, False)]


# ---- NaN-reductions ----------------------------------------------------------------------
NAN_REDUCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"]


@pytest.mark.parametrize("name", NAN_REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_nan_reductions_match_numpy(name, dtype):
    for shape, axis, keepdims in AXES:
        x = _values(shape, dtype)
        if dtype != "int64":
            x = _with_nans(x)
        if name in ("nanmax", "nanmin") and 0 in shape:
            continue   # numpy raises: no identity
        want = _numpy(name, x, axis=axis, keepdims=keepdims)
        _both(name, (x,), dict(axis=axis, keepdims=keepdims), want, rtol=1e-5)


def test_nan_reductions_keywords():
    x = _with_nans(_values((4, 5), "float64"))
    _both("nanvar", (x,), dict(axis=1, ddof=1), _numpy("nanvar", x, axis=1, ddof=1))
    _both("nanstd", (x,), dict(axis=0, ddof=3), _numpy("nanstd", x, axis=0, ddof=3))
    _both("nansum", (x,), dict(axis=1, dtype="float32"),
          _numpy("nansum", x, axis=1, dtype="float32"))
    _both("nanmean", (x.astype("float32"),), dict(axis=0),
          _numpy("nanmean", x.astype("float32"), axis=0))
    infs = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, np.inf], [1.0, np.inf, np.nan]])
    for name in NAN_REDUCTIONS:   # an inf's deviation is NaN, not a NaN to skip
        _both(name, (infs,), dict(axis=1), _numpy(name, infs, axis=1))


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanarg_match_numpy_and_refuse_an_all_nan_slice(name):
    x = _with_nans(_values((3, 5), "float64"))
    for axis in (None, 0, 1):
        _both(name, (x,), dict(axis=axis), _numpy(name, x, axis=axis))
    x[1] = np.nan
    with pytest.raises(en.InvalidArgumentError, match=f"{name}: all-NaN slice"):
        getattr(en, name)(T(x), axis=1)


@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
def test_nan_cumulative_match_numpy(name):
    x = _with_nans(_values((3, 4), "float64"))
    for axis in (None, 0, 1):
        _both(name, (x,), dict(axis=axis), _numpy(name, x, axis=axis))
    xi = _values((4,), "int32")
    _both(name, (xi,), {}, _numpy(name, xi))


def test_nan_to_num_matches_numpy():
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0])
    for kw in ({}, dict(nan=-1.0, posinf=9.0, neginf=-9.0)):
        for v in (x, x.astype("float32"), x + 1j * x[::-1]):
            _both("nan_to_num", (v,), kw, _numpy("nan_to_num", v, **kw))
    _both("nan_to_num", (np.arange(3),), {}, np.arange(3))


def test_nan_reduction_gradients_are_zero_at_nans():
    x = _with_nans(_values((3, 4), "float64"))
    for name in ("nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanprod"):
        g = en.grad(lambda t, name=name: en.sum(getattr(en, name)(t, axis=1)))(T(x)).numpy()
        assert np.all(g[np.isnan(x)] == 0), name
        assert np.all(np.isfinite(g)), name
    check = grad_checker(np.random.default_rng(1))
    clean = _values((3, 4), "float64")
    for name in ("nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanprod"):
        check(lambda t, name=name: getattr(en, name)(t, axis=1), clean)


# ---- quantiles ---------------------------------------------------------------------------
METHODS = ["linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf",
           "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
           "hazen", "weibull", "median_unbiased", "normal_unbiased"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_quantile_matches_numpy(method, dtype):
    for shape, axis, keepdims in AXES:
        x = _values(shape, dtype)
        for q in (0.5, [0.0, 0.3, 1.0], np.array([[0.1], [0.9]])):
            want = _numpy("quantile", x, q, axis=axis, method=method, keepdims=keepdims)
            _both("quantile", (x, q), dict(axis=axis, method=method, keepdims=keepdims), want,
                  rtol=1e-5)
            want = _numpy("percentile", x, np.multiply(q, 100), axis=axis, method=method,
                          keepdims=keepdims)
            _both("percentile", (x, np.multiply(q, 100)),
                  dict(axis=axis, method=method, keepdims=keepdims), want, rtol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_nanquantile_matches_numpy(method):
    for shape, axis, keepdims in AXES:
        if 0 in shape:
            continue   # numpy's shape for an empty slice with several q is its own quirk
        x = _with_nans(_values(shape, "float64"))
        for q in (0.25, [0.0, 0.6, 1.0]):
            want = _numpy("nanquantile", x, q, axis=axis, method=method, keepdims=keepdims)
            _both("nanquantile", (x, q), dict(axis=axis, method=method, keepdims=keepdims),
                  want)
            want = _numpy("nanpercentile", x, np.multiply(q, 100), axis=axis, method=method)
            _both("nanpercentile", (x, np.multiply(q, 100)), dict(axis=axis, method=method),
                  want)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_median_and_nanmedian_match_numpy(dtype):
    for shape, axis, keepdims in AXES + [((4, 6), 1, False), ((7,), 0, False)]:
        x = _values(shape, dtype)
        _both("median", (x,), dict(axis=axis, keepdims=keepdims),
              _numpy("median", x, axis=axis, keepdims=keepdims))
        if dtype != "int64" and 0 not in shape:
            xn = _with_nans(x)
            _both("median", (xn,), dict(axis=axis), _numpy("median", xn, axis=axis))
            _both("nanmedian", (xn,), dict(axis=axis, keepdims=keepdims),
                  _numpy("nanmedian", xn, axis=axis, keepdims=keepdims), check_dtype=False)


def test_nanmedian_rounds_as_numpy_in_low_precision():
    # numpy averages the two middle values ((a + b) / 2); an interpolation from one
    # towards the other rounds differently in float32 where they nearly cancel.
    rng = np.random.default_rng(7)
    for dtype in ("float16", "float32"):
        x = rng.normal(size=(400, 6)).astype(dtype)
        x.flat[1::3] = np.nan
        x[5] = np.nan
        for axis in (1, 0):
            got = en.nanmedian(T(x), axis=axis).numpy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = np.nanmedian(x, axis=axis)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    # np.mean sums float16 in float32: two large middle values do not overflow
    big = rng.uniform(2e4, 6e4, size=(50, 6)).astype("float16")
    for axis in (1, None):
        np.testing.assert_array_equal(en.median(T(big), axis=axis).numpy(),
                                      np.median(big, axis=axis))
    np.testing.assert_array_equal(en.nanmedian(T(big)).numpy(), np.nanmedian(big))


def test_weighted_quantile_matches_numpy():
    x, w = _values((4, 6), "float64"), RNG.random((4, 6))
    for axis, weights in ((1, w), (None, w), (0, w[:, 0])):
        for q in (0.5, [0.1, 0.9]):
            want = _numpy("quantile", x, q, axis=axis, method="inverted_cdf", weights=weights)
            _both("quantile", (x, q), dict(axis=axis, method="inverted_cdf", weights=weights),
                  want)


def test_quantile_errors_name_the_function():
    x = T(np.ones(4))
    with pytest.raises(en.InvalidArgumentError, match=r"quantile: the quantiles must lie"):
        en.quantile(x, 1.5)
    with pytest.raises(en.InvalidArgumentError, match=r"percentile: method='nope'"):
        en.percentile(x, 50, method="nope")
    with pytest.raises(en.DTypeError, match="median: expected a real input"):
        en.median(T(np.ones(3) + 1j))
    with pytest.raises(en.ShapeError, match="quantile"):
        en.quantile(x, 0.5, axis=1)


def test_median_and_quantile_gradients():
    check = grad_checker(np.random.default_rng(2))
    x = np.array([[0.3, -1.2, 2.5, 0.9], [1.1, 0.2, -0.4, 3.3], [-2.0, 0.5, 1.7, -0.8]])
    check(lambda t: en.median(t, axis=1), x)
    check(lambda t: en.median(t), x)
    check(lambda t: en.quantile(t, [0.1, 0.5, 0.77], axis=0), x)
    check(lambda t: en.percentile(t, 30, axis=1, method="hazen"), x)
    check(lambda t: en.nanquantile(t, 0.4, axis=1), x)
    # the middle element gets the whole cotangent, as in PyTorch
    g = en.grad(lambda t: en.median(t))(T(np.array([3.0, 1.0, 2.0]))).numpy()
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0])
    xn = _with_nans(x)
    g = en.grad(lambda t: en.sum(en.nanmedian(t, axis=1)))(T(xn)).numpy()
    assert np.all(g[np.isnan(xn)] == 0) and np.all(np.isfinite(g))


def test_quantiles_inside_function():
    x = _with_nans(_values((5, 6), "float64"))
    f = en.function(lambda t: (en.median(t, axis=0), en.nanquantile(t, [0.2, 0.8], axis=1),
                               en.nanmean(t), en.percentile(t, 90, method="nearest")))
    got = f(T(x))
    want = [_numpy("median", x, axis=0), _numpy("nanquantile", x, [0.2, 0.8], axis=1),
            _numpy("nanmean", x), _numpy("percentile", x, 90, method="nearest")]
    for g, w in zip(got, want):
        _same(g, w, "traced")


# ---- average, ptp, cov, corrcoef ------------------------------------------------------------
def test_average_matches_numpy():
    x = _values((3, 4), "float64")
    w = RNG.random((3, 4)) + 0.1
    _both("average", (x,), {}, np.average(x))
    _both("average", (x,), dict(axis=1, weights=w), np.average(x, axis=1, weights=w))
    _both("average", (x,), dict(axis=0, weights=w[:, 0]), np.average(x, axis=0, weights=w[:, 0]))
    _both("average", (x,), dict(axis=1, weights=w[0], keepdims=True),
          np.average(x, axis=1, weights=w[0], keepdims=True))
    _both("average", (x,), dict(axis=1, weights=w, returned=True),
          np.average(x, axis=1, weights=w, returned=True))
    xi = _values((3, 4), "int64")
    _both("average", (xi,), dict(axis=0, weights=w), np.average(xi, axis=0, weights=w))
    with pytest.raises(en.InvalidArgumentError, match="average: the weights sum to zero"):
        en.average(T(x), axis=1, weights=T(np.zeros(4)))
    with pytest.raises(en.ShapeError, match="average"):
        en.average(T(x), weights=T(np.ones(4)))
    grad_checker(np.random.default_rng(3))(lambda a, b: en.average(a, axis=1, weights=b),
                                           x, w)


@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_ptp_matches_numpy(dtype):
    for shape, axis, keepdims in AXES[:6]:
        x = _values(shape, dtype)
        _both("ptp", (x,), dict(axis=axis, keepdims=keepdims), np.ptp(x, axis=axis,
                                                                      keepdims=keepdims))


def test_cov_and_corrcoef_match_numpy():
    x, y = _values((3, 6), "float64"), _values((6,), "float64")
    f, a = RNG.integers(1, 4, 6), RNG.random(6)
    for kw in ({}, dict(rowvar=False), dict(bias=True), dict(ddof=2), dict(fweights=f),
               dict(aweights=a), dict(fweights=f, aweights=a)):
        m = x.T if kw.get("rowvar") is False else x
        _both("cov", (m,), kw, np.cov(m, **kw))
    _both("cov", (x, y), {}, np.cov(x, y))
    _both("cov", (y,), {}, np.cov(y))
    xi = _values((2, 5), "int64")
    _both("cov", (xi,), {}, np.cov(xi))
    _both("corrcoef", (x,), {}, np.corrcoef(x))
    _both("corrcoef", (x.T,), dict(rowvar=False), np.corrcoef(x.T, rowvar=False))
    _both("corrcoef", (x, y), {}, np.corrcoef(x, y))
    check = grad_checker(np.random.default_rng(4))
    check(lambda t: en.cov(t), x)
    check(lambda t: en.corrcoef(t), x)


# ---- histograms -------------------------------------------------------------------------------
@pytest.mark.parametrize("bins", [10, 3, [-1.0, 0.0, 0.5, 2.0], "auto", "fd", "sturges", "sqrt"])
def test_histogram_matches_numpy(bins):
    for dtype in ("float64", "float32", "int64"):
        a = _values((40,), dtype)
        kws = [{}, dict(range=(-1, 1)), dict(density=True)]
        if not isinstance(bins, str):
            kws.append(dict(weights=RNG.random(40)))
        for kw in kws:
            _both("histogram", (a,), dict(bins=bins, **kw), np.histogram(a, bins, **kw))
        _both("histogram_bin_edges", (a,), dict(bins=bins), np.histogram_bin_edges(a, bins))
    _both("histogram", (np.ones(5),), dict(bins=4), np.histogram(np.ones(5), 4))
    _both("histogram", (np.ones(0),), dict(bins=4), np.histogram(np.ones(0), 4))


def test_histogramdd_and_2d_match_numpy():
    s = _values((30, 3), "float64")
    for kw in (dict(bins=(3, 4, 5)), dict(bins=3, density=True, weights=s[:, 0] ** 2),
               dict(bins=[2, [-1.0, 0.0, 1.0], 4], range=[(-1, 1), None, (-2, 2)])):
        h, e = np.histogramdd(s, **kw)
        got_h, got_e = en.histogramdd(T(s), **{k: T(v) if isinstance(v, np.ndarray) else v
                                                for k, v in kw.items()})
        _same([got_h] + list(got_e), [h] + list(e), f"histogramdd {kw}")
        got_h, got_e = np.histogramdd(T(s), **kw)
        _same([got_h] + list(got_e), [h] + list(e), f"np.histogramdd {kw} (dispatch)")
    x, y = s[:, 0], s[:, 1]
    for kw in (dict(bins=4), dict(bins=[3, 5], range=[(-1, 1), (-2, 2)]),
               dict(bins=np.array([-1.0, 0.0, 2.0])), dict(density=True, weights=RNG.random(30))):
        _both("histogram2d", (x, y), kw, np.histogram2d(x, y, **kw))


def test_bincount_and_digitize_match_numpy():
    x = RNG.integers(0, 7, 25)
    w = RNG.random(25)
    _both("bincount", (x,), {}, np.bincount(x))
    _both("bincount", (x,), dict(weights=w, minlength=12), np.bincount(x, w, minlength=12))
    _both("bincount", (np.zeros(0, np.int64),), {}, np.bincount(np.zeros(0, np.int64)))
    with pytest.raises(en.InvalidArgumentError, match="bincount: x must be non-negative"):
        en.bincount(T(np.array([1, -1])))
    with pytest.raises(en.DTypeError, match="bincount"):
        en.bincount(T(np.array([1.0])))
    bins = np.array([0.0, 1.5, 3.0, 4.2])
    v = RNG.uniform(-1, 5, (3, 4))
    for right in (False, True):
        _both("digitize", (v, bins), dict(right=right), np.digitize(v, bins, right))
        _both("digitize", (v, bins[::-1].copy()), dict(right=right),
              np.digitize(v, bins[::-1], right))
    with pytest.raises(en.InvalidArgumentError, match="digitize: bins must be monotonic"):
        en.digitize(T(v), T(np.array([0.0, 2.0, 1.0])))


def test_histograms_inside_function_and_gradients():
    a, w = _values((30,), "float64"), RNG.random(30)
    f = en.function(lambda t, u: (en.histogram(t, 5, weights=u),
                                  en.bincount(en.cast(en.abs(t) * 2, "int64"), length=9)))
    (h, e), b = f(T(a), T(w))
    _same([h, e], np.histogram(a, 5, weights=w), "traced histogram")
    _same(b, np.bincount((np.abs(a) * 2).astype(np.int64), minlength=9)[:9], "traced bincount")
    with pytest.raises(en.TracingError, match="bincount: .*pass length="):
        en.function(lambda t: en.bincount(t))(T(np.array([1, 2])))
    with pytest.raises(en.TracingError, match="histogram: bins='auto'"):
        en.function(lambda t: en.histogram(t, "auto"))(T(a))
    check = grad_checker(np.random.default_rng(5))
    check(lambda u: en.histogram(T(a), 4, weights=u)[0], w)
    check(lambda u: en.bincount(T(np.array([0, 2, 2, 1])), weights=u), w[:4])


# ---- calculus and special functions ---------------------------------------------------------
def test_gradient_matches_numpy():
    f = _values((5, 6), "float64")
    x = np.cumsum(RNG.random(6)) + 0.1
    cases = [((f,), {}), ((f, 0.5), dict(edge_order=2)), ((f, 2.0, x), {}),
             ((f, x), dict(axis=1, edge_order=2)), ((f,), dict(axis=0)),
             ((np.arange(5) ** 2,), {}), ((f.astype("float32"),), dict(axis=-1))]
    for args, kw in cases:
        _both("gradient", args, kw, np.gradient(*args, **kw), rtol=1e-5)
    with pytest.raises(en.ShapeError, match="gradient"):
        en.gradient(T(np.ones(2)), edge_order=2)
    grad_checker(np.random.default_rng(6))(lambda t, c: en.gradient(t, c, axis=1), f, x)


def test_differences_integrals_and_unwrap_match_numpy():
    f, x = _values((3, 5), "float64"), np.cumsum(RNG.random(5))
    _both("ediff1d", (f,), {}, np.ediff1d(f))
    _both("ediff1d", (np.arange(5),), dict(to_begin=[-1, -2], to_end=9),
          np.ediff1d(np.arange(5), to_begin=[-1, -2], to_end=9))
    _both("trapezoid", (f,), {}, np.trapezoid(f))
    _both("trapezoid", (f, x), {}, np.trapezoid(f, x))
    _both("trapezoid", (f,), dict(dx=0.3, axis=0), np.trapezoid(f, dx=0.3, axis=0))
    p = np.cumsum(RNG.normal(size=(3, 20)) * 2, axis=1)
    _both("unwrap", (p,), {}, np.unwrap(p))
    _both("unwrap", (p,), dict(axis=0, discont=4.0), np.unwrap(p, axis=0, discont=4.0))
    _both("unwrap", (np.array([0, 5, 2, 9, 1]),), dict(period=6),
          np.unwrap(np.array([0, 5, 2, 9, 1]), period=6))
    check = grad_checker(np.random.default_rng(7))
    check(lambda t, c: en.trapezoid(t, c), f, x)
    check(lambda t: en.unwrap(t), p)
    check(lambda t: en.ediff1d(t), f)


def test_interp_matches_numpy_and_differentiates():
    xp = np.sort(RNG.uniform(0, 10, 8))
    fp = RNG.normal(size=8)
    xs = np.concatenate([RNG.uniform(-2, 12, 20), xp])
    _both("interp", (xs, xp, fp), {}, np.interp(xs, xp, fp))
    _both("interp", (xs, xp, fp), dict(left=-5.0, right=7.0), np.interp(xs, xp, fp, -5.0, 7.0))
    xq = RNG.uniform(0, 10, 8)
    _both("interp", (xs, xq, fp), dict(period=3), np.interp(xs, xq, fp, period=3))
    _both("interp", (xs, xp, fp + 1j * fp), {}, np.interp(xs, xp, fp + 1j * fp))
    _both("interp", (np.array(2.5), np.array([1.0]), np.array([4.0])), {}, np.interp(2.5, [1.0], [4.0]))
    inner = RNG.uniform(xp[0] + 0.01, xp[-1] - 0.01, 6)
    grad_checker(np.random.default_rng(8))(lambda x, f: en.interp(x, T(xp), f), inner, fp)


def test_sinc_and_i0_match_numpy_and_differentiate():
    v = np.array([0.0, 0.3, -2.5, 1.0, 7.9, 8.0, 8.1, 20.0, -50.0])
    for dtype in ("float64", "float32", "int64"):
        x = v.astype(dtype)
        _both("sinc", (x,), {}, np.sinc(x), rtol=1e-5)
        _both("i0", (x,), {}, np.i0(x), rtol=1e-5)
    with pytest.raises(en.DTypeError, match="i0"):
        en.i0(T(np.array([1j])))
    check = grad_checker(np.random.default_rng(9))
    check(en.sinc, np.array([0.3, -1.7, 2.2]))
    check(en.i0, np.array([0.5, -3.0, 7.5]))    # each branch of the expansion on its own,
    check(en.i0, np.array([9.0, 15.0]))         # so the differences stay on one scale


# ---- convolution and polynomials ------------------------------------------------------------
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_match_numpy(mode):
    for n, m in [(5, 3), (3, 5), (4, 4), (6, 2), (2, 6), (1, 4), (4, 1), (5, 4), (4, 5)]:
        a, v = _values((n,), "float64"), _values((m,), "float64")
        _both("convolve", (a, v), dict(mode=mode), np.convolve(a, v, mode))
        _both("correlate", (a, v), dict(mode=mode), np.correlate(a, v, mode))
    a = _values((5,), "float64") + 1j * _values((5,), "float64")
    v = _values((3,), "float64") + 1j * _values((3,), "float64")
    _both("correlate", (a, v), dict(mode=mode), np.correlate(a, v, mode))
    _both("convolve", (np.arange(4), np.array([1, -1])), dict(mode=mode),
          np.convolve(np.arange(4), [1, -1], mode))
    with pytest.raises(en.ShapeError, match="convolve: an input is empty"):
        en.convolve(T(np.ones(0)), T(np.ones(2)))
    grad_checker(np.random.default_rng(10))(lambda x, y: en.convolve(x, y, mode),
                                            _values((5,), "float64"), _values((3,), "float64"))


def test_polynomials_match_numpy():
    r, p = _values((4,), "float64"), _values((5,), "float64")
    _both("poly", (r,), {}, np.poly(r))
    _both("poly", (np.array([1 + 1j, 1 - 1j, 2]),), {}, np.poly([1 + 1j, 1 - 1j, 2]))
    _both("poly", (np.array([1, 2]),), {}, np.poly([1, 2]))
    _both("polyadd", (np.array([1, 2]), np.array([3.0, 4, 5])), {}, np.polyadd([1, 2], [3.0, 4, 5]))
    _both("polysub", (np.array([1, 2, 7, 8]), np.array([3.0, 4, 5])), {},
          np.polysub([1, 2, 7, 8], [3.0, 4, 5]))
    _both("polymul", (p, r), {}, np.polymul(p, r))
    for u, v in [([3.0, 5, 2], [2.0, 1]), ([1.0, -3, 2], [1.0, -1]), ([1.0, 2], [1.0, 2, 3])]:
        _both("polydiv", (np.array(u), np.array(v)), {}, np.polydiv(u, v))
    for m in (0, 1, 2, 6):
        _both("polyder", (p,), dict(m=m), np.polyder(p, m))
    for m, k in ((1, None), (2, None), (1, 3.0), (2, [1.0, 2.0]), (3, 2.0)):
        _both("polyint", (p,), dict(m=m, k=k), np.polyint(p, m, k))
    x = _values((2, 3), "float64")
    _both("polyval", (p, x), {}, np.polyval(p, x))
    _both("polyval", (np.array([1, 2, 3]), np.arange(4)), {}, np.polyval([1, 2, 3], np.arange(4)))
    _same(sorted(en.roots(T(np.array([1.0, -3.0, 2.0]))).tolist()), [1.0, 2.0], "roots")
    _both("roots", (np.array([0.0, 1.0, -6.0, 11.0, -6.0, 0.0]),), {},
          np.roots([0.0, 1.0, -6.0, 11.0, -6.0, 0.0]))


def test_polyfit_matches_numpy_and_differentiates():
    xs = np.linspace(0, 1, 12)
    ys = np.sin(3 * xs) + 0.1 * RNG.normal(size=12)
    w = RNG.random(12) + 0.5
    ys2 = np.stack([ys, ys ** 2], 1)
    _both("polyfit", (xs, ys, 3), {}, np.polyfit(xs, ys, 3))
    _both("polyfit", (xs, ys, 2), dict(w=w), np.polyfit(xs, ys, 2, w=w))
    _both("polyfit", (xs, ys2, 2), {}, np.polyfit(xs, ys2, 2))
    _both("polyfit", (xs, ys, 2), dict(cov=True), np.polyfit(xs, ys, 2, cov=True))
    _both("polyfit", (xs, ys2, 2), dict(cov="unscaled"), np.polyfit(xs, ys2, 2, cov="unscaled"))
    grad_checker(np.random.default_rng(11))(lambda y: en.polyfit(T(xs), y, 2), ys)


def test_polynomials_inside_function():
    p, x = _values((4,), "float64"), _values((6,), "float64")
    f = en.function(lambda a, b: (en.polyval(en.polyder(a), b), en.polyint(a),
                                  en.polymul(a, a), en.convolve(b, a, "same")))
    got = f(T(p), T(x))
    want = [np.polyval(np.polyder(p), x), np.polyint(p), np.polymul(p, p),
            np.convolve(x, p, "same")]
    for g, w_ in zip(got, want):
        _same(g, w_, "traced")
    with pytest.raises(en.TracingError, match="polydiv"):
        en.function(lambda a: en.polydiv(a, a))(T(p))
    with pytest.raises(en.TracingError, match="roots"):
        en.function(en.roots)(T(p))


# ---- apply_along_axis / apply_over_axes ------------------------------------------------------
def test_apply_along_and_over_axes_match_numpy():
    x = _values((3, 4, 5), "float64")
    for axis in (0, 1, 2, -1):
        for fn, ref in ((en.sort, np.sort), (en.sum, np.sum),
                        (lambda r: en.outer(r, r), lambda r: np.outer(r, r))):
            _same(en.apply_along_axis(fn, axis, T(x)), np.apply_along_axis(ref, axis, x),
                  f"apply_along_axis {axis}")
    _same(np.apply_along_axis(np.sum, 1, T(x)), np.apply_along_axis(np.sum, 1, x), "dispatch")
    _same(en.apply_over_axes(en.sum, T(x), [0, 2]), np.apply_over_axes(np.sum, x, [0, 2]),
          "apply_over_axes")
    _same(np.apply_over_axes(np.sum, T(x), 1), np.apply_over_axes(np.sum, x, 1), "dispatch")
    grad_checker(np.random.default_rng(12))(
        lambda t: en.apply_along_axis(lambda r: en.sum(r * r), 1, t), x[0])
    f = en.function(lambda t: en.apply_along_axis(en.median, 0, t))
    _same(f(T(x[0])), np.median(x[0], axis=0), "traced apply_along_axis")
