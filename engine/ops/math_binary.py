"""More two-input elementwise math: ``arctan2``, ``hypot``, ``logaddexp``,
``copysign``, ``nextafter``, floor division and the remainders, ``clip``, and
the composites ``isclose`` / ``allclose`` / ``divmod``.

Floor division and remainders follow numpy (and Python): ``floor_divide``
rounds toward -inf and ``mod`` (also ``remainder``) takes the divisor's sign;
``fmod`` takes the dividend's (C's). ``floor_divide`` has a zero gradient
(piecewise constant); ``nextafter`` has none.

Example:
    >>> import engine as en
    >>> en.mod(en.tensor([-3, 3]), 2).tolist(), en.floor_divide(-7, en.tensor(2)).tolist()
    ([1, 1], -4)
"""
import builtins
import math

import numpy as np

from .. import dtypes
from ..errors import DTypeError, describe_inputs
from ..names import also_named as _also_named
from ..op import Op, declare, register
from ..shapes import broadcast_shapes
from ._define import binary, call, unbroadcast
from . import compare, creation, misc, reduce
from . import elementwise as ew
from . import math_unary as mu

__all__ = ["arctan2", "atan2", "hypot", "logaddexp", "copysign", "nextafter", "floor_divide",
           "mod", "remainder", "fmod", "divmod", "clip", "isclose", "allclose"]

FLOATS = dtypes.FLOATS
_BOTH = (True, True)


def _arctan2_vjp(g, out, y, x, needs=_BOTH):
    gr = g / (ew.square(x) + ew.square(y))
    return (unbroadcast(gr * x, y.shape) if needs[0] else None,
            unbroadcast(ew.neg(gr * y), x.shape) if needs[1] else None)


def _hypot_vjp(g, out, x, y, needs=_BOTH):
    gr = g / out
    return (unbroadcast(gr * x, x.shape) if needs[0] else None,
            unbroadcast(gr * y, y.shape) if needs[1] else None)


def _logaddexp_vjp(g, out, x, y, needs=_BOTH):
    return (unbroadcast(g * ew.exp(x - out), x.shape) if needs[0] else None,
            unbroadcast(g * ew.exp(y - out), y.shape) if needs[1] else None)


def _copysign_vjp(g, out, x, y, needs=_BOTH):
    # d/dx |x| sign(y) = sign(x) sign(y), away from x = 0; the sign of y is
    # piecewise constant, so y gets no gradient.
    ones = creation.ones_like(g)
    flip = copysign(ones, x) * copysign(ones, y)
    return (unbroadcast(g * flip, x.shape) if needs[0] else None,
            creation.zeros_like(y) if needs[1] else None)


def _floor_divide_vjp(g, out, x, y, needs=_BOTH):
    return (creation.zeros_like(x) if needs[0] else None,
            creation.zeros_like(y) if needs[1] else None)


def _mod_vjp(g, out, x, y, needs=_BOTH):
    # mod(x, y) = x - floor(x / y) * y, with floor(x / y) piecewise constant.
    return (unbroadcast(g, x.shape) if needs[0] else None,
            unbroadcast(ew.neg(g * floor_divide(x, y)), y.shape) if needs[1] else None)


def _fmod_vjp(g, out, x, y, needs=_BOTH):
    return (unbroadcast(g, x.shape) if needs[0] else None,
            unbroadcast(ew.neg(g * mu.trunc(x / y)), y.shape) if needs[1] else None)


def _in_floating_point(standard):
    """The standard's function ``standard`` on the inputs promoted, integers and bools in
    the float dtype numpy's loop picks (``promote_types(dt, float16)``: bool and 8-bit
    ints in float16, int64 in float64), which the shape rule predicts."""
    def kernel(be, x, y):
        x, y = be.promote(x, y)
        dt = be.dtype_of(x)
        if dt not in FLOATS:
            target = np.promote_types(dt, np.float16)
            x, y = be.astype(x, target), be.astype(y, target)
        return getattr(be.xp, standard)(x, y)
    kernel.__name__ = standard
    return kernel


