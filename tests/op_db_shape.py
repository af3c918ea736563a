"""Op-database entries for the running reductions, sorting and searching, the numpy
manipulation functions and the statistics (``engine/ops/cumulative.py``, ``sorting.py``,
``manipulation.py``, ...), each against numpy itself; the composites go to COMPOSITES."""
import numpy as np

import engine as en

from op_db_core import *  # noqa: F401,F403
from op_db_core import _op_dtypes  # noqa: F401
from op_db_nn import composite


def _cases(cases, maker=make):
    """Samples ``op(x, **params)`` for ``(shape of x, params)`` cases."""
    def gen(dtype, rng):
        for shape, params in cases:
            yield Sample((maker(rng, shape, dtype),), dict(params))
    return gen


def _errors(cases):
    return lambda: [ErrorInput(Sample((np.ones(shape),), dict(params)), error, *match)
                    for shape, params, error, *match in cases]


def _float64_only(gen):
    """Gradient samples: the float64 samples of ``gen``."""
    return lambda rng: gen(F64, rng)


# ---- running reductions ------------------------------------------------------------------
SCAN_CASES = [((5,), dict(axis=0)), ((2, 3, 4), dict(axis=1)), ((2, 3, 4), dict(axis=-1)),
              ((2, 3), dict(axis=None)), ((), dict(axis=None)), ((0, 3), dict(axis=0)),
              ((2, 0), dict(axis=1)), ((3, 4), dict(axis=0))]
SCAN_ERRORS = [((2, 3), dict(axis=2), en.ShapeError), ((2, 3), dict(axis=-3), en.ShapeError)]


def _np_scan(fn):
    def ref(x, axis=None, dtype=None):
        if axis is None:
            x, axis = np.reshape(x, -1), 0
        return fn(x, axis=axis)
    return ref


def _cumprod_grad_samples(rng):
    yield from _cases(SCAN_CASES, lambda rng, s, d: make_nonzero(rng, s, d, 0.5, 1.5))(F64, rng)
    x = make_nonzero(rng, (3, 5), F64, 0.5, 1.5)
    x[0, 2] = 0.0                 # one zero in a row
    x[1, 1] = x[1, 3] = 0.0       # two zeros
    x[2, 0] = 0.0                 # a zero first
    yield Sample((x,), dict(axis=1), desc="zeros")
    yield Sample((x.T.copy(),), dict(axis=0), desc="zeros down the columns")


add(OpInfo("cumsum", en.cumsum, _np_scan(np.cumsum), _cases(SCAN_CASES), _op_dtypes("cumsum"),
           error_inputs=_errors(SCAN_ERRORS)))
add(OpInfo("cumprod", en.cumprod, _np_scan(np.cumprod),
           _cases(SCAN_CASES, lambda rng, s, d: make(rng, s, d, -1.5, 1.5)), _op_dtypes("cumprod"),
           error_inputs=_errors(SCAN_ERRORS), grad_samples=_cumprod_grad_samples))
for _name, _ufunc in [("cummax", np.maximum), ("cummin", np.minimum)]:
    add(OpInfo(_name, getattr(en, _name), _np_scan(_ufunc.accumulate),
               _cases(SCAN_CASES, make_distinct), _op_dtypes(_name),
               error_inputs=_errors(SCAN_ERRORS + [((), dict(axis=0), en.ShapeError)])))


def _cumulative_samples(dtype, rng):
    for shape, params in [((5,), {}), ((5,), dict(include_initial=True)),
                          ((2, 3), dict(axis=1, include_initial=True)), ((2, 3), dict(axis=0)),
                          ((0,), dict(include_initial=True)), ((3, 0), dict(axis=1)),
                          ((2, 3), dict(axis=-1, dtype=F64))]:
        yield Sample((make(rng, shape, dtype, -1.5, 1.5),), params)


def _cumulative_errors(name):
    return _errors([((2, 3), {}, en.ShapeError, name), ((), dict(axis=0), en.ShapeError, name),
                    ((2, 3), dict(axis=2), en.ShapeError, name)])


composite(OpInfo("cumulative_sum", en.cumulative_sum, np.cumulative_sum, _cumulative_samples,
                 ALL, error_inputs=_cumulative_errors("cumulative_sum")))
composite(OpInfo("cumulative_prod", en.cumulative_prod, np.cumulative_prod, _cumulative_samples,
                 ALL, error_inputs=_cumulative_errors("cumulative_prod")))


def _diff_samples(dtype, rng):
    for shape, params in [((5,), {}), ((5,), dict(n=2)), ((2, 4), dict(axis=0)),
                          ((2, 4), dict(n=3, axis=1)), ((3,), dict(n=0)), ((3,), dict(n=4)),
                          ((0, 2), dict(axis=0))]:
        yield Sample((make(rng, shape, dtype),), params)
    yield Sample((make(rng, (2, 3), dtype),), dict(prepend=make(rng, (2, 1), dtype),
                                                   append=make(rng, (2, 2), dtype)))
    yield Sample((make(rng, (4,), dtype),), dict(prepend=scalar_of(dtype)), desc="scalar prepend")


def _diff_ref(x, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    return np.diff(x, n=n, axis=axis, prepend=prepend, append=append)


def _diff_call(x, prepend=None, append=None, **kw):
    wrap = lambda v: en.tensor(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    return en.diff(x, prepend=wrap(prepend), append=wrap(append), **kw)


composite(OpInfo("diff", _diff_call, lambda x, prepend=None, append=None, **kw: _diff_ref(
    x, prepend=np._NoValue if prepend is None else prepend,
    append=np._NoValue if append is None else append, **kw), _diff_samples, ALL,
    error_inputs=_errors([((), {}, en.ShapeError, "diff"), ((3,), dict(axis=1), en.ShapeError),
                          ((3,), dict(n=-1), en.ShapeError, "diff")])))
