"""Elementwise math: unary functions and broadcasting binary arithmetic."""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..cost_model import cost
from ..errors import DomainError, describe_args, describe_inputs
from ..modes import apply
from ..op import declare
from ..op import lookup as _lookup
from ..names import also_named as _also_named
from ._args import at_user_line
from ._define import binary, call, unary, unbroadcast
from ._define import binary_rule as _binary_rule
from . import compare, complex_kernels, complex_order, creation, fp_errors

if TYPE_CHECKING:
    from ..contracts import OpFunction

NUM = dtypes.NUMERIC
REAL = dtypes.REAL
INEXACT = dtypes.INEXACT   # the floating functions' own dtypes; ints and bools go to float
REAL_OR_BOOL = dtypes.REAL | {dtypes.bool_}


def _real_part_dtype(dt):
    # abs of a complex number is real, of its component dtype (numpy's choice).
    return {dtypes.complex64: dtypes.float32, dtypes.complex128: dtypes.float64}.get(dt, dt)


# ---- unary ---------------------------------------------------------------
neg_op = unary("neg", "negative", lambda g, out, x: (neg(g),), allowed=NUM, what="numeric",
               doc="Elementwise ``-x``.")
declare(neg_op, onnx=("node", "Neg"), scalar_form="-{0}", positional_out=True)
def _abs_vjp(g, out, x):
    if x.dtype in dtypes.COMPLEX:
        # d|z| = Re(conj(z) dz) / |z|: the cotangent conj(z) / |z| (JAX's convention),
        # written without sign(z) so that it differentiates again; 0 at z = 0.
        # (conj is engine/ops/complex_parts.py's, a family above this one: looked up)
        safe = compare.where(out == 0.0, creation.ones_like(out), out)
        return (apply(_lookup("conj"), x) * (g / safe),)
    return (g * sign(x),)


abs_op = unary("abs", "abs", _abs_vjp, allowed=NUM, what="numeric",
               out_dtype=_real_part_dtype, doc="Elementwise absolute value.")
declare(abs_op, onnx=("node", "Abs"), scalar_form="abs({0})", positional_out=True)
sign_op = unary("sign", "sign", lambda g, out, x: (creation.zeros_like(x),), allowed=NUM,
                what="numeric", doc="Elementwise sign (-1, 0 or 1); its gradient is zero.")
# numpy's sign: 0 for either zero, NaN for NaN (numba's gave -0.0 for -0.0).
declare(sign_op, onnx=("node", "Sign"), positional_out=True,
        scalar_form="(ONE if {0} > ZERO else (-ONE if {0} < ZERO else "
                    "(ZERO if {0} == ZERO else {0})))")
exp_op = unary("exp", "exp", lambda g, out, x: (g * out,), allowed=INEXACT, doc="Elementwise ``e**x``.")
declare(exp_op, onnx=("node", "Exp"), scalar_form="np.exp({0})", positional_out=True)
log_op = unary("log", "log", lambda g, out, x: (g / x,), allowed=INEXACT, doc="Natural logarithm.")
declare(log_op, onnx=("node", "Log"), scalar_form="np.log({0})", positional_out=True)
log1p_op = unary("log1p", "log1p", lambda g, out, x: (g / (x + 1.0),), allowed=INEXACT,
                 doc="``log(1 + x)``, accurate near 0.")
declare(log1p_op, onnx=("expr", "Log(Add(x0, 1))"), scalar_form="np.log1p({0})", positional_out=True)


def _expm1_out(x, out):
    # numpy's complex expm1 misses C99's special values (see complex_kernels).
    if x.dtype.kind == "c":
        out[...] = complex_kernels.expm1(x)
        return out
    return np.expm1(x, out)


def _expm1_impl(x):
    return complex_kernels.expm1(x) if x.dtype.kind == "c" else np.expm1(x)


expm1_op = unary("expm1", _expm1_impl, lambda g, out, x: (g * (out + 1.0),), allowed=INEXACT,
                 doc="``exp(x) - 1``, accurate near 0.", out_impl=_expm1_out,
                 generic="expm1", to_float=True)
