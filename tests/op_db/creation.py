"""Op-database entries for the creation ops (``engine/ops/creation.py``: zeros, ones,
full, arange, eye, the ``_like`` forms) and ``cast``: they take no tensor inputs, so a
sample's dtype is the dtype asked for."""
import numpy as np

import engine as en

from op_db.core import (ALL, BOOL, F64, I32, INTS, NUMERIC, ErrorInput, OpInfo, Sample, add, make,
                        op_dtypes, scalar_of, unary)


# Creation ops take no tensor inputs: the sample's dtype is the dtype asked for.
CREATION_SHAPES = [(), (3,), (2, 3), (0,), (2, 0, 4)]


def _creation_samples(dtype, rng):
    for shape in CREATION_SHAPES:
        yield Sample((), dict(shape=shape, dtype=dtype))
    yield Sample((), dict(shape=4, dtype=dtype), desc="int shape")


def _full_samples(dtype, rng):
    for sample in _creation_samples(dtype, rng):
        sample.kwargs["value"] = scalar_of(dtype) if dtype != BOOL else False
        yield sample
    yield Sample((), dict(shape=(2,), value=3), desc="dtype from an int value")
    yield Sample((), dict(shape=(2,), value=0.5), desc="dtype from a float value")


# A dtype no engine op takes (a string dtype).
UNSUPPORTED = "U1"


def _creation_errors(**extra):
    return lambda: [ErrorInput(Sample((), dict(shape=(2, -1), dtype=F64, **extra)), en.ShapeError),
                    ErrorInput(Sample((), dict(shape=(2, 3), dtype=UNSUPPORTED, **extra)),
                               en.DTypeError, "unsupported dtype")]


add(OpInfo("zeros", en.zeros, np.zeros, _creation_samples, ALL, supports_grad=False,
           error_inputs=_creation_errors()))
add(OpInfo("ones", en.ones, np.ones, _creation_samples, ALL, supports_grad=False,
           error_inputs=_creation_errors()))
add(OpInfo("full", en.full, lambda shape, value, dtype=None: np.full(shape, value, dtype=dtype),
           _full_samples, ALL, supports_grad=False, error_inputs=_creation_errors(value=1)))


def _arange_samples(dtype, rng):
    if dtype in INTS:
        cases = [dict(start=5), dict(start=2, stop=9), dict(start=9, stop=2, step=-2),
                 dict(start=3, stop=3), dict(start=5, stop=0)]
    else:
        cases = [dict(start=0.0, stop=1.0, step=0.25), dict(start=-1.5, stop=2.0, step=0.5),
                 dict(start=2.0, stop=-1.0, step=-0.75), dict(start=4.0), dict(start=1, stop=2.5)]
    for kwargs in cases:
        yield Sample((), dict(kwargs, dtype=dtype))
    yield Sample((), dict(start=1, stop=7, step=2), desc="int64 from int arguments")
    yield Sample((), dict(start=0, stop=1.0, step=0.5), desc="float64 from a float argument")


def _arange_ref(start, stop=None, step=1, dtype=None):
    return np.arange(start, stop, step, dtype=dtype)


def _eye_samples(dtype, rng):
    for kwargs in [dict(n=3), dict(n=2, m=4), dict(n=4, m=2, k=1), dict(n=3, k=-1),
                   dict(n=0), dict(n=2, m=0), dict(n=3, k=5)]:
        yield Sample((), dict(kwargs, dtype=dtype))


add(OpInfo("arange", en.arange, _arange_ref, _arange_samples, NUMERIC, supports_grad=False,
           error_inputs=lambda: [
               ErrorInput(Sample((), dict(start=0, stop=5, step=0)), en.ShapeError),
               ErrorInput(Sample((), dict(start=0.0, stop=float("inf"))), en.ShapeError),
               ErrorInput(Sample((), dict(start="a")), en.ShapeError),
               ErrorInput(Sample((), dict(start=3, dtype=UNSUPPORTED)), en.DTypeError, "unsupported dtype")]))
add(OpInfo("eye", en.eye, lambda n, m=None, k=0, dtype=F64: np.eye(n, m, k, dtype=dtype),
           _eye_samples, ALL, supports_grad=False,
           error_inputs=lambda: [
               ErrorInput(Sample((), dict(n=-1)), en.ShapeError),
               ErrorInput(Sample((), dict(n=2, m=-3)), en.ShapeError),
               ErrorInput(Sample((), dict(n=2, dtype=UNSUPPORTED)), en.DTypeError, "unsupported dtype")]))
unary("zeros_like", np.zeros_like)
unary("ones_like", np.ones_like)


def _cast_samples(dtype, rng):
    for target in ALL:
        yield Sample((make(rng, (2, 3), dtype),), dict(dtype=target))
    yield Sample((make(rng, (), dtype),), dict(dtype=F64))
    yield Sample((make(rng, (0, 2), dtype),), dict(dtype=I32))
    yield Sample((make(rng, (3,), dtype),), dict(dtype="float32"), desc="dtype by name")


def _cast_grad_samples(rng):
    # A float32 result would round away the finite differences; int results have
    # no gradient to check.
    yield Sample((make(rng, (2, 3), F64),), dict(dtype=F64))
    yield Sample((make(rng, (), F64),), dict(dtype=F64))


add(OpInfo("cast", en.cast, lambda x, dtype: np.asarray(x).astype(dtype), _cast_samples,
           op_dtypes("cast"), grad_samples=_cast_grad_samples,
           error_inputs=lambda: [ErrorInput(Sample((np.ones(2),), dict(dtype=UNSUPPORTED)),
                                            en.DTypeError, "unsupported dtype")]))
