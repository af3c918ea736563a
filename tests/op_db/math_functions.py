"""Op-database entries for the elementwise math of ``math_unary``, ``math_binary`` and
``bitwise`` (numpy references; samples inside each function's domain and away
from its kinks and jumps, so the same samples serve the gradient suites), and
for their composites (``isclose``, ``allclose``, ``divmod``).

``erf``'s reference is ``math.erf`` elementwise (numpy has none).
"""
import math

import numpy as np

import engine as en

from op_db.core import (BOOL, F64, NUMERIC, ErrorInput, OpInfo, Sample, add, binary,
                        binary_samples, composite, make, make_distinct, make_nonzero,
                        make_positive, op_dtypes, scalar_of, unary, unary_samples)


def _in(low, high):
    return lambda rng, s, d: make(rng, s, d, low, high)


def _vectorized(fn):
    def ref(x):
        x = np.asarray(x)
        return np.vectorize(fn, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)
    return ref


def _string_input():
    # Ints and bools become floats, as in numpy; an array of no engine dtype is refused.
    return [ErrorInput(Sample(("a",)), en.DTypeError)]


# Inverse and hyperbolic trigonometry, logarithms, powers of 2.
unary("arccos", np.arccos, _in(-0.9, 0.9), error_inputs=_string_input)
unary("arcsin", np.arcsin, _in(-0.9, 0.9), error_inputs=_string_input)
unary("arctan", np.arctan, error_inputs=_string_input)
unary("arccosh", np.arccosh, _in(1.1, 4.0), error_inputs=_string_input)
unary("arcsinh", np.arcsinh, error_inputs=_string_input)
unary("arctanh", np.arctanh, _in(-0.9, 0.9), error_inputs=_string_input)
unary("cosh", np.cosh, error_inputs=_string_input)
unary("sinh", np.sinh, error_inputs=_string_input)
unary("tan", np.tan, _in(-1.2, 1.2), error_inputs=_string_input)
unary("log2", np.log2, make_positive, error_inputs=_string_input)
unary("log10", np.log10, make_positive, error_inputs=_string_input)
unary("exp2", np.exp2, error_inputs=_string_input)
unary("erf", _vectorized(math.erf), _in(-4.0, 4.0))
unary("erfc", _vectorized(math.erfc), _in(-4.0, 6.0))


# Rounding: values at least 0.1 away from integers and halves (the jumps), so
# finite differences see the zero gradient; exact halves check halves-to-even.
def _off_jumps(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return make(rng, shape, dtype, -50, 50)
    whole = rng.integers(-4, 4, size=shape)
    frac = rng.uniform(0.1, 0.4, size=shape) + 0.5 * (rng.random(shape) < 0.5)
    return (whole + frac).astype(dtype)


def _rounding_samples(extra_kwargs=()):
    def gen(dtype, rng):
        yield from unary_samples(_off_jumps)(dtype, rng)
        halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0])
        yield Sample((halves.astype(dtype) if np.dtype(dtype).kind == "f"
                      else np.arange(-3, 5).astype(dtype),), desc="halves")
        for kwargs in extra_kwargs:
            yield Sample((_off_jumps(rng, (2, 3), dtype) * 10,), kwargs, desc="decimals")
    return gen


def _rounding_grad_samples(rng):
    for s in unary_samples(_off_jumps)(F64, rng):
        yield s


for _name, _ref in [("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)]:
    add(OpInfo(_name, getattr(en, _name), _ref, _rounding_samples(), op_dtypes(_name),
               grad_samples=_rounding_grad_samples))
add(OpInfo("round", en.round, np.round,
           _rounding_samples([dict(decimals=1), dict(decimals=2), dict(decimals=-1)]),
           op_dtypes("round"), grad_samples=_rounding_grad_samples,
           error_inputs=lambda: [ErrorInput(Sample((np.ones(3),), dict(decimals=1.5)),
                                            en.ShapeTypeError)]))
unary("positive", np.positive)


# Predicates: NaN, infinities and signed zeros mixed in.
def _special(rng, shape, dtype):
    x = make(rng, shape, dtype)
    if np.dtype(dtype).kind == "f" and x.size:
        flat = x.reshape(-1)
        picks = rng.integers(0, 5, size=flat.size)
        flat[picks == 0] = np.nan
        flat[picks == 1] = np.inf
        flat[picks == 2] = -np.inf
        flat[(picks == 3) & (rng.random(flat.size) < 0.5)] = -0.0
    return x


for _name in ("isnan", "isinf", "isfinite", "signbit"):
    unary(_name, getattr(np, _name), _special, supports_grad=False)


# Two-input float math.
binary("arctan2", np.arctan2, make_nonzero, make_nonzero)
binary("hypot", np.hypot, make_nonzero, make_nonzero)
binary("logaddexp", np.logaddexp)
binary("copysign", np.copysign, make_nonzero, make_nonzero)
binary("nextafter", np.nextafter, supports_grad=False)


# Floor division and remainders: divisors away from 0, quotients away from integers
# where the gradient is checked (finite differences would jump there).
def _dividend(rng, shape, dtype):
    return make(rng, shape, dtype, -20, 20)


for _name, _ref in [("floor_divide", np.floor_divide), ("mod", np.remainder),
                    ("fmod", np.fmod)]:
    binary(_name, _ref, _dividend, make_nonzero)


# Bitwise: integers of both signs, so the sign bits are exercised.
def _bits(rng, shape, dtype):
    return make(rng, shape, dtype, -50, 50)


def _counts(rng, shape, dtype):
    return make(rng, shape, dtype, 0, 6)


def _int_shape_errors():
    return [ErrorInput(Sample((np.ones((2, 3), int), np.ones((4,), int))), en.ShapeError),
            ErrorInput(Sample((np.ones((2, 3), int), np.ones((3, 2), int))), en.ShapeError)]


def _integer_binary(name, ref, make_y):
    add(OpInfo(name, getattr(en, name), ref, binary_samples(_bits, make_y), op_dtypes(name),
               supports_grad=False, error_inputs=_int_shape_errors))


for _name, _ref in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor)]:
    _integer_binary(_name, _ref, _bits)