declare(expm1_op, onnx=("expr", "Sub(Exp(x0), 1)"), scalar_form="np.expm1({0})", positional_out=True)
sqrt_op = unary("sqrt", "sqrt", lambda g, out, x: (g / (out * 2.0),), allowed=INEXACT,
                doc="Square root.")
declare(sqrt_op, onnx=("node", "Sqrt"), scalar_form="np.sqrt({0})", positional_out=True)
square_op = unary("square", "square", lambda g, out, x: (g * (x * 2.0),), allowed=NUM,
                  what="numeric", doc="``x * x``.")
declare(square_op, onnx=("expr", "Mul(x0, x0)"), scalar_form="{0} * {0}", positional_out=True)
# numpy's reciprocal loop is not vectorized: on large arrays ``divide(1, x)``,
# correctly rounded like it, runs twice as fast; on small ones the plain ufunc
# call costs less (cost.reciprocal_divide_min_elements).


def _reciprocal_out(x, out):
    if x.size >= cost.reciprocal_divide_min_elements:
        return np.divide(1, x, out=out)
    return np.reciprocal(x, out=out)


def _reciprocal_impl(x):
    return _reciprocal_out(x, np.empty_like(x))


reciprocal_op = unary("reciprocal", _reciprocal_impl, lambda g, out, x: (neg(g * square(out)),),
                      allowed=INEXACT, doc="``1 / x``.", out_impl=_reciprocal_out,
                      generic="reciprocal")
declare(reciprocal_op, onnx=("node", "Reciprocal"), scalar_form="ONE / {0}")
sin_op = unary("sin", "sin", lambda g, out, x: (g * cos(x),), allowed=INEXACT, doc="Sine.")
declare(sin_op, onnx=("node", "Sin"), scalar_form="np.sin({0})", positional_out=True)
cos_op = unary("cos", "cos", lambda g, out, x: (neg(g * sin(x)),), allowed=INEXACT, doc="Cosine.")
declare(cos_op, onnx=("node", "Cos"), scalar_form="np.cos({0})", positional_out=True)
tanh_op = unary("tanh", "tanh", lambda g, out, x: (g * (1.0 - square(out)),), allowed=INEXACT,
                doc="Hyperbolic tangent.")
declare(tanh_op, onnx=("node", "Tanh"), scalar_form="np.tanh({0})", positional_out=True)


def _sigmoid_out(x, out):
    # 1 / (1 + exp(-x)), computed in place in ``out`` (one buffer, no temporaries).
    # Below x = -88 (float32) exp(-x) overflows to inf and the result is 0, as
    # numpy gives it; the overflow is expected, so it is not warned about.
    fp_errors.exp_of_negated(x, out)
    np.add(out, 1, out=out)
    return _reciprocal_out(out, out)


def _sigmoid_impl(x):
    # An explicit output array: on a 0-d input numpy ufuncs return a scalar,
    # which the in-place steps could not write into.
    return _sigmoid_out(x, np.empty_like(x))


def _sigmoid_generic(be, x):
    # exp of -|x| never overflows, so no branch of the where warns.
    e = be.xp.exp(-be.xp.abs(x))
    return be.xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


sigmoid_op = unary("sigmoid", _sigmoid_impl, lambda g, out, x: (sigmoid_grad(out, g),),
                   doc="Logistic sigmoid ``1 / (1 + exp(-x))``.", out_impl=_sigmoid_out,
                   generic=_sigmoid_generic)
declare(sigmoid_op, onnx=("node", "Sigmoid"), scalar_form="ONE / (ONE + np.exp(-{0}))")


def _sigmoid_grad_out(y, g, out):
    # g * y * (1 - y): three passes in ``out``, no temporary. When ``out`` is
    # one of the inputs (memory planning writes in place over a dying input)
    # the first pass would overwrite it: then one temporary is made.
    if np.may_share_memory(out, y) or np.may_share_memory(out, g):
        return np.multiply((1 - y) * y, g, out=out)
    np.subtract(1, y, out=out)
    np.multiply(out, y, out=out)
    return np.multiply(out, g, out=out)


