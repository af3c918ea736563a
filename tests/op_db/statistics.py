"""Op-database entries for numpy's statistics, NaN-reductions, histograms, calculus and
polynomial composites (``engine/ops/nan_reductions.py``, ``statistics_quantiles.py``,
``statistics_moments.py``, ``histograms.py``, ``calculus.py``, ``polynomials.py``,
``functional_apply.py``), each against numpy itself.

Samples with NaNs check the NaN handling; the gradient samples are NaN-free and away
from ties and bin edges. ``bincount`` is sampled with ``length=`` and ``histogram``
with ``bins`` counts (data-dependent edges of static size), which trace; the eager-only
``polydiv`` and ``roots`` are covered by tests/interop/test_numpy_functions_statistics.py."""
import warnings

import numpy as np

import engine as en

from op_db.core import (F64, FLOATS, I64, NUMERIC, ErrorInput, OpInfo, Sample, composite,
                        make, make_distinct)

REAL_NUMERIC = FLOATS + (I64,)


def _quiet(fn):
    """numpy's reference without its RuntimeWarnings (all-NaN slices, empty means)."""
    def ref(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    return ref


def _nans(x):
    x = np.array(x)
    if x.dtype.kind == "f" and x.size:
        x.flat[1::4] = np.nan
    return x


AXIS_CASES = [((5,), dict(axis=0)), ((3, 4), dict(axis=1, keepdims=True)),
              ((2, 3, 4), dict(axis=(0, 2))), ((2, 3), dict(axis=None)), ((), {})]


def _axis_samples(with_nans, cases=AXIS_CASES):
    def gen(dtype, rng):
        for shape, kw in cases:
            x = make_distinct(rng, shape, dtype)
            yield Sample((_nans(x) if with_nans else x,), dict(kw))
    return gen


def _clean(cases=AXIS_CASES):
    return lambda rng: _axis_samples(False, cases)(F64, rng)


_AXIS_ERROR = [ErrorInput(Sample((np.ones((2, 3)),), dict(axis=2)), en.ShapeError)]

# ---- NaN-reductions --------------------------------------------------------------------------
for _name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin"):
    composite(OpInfo(_name, getattr(en, _name), _quiet(getattr(np, _name)),
                     _axis_samples(True), REAL_NUMERIC, error_inputs=lambda: _AXIS_ERROR,
                     grad_samples=_clean()))

_ARG_CASES = [((5,), dict(axis=0)), ((3, 4), dict(axis=1)), ((2, 3), {}),
              ((2, 3, 4), dict(axis=-1, keepdims=True))]
for _name in ("nanargmax", "nanargmin"):
    composite(OpInfo(_name, getattr(en, _name), getattr(np, _name),
                     _axis_samples(True, _ARG_CASES), REAL_NUMERIC,
                     error_inputs=lambda name=_name: [
                         ErrorInput(Sample((np.full((2, 3), np.nan),), dict(axis=1)),
                                    en.InvalidArgumentError, name)],
                     supports_grad=False, grad_skip="an index has no gradient"))

_CUM_CASES = [((5,), dict(axis=0)), ((3, 4), dict(axis=1)), ((2, 3), {})]
for _name in ("nancumsum", "nancumprod"):
    composite(OpInfo(_name, getattr(en, _name), getattr(np, _name),
                     _axis_samples(True, _CUM_CASES), REAL_NUMERIC,
                     error_inputs=lambda: [ErrorInput(Sample((np.ones((2, 3)),), dict(axis=2)),
                                                      en.ShapeError)],
                     grad_samples=_clean(_CUM_CASES)))


def _nan_to_num_samples(dtype, rng):
    x = make(rng, (2, 4), dtype)
    if np.dtype(dtype).kind == "f":
        x[0, :3] = [np.nan, np.inf, -np.inf]
    yield Sample((x,))
    yield Sample((x,), dict(nan=-1.0, posinf=7.0, neginf=-7.0))


composite(OpInfo("nan_to_num", en.nan_to_num, np.nan_to_num, _nan_to_num_samples, NUMERIC,
                 grad_samples=lambda rng: [Sample((make(rng, (2, 3), F64),))]))

# ---- quantiles ---------------------------------------------------------------------------------
_Q_CASES = [((5,), dict(q=0.5)), ((3, 4), dict(q=[0.1, 0.75], axis=1)),
            ((2, 3, 4), dict(q=0.3, axis=(0, 2), keepdims=True, method="hazen")),
            ((4, 3), dict(q=[0.2, 0.9], axis=0, method="nearest")),
            ((6,), dict(q=0.4, method="inverted_cdf")), ((), dict(q=1.0))]


def _q_samples(with_nans, scale=1.0):
    def gen(dtype, rng):
        for shape, kw in _Q_CASES:
            kw = dict(kw)
            q = np.multiply(kw.pop("q"), scale)
            q = q.tolist() if np.ndim(q) else float(q)
            x = make_distinct(rng, shape, dtype)
            yield Sample((_nans(x) if with_nans else x, q), kw)
    return gen


def _q_errors(name, bad_q):
    return lambda: [ErrorInput(Sample((np.ones(4), bad_q)), en.InvalidArgumentError, name),
                    ErrorInput(Sample((np.ones(4), 0.5), dict(method="nope")),
                               en.InvalidArgumentError, name),
                    ErrorInput(Sample((np.ones(4) + 1j, 0.5)), en.DTypeError, name)]


for _name, _scale, _nan in (("quantile", 1.0, False), ("percentile", 100.0, False),
                            ("nanquantile", 1.0, True), ("nanpercentile", 100.0, True)):
    composite(OpInfo(_name, getattr(en, _name), _quiet(getattr(np, _name)),
                     _q_samples(True, _scale), REAL_NUMERIC if not _nan else FLOATS,
                     error_inputs=_q_errors(_name, 1.5 * _scale),
                     grad_samples=lambda rng, s=_scale: _q_samples(False, s)(F64, rng)))

_MEDIAN_CASES = [((5,), {}), ((3, 4), dict(axis=1)), ((2, 3, 4), dict(axis=(0, 2))),
                 ((4, 2), dict(axis=0, keepdims=True)), ((), {})]
for _name, _types in (("median", REAL_NUMERIC), ("nanmedian", FLOATS)):
    composite(OpInfo(_name, getattr(en, _name), _quiet(getattr(np, _name)),
                     _axis_samples(True, _MEDIAN_CASES), _types,
                     error_inputs=lambda: _AXIS_ERROR, grad_samples=_clean(_MEDIAN_CASES)))

# ---- average, ptp, cov, corrcoef ---------------------------------------------------------------


def _average_samples(dtype, rng):
    x = make(rng, (3, 4), dtype)
    yield Sample((x,))
    # arrays go positionally: the suites differentiate and batch positional arrays only
    yield Sample((x, 1, rng.uniform(0.5, 2.0, (3, 4))))
    yield Sample((x, 0, rng.uniform(0.5, 2.0, 3)), dict(keepdims=True))


def _average_ref(a, axis=None, weights=None, keepdims=False):
    return np.average(a, axis=axis, weights=weights, keepdims=keepdims)


composite(OpInfo("average", en.average, _average_ref, _average_samples, REAL_NUMERIC,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)),), dict(weights=np.ones(3))),
                                en.ShapeError, "average"),
                     ErrorInput(Sample((np.ones((2, 3)),), dict(axis=1, weights=np.zeros(3))),
                                en.InvalidArgumentError, "average")]))