def _float_binary(name, ufunc, standard, vjp, onnx, form, doc, commutative=False):
    """A two-input op with a floating-point result: integer inputs compute in float64,
    as numpy's ``arctan2(1, 2)`` does."""
    op = binary(name, ufunc, vjp, true_divide=True, doc=doc, vjp_needs=vjp is not None,
                generic=_in_floating_point(standard), commutative=commutative)
    declare(op, onnx=onnx, scalar_form=form, positional_out=True)
    return op


arctan2_op = _float_binary(
    "arctan2", np.arctan2, "atan2", _arctan2_vjp, None, "np.arctan2({0}, {1})",
    "The angle of the point ``(x, y)``: ``arctan2(y, x)``, in [-pi, pi].")
hypot_op = _float_binary("hypot", np.hypot, "hypot", _hypot_vjp,
                         ("expr", "Sqrt(Add(Mul(x0, x0), Mul(x1, x1)))"), "np.hypot({0}, {1})",
                         "``sqrt(x**2 + y**2)``, without overflow in the squares.",
                         commutative=True)
logaddexp_op = _float_binary("logaddexp", np.logaddexp, "logaddexp", _logaddexp_vjp,
                             ("expr", "Add(Max(x0, x1), Log(Add(1, Exp(Neg(Abs(Sub(x0, x1)))))))"),
                             "np.logaddexp({0}, {1})",
                             "``log(exp(x) + exp(y))``, without overflow.", commutative=True)
copysign_op = _float_binary("copysign", np.copysign, "copysign", _copysign_vjp, None,
                            "np.copysign({0}, {1})", "``|x|`` with the sign of ``y``.")
nextafter_op = _float_binary("nextafter", np.nextafter, "nextafter", None, None,
                             "np.nextafter({0}, {1})",
                             "The next float after ``x`` toward ``y`` (no gradient).")


def _integer_division(name, ufunc, generic, vjp, onnx, form, doc, out_impl=None, loops=None):
    op = binary(name, ufunc, vjp, allowed=dtypes.NUMERIC, what="numeric", doc=doc,
                vjp_needs=True, generic=generic, out_impl=out_impl, loops=loops)
    declare(op, onnx=onnx, scalar_form=form, positional_out=True)
    return op


def _fmod_generic(be, x, y):
    # C's remainder from the standard's: remainder has the divisor's sign, fmod the
    # dividend's; where they differ (and the remainder is not 0), fmod = remainder - y.
    x, y = be.promote(x, y)
    r = be.xp.remainder(x, y)
    fix = (r != 0) & ((r < 0) != (x < 0))
    return be.xp.where(fix, r - y, r)


_sum = np.add.reduce


# Floor division of floats: numpy follows Python, where ``inf // 2`` is NaN and
# ``1 // -inf`` is -1; the Array API standard defines ``floor(x / y)`` there
# (inf and -0). The kernels take numpy's result and redo only the elements
# with an infinite or NaN operand, so finite inputs cost one check more.
def _floor_divide_fix(x, y, q):
    """``q`` (numpy's ``x // y``) with the standard's values where an operand is not finite."""
    # numpy's q is wrong only where it is NaN (x infinite) or y is infinite: one sum of
    # each tells (an overflowing sum only takes the slower path). This runs outside
    # np.errstate, inside which ufuncs on small arrays run many times slower.
    if math.isfinite(_sum(q, None) + _sum(y, None)):
        return q
    bad = ~(np.isfinite(x) & np.isfinite(y))
    with np.errstate(all="ignore"):
        return np.where(bad, np.floor(np.true_divide(x, y)), q).astype(q.dtype, copy=False)


def _floor_divide_impl(x, y):
    q = np.floor_divide(x, y)
    return _floor_divide_fix(x, y, q) if q.dtype.kind == "f" else q