def _sigmoid_grad_impl(y, g):
    shape = np.broadcast_shapes(np.shape(y), np.shape(g))
    return _sigmoid_grad_out(y, g, np.empty(shape, np.result_type(y, g)))


def _sigmoid_grad_static_kernel(in_avals, out_aval, params, into_buffer):
    # A fresh result shares no memory with the inputs: the three passes go straight into
    # an array of the traced shape and dtype, without _sigmoid_grad_impl's broadcast,
    # promotion and overlap tests (half its time on a (32, 64) step of a scan). A
    # planned buffer may be a dying input's: the generic kernel tests for that.
    shape, dtype = out_aval
    if into_buffer or None in shape:
        return None
    return _fresh_sigmoid_grad(tuple(shape), np.dtype(dtype))


@functools.lru_cache(maxsize=64)
def _fresh_sigmoid_grad(shape, dtype):
    """The fresh-result kernel for one aval (one per aval: an unrolled graph has many)."""
    def sigmoid_grad_fresh(y, g):
        out = np.empty(shape, dtype)
        np.subtract(1, y, out=out)
        np.multiply(out, y, out=out)
        return np.multiply(out, g, out=out)
    return sigmoid_grad_fresh


def _sigmoid_grad_vjp(c, out, y, g):
    # d/dy [g y (1 - y)] = g (1 - 2y);  d/dg = y (1 - y).
    return (unbroadcast(c * g * (1.0 - y * 2.0), y.shape),
            unbroadcast(sigmoid_grad(y, c), g.shape))


# The sigmoid's backward pass as one op (TensorFlow's SigmoidGrad): eagerly one
# dispatch and one result array instead of three.
def _sigmoid_grad_generic(be, y, g):
    y, g = be.promote(y, g)
    return (1 - y) * y * g


sigmoid_grad_op = binary("sigmoid_grad", _sigmoid_grad_impl, _sigmoid_grad_vjp,
                         allowed=dtypes.FLOATS, what="floating-point",
                         out_impl=_sigmoid_grad_out, generic=_sigmoid_grad_generic,
                         doc="``g * y * (1 - y)``: the sigmoid's gradient from its output ``y``.")
declare(sigmoid_grad_op, static_kernel=_sigmoid_grad_static_kernel)
declare(sigmoid_grad_op, onnx=("expr", "Mul(Mul(Sub(1, x0), x0), x1)"),
        scalar_form="((ONE - {0}) * {0}) * {1}")   # the numpy kernel's order


def _relu_impl(x):
    return np.maximum(x, np.zeros((), x.dtype))


def _relu_out(x, out):
    return np.maximum(x, np.zeros((), x.dtype), out=out)


def _relu_vjp(g, out, x):
    # From the output (out > 0 exactly where x > 0, NaN included): the input is then
    # read by relu alone, so a bias add before it fuses with it and is not kept for
    # the backward pass (the output is kept anyway by whatever reads it next).
    return (compare.where(compare.greater(out, 0), g, creation.zeros_like(g)),)


def _relu_generic(be, x):
    return be.xp.maximum(x, be.xp.zeros((), dtype=x.dtype))


relu_op = unary("relu", _relu_impl, _relu_vjp,
                allowed=REAL, what="real numeric", doc="``max(x, 0)``.", out_impl=_relu_out,
                generic=_relu_generic)
declare(relu_op, onnx=("node", "Relu"), scalar_form="({0} if ({0} > ZERO or {0} != {0}) else ZERO)")  # NaN kept, -0 -> +0, as np.maximum

# (Typed where rules above use the function before this line.)
neg: OpFunction = call(neg_op)
abs = call(abs_op)
sign = call(sign_op)
exp = call(exp_op)
log = call(log_op)
log1p = call(log1p_op)
expm1 = call(expm1_op)
sqrt = call(sqrt_op)
square: OpFunction = call(square_op)
reciprocal = call(reciprocal_op)
sin: OpFunction = call(sin_op)
cos: OpFunction = call(cos_op)
tanh = call(tanh_op)
sigmoid = call(sigmoid_op)
sigmoid_grad: OpFunction = call(sigmoid_grad_op)
relu = call(relu_op)


