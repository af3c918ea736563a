"""Op-database entries for numpy's ufuncs of ``engine/ops/numpy_ufuncs.py`` and
``numpy_ufuncs_binary.py`` (numpy references; samples away from kinks, ties and jumps,
so the same samples serve the gradient suites), and for the composites of
``numpy_ufunc_composites.py`` (``frexp``, ``modf``, ``angle``, ``matvec``, ``vecmat``).
"""
import numpy as np

import engine as en
from engine.ops.numpy_ufuncs import frexp_exponent

from op_db.core import (ALL, BOOL, BINARY_SHAPES, F64, NUMERIC, ErrorInput, OpInfo, Sample, add,
                        binary, binary_errors, binary_samples, composite, make, make_distinct,
                        make_nonzero, make_positive, op_dtypes, unary, unary_samples)


def _bits(rng, shape, dtype):
    return make(rng, shape, dtype, -50, 50)


def _offset_distinct(rng, shape, dtype):
    return make_distinct(rng, shape, dtype, offset=0.25)


# One input.
unary("cbrt", np.cbrt, make_nonzero)        # (away from 0, where the slope is infinite)
unary("deg2rad", np.deg2rad)
unary("rad2deg", np.rad2deg)
unary("fabs", np.fabs, make_nonzero)
unary("spacing", np.spacing, supports_grad=False)
unary("bitwise_count", np.bitwise_count, _bits, supports_grad=False)
add(OpInfo("frexp_exponent", frexp_exponent, lambda x: np.frexp(x)[1],
           unary_samples(lambda rng, s, d: make(rng, s, d, -1e3, 1e3)), op_dtypes("frexp_exponent"),
           supports_grad=False))

# Two inputs: no ties for fmax and fmin (the gradient jumps there).
binary("fmax", np.fmax, make_distinct, _offset_distinct)
binary("fmin", np.fmin, make_distinct, _offset_distinct)
binary("float_power", np.float_power, make_positive)
binary("logaddexp2", np.logaddexp2)


def _int_shape_errors():
    return [ErrorInput(Sample((np.ones((2, 3), int), np.ones((4,), int))), en.ShapeError),
            ErrorInput(Sample((np.ones(3), np.ones(3, int))), en.DTypeError)]


for _name in ("gcd", "lcm"):
    add(OpInfo(_name, getattr(en, _name), getattr(np, _name), binary_samples(_bits, _bits),
               op_dtypes(_name), error_inputs=_int_shape_errors, supports_grad=False))


def _heaviside_x(rng, shape, dtype):
    # Zeros among the values (where h is taken) outside the gradient samples.
    x = make(rng, shape, dtype, -2, 2)
    return np.round(x).astype(dtype) if np.dtype(dtype).kind == "f" else x


def _heaviside_grad_samples(rng):
    # x away from 0: its own gradient is 0 there and finite differences agree.
    yield from binary_samples(make_nonzero, make)(F64, rng)


add(OpInfo("heaviside", en.heaviside, np.heaviside, binary_samples(_heaviside_x, make),
           op_dtypes("heaviside"), error_inputs=binary_errors,
           grad_samples=_heaviside_grad_samples))


def _ldexp_samples(dtype, rng):
    for sx, sn in BINARY_SHAPES:
        yield Sample((make(rng, sx, dtype), make(rng, sn, np.int32, -8, 8)))
    yield Sample((make(rng, (2, 3), dtype), 3), desc="python int exponent")
    yield Sample((make(rng, (2, 3), dtype), make(rng, (3,), np.int64, -8, 8)), desc="int64 n")


add(OpInfo("ldexp", en.ldexp, np.ldexp, _ldexp_samples, op_dtypes("ldexp"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), np.ones(4, int))), en.ShapeError, "ldexp"),
               ErrorInput(Sample((np.ones(3), np.ones(3))), en.DTypeError, "ldexp")]))


# Composites.
def _real_or_complex(rng, shape, dtype):
    x = make_nonzero(rng, shape, dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * make_nonzero(rng, shape, np.float64)
    return x.astype(dtype)


def _away_from_halves(rng, shape, dtype):
    # frexp's mantissa jumps where |x| is a power of two; modf's parts at integers.
    x = make(rng, shape, dtype, -40, 40)
    if np.dtype(dtype).kind == "f":
        x = np.floor(x) + np.asarray(0.3, dtype) + (x > 0) * np.asarray(0.3, dtype)
    return x.astype(dtype)


composite(OpInfo("frexp", en.frexp, np.frexp, unary_samples(_away_from_halves),
                 tuple(d for d in ALL)))
composite(OpInfo("modf", en.modf, np.modf, unary_samples(_away_from_halves),
                 tuple(d for d in ALL)))


def _angle_samples(dtype, rng):
    for shape in [(), (5,), (2, 3)]:
        yield Sample((_real_or_complex(rng, shape, dtype),))
        yield Sample((_real_or_complex(rng, shape, dtype),), dict(deg=True))


composite(OpInfo("angle", en.angle, np.angle, _angle_samples, NUMERIC + (BOOL,),
                 grad_skip="real inputs: piecewise constant; complex ones in "
                           "tests/ops/test_numpy_ufuncs_extra.py", supports_grad=False))


def _product_samples(shapes):
    def gen(dtype, rng):
        for sa, sb in shapes:
            yield Sample((make(rng, sa, dtype), make(rng, sb, dtype)))
    return gen


def _rank_errors(name, a, b):
    return lambda: [ErrorInput(Sample((np.ones(a), np.ones(b))), en.ShapeError, name)]


composite(OpInfo("matvec", en.matvec, np.matvec, _product_samples([
    ((2, 3), (3,)), ((4, 2, 3), (3,)), ((2, 3), (4, 3)), ((1, 2, 3), (5, 1, 3)), ((0, 3), (3,))]),
    NUMERIC, error_inputs=_rank_errors("matvec", (3,), (3,))))
composite(OpInfo("vecmat", en.vecmat, np.vecmat, _product_samples([
    ((3,), (3, 2)), ((3,), (4, 3, 2)), ((4, 3), (3, 2)), ((5, 1, 3), (1, 3, 2)), ((3,), (3, 0))]),
    NUMERIC, error_inputs=_rank_errors("vecmat", (3,), (3,))))
