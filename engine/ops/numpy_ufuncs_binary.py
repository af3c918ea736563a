"""numpy's two-input ufuncs that the other families lack: ``fmax`` / ``fmin`` (NaN
ignored), ``float_power``, ``heaviside``, ``ldexp``, ``logaddexp2``, ``gcd`` and ``lcm``.

Each is a registry op on numpy's ufunc; its shape rule asks numpy's own loop for the
result dtype (``float_power`` is float64 or complex128, ``heaviside`` of int8 float16),
so the engine's dtypes are numpy's. Gradients: ``fmax`` / ``fmin`` send it to the
input they return (numpy's choice: the first on ties, the other where one is NaN);
``heaviside`` only to its second input, where the first is 0; ``ldexp`` to ``x``;
``gcd`` and ``lcm`` have none.

Example:
    >>> import engine as en
    >>> en.fmax(en.tensor([1.0, float("nan")]), en.tensor([float("nan"), 2.0])).tolist()
    [1.0, 2.0]
    >>> en.float_power(en.tensor([2, 3]), 2).dtype
    dtype('float64')
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError, describe_inputs
from ..lifting import TensorLike
from ..numerics import bitwise
from ..op import declare
from ..shapes import broadcast_shapes
from ._define import binary, call, unbroadcast
from . import compare, complex_order, creation, math_unary
from . import elementwise as ew

__all__ = ["fmax", "fmin", "float_power", "heaviside", "ldexp", "logaddexp2", "gcd", "lcm"]

_BOTH = (True, True)
_LN2 = math.log(2.0)
REAL_OR_BOOL = dtypes.REAL | {dtypes.bool_}


# ---- fmax, fmin ----------------------------------------------------------------------------------
def _nan_ignoring(name, ufunc, keeps_first):
    """fmax / fmin: numpy's ``(x >= y or y is NaN) ? x : y`` (``<=`` for fmin)."""
    def takes_first(x, y):
        wins = compare.greater_equal(x, y) if keeps_first == ">=" else compare.less_equal(x, y)
        return compare.logical_or(wins, math_unary.isnan(y))

    def vjp(g, out, x, y, needs=_BOTH):
        zero = creation.zeros_like(g)
        first = takes_first(x, y)
        return (unbroadcast(compare.where(first, g, zero), x.shape) if needs[0] else None,
                unbroadcast(compare.where(first, zero, g), y.shape) if needs[1] else None)

    def real_generic(be, x, y):
        xp = be.xp
        if be.dtype_of(x) == dtypes.bool_:   # the standard compares no bools
            return xp.logical_or(x, y) if keeps_first == ">=" else xp.logical_and(x, y)
        wins = (x >= y) if keeps_first == ">=" else (x <= y)
        return xp.where(wins | (y != y), x, y)

    op = binary(name, ufunc, vjp, allowed=dtypes.NUMERIC | {dtypes.bool_}, what="numeric or bool",
                vjp_needs=True, generic=complex_order.extremum_kernel(name, real_generic),
                doc=f"Elementwise {'maximum' if keeps_first == '>=' else 'minimum'}, ignoring "
                    "NaN (NaN only where both are); the gradient goes to the input returned, "
                    "the first on ties.")
    # Not NaN-propagating, so ONNX's Max / Min alone would differ: the NaN tests
    # (x == x) also hold for integers, which IsNaN does not take.
    pick = "Max" if keeps_first == ">=" else "Min"
    form = f"({{0}} if ({{0}} {keeps_first} {{1}} or {{1}} != {{1}}) else {{1}})"   # numpy's rule
    real_form = complex_order.real_only(form)

    def scalar_form(in_avals, out_dtype):
        # Where +0.0 meets -0.0, numpy's float loops return one or the other by the
        # element's place (their vector body and their scalar tail differ): under
        # "bitwise" the form names numpy's ufunc, whose own loop the C graphs call and
        # the other compiled lowerings leave to numpy (graph/lowering/bitwise.py).
        if bitwise() and any(dt in dtypes.FLOATS for _, dt in in_avals):
            return f"np.{name}({{0}}, {{1}})"
        return real_form(in_avals, out_dtype)
    declare(op, onnx=("expr", f"Where(Equal(x0, x0), Where(Equal(x1, x1), {pick}(x0, x1), x0), x1)"),
            scalar_form=scalar_form, positional_out=True)
    return op


fmax_op = _nan_ignoring("fmax", np.fmax, ">=")
fmin_op = _nan_ignoring("fmin", np.fmin, "<=")


# ---- float_power ---------------------------------------------------------------------------------
def _float_power_vjp(g, out, x, y, needs=_BOTH):
    # pow's rule, on the inputs in the result's dtype (the tape casts each gradient
    # back to its input's dtype).
    return ew._pow_vjp(g, out, creation.cast(x, out.dtype), creation.cast(y, out.dtype), needs)


