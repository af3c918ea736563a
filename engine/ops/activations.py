"""Activation functions as elementwise ops: ``silu``, ``gelu``, ``elu``, ``leaky_relu``
and ``softplus`` (PyTorch's definitions and parameters).

Each is one registry entry (one kernel pass eagerly, one fusable member in a
graph) with a VJP written in engine ops, so gradients of any order work. The
parameters (``negative_slope``, ``alpha``, ``beta``, ``threshold``,
``approximate``) are op params: the numpy fusion passes them to the kernel;
the numba lowering takes only the parameter-free ``silu``.

Example:
    >>> import engine as en
    >>> en.leaky_relu(en.tensor([-2.0, 3.0]), 0.1).numpy()
    array([-0.2,  3. ])
    >>> round(float(en.silu(en.tensor(1.0))), 6)
    0.731059
"""
import math

import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from ._args import at_user_line
from . import compare, creation, elementwise as ew, fp_errors, math_unary

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
# The exact form computes with the erf op (engine.ops.math_unary).
_GELU_FORMS = ("tanh", "none")


def _float_rule(name):
    def abstract_eval(x, **params):
        if x[1] not in dtypes.FLOATS:
            raise DTypeError(f"{name}: expected a floating-point input, got {describe_inputs([x])}")
        return x
    return abstract_eval


def _define(name, impl, out_impl, vjp, generic, doc):
    """Register a one-input float elementwise op with a kernel writing into ``out``.

    ``impl`` spells out the params as keyword-only arguments: graph loading reads
    which params an op takes from its kernel's signature."""
    return register(Op(name, impl, _float_rule(name), vjp, elementwise=True, n_inputs=1,
                       dtypes=dtypes.FLOATS, out_impl=out_impl, generic=generic, doc=doc))


def _unaliased(x, out):
    """``x``, or a copy when ``out`` is its buffer (memory planning may hand a kernel
    the buffer of an input that dies there; these kernels read ``x`` after writing)."""
    return x.copy() if np.may_share_memory(x, out) else x