composite(OpInfo("ptp", en.ptp, np.ptp, _axis_samples(False, AXIS_CASES[:4]), REAL_NUMERIC,
                 error_inputs=lambda: _AXIS_ERROR))


def _cov_samples(dtype, rng):
    yield Sample((make(rng, (3, 6), dtype),))
    yield Sample((make(rng, (6, 2), dtype),), dict(rowvar=False, ddof=0))
    yield Sample((make(rng, (2, 5), dtype), make(rng, (5,), dtype)))
    yield Sample((make(rng, (5,), dtype),))


def _cov_weighted(dtype, rng):
    yield Sample((make(rng, (3, 6), dtype), None, True, False, None,
                  np.array([1, 2, 1, 3, 1, 2]), rng.uniform(0.5, 2.0, 6)))


def _cov_all(dtype, rng):
    yield from _cov_samples(dtype, rng)
    yield from _cov_weighted(dtype, rng)


_COV_ERRORS = [ErrorInput(Sample((np.ones((2, 3, 4)),)), en.ShapeError, "cov"),
               ErrorInput(Sample((np.ones((2, 3)), np.ones((2, 4)))), en.ShapeError, "cov")]
composite(OpInfo("cov", en.cov, np.cov, _cov_all, REAL_NUMERIC, error_inputs=lambda: _COV_ERRORS))
def _corrcoef_samples(dtype, rng):
    yield Sample((make(rng, (3, 6), dtype),))
    yield Sample((make(rng, (6, 2), dtype),), dict(rowvar=False))
    yield Sample((make(rng, (2, 5), dtype), make(rng, (5,), dtype)))