unary("invert", np.invert, _bits, supports_grad=False)
_integer_binary("left_shift", np.left_shift, _counts)
_integer_binary("right_shift", np.right_shift, _counts)
_coarse = lambda rng, s, d: make(rng, s, d, -2, 2).round().astype(d)  # noqa: E731
binary("logical_xor", np.logical_xor, _coarse, _coarse, supports_grad=False)


# clip: bounds of every broadcast shape, scalar bounds, a missing bound, lo > hi.
def _clip_samples(dtype, rng):
    def grid(shape, offset):
        return make_distinct(rng, shape, dtype, offset)
    if dtype == BOOL:    # refused: one sample for the dtype check
        yield Sample((grid((2, 3), 0.0), grid((3,), 0.0), grid((3,), 0.0)))
        return
    cases = [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()), ((), (), ()), ((3, 1), (1, 4), (3, 4)),
             ((0, 3), (3,), (1, 3))]
    for sx, sl, sh in cases:
        x = grid(sx, 0.0) * 2
        lo = (grid(sl, 0.25) - 1).astype(dtype)
        hi = (lo + np.asarray(rng.uniform(1.0, 2.0, size=sl))).astype(dtype)
        yield Sample((x, lo, hi))
    x = grid((2, 3), 0.0) * 2
    s = scalar_of(dtype)
    # Unsigned data: a negative Python bound is out of range (an error, as in numpy 2).
    yield Sample((x, 0 * s if np.dtype(dtype).kind == "u" else -s, s), desc="python scalar bounds")
    yield Sample((x, None, grid((3,), 0.25)), desc="no lower bound")
    yield Sample((x, grid((3,), 0.25), None), desc="no upper bound")
    yield Sample((x, grid((3,), 0.25) + 1, grid((3,), 0.25) - 1), desc="lo > hi")


add(OpInfo("clip", en.clip, np.clip, _clip_samples, op_dtypes("clip"),
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones((2, 3)), np.zeros(4), np.ones(3))), en.ShapeError),
               ErrorInput(Sample((np.ones(3, bool), 0, 1)), en.DTypeError)]))


# Composites.
def _close_samples(dtype, rng):
    a = make(rng, (4, 5), dtype)
    noise = np.array([0.0, 1e-9, 1e-6, 1e-3, 1.0]).astype(dtype)
    yield Sample((a, (a + noise).astype(dtype)))
    yield Sample((a, a[0]), dict(rtol=0.5, atol=0.0), desc="broadcast, loose rtol")
    yield Sample((a, 1.5), dict(atol=2.0), desc="python scalar")
    if np.dtype(dtype).kind == "f":
        specials = np.array([np.nan, np.inf, -np.inf, 1.0, np.nan]).astype(dtype)
        others = np.array([np.nan, np.inf, np.inf, np.inf, 1.0]).astype(dtype)
        yield Sample((specials, others), desc="nan and inf")
        yield Sample((specials, others), dict(equal_nan=True), desc="equal_nan")
    yield Sample((make(rng, (0, 3), dtype), make(rng, (3,), dtype)), desc="empty")


composite(OpInfo("isclose", en.isclose, np.isclose, _close_samples, NUMERIC,
                 supports_grad=False))
composite(OpInfo("allclose", en.allclose, np.allclose, _close_samples, NUMERIC,
                 supports_grad=False))
composite(OpInfo("divmod", en.divmod, np.divmod, binary_samples(_dividend, make_nonzero),
                 NUMERIC))
