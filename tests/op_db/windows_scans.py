"""Op-database entries for ``logcumsumexp`` (``engine/ops/logcumsumexp.py``), the running
extremes with their indices (``cummax``/``cummin`` with ``return_indices``),
``trunc_divide`` and ``sliding_window_view``, against independent references: prefix
log-sum-exps by scipy, index loops, Python's own integer arithmetic and numpy's
``sliding_window_view``."""
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view as np_windows
from scipy.special import logsumexp

import engine as en

from op_db.core import (ALL, BOOL, F64, ErrorInput, OpInfo, Sample, add, composite,
                        error_cases, make, make_distinct, make_nonzero, op_dtypes, with_params)

# ---- logcumsumexp --------------------------------------------------------------------------
_SCANS = [((5,), dict(axis=0)), ((2, 3, 4), dict(axis=1)), ((2, 3, 4), dict(axis=-1)),
          ((2, 3), dict(axis=None)), ((), dict(axis=None)), ((0, 3), dict(axis=0)),
          ((2, 0), dict(axis=1))]


def _logcumsumexp_ref(x, axis=None):
    if axis is None:
        x, axis = np.reshape(x, -1), 0
    moved = np.moveaxis(x.astype(F64), axis, -1)
    out = np.empty_like(moved)
    for j in range(moved.shape[-1]):
        out[..., j] = logsumexp(moved[..., :j + 1], axis=-1)
    return np.moveaxis(out, -1, axis).astype(x.dtype)


def _logcumsumexp_samples(dtype, rng):
    yield from with_params(_SCANS)(dtype, rng)
    yield Sample((np.array([[-1000.0, 0.0, 2.0, 1000.0], [1.0, 2.0, -np.inf, 3.0]], dtype),),
                 dict(axis=1), desc="large, very negative and -inf terms")


add(OpInfo("logcumsumexp", en.logcumsumexp, _logcumsumexp_ref, _logcumsumexp_samples,
           op_dtypes("logcumsumexp"),
           grad_samples=lambda rng: with_params(_SCANS + [((3, 6), dict(axis=1))],
                                                lambda r, s, d: make(r, s, d, -30, 30))(F64, rng),
           error_inputs=error_cases([((2, 3), dict(axis=2), en.ShapeError),
                                     ((2, 3), dict(axis=-3), en.ShapeError)])))


# ---- cummax / cummin with indices ---------------------------------------------------------
def _held_ref(better):
    """PyTorch's loop: a value at least as good as the running one (or NaN) takes over."""
    def ref(x, axis=None):
        if axis is None:
            x, axis = np.reshape(x, -1), 0
        moved = np.moveaxis(x, axis, -1)
        vals, idx = np.empty_like(moved), np.zeros(moved.shape, np.int64)
        for pos in np.ndindex(moved.shape[:-1]):
            best, at = None, 0
            for j, v in enumerate(moved[pos]):
                if best is None or v != v or (best == best and better(v, best)):
                    best, at = v, j
                vals[pos + (j,)], idx[pos + (j,)] = best, at
        return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)
    return ref


def _held_samples(dtype, rng):
    for shape, params in [((6,), dict(axis=0)), ((2, 3, 4), dict(axis=1)), ((2, 3), {}),
                          ((0, 3), dict(axis=0))]:
        yield Sample((make_distinct(rng, shape, dtype),), dict(params))
    yield Sample((make(rng, (3, 7), dtype, -2, 2),), dict(axis=1), desc="ties: the latest")
    if dtype.kind == "f":
        yield Sample((np.array([1.0, np.nan, 3.0, np.nan, 0.0], dtype),), desc="NaN")


def _with_indices(running):
    return lambda x, axis=None: running(x, axis, return_indices=True)


for _name, _better in [("cummax", np.greater_equal), ("cummin", np.less_equal)]:
    composite(OpInfo(f"{_name}_indices", _with_indices(getattr(en, _name)),
                     _held_ref(_better), _held_samples, ALL,
                     grad_samples=lambda rng: [s for s in _held_samples(F64, rng) if not s.desc],
                     error_inputs=error_cases([((2, 3), dict(axis=2), en.ShapeError, _name)])))


# ---- trunc_divide -------------------------------------------------------------------------
def _trunc_ref(a, b):
    """Integers: Python's exact integers, rounded toward zero; floats: trunc(a / b)."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    dtype = np.floor_divide(a_arr[..., :0] if a_arr.ndim else a_arr,
                            b_arr[..., :0] if b_arr.ndim else b_arr).dtype
    if dtype.kind == "f":
        return np.trunc(np.true_divide(a, b))
    pa, pb = np.broadcast_arrays(a_arr, b_arr)
    out = [0 if int(y) == 0 else abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1)
           for x, y in zip(pa.ravel(), pb.ravel())]
    return np.asarray(out, dtype=dtype).reshape(pa.shape)


def _trunc_samples(dtype, rng):
    for sa, sb in [((6,), (6,)), ((2, 3), (3,)), ((), (2, 2)), ((0, 2), (2,))]:
        a = make(rng, sa, dtype, -20, 20)
        b = make_nonzero(rng, sb, dtype, 1, 6) if dtype != BOOL else np.ones(sb, bool)
        yield Sample((a, b))
    if dtype.kind in "iu":
        yield Sample((np.array([7, -7, 7, -7, 6, 0], dtype), np.array([2, 2, -2, -2, -3, 5], dtype)),
                     desc="every sign")
        yield Sample((np.array([5, -5], dtype), np.array([0, 0], dtype)), desc="by zero: 0")
    if dtype.kind == "f":
        yield Sample((np.array([7.5, -7.5, 1.0], dtype), 2.0), desc="a Python float")


composite(OpInfo("trunc_divide", en.trunc_divide, _trunc_ref, _trunc_samples, ALL,
                 grad_samples=lambda rng: [Sample((make(rng, (2, 3), F64, 0.3, 9.7),
                                                   make(rng, (3,), F64, 1.05, 1.95)))],
                 error_inputs=lambda: [ErrorInput(Sample((np.ones((2, 3)), np.ones(4))),
                                                  en.ShapeError)]))


# ---- sliding_window_view --------------------------------------------------------------------
_WINDOWS = [((6,), dict(window_shape=3)), ((6,), dict(window_shape=(6,))),
            ((2, 3, 4), dict(window_shape=(2, 2, 3))), ((3, 4), dict(window_shape=2, axis=1)),
            ((3, 5), dict(window_shape=(2, 2), axis=(1, 1))),
            ((2, 3, 4), dict(window_shape=(1, 3), axis=(0, -1))),
            ((4,), dict(window_shape=0)), ((0, 3), dict(window_shape=2, axis=1))]

composite(OpInfo("sliding_window_view", en.sliding_window_view,
                 lambda x, **kw: np.array(np_windows(x, **kw)), with_params(_WINDOWS), ALL,
                 error_inputs=error_cases([
                     ((3,), dict(window_shape=4), en.ShapeError, "sliding_window_view"),
                     ((3,), dict(window_shape=-1), en.ShapeError, "sliding_window_view"),
                     ((2, 3), dict(window_shape=2), en.ShapeError, "sliding_window_view"),
                     ((2, 3), dict(window_shape=(2, 2), axis=0), en.ShapeError,
                      "sliding_window_view"),
                     ((2, 3), dict(window_shape=2, axis=2), en.ShapeError),
                     ((3,), dict(window_shape=2, writeable=True), en.InvalidArgumentError,
                      "sliding_window_view")])))