composite(OpInfo("corrcoef", en.corrcoef, np.corrcoef, _corrcoef_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(e.sample, e.error, "cov") for e in _COV_ERRORS]))

# ---- histograms --------------------------------------------------------------------------------


def _histogram_samples(dtype, rng):
    a = make(rng, (20,), dtype)
    yield Sample((a,), dict(bins=4))
    yield Sample((a, 3, (-1.0, 2.0), None, rng.uniform(0.5, 2.0, 20)))
    yield Sample((a,), dict(bins=np.array([-3.0, -1.0, 0.5, 3.0]), density=True))
    yield Sample((make(rng, (2, 5), dtype),), dict(bins=2))


def _histogram_grad(rng):
    a = make(rng, (20,), F64)
    yield Sample((a, 3, (-1.0, 2.0), None, rng.uniform(0.5, 2.0, 20)))


def _hist_errors(name):
    return lambda: [ErrorInput(Sample((np.ones(4),), dict(bins=0)),
                               en.InvalidArgumentError, name),
                    ErrorInput(Sample((np.ones(4),), dict(bins=np.array([1.0, 0.0]))),
                               en.InvalidArgumentError, name)]


composite(OpInfo("histogram", en.histogram, np.histogram, _histogram_samples, REAL_NUMERIC,
                 error_inputs=_hist_errors("histogram"), grad_samples=_histogram_grad))


def _edges_samples(dtype, rng):
    a = make(rng, (20,), dtype)
    yield Sample((a,), dict(bins=5))
    yield Sample((a,), dict(bins=2, range=(0.0, 1.0)))


composite(OpInfo("histogram_bin_edges", en.histogram_bin_edges, np.histogram_bin_edges,
                 _edges_samples, REAL_NUMERIC, error_inputs=_hist_errors("histogram_bin_edges")))


def _flat_dd(fn):
    def call(*args, **kwargs):
        counts, edges = fn(*args, **kwargs)
        return (counts, *edges)
    return call


def _dd_samples(dtype, rng):
    yield Sample((make(rng, (15, 2), dtype),), dict(bins=(3, 2)))
    yield Sample((make(rng, (15, 3), dtype), 2, [(-1, 1), (-2, 2), (0, 3)], None,
                  rng.uniform(0.5, 2.0, 15)))


composite(OpInfo("histogramdd", _flat_dd(en.histogramdd), _flat_dd(np.histogramdd), _dd_samples,
                 REAL_NUMERIC, error_inputs=lambda: [ErrorInput(
                     Sample((np.ones((4, 2)),), dict(bins=(2, 2, 2))), en.ShapeError,
                     "histogramdd")],
                 grad_samples=lambda rng: list(_dd_samples(F64, rng))[1:]))


def _2d_samples(dtype, rng):
    yield Sample((make(rng, (12,), dtype), make(rng, (12,), dtype)), dict(bins=3))
    yield Sample((make(rng, (12,), dtype), make(rng, (12,), dtype)),
                 dict(bins=[2, 4], range=[(-2, 2), (-3, 3)], density=True))


composite(OpInfo("histogram2d", en.histogram2d, np.histogram2d, _2d_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(4), np.ones(4)), dict(bins=0)),
                                                  en.InvalidArgumentError, "histogramdd")],
                 grad_samples=lambda rng: list(_2d_samples(F64, rng))[1:]))


def _bincount_ref(x, weights=None, minlength=0, length=None):
    if length is None:
        return np.bincount(x, weights, minlength)
    return np.bincount(x, weights, max(minlength, length))[:length]


def _bincount_samples(dtype, rng):
    x = rng.integers(0, 6, 15)
    yield Sample((x,), dict(length=6))
    yield Sample((x, make(rng, (15,), dtype)), dict(length=8))
    yield Sample((x,), dict(minlength=9, length=9))


composite(OpInfo("bincount", en.bincount, _bincount_ref, _bincount_samples, FLOATS,
                 error_inputs=lambda: [
                     ErrorInput(Sample((np.array([1, -1]),)), en.InvalidArgumentError,
                                "bincount"),
                     ErrorInput(Sample((np.array([1.0]),)), en.DTypeError, "bincount"),
                     ErrorInput(Sample((np.ones((2, 2), np.int64),)), en.ShapeError,
                                "bincount")]))