# ---- binary --------------------------------------------------------------
_BOTH = (True, True)


def _add_vjp(g, out, x, y, needs=_BOTH):
    return (unbroadcast(g, x.shape) if needs[0] else None,
            unbroadcast(g, y.shape) if needs[1] else None)


def _sub_vjp(g, out, x, y, needs=_BOTH):
    return (unbroadcast(g, x.shape) if needs[0] else None,
            unbroadcast(neg(g), y.shape) if needs[1] else None)


def _mul_vjp(g, out, x, y, needs=_BOTH):
    return (unbroadcast(g * y, x.shape) if needs[0] else None,
            unbroadcast(g * x, y.shape) if needs[1] else None)


def _div_vjp(g, out, x, y, needs=_BOTH):
    gx = g / y
    return (unbroadcast(gx, x.shape) if needs[0] else None,
            unbroadcast(neg(gx * out), y.shape) if needs[1] else None)


def _pow_dx(x, y):
    """d/dx x**y = y * x**(y - 1). It is 0 where y == 0, also at x = 0, where it would
    be 0 * inf: there the base is moved off 0 (to 1, where 1**-1 = 0**0), so no branch
    holds NaN (nor does the second derivative, which takes the same route). Moving the
    base, not the exponent, keeps the exponent ``y - 1`` the shape of ``y``: a scalar
    for the common x ** 2, where numpy's power on an exponent array is ~10x slower."""
    origin = compare.logical_and(compare.equal(x, 0), compare.equal(y, 0))
    return y * pow(compare.where(origin, 1.0, x), y - 1.0)


def _pow_log(x, y):
    """The log(x) of d/dy x**y = log(x) * x**y. At x = 0 the derivative is 0 for y >= 0
    (x**y is constant 0 or 1 there) and -inf for y < 0 (x**y = inf), as PyTorch has
    it; for x < 0, where x**y is real only at integer y, it is defined as 0 (as
    TensorFlow does), so an exponent gradient nobody asked for, as in (x - 1) ** 2,
    never holds NaN."""
    safe_log = log(compare.where(compare.greater(x, 0), x, creation.ones_like(x)))
    pole = compare.logical_and(compare.equal(x, 0), compare.less(y, 0))
    return compare.where(pole, -np.inf, safe_log)


def _pow_vjp(g, out, x, y, needs=_BOTH):
    gx = unbroadcast(g * _pow_dx(x, y), x.shape) if needs[0] else None
    gy = unbroadcast(g * (out * _pow_log(x, y)), y.shape) if needs[1] else None
    return gx, gy


def _minmax_vjp(g, out, x, y, needs=_BOTH):
    # Ties split the gradient evenly, so the rule is symmetric.
    xm = creation.cast(compare.equal(x, out), g.dtype)
    ym = creation.cast(compare.equal(y, out), g.dtype)
    total = xm + ym
    return (unbroadcast(g * xm / total, x.shape) if needs[0] else None,
            unbroadcast(g * ym / total, y.shape) if needs[1] else None)


def _div_generic(be, x, y):
    # True division: integers divide as float64, as numpy divides them.
    x, y = be.promote(x, y)
    if be.dtype_of(x) not in dtypes.FLOATS:
        x, y = be.astype(x, dtypes.float64), be.astype(y, dtypes.float64)
    return be.xp.divide(x, y)


add_op = binary("add", "add", _add_vjp, vjp_needs=True, commutative=True, doc="Elementwise ``x + y`` with broadcasting.")
declare(add_op, onnx=("node", "Add"), scalar_form="{0} + {1}", positional_out=True)
# numpy refuses ``bool - bool``; sub takes numbers only (bools go through an int cast).
sub_op = binary("sub", "subtract", _sub_vjp, vjp_needs=True, allowed=NUM, what="numeric",
                doc="Elementwise ``x - y``.")
