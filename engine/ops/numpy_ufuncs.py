"""numpy's one-input ufuncs that the other families lack: ``cbrt``, ``deg2rad`` /
``rad2deg`` (also ``radians`` / ``degrees``), ``fabs``, ``spacing``, ``bitwise_count``,
and ``frexp_exponent``, the exponent half of ``frexp`` (the composite
``engine.ops.numpy_ufunc_composites.frexp`` returns both halves).

Each is a registry op on numpy's ufunc, with numpy's dtypes: integer and bool inputs
compute in numpy's floating result dtype (``cbrt`` of int8 is float16, of int64
float64), ``bitwise_count`` gives uint8 and ``frexp_exponent`` int32. ``spacing``,
``bitwise_count`` and ``frexp_exponent`` are piecewise constant or integer valued and
have no gradient.

Example:
    >>> import engine as en
    >>> en.cbrt(en.tensor([-8.0, 27.0])).tolist(), en.rad2deg(en.tensor(3.141592653589793)).item()
    ([-2.0, 3.0], 180.0)
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..errors import DTypeError, describe_inputs
from ..names import also_named as _also_named
from ..op import declare
from ._define import call, unary
from . import elementwise as ew

__all__ = ["cbrt", "deg2rad", "rad2deg", "radians", "degrees", "fabs", "spacing",
           "bitwise_count"]

REAL_FLOATS = dtypes.FLOATS
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0


# ---- cbrt ----------------------------------------------------------------------------------------
def _cbrt_generic(be, x):
    # The standard has no cbrt: |x| ** (1/3) with x's sign (a few ulps from libm's).
    xp = be.xp
    root = xp.pow(xp.abs(x), xp.asarray(1.0 / 3.0, dtype=x.dtype))
    return xp.where(x < 0, -root, root)


def _cbrt_vjp(g, out, x):
    return (g / (3.0 * ew.square(out)),)


cbrt_op = unary("cbrt", np.cbrt, _cbrt_vjp, allowed=REAL_FLOATS, what="real floating-point",
                generic=_cbrt_generic,
                doc="The real cube root, ``-cbrt(-x)`` for negative x (numpy's ``cbrt``).")
declare(cbrt_op, onnx=("expr", "Mul(Sign(x0), Pow(Abs(x0), 0.3333333333333333))"),
        scalar_form="np.cbrt({0})", positional_out=True)


# ---- angle conversions ---------------------------------------------------------------------------
def _scaled(name, ufunc, factor, doc):
    def generic(be, x):
        return x * factor
    generic.__name__ = name
    op = unary(name, ufunc, lambda g, out, x: (g * factor,), allowed=REAL_FLOATS,
               what="real floating-point", generic=generic, doc=doc)
    # numpy multiplies by the factor computed in the loop's dtype (float32: 180f / pif,
    # not 180 / pi rounded to float32), as the C kernels then do; numba's multiply in
    # float64 and round once, which gives the same bits (the exact product fits).
    def form(avals, dtype):
        return f"({{0}} * {_factor_in(factor, dtype)!r})"

    declare(op, onnx=("expr", f"Mul(x0, {factor!r})"), scalar_form=form,
            positional_out=True)
    return op


def _factor_in(factor, dtype):
    """``factor`` as numpy's loop of ``dtype`` computes it (a Python float)."""
    if np.dtype(dtype) != np.float32:
        return factor
    pi = np.float32(math.pi)
    return float(np.float32(180.0) / pi if factor == _DEG else pi / np.float32(180.0))


deg2rad_op = _scaled("deg2rad", np.deg2rad, _RAD, "Degrees to radians: ``x * pi / 180``.")
rad2deg_op = _scaled("rad2deg", np.rad2deg, _DEG, "Radians to degrees: ``x * 180 / pi``.")


# ---- fabs ----------------------------------------------------------------------------------------
def _fabs_vjp(g, out, x):
    return (g * ew.sign(x),)


fabs_op = unary("fabs", np.fabs, _fabs_vjp, allowed=REAL_FLOATS, what="real floating-point",
                generic="abs",
                doc="``|x|`` of real numbers as floats (numpy's ``fabs``: integers become "
                    "floats, complex numbers are refused).")
declare(fabs_op, onnx=("node", "Abs"), scalar_form="abs({0})", positional_out=True)


# ---- spacing -------------------------------------------------------------------------------------
def _spacing_generic(be, x):
    # numpy's npy_spacing: nextafter(x, copysign(inf, x)) - x, NaN for infinities.
    xp = be.xp
    inf = xp.asarray(math.inf, dtype=x.dtype)
    step = xp.nextafter(x, xp.copysign(inf, x)) - x
    return xp.where(xp.isinf(x), xp.asarray(math.nan, dtype=x.dtype), step)