def _digitize_samples(dtype, rng):
    bins = np.array([-1.0, 0.0, 0.5, 2.0]).astype(dtype)
    x = make(rng, (3, 4), dtype)
    yield Sample((x, bins))
    yield Sample((x, bins), dict(right=True))
    yield Sample((x, bins[::-1].copy()))


composite(OpInfo("digitize", en.digitize, np.digitize, _digitize_samples, FLOATS,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.array([0.0, 2.0, 1.0]))),
                                                  en.InvalidArgumentError, "digitize")],
                 supports_grad=False, grad_skip="bin indices have no gradient"))

# ---- calculus and special functions --------------------------------------------------------


def _gradient_samples(dtype, rng):
    f = make(rng, (4, 5), dtype)
    yield Sample((f,))
    yield Sample((f, 0.5), dict(axis=1, edge_order=2))
    yield Sample((f, np.cumsum(rng.uniform(0.5, 1.5, 5))), dict(axis=-1))


composite(OpInfo("gradient", en.gradient, np.gradient, _gradient_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(2),), dict(edge_order=2)),
                                                  en.ShapeError, "gradient")]))


def _ediff_samples(dtype, rng):
    yield Sample((make(rng, (3, 4), dtype),))
    yield Sample((make(rng, (5,), dtype), make(rng, (1,), dtype), make(rng, (2,), dtype)))


composite(OpInfo("ediff1d", en.ediff1d, np.ediff1d, _ediff_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3, np.int64),),
                                                         dict(to_end=np.ones(1))),
                                                  en.DTypeError, "ediff1d")]))


def _trapezoid_samples(dtype, rng):
    y = make(rng, (3, 5), dtype)
    yield Sample((y,))
    yield Sample((y, np.cumsum(rng.uniform(0.5, 1.5, 5)).astype(dtype)))
    yield Sample((y,), dict(dx=0.5, axis=0))


composite(OpInfo("trapezoid", en.trapezoid, np.trapezoid, _trapezoid_samples, REAL_NUMERIC,
                 error_inputs=lambda: _AXIS_ERROR))


def _unwrap_samples(dtype, rng):
    yield Sample((np.cumsum(make(rng, (2, 9), dtype) * 2, axis=1).astype(dtype),))
    yield Sample((np.cumsum(make(rng, (9,), dtype) * 2).astype(dtype),), dict(discont=4.0))


composite(OpInfo("unwrap", en.unwrap, np.unwrap, _unwrap_samples, FLOATS,
                 error_inputs=lambda: _AXIS_ERROR))


def _interp_samples(dtype, rng):
    xp = np.sort(rng.uniform(0, 10, 6)).astype(dtype)
    fp = make(rng, (6,), dtype)
    x = rng.uniform(1, 9, (2, 4)).astype(dtype)
    yield Sample((x, xp, fp))
    yield Sample((np.concatenate([x.ravel(), [-1.0, 12.0]]).astype(dtype), xp, fp),
                 dict(left=-5.0, right=5.0))


composite(OpInfo("interp", en.interp, np.interp, _interp_samples, FLOATS,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(2), np.ones(3), np.ones(4))),
                                                  en.ShapeError, "interp")]))


def _special_samples(dtype, rng):
    yield Sample((make(rng, (2, 3), dtype),))
    yield Sample((np.array([0.0, 1.0, 8.5, -12.0]).astype(dtype),))


composite(OpInfo("sinc", en.sinc, np.sinc, _special_samples, REAL_NUMERIC,
                 grad_samples=lambda rng: [Sample((make(rng, (2, 3), F64),))]))
composite(OpInfo("i0", en.i0, np.i0, _special_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(2) * 1j,)), en.DTypeError,
                                                  "i0")],
                 grad_samples=lambda rng: [Sample((make(rng, (2, 3), F64),))]))

# ---- convolution and polynomials -----------------------------------------------------------


def _conv_samples(dtype, rng):
    for n, m, mode in ((5, 3, "full"), (3, 5, "same"), (6, 2, "valid"), (4, 4, "same")):
        yield Sample((make(rng, (n,), dtype), make(rng, (m,), dtype)), dict(mode=mode))