declare(sub_op, onnx=("node", "Sub"), scalar_form="{0} - {1}", positional_out=True)
mul_op = binary("mul", "multiply", _mul_vjp, vjp_needs=True, commutative=True, doc="Elementwise ``x * y``.")
declare(mul_op, onnx=("node", "Mul"), scalar_form="{0} * {1}", positional_out=True)
div_op = binary("div", np.true_divide, _div_vjp, vjp_needs=True, true_divide=True, generic=_div_generic, doc="Elementwise true division ``x / y``.")
declare(div_op, onnx=("node", "Div"), scalar_form="{0} / {1}", positional_out=True)
def _negative_power_error(x, y):
    return DomainError(f"pow: integers to negative integer powers are not allowed, got "
                       f"{describe_inputs([(np.shape(x), x.dtype), (np.shape(y), y.dtype)])}; "
                       "cast the base to a float dtype first")


# The kernels name the op and dtypes where numpy's ValueError would not (a negative
# exponent known only when the graph runs); the graph executor adds the node's line.
def _exact_power(x, y):
    """``np.square`` or ``np.positive`` when ``x ** y`` is exactly ``x * x`` or ``x`` (a
    float exponent 2 or 1 of x's own dtype, as a Python 2.0 becomes), else None:
    numpy's power runs its general loop on an exponent array, ~10x slower, and in
    IEEE arithmetic x ** 2 is x * x and x ** 1 is x for every x."""
    if type(y) is np.ndarray and y.shape == () and y.dtype.kind == "f" \
            and y.dtype == getattr(x, "dtype", None):
        if y == 2:
            return np.square
        if y == 1:
            return np.positive
    return None


def _pow_scalar_form(in_avals, out_dtype):
    """The compiled form of ``x ** y``: none for an integer result (a negative exponent
    must raise DomainError, which a compiled loop cannot); ``sqrt`` for an exponent of
    0.5 given as one value (numpy's loop takes that path when the exponent does not
    vary, and sqrt(-inf) is nan, sqrt(-0.0) -0.0, where pow gives inf and 0.0)."""
    if np.dtype(out_dtype).kind != "f":
        return None
    exponent_shape = in_avals[1][0]
    if None not in exponent_shape and math.prod(exponent_shape) == 1:
        return "(np.sqrt({0}) if {1} == HALF else {0} ** {1})"
    return "{0} ** {1}"


def _pow_impl(x, y):
    exact = _exact_power(x, y)
    if exact is not None:
        return exact(x)
    try:
        return np.power(x, y)
    except ValueError:
        raise _negative_power_error(x, y) from None


def _pow_out(x, y, out):
    exact = _exact_power(x, y)
    if exact is not None:
        return exact(x, out)
    try:
        return np.power(x, y, out)
    except ValueError:
        raise _negative_power_error(x, y) from None


def _pow_generic(be, x, y):
    try:
        return be.function("pow")(x, y)
    except ValueError:
        raise _negative_power_error(be.to_numpy(x), be.to_numpy(y)) from None


def _namespace(name):
    """The generic kernel that is the namespace's function ``name``."""
    def kernel(be, x, y):
        return be.function(name)(x, y)
    kernel.__name__ = name
    return kernel


pow_op = binary("pow", _pow_impl, _pow_vjp, vjp_needs=True, doc="Elementwise ``x ** y``.",
                out_impl=_pow_out, generic=_pow_generic)
# Two bools are typed by numpy's power loop (int8), which the wrapped kernels run.
pow_op.abstract_eval = _binary_rule("pow", pow_op.dtypes, "numeric or bool", ufunc=np.power)
declare(pow_op, onnx=("node", "Pow"), scalar_form=_pow_scalar_form, positional_out=True)
# Complex numbers in numpy's lexicographic order (compiled loops: real numbers only).
maximum_op = binary("maximum", np.maximum, _minmax_vjp, vjp_needs=True, commutative=True,
                    allowed=REAL_OR_BOOL | dtypes.COMPLEX, what="numeric or bool",
                    generic=complex_order.extremum_kernel("maximum", _namespace("maximum")),
                    doc="Elementwise maximum; ties share the gradient.")