def _float_power_generic(be, x, y):
    dt = np.float_power.resolve_dtypes((be.dtype_of(x), be.dtype_of(y), None))[-1]
    return be.xp.pow(be.astype(x, dt), be.astype(y, dt))


def _float_power_form(in_avals, out_dtype):
    return ew._pow_scalar_form(in_avals, out_dtype) if np.dtype(out_dtype).kind == "f" else None


float_power_op = binary("float_power", np.float_power, _float_power_vjp, vjp_needs=True,
                        generic=_float_power_generic,
                        doc="``x ** y`` computed in float64 (complex128 for complex inputs), "
                            "whatever the inputs' dtypes (numpy's ``float_power``).")
declare(float_power_op, onnx=("node", "Pow"), scalar_form=_float_power_form, positional_out=True)


# ---- heaviside -----------------------------------------------------------------------------------
def _heaviside_vjp(g, out, x, h, needs=_BOTH):
    # A step: no gradient to x (zero away from 0); h is the value at x == 0.
    at_zero = compare.where(compare.equal(x, 0), g, creation.zeros_like(g))
    return (creation.zeros_like(x) if needs[0] else None,
            unbroadcast(at_zero, h.shape) if needs[1] else None)


def _heaviside_generic(be, x, h):
    dt = np.heaviside.resolve_dtypes((be.dtype_of(x), be.dtype_of(h), None))[-1]
    x, h = be.astype(x, dt), be.astype(h, dt)
    xp = be.xp
    zero, one = xp.zeros_like(x), xp.ones_like(x)
    return xp.where(x < 0, zero, xp.where(x > 0, one, xp.where(x == 0, h, x)))


heaviside_op = binary("heaviside", np.heaviside, _heaviside_vjp, allowed=REAL_OR_BOOL,
                      what="real or bool", vjp_needs=True, generic=_heaviside_generic,
                      doc="The step function: 0 where x < 0, ``h`` where x == 0, 1 where "
                          "x > 0 (NaN stays NaN); the gradient reaches ``h`` only.")
declare(heaviside_op,
        onnx=("expr", "Where(Less(x0, 0), 0, Where(Greater(x0, 0), 1, Where(Equal(x0, 0), x1, x0)))"),
        # (a NaN x gives numpy's NaN, whatever x's sign: abs of it)
        scalar_form="(ZERO if {0} < ZERO else (ONE if {0} > ZERO else ({1} if {0} == ZERO "
                    "else abs({0}))))",
        positional_out=True)


# ---- ldexp ---------------------------------------------------------------------------------------
def _ldexp_eval(x, n):
    avals = [x, n]
    if x[1] not in REAL_OR_BOOL or n[1] not in dtypes.INTS | {dtypes.bool_}:
        raise DTypeError(f"ldexp: expected a real x and an integer exponent, got "
                         f"{describe_inputs(avals)}")
    try:
        shape = broadcast_shapes(x[0], n[0], op_name="ldexp")
        dt = np.ldexp.resolve_dtypes((x[1], n[1], None))[-1]
    except ShapeError as err:
        raise ShapeError(f"{err}; inputs {describe_inputs(avals)}") from None
    except TypeError:   # (uint64 exponents: numpy has no loop)
        raise DTypeError(f"ldexp: not defined for {describe_inputs(avals)}") from None
    return (shape, dt)


def _ldexp_vjp(g, out, x, n, needs=_BOTH):
    return (unbroadcast(ldexp(g, n), x.shape) if needs[0] else None, None)


def _ldexp_generic(be, x, n):
    dt = np.ldexp.resolve_dtypes((be.dtype_of(x), be.dtype_of(n), None))[-1]
    x, e = be.astype(x, dt), be.astype(n, dt)
    xp = be.xp
    half = xp.floor(e / 2)     # two exact powers of two, neither overflowing alone
    two = xp.asarray(2.0, dtype=x.dtype)
    return x * xp.pow(two, half) * xp.pow(two, e - half)


def _ldexp_form(in_avals, out_dtype):
    # numba has ldexp on a float and an int; the loop converts both to the result's dtype.
    return "np.ldexp({0}, np.int32({1}))" if np.dtype(out_dtype).kind == "f" else None


ldexp_op = binary("ldexp", np.ldexp, _ldexp_vjp, allowed=REAL_OR_BOOL, what="real",
                  vjp_needs=True, generic=_ldexp_generic,
                  doc="``x * 2**n`` for an integer ``n``, exactly (numpy's ``ldexp``); the "
                      "gradient reaches x.")
ldexp_op.abstract_eval = _ldexp_eval
ldexp_op.dtypes = REAL_OR_BOOL - {dtypes.uint64}
declare(ldexp_op, onnx=("expr", "Mul(x0, Pow(2, x1))"), scalar_form=_ldexp_form,
        positional_out=True)