_CONV_ERRORS = lambda name: [ErrorInput(Sample((np.ones(0), np.ones(2))),  # noqa: E731
                                        en.ShapeError, name),
                             ErrorInput(Sample((np.ones((2, 2)), np.ones(2))), en.ShapeError,
                                        name)]
for _name in ("convolve", "correlate"):
    composite(OpInfo(_name, getattr(en, _name), getattr(np, _name), _conv_samples,
                     REAL_NUMERIC, error_inputs=lambda name=_name: _CONV_ERRORS(name)))


def _poly_samples(dtype, rng):
    yield Sample((make(rng, (3,), dtype),))
    yield Sample((make(rng, (1,), dtype),))


composite(OpInfo("poly", en.poly, np.poly, _poly_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones((2, 3, 2)),)),
                                                  en.UnsupportedError, "poly")]))


def _pair_samples(dtype, rng):
    yield Sample((make(rng, (3,), dtype), make(rng, (5,), dtype)))
    yield Sample((make(rng, (4,), dtype), make(rng, (2,), dtype)))


_PAIR_ERRORS = lambda name: [ErrorInput(Sample((np.ones((2, 2)), np.ones(2))),  # noqa: E731
                                        en.ShapeError, name)]
for _name in ("polyadd", "polysub", "polymul"):
    composite(OpInfo(_name, getattr(en, _name), getattr(np, _name), _pair_samples,
                     REAL_NUMERIC, error_inputs=lambda name=_name: _PAIR_ERRORS(name)))


def _polyder_samples(dtype, rng):
    p = make(rng, (5,), dtype)
    yield Sample((p,))
    yield Sample((p,), dict(m=3))


composite(OpInfo("polyder", en.polyder, np.polyder, _polyder_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3),), dict(m=-1)),
                                                  en.InvalidArgumentError, "polyder")]))


def _polyint_samples(dtype, rng):
    p = make(rng, (4,), dtype)
    yield Sample((p,))
    yield Sample((p,), dict(m=2, k=[1.0, -2.0]))


composite(OpInfo("polyint", en.polyint, np.polyint, _polyint_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3),), dict(m=3, k=[1.0, 2.0])),
                                                  en.InvalidArgumentError, "polyint")]))


def _polyval_samples(dtype, rng):
    yield Sample((make(rng, (4,), dtype), make(rng, (2, 3), dtype)))
    yield Sample((make(rng, (1,), dtype), make(rng, (3,), dtype)))


composite(OpInfo("polyval", en.polyval, np.polyval, _polyval_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones((2, 2)), np.ones(2))),
                                                  en.ShapeError, "polyval")]))


def _polyfit_samples(dtype, rng):
    x = np.linspace(0, 1, 9).astype(dtype)
    yield Sample((x, make(rng, (9,), dtype), 2))
    yield Sample((x, make(rng, (9, 2), dtype), 1, None, False, rng.uniform(0.5, 2.0, 9)))


composite(OpInfo("polyfit", en.polyfit, np.polyfit, _polyfit_samples, (F64,),
                 error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.ones(4), 1)),
                                                  en.ShapeError, "polyfit")]))


def _apply_samples(dtype, rng):
    yield Sample((en.sort, 0, make(rng, (3, 4), dtype)))
    yield Sample((en.sum, 1, make(rng, (2, 3, 2), dtype)))


def _apply_ref(fn, axis, arr):
    return np.apply_along_axis({en.sort: np.sort, en.sum: np.sum}[fn], axis, arr)


composite(OpInfo("apply_along_axis", en.apply_along_axis, _apply_ref, _apply_samples,
                 REAL_NUMERIC, error_inputs=lambda: [ErrorInput(
                     Sample((en.sum, 2, np.ones((2, 3)))), en.ShapeError, "apply_along_axis")]))


def _over_samples(dtype, rng):
    yield Sample((en.sum, make(rng, (2, 3, 4), dtype), [0, 2]))
    yield Sample((en.sum, make(rng, (2, 3), dtype), 1))


def _over_ref(fn, a, axes):
    return np.apply_over_axes(np.sum, a, axes)


composite(OpInfo("apply_over_axes", en.apply_over_axes, _over_ref, _over_samples, REAL_NUMERIC,
                 error_inputs=lambda: [ErrorInput(
                     Sample((lambda a, axis: en.reshape(a, (-1,)), np.ones((2, 3, 2)), 0)),
                     en.ShapeError, "apply_over_axes")]))