declare(maximum_op, onnx=("node", "Max"),
        scalar_form=complex_order.real_only("({0} if ({0} > {1} or {0} != {0}) else {1})"))  # numpy: no positional out
minimum_op = binary("minimum", np.minimum, _minmax_vjp, vjp_needs=True, commutative=True,
                    allowed=REAL_OR_BOOL | dtypes.COMPLEX, what="numeric or bool",
                    generic=complex_order.extremum_kernel("minimum", _namespace("minimum")),
                    doc="Elementwise minimum; ties share the gradient.")
declare(minimum_op, onnx=("node", "Min"),
        scalar_form=complex_order.real_only("({0} if ({0} < {1} or {0} != {0}) else {1})"))  # numpy: no positional out

add = call(add_op)
sub = call(sub_op)
mul = call(mul_op)
div = call(div_op)


def pow(x, y):
    """Elementwise ``x ** y``. An integer base with a negative integer exponent is
    refused (numpy raises at run time): at the call where the exponent is known
    (a Python or numpy integer, a concrete tensor), else by the kernel when it runs."""
    if _integral(x) and _integral(y):
        value = y if type(y) is int else getattr(y, "_value", y)
        # (numpy values only: other back ends' arrays are checked by their kernel)
        if type(value) is int:
            if value < 0:
                _negative_int_power(x, y)
        elif isinstance(value, (np.ndarray, np.generic)) and np.any(np.less(value, 0)):
            _negative_int_power(x, y)
    return apply(pow_op, x, y)


def _integral(v):
    return type(v) is int or getattr(v, "dtype", None) in _INTEGRAL


_INTEGRAL = dtypes.INTS | {dtypes.bool_}


def _negative_int_power(x, y):
    raise DomainError(f"pow: integers to negative integer powers are not allowed, got "
                      f"{describe_args([x, y])}; cast the base to a float dtype first"
                      f"{at_user_line()}")


maximum = call(maximum_op)
minimum = call(minimum_op)



# ---- forward mode (see engine.op.RULE_KINDS) ------------------------------------------------
# Elementwise ops without a rule here use their VJP: an elementwise op's Jacobian
# is diagonal, so J^T t = J t. The binary ones get rules of their own, which skip
# the broadcasting that costs.
def _add_jvp(primals, tangents, out):
    tx, ty = tangents
    return ty if tx is None else (tx if ty is None else tx + ty)


def _sub_jvp(primals, tangents, out):
    tx, ty = tangents
    return neg(ty) if tx is None else (tx if ty is None else tx - ty)


def _mul_jvp(primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    total = None if tx is None else tx * y
    return total if ty is None else (x * ty if total is None else total + x * ty)


def _div_jvp(primals, tangents, out):
    (_, y), (tx, ty) = primals, tangents
    if ty is None:
        return tx / y
    dy = ty * out
    return neg(dy) / y if tx is None else (tx - dy) / y


def _pow_jvp(primals, tangents, out):
    (x, y), (tx, ty) = primals, tangents
    total = None if tx is None else tx * _pow_dx(x, y)
    if ty is not None:
        term = ty * (out * _pow_log(x, y))
        total = term if total is None else total + term
    return total


declare(neg_op, jvp=lambda primals, tangents, out: neg(tangents[0]))
declare(add_op, jvp=_add_jvp)
declare(sub_op, jvp=_sub_jvp)
declare(mul_op, jvp=_mul_jvp)
declare(div_op, jvp=_div_jvp)
declare(pow_op, jvp=_pow_jvp)


# numpy's and the standard's names for the arithmetic above (the engine's short names
# came first); the public names below are the ones numpy and the standard share.
_also_named(sub, numpy="subtract", array_api="subtract")
_also_named(mul, numpy="multiply", array_api="multiply")
_also_named(div, numpy=("divide", "true_divide"), array_api="divide")
_also_named(neg, numpy="negative", array_api="negative")
_also_named(abs, numpy="absolute")
_also_named(pow, numpy="power")   # (float_power, in float64, is en.float_power)
subtract = sub
multiply = mul
divide = true_divide = div
negative = neg
absolute = abs