def _floor_divide_out(x, y, out):
    if out.dtype.kind != "f":
        return np.floor_divide(x, y, out)
    if np.may_share_memory(out, x) or np.may_share_memory(out, y):
        # The fix reads x and y again: not after the quotient has written over one of
        # them (a fused kernel may hand an operand's buffer as ``out``).
        out[...] = _floor_divide_impl(x, y)
        return out
    np.floor_divide(x, y, out)
    out[...] = _floor_divide_fix(x, y, out)
    return out


def _floor_divide_generic(be, x, y):
    x, y = be.promote(x, y)
    q = be.xp.floor_divide(x, y)
    if be.dtype_of(q) not in FLOATS:
        return q
    xp = be.xp
    return xp.where(xp.isfinite(x) & xp.isfinite(y), q, xp.floor(x / y))


floor_divide_op = _integer_division(
    "floor_divide", _floor_divide_impl, _floor_divide_generic, _floor_divide_vjp,
    ("Mod", "floor_divide"), "floor_divide_({0}, {1})",
    "``x // y``: the quotient rounded toward -inf (integers: 0 where y is 0, as numpy; "
    "floats with an infinite operand: ``floor(x / y)``, the Array API standard's value, "
    "where numpy gives Python's NaN and -1). Its gradient is zero (piecewise constant).",
    out_impl=_floor_divide_out, loops=np.floor_divide)
mod_op = _integer_division(
    "mod", np.remainder, "remainder", _mod_vjp, ("Mod", "mod"), "remainder_({0}, {1})",
    "``x % y``: the remainder of floor division, with the divisor's sign (numpy's "
    "``mod`` and ``remainder``, Python's ``%``).")
# (no scalar form: numba's np.fmod on integers is wrong, e.g. fmod(-20, -1) = -20)
fmod_op = _integer_division(
    "fmod", np.fmod, _fmod_generic, _fmod_vjp, ("Mod", "fmod"), None,
    "C's remainder ``x - trunc(x / y) * y``, with the dividend's sign.")

arctan2 = call(arctan2_op)
hypot = call(hypot_op)
logaddexp = call(logaddexp_op)
copysign = call(copysign_op)
nextafter = call(nextafter_op)
floor_divide = call(floor_divide_op)
mod = call(mod_op)
fmod = call(fmod_op)
_also_named(mod, numpy="remainder", array_api="remainder")
_also_named(arctan2, numpy="atan2", array_api="atan2")
remainder = mod
atan2 = arctan2


def divmod(x, y):
    """``(floor_divide(x, y), mod(x, y))``, as Python's and numpy's ``divmod``.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.divmod(en.tensor([7, -7]), 2)]
        [[3, -4], [1, 1]]
    """
    return floor_divide(x, y), mod(x, y)


# ---- clip ----------------------------------------------------------------------------------------
def _clip_eval(x, lo, hi):
    avals = [x, lo, hi]
    if any(a[1] not in dtypes.NUMERIC for a in avals):
        raise DTypeError(f"clip: expected numeric inputs, got {describe_inputs(avals)}")
    shape = broadcast_shapes(x[0], lo[0], hi[0], op_name="clip")
    return (shape, np.result_type(x[1], lo[1], hi[1]))


def _clip_vjp(g, out, x, lo, hi):
    # out = minimum(maximum(x, lo), hi): x's gradient where lo <= x <= hi (the bounds
    # included, as PyTorch's clamp), hi's where it wins (x > hi, or lo > hi), lo's elsewhere.
    zero = creation.zeros_like(g)
    take_x = compare.logical_and(compare.greater_equal(x, lo), compare.less_equal(x, hi))
    take_hi = compare.logical_or(compare.greater(x, hi), compare.greater(lo, hi))
    take_lo = compare.logical_not(compare.logical_or(take_x, take_hi))
    return (unbroadcast(compare.where(take_x, g, zero), x.shape),
            unbroadcast(compare.where(take_lo, g, zero), lo.shape),
            unbroadcast(compare.where(take_hi, g, zero), hi.shape))


