"""More one-input elementwise math: inverse and hyperbolic trigonometry, base-2 and
base-10 logarithms, rounding, ``erf``, and the float predicates (``isnan`` ...).

Public names are numpy's (``en.arccos``); the Array API standard's spellings
(``en.acos``) name the same functions (declared with ``also_named``).
Rounding (floor, ceil, round, trunc) has a zero gradient, as in JAX and
PyTorch; the predicates return bools and have none.

Example:
    >>> import engine as en
    >>> float(en.grad(en.arctan)(1.0))
    0.5
"""
from __future__ import annotations

import builtins
import math
import operator
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeTypeError
from ..names import also_named as _also_named
from ..op import declare
from ._args import at_user_line
from ._define import call, unary
from . import complex_parts, creation, erf_kernel
from . import elementwise as ew

if TYPE_CHECKING:
    from ..contracts import OpFunction

__all__ = [
    "arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh", "cosh", "sinh", "tan",
    "log2", "log10", "exp2", "erf", "erfc", "floor", "ceil", "round", "trunc", "rint",
    "positive", "isfinite", "isinf", "isnan", "signbit",
    "acos", "asin", "atan", "acosh", "asinh", "atanh",
]

NUM = dtypes.NUMERIC
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _float(name, np_name, standard, vjp, onnx, form, doc, allowed=dtypes.INEXACT):
    """A floating-point unary op on numpy's ufunc ``np_name`` and the standard's
    function ``standard`` (the kernel on other back ends). Complex inputs take
    numpy's complex kernels (the standard defines each of these on complex
    numbers, with C99's branch cuts and special values); their gradients are
    refused by the tape, as for every complex value."""
    op = unary(name, getattr(np, np_name), vjp, doc=doc, generic=standard, allowed=allowed)
    declare(op, onnx=onnx, scalar_form=form, positional_out=True)
    return op


# Inverse trigonometric and hyperbolic functions, with their derivatives.
arccos_op = _float("arccos", "arccos", "acos",
                   lambda g, out, x: (ew.neg(g / ew.sqrt(1.0 - ew.square(x))),),
                   ("node", "Acos"), "np.arccos({0})", "Inverse cosine, in [0, pi].")
arcsin_op = _float("arcsin", "arcsin", "asin",
                   lambda g, out, x: (g / ew.sqrt(1.0 - ew.square(x)),),
                   ("node", "Asin"), "np.arcsin({0})", "Inverse sine, in [-pi/2, pi/2].")
arctan_op = _float("arctan", "arctan", "atan",
                   lambda g, out, x: (g / (1.0 + ew.square(x)),),
                   ("node", "Atan"), "np.arctan({0})", "Inverse tangent, in (-pi/2, pi/2).")
arccosh_op = _float("arccosh", "arccosh", "acosh",
                    lambda g, out, x: (g / ew.sqrt(ew.square(x) - 1.0),),
                    ("node", "Acosh"), "np.arccosh({0})", "Inverse hyperbolic cosine (x >= 1).")
arcsinh_op = _float("arcsinh", "arcsinh", "asinh",
                    lambda g, out, x: (g / ew.sqrt(ew.square(x) + 1.0),),
                    ("node", "Asinh"), "np.arcsinh({0})", "Inverse hyperbolic sine.")
arctanh_op = _float("arctanh", "arctanh", "atanh",
                    lambda g, out, x: (g / (1.0 - ew.square(x)),),
                    ("node", "Atanh"), "np.arctanh({0})", "Inverse hyperbolic tangent (|x| < 1).")
cosh_op = _float("cosh", "cosh", "cosh", lambda g, out, x: (g * sinh(x),),
                 ("node", "Cosh"), "np.cosh({0})", "Hyperbolic cosine.")
sinh_op = _float("sinh", "sinh", "sinh", lambda g, out, x: (g * cosh(x),),
                 ("node", "Sinh"), "np.sinh({0})", "Hyperbolic sine.")
tan_op = _float("tan", "tan", "tan", lambda g, out, x: (g * (1.0 + ew.square(out)),),
                ("node", "Tan"), "np.tan({0})", "Tangent.")

# Logarithms and powers of 2 and 10.
log2_op = _float("log2", "log2", "log2", lambda g, out, x: (g / (x * _LN2),),
                 ("expr", f"Div(Log(x0), {_LN2!r})"), "np.log2({0})", "Base-2 logarithm.")
log10_op = _float("log10", "log10", "log10", lambda g, out, x: (g / (x * _LN10),),
                  ("expr", f"Div(Log(x0), {_LN10!r})"), "np.log10({0})", "Base-10 logarithm.")


def _exp2_generic(be, x):
    return be.xp.pow(be.xp.full((), 2, dtype=x.dtype), x)


exp2_op = _float("exp2", "exp2", _exp2_generic, lambda g, out, x: (g * out * _LN2,),
                 ("expr", "Pow(2, x0)"), "np.exp2({0})", "``2 ** x``.")


