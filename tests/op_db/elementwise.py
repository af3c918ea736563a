"""Op-database entries for the first elementwise ops (``engine/ops/elementwise.py``:
unary and binary arithmetic, ``sigmoid_grad``) and the comparisons, logic and ``where``
(``engine/ops/compare.py``): inputs inside each function's domain and away from kinks;
integers for the comparisons so that equal values occur."""
import numpy as np

import engine as en

from op_db.core import (BOOL, F64, ErrorInput, OpInfo, Sample, add, binary, binary_errors,
                        binary_samples, make, make_distinct, make_nonzero, make_positive,
                        op_dtypes, scalar_of, unary)


def _string_input():
    # The floating functions take every dtype (ints and bools become floats, as in
    # numpy); an array the engine has no dtype for is still refused, naming the op.
    return [ErrorInput(Sample(("a",)), en.DTypeError)]


# Unary math: values inside each function's domain and away from kinks.
unary("neg", np.negative)
unary("abs", np.abs, make_nonzero)
unary("sign", np.sign, make_nonzero)
unary("exp", np.exp, error_inputs=_string_input)
unary("log", np.log, make_positive, error_inputs=_string_input)
unary("log1p", np.log1p, lambda rng, s, d: make(rng, s, d, -0.5, 3.0), error_inputs=_string_input)
unary("expm1", np.expm1, error_inputs=_string_input)
unary("sqrt", np.sqrt, make_positive, error_inputs=_string_input)
unary("square", np.square)
unary("reciprocal", np.reciprocal, make_nonzero)
unary("sin", np.sin, error_inputs=_string_input)
unary("cos", np.cos, error_inputs=_string_input)
unary("tanh", np.tanh, error_inputs=_string_input)
unary("sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)), lambda rng, s, d: make(rng, s, d, -6, 6))
unary("relu", lambda x: np.maximum(x, 0), make_nonzero)
add(OpInfo("sigmoid_grad", en.ops.sigmoid_grad, lambda y, g: g * y * (1.0 - y),
           binary_samples(lambda rng, s, d: make(rng, s, d, 0.05, 0.95) if np.dtype(d).kind == "f"
                          else make(rng, s, d), mixed=False),
           op_dtypes("sigmoid_grad"), error_inputs=binary_errors))

# Binary arithmetic, with broadcasting, Python scalars and dtype promotion.
binary("add", np.add)
binary("sub", np.subtract)
binary("mul", np.multiply)
binary("div", np.true_divide, make, make_nonzero)
binary("pow", np.power, make_positive, lambda rng, s, d: make(rng, s, d, 0 if np.dtype(d).kind in "iu" else -2, 2))
binary("maximum", np.maximum, make_distinct, lambda rng, s, d: make_distinct(rng, s, d, 0.25))
binary("minimum", np.minimum, make_distinct, lambda rng, s, d: make_distinct(rng, s, d, 0.25))

# Comparisons and logic: integer-valued inputs so that equal values occur.
_coarse = lambda rng, s, d: make(rng, s, d, -2, 2).round().astype(d)  # noqa: E731
for _name, _ref in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                    ("less_equal", np.less_equal), ("greater", np.greater),
                    ("greater_equal", np.greater_equal), ("logical_and", np.logical_and),
                    ("logical_or", np.logical_or)]:
    binary(_name, _ref, _coarse, _coarse, supports_grad=False)
unary("logical_not", np.logical_not, _coarse, supports_grad=False)


def _where_samples(dtype, rng):
    cases = [((), (), ()), ((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()), ((3, 1), (1, 4), (3, 4)),
             ((), (2, 3), (2, 1)), ((0, 3), (3,), (1, 3))]
    for sc, sx, sy in cases:
        yield Sample((make(rng, sc, BOOL), make(rng, sx, dtype), make(rng, sy, dtype)))
    s = scalar_of(dtype)
    yield Sample((make(rng, (2, 3), BOOL), make(rng, (2, 3), dtype), s), desc="python scalar")
    # numpy reads a condition that is not bool by its truth (non-zero, NaN too)
    cond = np.array([[0.0, np.nan, -2.0], [0.5, 0.0, 1.0]])
    yield Sample((cond, make(rng, (2, 3), dtype), make(rng, (3,), dtype)), desc="float condition")
    yield Sample((np.array([0, 3, -1]), make(rng, (2, 3), dtype), s), desc="int condition")


def _where_grad_samples(rng):
    # (a float condition jumps where finite differences cross its zeros)
    return [s for s in _where_samples(F64, rng) if s.desc != "float condition"]


add(OpInfo("where", en.where, np.where, _where_samples, op_dtypes("where"),
           grad_samples=_where_grad_samples,
           error_inputs=lambda: [
               ErrorInput(Sample((np.ones(3, bool), np.ones(2), np.ones(3))), en.ShapeError),
               ErrorInput(Sample((np.ones(2), np.ones(3), np.ones(3))), en.ShapeError)]))