def _number(name, what, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{name}: {what} must be a real number, got {value!r}{at_user_line()}")
    return float(value)


# ---- silu ---------------------------------------------------------------------------------
def _silu_out(x, out):
    x = _unaliased(x, out)
    # x / (1 + exp(-x)): for x below -88 (float32) exp overflows to inf and the result
    # is -0, the limit; the overflow is expected.
    fp_errors.exp_of_negated(x, out)
    np.add(out, 1, out=out)
    return np.divide(x, out, out=out)


def _silu_vjp(g, out, x):
    # d/dx x s(x) = s + x s (1 - s) = s (1 + x (1 - s))
    s = ew.sigmoid(x)
    return (g * (s * (1.0 + x * (1.0 - s))),)


def _silu_generic(be, x):
    e = be.xp.exp(-be.xp.abs(x))
    return x * be.xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


silu_op = register(Op("silu", lambda x: _silu_out(x, np.empty_like(x)), _float_rule("silu"),
                      _silu_vjp, elementwise=True, n_inputs=1, dtypes=dtypes.FLOATS,
                      out_impl=_silu_out, generic=_silu_generic,
                      doc="SiLU (swish): ``x * sigmoid(x)``."))
declare(silu_op, onnx=("expr", "Mul(x0, Sigmoid(x0))"), scalar_form="{0} / (ONE + np.exp(-{0}))")


# ---- leaky_relu ---------------------------------------------------------------------------
def _leaky_out(x, out, *, negative_slope):
    x = _unaliased(x, out)
    np.multiply(x, x.dtype.type(negative_slope), out=out)
    np.copyto(out, x, where=x > 0)
    return out


def _leaky_vjp(g, out, x, *, negative_slope):
    return (compare.where(compare.greater(x, 0.0), g, g * negative_slope),)


def _leaky_generic(be, x, *, negative_slope):
    return be.xp.where(x > 0, x, x * negative_slope)


def _leaky_impl(x, *, negative_slope):
    return _leaky_out(x, np.empty_like(x), negative_slope=negative_slope)


leaky_relu_op = _define("leaky_relu", _leaky_impl, _leaky_out, _leaky_vjp, _leaky_generic,
                        "``x`` where positive, ``negative_slope * x`` elsewhere.")
declare(leaky_relu_op, onnx=("attrs_node", "LeakyRelu", (("alpha", "negative_slope"),)),
        scalar_form=None)


# ---- elu ----------------------------------------------------------------------------------
def _elu_out(x, out, *, alpha):
    x = _unaliased(x, out)
    # alpha * (exp(x) - 1) below 0; exp is taken of min(x, 0) so large x never overflows.
    np.minimum(x, 0, out=out)
    np.expm1(out, out=out)
    np.multiply(out, x.dtype.type(alpha), out=out)
    np.copyto(out, x, where=x > 0)
    return out


def _elu_vjp(g, out, x, *, alpha):
    neg = ew.exp(compare.where(compare.greater(x, 0.0), creation.zeros_like(x), x)) * alpha
    return (compare.where(compare.greater(x, 0.0), g, g * neg),)


def _elu_generic(be, x, *, alpha):
    xp = be.xp
    return xp.where(x > 0, x, alpha * xp.expm1(xp.minimum(x, xp.zeros_like(x))))


def _elu_impl(x, *, alpha):
    return _elu_out(x, np.empty_like(x), alpha=alpha)


elu_op = _define("elu", _elu_impl, _elu_out, _elu_vjp, _elu_generic,
                 "``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.")
declare(elu_op, onnx=("attrs_node", "Elu", (("alpha", "alpha"),)), scalar_form=None)


# ---- softplus -----------------------------------------------------------------------------
def _softplus_out(x, out, *, beta, threshold):
    x = _unaliased(x, out)
    # log(1 + exp(beta x)) / beta, computed as logaddexp(0, beta x) (never overflows);
    # linear above the threshold, as PyTorch.
    t = x.dtype.type
    np.multiply(x, t(beta), out=out)
    linear = out > threshold
    np.logaddexp(t(0), out, out=out)
    np.divide(out, t(beta), out=out)
    np.copyto(out, x, where=linear)
    return out


def _softplus_vjp(g, out, x, *, beta, threshold):
    bx = x * beta
    return (compare.where(compare.greater(bx, threshold), g, g * ew.sigmoid(bx)),)


def _softplus_generic(be, x, *, beta, threshold):
    xp = be.xp
    bx = x * beta
    smooth = (xp.maximum(bx, xp.zeros_like(bx)) + xp.log1p(xp.exp(-xp.abs(bx)))) / beta
    return xp.where(bx > threshold, x, smooth)


def _softplus_impl(x, *, beta, threshold):
    return _softplus_out(x, np.empty_like(x), beta=beta, threshold=threshold)


softplus_op = _define("softplus", _softplus_impl, _softplus_out, _softplus_vjp,
                      _softplus_generic,
                      "``log(1 + exp(beta x)) / beta``, ``x`` where ``beta x > threshold``.")
declare(softplus_op, onnx=("Softplus",), scalar_form=None)


# ---- gelu ---------------------------------------------------------------------------------
def _gelu_out(x, out, *, approximate):
    x = _unaliased(x, out)
    t = x.dtype.type
    if approximate == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        np.multiply(x, x, out=out)
        np.multiply(out, t(_GELU_CUBIC), out=out)
        np.add(out, 1, out=out)
        np.multiply(out, x, out=out)
        np.multiply(out, t(_SQRT_2_OVER_PI), out=out)
        np.tanh(out, out=out)
    else:
        np.multiply(x, t(1 / math.sqrt(2.0)), out=out)
        _erf_into(out)
    np.add(out, 1, out=out)
    np.multiply(out, x, out=out)
    return np.multiply(out, t(0.5), out=out)


def _erf_into(out):
    out[...] = math_unary.erf_op.impl(out)   # the erf op's kernel


def _gelu_vjp(g, out, x, *, approximate):
    if approximate == "tanh":
        x2 = x * x
        th = ew.tanh((x + x2 * x * _GELU_CUBIC) * _SQRT_2_OVER_PI)
        inner = (1.0 + x2 * (3.0 * _GELU_CUBIC)) * _SQRT_2_OVER_PI
        return (g * ((1.0 + th) * 0.5 + x * 0.5 * (1.0 - th * th) * inner),)
    # d/dx x Phi(x) = Phi(x) + x phi(x)
    phi = ew.exp(x * x * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
    cdf = (math_unary.erf(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5
    return (g * (cdf + x * phi),)


def _gelu_generic(be, x, *, approximate):
    xp = be.xp
    if approximate == "tanh":
        return 0.5 * x * (1 + xp.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x)))
    # The standard has no erf: the erf op's kernel for this back end.
    return 0.5 * x * (1 + math_unary.erf_op.kernels[be.name](x / math.sqrt(2.0)))


def _gelu_impl(x, *, approximate):
    return _gelu_out(x, np.empty_like(x), approximate=approximate)


# The scalar forms compute in the kernel's order (the same roundings in float32).
_GELU_SCALAR_FORMS = {
    "none": f"(((math.erf({{0}} * {1 / math.sqrt(2.0)!r}) + ONE) * {{0}}) * HALF)",
    "tanh": f"(((np.tanh(((({{0}} * {{0}}) * {_GELU_CUBIC!r} + ONE) * {{0}}) * "
            f"{_SQRT_2_OVER_PI!r}) + ONE) * {{0}}) * HALF)"}


def _gelu_scalar_form(in_avals, out_dtype, params=None):
    # The form depends on ``approximate``: a consumer without the params gets none
    # (engine/scalar_forms.py).
    approximate = (params or {}).get("approximate")
    return _GELU_SCALAR_FORMS.get(approximate) if isinstance(approximate, str) else None


gelu_op = _define("gelu", _gelu_impl, _gelu_out, _gelu_vjp, _gelu_generic,
                  "GELU ``x * Phi(x)``; ``approximate='none'`` is exact (erf), "
                  "``approximate='tanh'`` the tanh form.")
declare(gelu_op, onnx=("Gelu",), scalar_form=_gelu_scalar_form)


# ---- public functions ------------------------------------------------------------------------
def silu(x):
    """SiLU (swish) ``x * sigmoid(x)``.

    Example:
        >>> import engine as en
        >>> round(float(en.silu(en.tensor(-1.0))), 6)
        -0.268941
    """
    return apply(silu_op, x)


def leaky_relu(x, negative_slope=0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere (PyTorch's ``leaky_relu``).

    Example:
        >>> import engine as en
        >>> en.leaky_relu(en.tensor([-1.0, 1.0])).numpy()
        array([-0.01,  1.  ])
    """
    return apply(leaky_relu_op, x,
                 negative_slope=_number("leaky_relu", "negative_slope", negative_slope))


def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    Example:
        >>> import engine as en
        >>> round(float(en.elu(en.tensor(-1.0))), 6)
        -0.632121
    """
    return apply(elu_op, x, alpha=_number("elu", "alpha", alpha))


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``
    (PyTorch's ``softplus``); never overflows.

    Example:
        >>> import engine as en
        >>> round(float(en.softplus(en.tensor(0.0))), 6)
        0.693147
    """
    beta = _number("softplus", "beta", beta)
    if beta == 0.0:
        raise DomainError(f"softplus: beta must not be 0{at_user_line()}")
    return apply(softplus_op, x, beta=beta, threshold=_number("softplus", "threshold", threshold))


def gelu(x, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)`` (Hendrycks and Gimpel), with ``Phi`` the
    standard normal CDF, computed exactly with erf by default as in PyTorch;
    ``approximate="tanh"`` gives the tanh form
    ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x**3)))`` (within 5e-4 of it).

    Example:
        >>> import engine as en
        >>> round(float(en.gelu(en.tensor(1.0))), 6)
        0.841345
        >>> round(float(en.gelu(en.tensor(1.0), approximate="tanh")), 6)
        0.841192
    """
    if approximate not in _GELU_FORMS:
        needs = "" if "none" in _GELU_FORMS else " (the exact form 'none' needs an erf op)"
        raise DomainError(f"gelu: approximate must be one of {_GELU_FORMS}{needs}, got "
                          f"{approximate!r}{at_user_line()}")
    return apply(gelu_op, x, approximate=approximate)


__all__ = ["silu", "silu_op", "leaky_relu", "leaky_relu_op", "elu", "elu_op", "softplus",
           "softplus_op", "gelu", "gelu_op"]