# The error function: Cody's rational approximations (engine/ops/erf_kernel.py).
def _erf_out(x, out):
    return erf_kernel.erf_numpy(x, out)


def _erfc_out(x, out):
    return erf_kernel.erfc_numpy(x, out)


def _erf_vjp(g, out, x):
    return (g * (ew.exp(ew.neg(ew.square(x))) * _TWO_OVER_SQRT_PI),)


def _erfc_vjp(g, out, x):
    return (g * (ew.exp(ew.neg(ew.square(x))) * -_TWO_OVER_SQRT_PI),)


erf_op = unary("erf", erf_kernel.erf_numpy, _erf_vjp, out_impl=_erf_out,
               generic=erf_kernel.erf_generic,
               doc="The error function ``2/sqrt(pi) * integral of exp(-t**2) from 0 to x``.")
# (no positional_out claim: that rule's test demands numpy's bits, and the reference
# here is math.erf, which the kernel matches to a few ulps, not bit for bit)
declare(erf_op, onnx=("node", "Erf"), scalar_form="math.erf({0})")
erfc_op = unary("erfc", erf_kernel.erfc_numpy, _erfc_vjp, out_impl=_erfc_out,
                generic=erf_kernel.erfc_generic,
                doc="``1 - erf(x)``, accurate where it is tiny (large x).")
declare(erfc_op, onnx=("expr", "Sub(1, Erf(x0))"), scalar_form="math.erfc({0})")


# Rounding to integers: integer inputs come back unchanged (numpy 2 keeps their dtype).
def _zero_vjp(g, out, x):
    return (creation.zeros_like(x),)


def _rounding(name, ufunc, standard, onnx, form, doc):
    def impl(x):
        return ufunc(x) if x.dtype.kind == "f" else x.copy()

    def out_impl(x, out):
        if x.dtype.kind == "f":
            return ufunc(x, out=out)
        np.copyto(out, x)
        return out

    def generic(be, x):
        return getattr(be.xp, standard)(x)

    def scalar_form(in_avals, out_dtype):
        # An integer is its own rounding (through float64, 2**53 + 1 would not be).
        return form if np.dtype(in_avals[0][1]).kind == "f" else "{0}"

    impl.__name__ = generic.__name__ = name
    # numpy rounds real numbers only (its floor, ceil, trunc and rint refuse complex).
    op = unary(name, impl, _zero_vjp, allowed=NUM - dtypes.COMPLEX, what="real", out_impl=out_impl,
               generic=generic, doc=doc + " Its gradient is zero (piecewise constant).",
               loops=ufunc)
    declare(op, onnx=onnx, scalar_form=scalar_form, positional_out=True)
    return op


floor_op = _rounding("floor", np.floor, "floor", ("rounding", "Floor(x0)"), "np.floor({0})",
                     "The largest integer <= x.")
ceil_op = _rounding("ceil", np.ceil, "ceil", ("rounding", "Ceil(x0)"), "np.ceil({0})",
                    "The smallest integer >= x.")
trunc_op = _rounding("trunc", np.trunc, "trunc", ("rounding", "Mul(Sign(x0), Floor(Abs(x0)))"),
                     "np.trunc({0})", "x rounded toward zero.")
round_op = _rounding("round", np.rint, "round", ("rounding", "Round(x0)"), "np.rint({0})",
                     "x rounded to the nearest integer, halves to even (numpy's ``rint``).")

positive_op = unary("positive", np.positive, lambda g, out, x: (g,), allowed=NUM, what="numeric",
                    generic="positive", doc="``+x`` (a copy of x).")
declare(positive_op, onnx=("node", "Identity"), scalar_form="+{0}", positional_out=True)


# Float predicates: bool results, no gradient. Integers are always finite.
def _predicate(name, ufunc, constant_for_ints, onnx, form, doc):
    def generic(be, x):
        if be.dtype_of(x) in dtypes.FLOATS:
            return getattr(be.xp, name)(x)
        if name == "signbit":
            return x < 0
        return be.xp.full(x.shape, constant_for_ints, dtype=be.xp.bool)
    generic.__name__ = name
    op = unary(name, ufunc, None, allowed=NUM, what="numeric", out_dtype=dtypes.bool_,
               differentiable=False, generic=generic, doc=doc)
    declare(op, onnx=onnx, scalar_form=form, positional_out=True)
    return op


isnan_op = _predicate("isnan", np.isnan, False, ("predicate", "IsNaN(x0)"), "np.isnan({0})",
                      "Elementwise ``x is NaN`` (bool).")
isinf_op = _predicate("isinf", np.isinf, False, ("predicate", "IsInf(x0)"), "np.isinf({0})",
                      "Elementwise ``x is +inf or -inf`` (bool).")