spacing_op = unary("spacing", np.spacing, None, allowed=REAL_FLOATS, what="real floating-point",
                   differentiable=False, generic=_spacing_generic,
                   doc="The distance from x to the next float away from zero (negative for "
                       "negative x; NaN for infinities). No gradient (piecewise constant).")
declare(spacing_op, onnx=None, scalar_form="np.spacing({0})", positional_out=True)


# ---- bitwise_count -------------------------------------------------------------------------------
def _bitwise_count_generic(be, x):
    # The set bits of |x| (numpy counts the magnitude's). Shifts of a signed value copy
    # the sign bit, so the top bit is read as "negative" (set only in |min|, the one
    # magnitude that stays negative).
    xp = be.xp
    dt = be.dtype_of(x)
    if dt == dtypes.bool_:
        return be.astype(x, dtypes.uint8)
    a = xp.abs(x)
    bits = np.dtype(dt).itemsize * 8
    signed = np.dtype(dt).kind == "i"
    count = xp.zeros(a.shape, dtype=xp.uint8)
    one = xp.asarray(1, dtype=a.dtype)
    for i in range(bits - 1 if signed else bits):
        count = count + be.astype((a >> i) & one, dtypes.uint8)
    if signed:
        count = count + be.astype(a < 0, dtypes.uint8)
    return count


bitwise_count_op = unary("bitwise_count", np.bitwise_count, None,
                         allowed=dtypes.INTS | {dtypes.bool_}, what="integer or bool",
                         out_dtype=dtypes.uint8, differentiable=False,
                         generic=_bitwise_count_generic,
                         doc="The number of 1 bits in ``|x|`` (uint8), numpy's "
                             "``bitwise_count``.")
declare(bitwise_count_op, onnx=None, scalar_form=None, positional_out=True)


# ---- frexp's exponent ----------------------------------------------------------------------------
def _frexp_exponent_impl(x):
    return np.frexp(x)[1]


def _frexp_exponent_out(x, out):
    np.frexp(x, np.empty(out.shape, np.frexp(np.zeros(0, x.dtype))[0].dtype), out)
    return out


def _frexp_exponent_eval(x):
    dt = x[1]
    if dt not in dtypes.REAL | {dtypes.bool_}:
        raise DTypeError(f"frexp: expected a real input, got {describe_inputs([x])}")
    return (x[0], dtypes.int32)


def _frexp_exponent_generic(be, x):
    # e with |x| = m * 2**e, 0.5 <= |m| < 1: floor(log2|x|) + 1, corrected by one where
    # log2 rounded across an integer; 0 for zero, infinities and NaN (numpy's values).
    xp = be.xp
    dt = be.dtype_of(x)
    if dt not in dtypes.FLOATS:   # (exact in float64: numpy's smaller float has the same e)
        x = be.astype(x, dtypes.float64)
    a = xp.abs(x)
    finite = xp.isfinite(a) & (a > 0)
    safe = xp.where(finite, a, xp.ones_like(a))
    e = xp.floor(xp.log2(safe)) + 1
    m = _times_power_of_two(xp, safe, -e)
    e = xp.where(m >= 1, e + 1, xp.where(m < 0.5, e - 1, e))
    return be.astype(xp.where(finite, e, xp.zeros_like(e)), dtypes.int32)


def _times_power_of_two(xp, x, e):
    # x * 2**e in two steps, so that neither power overflows where the product does not.
    half = xp.floor(e / 2)
    two = xp.asarray(2.0, dtype=x.dtype)
    return x * xp.pow(two, half) * xp.pow(two, e - half)


frexp_exponent_op = unary("frexp_exponent", _frexp_exponent_impl, None,
                          allowed=dtypes.REAL | {dtypes.bool_}, what="real",
                          differentiable=False, out_impl=_frexp_exponent_out,
                          generic=_frexp_exponent_generic,
                          doc="The exponent ``e`` of numpy's ``frexp``: ``x = m * 2**e`` with "
                              "``0.5 <= |m| < 1`` (int32; 0 for zero, infinities and NaN).")
frexp_exponent_op.abstract_eval = _frexp_exponent_eval
declare(frexp_exponent_op, onnx=None, scalar_form=None, positional_out=True)


cbrt = call(cbrt_op)
deg2rad = call(deg2rad_op)
rad2deg = call(rad2deg_op)
fabs = call(fabs_op)
spacing = call(spacing_op)
bitwise_count = call(bitwise_count_op)
frexp_exponent = call(frexp_exponent_op)
_also_named(deg2rad, numpy="radians")
_also_named(rad2deg, numpy="degrees")
radians = deg2rad
degrees = rad2deg