# ---- logaddexp2 ----------------------------------------------------------------------------------
def _logaddexp2_vjp(g, out, x, y, needs=_BOTH):
    return (unbroadcast(g * math_unary.exp2(x - out), x.shape) if needs[0] else None,
            unbroadcast(g * math_unary.exp2(y - out), y.shape) if needs[1] else None)


def _logaddexp2_generic(be, x, y):
    # max + log2(1 + 2**-|x - y|); equal arguments (infinities too) give x + 1, as numpy.
    dt = np.logaddexp2.resolve_dtypes((be.dtype_of(x), be.dtype_of(y), None))[-1]
    x, y = be.astype(x, dt), be.astype(y, dt)
    xp = be.xp
    with np.errstate(invalid="ignore"):
        d = -xp.abs(x - y)
        r = xp.maximum(x, y) + xp.log1p(xp.pow(xp.asarray(2.0, dtype=x.dtype), d)) / _LN2
    return xp.where(x == y, x + 1, r)


logaddexp2_op = binary("logaddexp2", np.logaddexp2, _logaddexp2_vjp, true_divide=True,
                       allowed=REAL_OR_BOOL, what="real or bool", vjp_needs=True,
                       commutative=True, generic=_logaddexp2_generic,
                       doc="``log2(2**x + 2**y)``, without overflow.")
declare(logaddexp2_op,
        onnx=("expr", f"Add(Max(x0, x1), Div(Log(Add(1, Pow(2, Neg(Abs(Sub(x0, x1)))))), {_LN2!r}))"),
        scalar_form="np.logaddexp2({0}, {1})", positional_out=True)


# ---- gcd, lcm ------------------------------------------------------------------------------------
def _gcd_generic(be, x, y):
    # Euclid's algorithm on every element at once, until every remainder is 0.
    x, y = be.promote(x, y)
    xp = be.xp
    a, b = xp.abs(x), xp.abs(y)
    a, b = xp.broadcast_arrays(a, b)
    while bool(xp.any(b != 0)):
        nonzero = b != 0
        safe = xp.where(nonzero, b, xp.ones_like(b))
        a, b = xp.where(nonzero, b, a), xp.where(nonzero, a % safe, xp.zeros_like(b))
    return a


def _lcm_generic(be, x, y):
    x, y = be.promote(x, y)
    xp = be.xp
    g = _gcd_generic(be, x, y)
    safe = xp.where(g == 0, xp.ones_like(g), g)
    return xp.where(g == 0, xp.zeros_like(g), xp.abs((x // safe) * y))


gcd_op = binary("gcd", np.gcd, None, allowed=dtypes.INTS, what="integer", commutative=True,
                generic=_gcd_generic,
                doc="The greatest common divisor of ``|x|`` and ``|y|`` (0 for two zeros).")
lcm_op = binary("lcm", np.lcm, None, allowed=dtypes.INTS, what="integer", commutative=True,
                generic=_lcm_generic,
                doc="The least common multiple of ``|x|`` and ``|y|`` (0 if either is 0).")
declare(gcd_op, onnx=None, scalar_form="np.gcd({0}, {1})", positional_out=True)
declare(lcm_op, onnx=None, scalar_form="np.lcm({0}, {1})", positional_out=True)

fmax = call(fmax_op)
fmin = call(fmin_op)
float_power = call(float_power_op)
heaviside = call(heaviside_op)
logaddexp2 = call(logaddexp2_op)
gcd = call(gcd_op)
lcm = call(lcm_op)
_ldexp_call = call(ldexp_op)


def ldexp(x, n):
    """``x * 2**n`` elementwise, exactly (numpy's ``ldexp``): ``n`` must be integers, and a
    Python int exponent keeps x's dtype (``ldexp(float32, 3)`` is float32).

    Example:
        >>> import engine as en
        >>> en.ldexp(en.tensor([0.75, 1.0], dtype="float32"), 3).tolist()
        [6.0, 8.0]
    """
    # Python numbers: lifted beside the other input they would take its kind (a float
    # exponent), so each becomes an array of numpy's choice, on the other's back end.
    if type(n) in (int, bool):
        n = _beside(x, int(n), dtypes.int64)
    elif type(x) in (int, bool, float) and isinstance(n, TensorLike) and n.dtype in dtypes.INTS:
        try:
            dtype = np.ldexp(x, np.zeros(0, n.dtype)).dtype     # (int: float16, as numpy)
        except TypeError:
            dtype = None        # (no loop: the shape rule says so, naming the op)
        if dtype is not None:
            x = _beside(n, x, dtype)
    return _ldexp_call(x, n)


def _beside(other, value, dtype):
    """``value`` as a tensor of ``dtype`` on ``other``'s back end (and in its trace)."""
    if isinstance(other, TensorLike):
        return ew.add(creation.zeros_like(other, dtype=dtype), value)
    return np.asarray(value, dtype=dtype)