isfinite_op = _predicate("isfinite", np.isfinite, True,
                         ("predicate", "Not(Or(IsNaN(x0), IsInf(x0)))"), "np.isfinite({0})",
                         "Elementwise ``x is neither NaN nor infinite`` (bool).")
signbit_op = _predicate("signbit", np.signbit, False, None, "np.signbit({0})",
                        "Elementwise ``the sign bit of x is set`` (bool; True for -0.0).")

arccos = call(arccos_op)
arcsin = call(arcsin_op)
arctan = call(arctan_op)
arccosh = call(arccosh_op)
arcsinh = call(arcsinh_op)
arctanh = call(arctanh_op)
# (Typed: the rules above use them before this line.)
cosh: OpFunction = call(cosh_op)
sinh: OpFunction = call(sinh_op)
tan = call(tan_op)
log2 = call(log2_op)
log10 = call(log10_op)
exp2 = call(exp2_op)
erf = call(erf_op)
erfc = call(erfc_op)
floor = call(floor_op)
ceil = call(ceil_op)
trunc = call(trunc_op)
_round_op_call = call(round_op)


def rint(x):
    """x rounded to the nearest integer, halves to even (``np.rint``). As numpy's
    ufunc, an integer or bool input comes back as the smallest float that holds it
    (float16 for 8 bits, float32 for 16, float64 above); :func:`round` keeps the dtype.

    Example:
        >>> import engine as en
        >>> en.rint(en.tensor([1, 2], dtype="int32")).dtype
        dtype('float64')
    """
    dtype = getattr(x, "dtype", None)
    if dtype in dtypes.COMPLEX or type(x) is complex:
        return _round_parts(x, _round_op_call)
    if dtype is not None and np.dtype(dtype).kind in "biu":
        x = creation.cast(x, np.promote_types(dtype, np.float16))
    elif isinstance(x, bool):   # numpy: a bool array's float16
        x = np.float16(x)
    elif isinstance(x, int):    # numpy: an int64 array's float64
        x = float(x)
    return _round_op_call(x)


positive = call(positive_op)
isnan = call(isnan_op)
isinf = call(isinf_op)
isfinite = call(isfinite_op)
signbit = call(signbit_op)


def round(x, decimals=0):
    """x rounded to ``decimals`` decimal places, halves to even, as ``np.round``
    computes it: ``rint(x * 10**decimals) / 10**decimals`` (for negative
    ``decimals``, divided first and multiplied after). Integers come back
    unchanged for ``decimals >= 0``; for negative ``decimals`` they are rounded
    in float64 and cast back, as numpy does. The gradient is zero.

    Example:
        >>> import engine as en
        >>> en.round(en.tensor([0.5, 1.5, 2.5])).tolist()
        [0.0, 2.0, 2.0]
        >>> en.round(en.tensor([0.5, 1.5, 2.675]), 2).tolist()  # 2.675 * 100 is 267.5
        [0.5, 1.5, 2.68]
    """
    decimals = _check_decimals(decimals)
    dtype = getattr(x, "dtype", None)
    if dtype in dtypes.COMPLEX or type(x) is complex:
        return _round_parts(x, lambda part: round(part, decimals))
    if dtype == dtypes.bool_:   # numpy rounds bools as rint does: to float16, decimals=0 only
        if decimals:
            raise DTypeError(f"round: bools round to 0 decimals only (as in numpy), got "
                             f"decimals={decimals}{at_user_line()}")
        x = creation.cast(x, dtypes.float16)
    if decimals == 0:
        return _round_op_call(x)
    if dtype in dtypes.INTS or type(x) is int:
        if decimals > 0:
            return _round_op_call(x)
        as_float = creation.cast(x, dtypes.float64)
        return creation.cast(round(as_float, decimals), dtype or dtypes.int64)
    scale = 10.0 ** builtins.abs(decimals)
    if decimals > 0:
        return ew.div(_round_op_call(ew.mul(x, scale)), scale)
    return ew.mul(_round_op_call(ew.div(x, scale)), scale)


def _round_parts(z, rounding):
    """numpy's rounding of a complex ``z``: its real and imaginary parts rounded apart."""
    return ew.add(rounding(complex_parts.real(z)), ew.mul(rounding(complex_parts.imag(z)), 1j))


def _check_decimals(decimals):
    try:
        return operator.index(decimals)
    except TypeError:
        raise ShapeTypeError(f"round: decimals must be an integer, got "
                             f"{type(decimals).__name__} {decimals!r}{at_user_line()}") from None


# The Array API standard's spellings of numpy's names (numpy 2 has them too).
for _fn, _short in ((arccos, "acos"), (arcsin, "asin"), (arctan, "atan"),
                    (arccosh, "acosh"), (arcsinh, "asinh"), (arctanh, "atanh")):
    _also_named(_fn, numpy=_short, array_api=_short)
_also_named(round, numpy="around")
acos, asin, atan = arccos, arcsin, arctan
acosh, asinh, atanh = arccosh, arcsinh, arctanh