def _clip_impl(x, lo, hi):
    return np.clip(x, lo, hi)


def _clip_out(x, lo, hi, out):
    return np.clip(x, lo, hi, out=out)


def _clip_generic(be, x, lo, hi):
    x, lo, hi = be.promote(x, lo, hi)
    return be.xp.minimum(be.xp.maximum(x, lo), hi)


clip_op = register(Op("clip", _clip_impl, _clip_eval, _clip_vjp, elementwise=True, n_inputs=3,
                      dtypes=dtypes.NUMERIC, out_impl=_clip_out, generic=_clip_generic,
                      doc="``minimum(maximum(x, lo), hi)``, with broadcasting; the gradient "
                          "goes to x where lo <= x <= hi, else to the bound that wins."))
declare(clip_op, onnx=("expr", "Min(Max(x0, x1), x2)"),
        scalar_form="np.minimum(np.maximum({0}, {1}), {2})", positional_out=True)


def clip(x, min=None, max=None):
    """``x`` limited to ``[min, max]`` (numpy's ``clip``; either bound may be None).

    Example:
        >>> import engine as en
        >>> en.clip(en.tensor([-2.0, 0.5, 3.0]), 0.0, 1.0).tolist()
        [0.0, 0.5, 1.0]
    """
    if min is None and max is None:
        return misc.identity(x)
    dtype = getattr(x, "dtype", None)
    lo: float
    hi: float
    if dtype is not None and dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = info.min, info.max
    else:
        lo, hi = -math.inf, math.inf
    return _clip_call(x, lo if min is None else min, hi if max is None else max)


_clip_call = call(clip_op)


# ---- closeness -------------------------------------------------------------------------------------
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (bool), as ``np.isclose``: infinities
    are close only to themselves, NaN to nothing unless ``equal_nan``.

    Example:
        >>> import engine as en
        >>> en.isclose(en.tensor([1.0, 1.1]), 1.0 + 1e-9).tolist()
        [True, False]
    """
    if isinstance(b, (int, float)):
        return _isclose_to_number(a, float(b), rtol, atol, equal_nan)
    if not hasattr(b, "dtype"):
        b = np.asarray(b)        # nested lists
    b = creation.cast(b, np.result_type(b.dtype, 1.0))   # as numpy: b in floating point
    with np.errstate(invalid="ignore"):   # inf - inf is NaN, and not close: expected
        close = compare.less_equal(ew.abs(ew.sub(a, b)), ew.add(ew.mul(ew.abs(b), rtol), atol))
        close = compare.logical_or(compare.logical_and(close, mu.isfinite(b)),
                                   compare.equal(a, b))
        if equal_nan:
            close = compare.logical_or(close, compare.logical_and(_isnan(a), mu.isnan(b)))
    return close


def _isclose_to_number(a, b, rtol, atol, equal_nan):
    # The same formula with b a Python number: its part is Python arithmetic, so the
    # result lives on a's back end.
    if math.isnan(b):
        return compare.logical_and(_isnan(a), equal_nan)
    if math.isinf(b):
        return compare.equal(a, b)
    with np.errstate(invalid="ignore"):
        close = compare.less_equal(ew.abs(ew.sub(a, b)), atol + rtol * builtins.abs(b))
    return close


def _isnan(a):
    return math.isnan(a) if isinstance(a, (int, float)) else mu.isnan(a)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of :func:`isclose` is True: a 0-d bool tensor (true for
    empty inputs), usable in an ``if`` eagerly.

    Example:
        >>> import engine as en
        >>> bool(en.allclose(en.tensor([1.0, 2.0]), en.tensor([1.0, 2.0 + 1e-9])))
        True
    """
    far = compare.logical_not(isclose(a, b, rtol, atol, equal_nan))
    return compare.equal(reduce.sum(creation.cast(far, dtypes.int64)), 0)
