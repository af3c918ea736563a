"""numpy's numerical calculus and special functions as composites: ``gradient``,
``ediff1d``, ``unwrap``, ``trapezoid``, ``interp``, ``sinc`` and ``i0``. They are made
of slicing, arithmetic, ``cumsum`` and ``searchsorted``, so they differentiate and
trace like their parts.

Example:
    >>> import engine as en
    >>> en.gradient(en.tensor([1.0, 4.0, 9.0, 16.0])).tolist()
    [3.0, 4.0, 6.0, 7.0]
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from . import (compare, creation, cumulative, elementwise, join, math_binary, math_unary,
               reduce, shape_ops, sorting)
from ._args import at_user_line
from .cumulative import along, as_tensor, user_axes, user_axis

__all__ = ["gradient", "ediff1d", "unwrap", "trapezoid", "interp", "sinc", "i0"]


def _float(x):
    return x if x.dtype in dtypes.INEXACT else creation.cast(x, dtypes.float64)


# ---- gradient ------------------------------------------------------------------------------
def _spacings(varargs, f, axes):
    n = len(axes)
    if not varargs:
        return [1.0] * n
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0 and not hasattr(varargs[0], "ndim"):
        return [float(varargs[0])] * n
    if len(varargs) == 1 and getattr(varargs[0], "ndim", 1) == 0:
        return [as_tensor(varargs[0])] * n
    if len(varargs) != n:
        raise ShapeError(f"gradient: {len(varargs)} spacings given for {n} axes; pass one, "
                         f"or one per axis{at_user_line()}")
    out = []
    for d, ax in zip(varargs, axes):
        if isinstance(d, (int, float)):
            out.append(float(d))
            continue
        d = as_tensor(d)
        if d.ndim == 0:
            out.append(d)
        elif d.ndim != 1 or d.shape[0] != f.shape[ax]:
            raise ShapeError(f"gradient: the coordinates along axis {ax} must be 1-D of "
                             f"length {f.shape[ax]}, got shape {tuple(d.shape)}"
                             f"{at_user_line()}")
        else:
            out.append(_float(d))
    return out


def _along_shape(v, axis, ndim):
    shape = [1] * ndim
    shape[axis] = -1
    return shape_ops.reshape(v, tuple(shape))


def _gradient_1(f, axis, h, edge_order):
    n = f.shape[axis]
    if n < edge_order + 1:
        raise ShapeError(f"gradient: the shape of the array along axis {axis} ({n}) must be at "
                         f"least edge_order + 1 ({edge_order + 1}){at_user_line()}")

    def s(start, stop=None):
        return along(f, axis, slice(start, stop))

    nd = f.ndim
    if isinstance(h, float) or getattr(h, "ndim", 1) == 0:
        interior = (s(2) - s(None, -2)) / (2.0 * h)
        if edge_order == 1:
            first = (s(1, 2) - s(0, 1)) / h
            last = (s(-1) - s(-2, -1)) / h
        else:
            first = (-1.5 * s(0, 1) + 2.0 * s(1, 2) - 0.5 * s(2, 3)) / h
            last = (0.5 * s(-3, -2) - 2.0 * s(-2, -1) + 1.5 * s(-1)) / h
        return join.concat([first, interior, last], axis=axis)
    dx = cumulative.diff(h)
    dx1, dx2 = _along_shape(dx[:-1], axis, nd), _along_shape(dx[1:], axis, nd)
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    interior = a * s(None, -2) + b * s(1, -1) + c * s(2)
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / dx[0]
        last = (s(-1) - s(-2, -1)) / dx[-1]
    else:
        d1, d2 = dx[0], dx[1]
        first = (-(2.0 * d1 + d2) / (d1 * (d1 + d2)) * s(0, 1) + (d1 + d2) / (d1 * d2) * s(1, 2)
                 - d1 / (d2 * (d1 + d2)) * s(2, 3))
        d1, d2 = dx[-2], dx[-1]
        last = (d2 / (d1 * (d1 + d2)) * s(-3, -2) - (d2 + d1) / (d1 * d2) * s(-2, -1)
                + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * s(-1))
    return join.concat([first, interior, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=1):
    """The gradient of ``f`` by second-order central differences inside and one-sided
    differences (first or second order, ``edge_order``) at the ends, like
    ``np.gradient``: one tensor per axis (a tuple; one tensor for one axis). The
    spacing is 1, one number for all axes, or per axis a number or the coordinates.

    Example:
        >>> import engine as en
        >>> en.gradient(en.tensor([0.0, 1.0, 4.0]), en.tensor([0.0, 1.0, 3.0])).tolist()
        [1.0, 1.1666666666666665, 1.5]
    """
    f = _float(as_tensor(f))
    if edge_order not in (1, 2):
        raise ShapeError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}"
                         f"{at_user_line()}")
    axes = user_axes(axis, f.ndim, "gradient")
    if f.ndim == 0:
        raise ShapeError(f"gradient: a 0-d input has no axis to differentiate along"
                         f"{at_user_line()}")
    hs = _spacings(varargs, f, axes)
    # numpy writes every derivative into an array of f's dtype
    out = tuple(creation.cast(_gradient_1(f, ax, h, edge_order), f.dtype)
                for ax, h in zip(axes, hs))
    return out[0] if len(out) == 1 else out


# ---- differences and integrals ---------------------------------------------------------------
def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the flattened ``ary``, with ``to_begin`` and ``to_end``
    (flattened too) around them, like ``np.ediff1d``; the result keeps ``ary``'s dtype.

    Example:
        >>> import engine as en
        >>> en.ediff1d(en.tensor([1, 2, 4, 7]), to_begin=0).tolist()
        [0, 1, 2, 3]
    """
    x = shape_ops.reshape(as_tensor(ary), (-1,))
    parts = [x[1:] - x[:-1]]
    for extra, front in ((to_begin, True), (to_end, False)):
        if extra is None:
            continue
        extra = as_tensor(extra)
        if not np.can_cast(np.dtype(extra.dtype), np.dtype(x.dtype), "same_kind"):
            raise DTypeError(f"ediff1d: dtype of to_{'begin' if front else 'end'} "
                             f"({extra.dtype}) must be compatible with the input's "
                             f"({x.dtype}){at_user_line()}")
        extra = creation.cast(shape_ops.reshape(extra, (-1,)), x.dtype)
        parts.insert(0, extra) if front else parts.append(extra)
    return join.concat(parts, axis=0) if len(parts) > 1 else parts[0]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule (``np.trapezoid``),
    at the points ``x`` (1-D along the axis, or ``y``'s shape) or spaced by ``dx``.

    Example:
        >>> import engine as en
        >>> float(en.trapezoid(en.tensor([1.0, 2.0, 3.0]), dx=0.5))
        2.0
    """
    y = as_tensor(y)
    axis = user_axis(axis, y.ndim, "trapezoid")
    if x is None:
        d = dx
    else:
        x = as_tensor(x)
        d = cumulative.diff(x, axis=-1 if x.ndim == 1 else axis)
        if x.ndim == 1:
            d = _along_shape(d, axis, y.ndim)
    total = (along(y, axis, slice(1, None)) + along(y, axis, slice(None, -1))) / 2.0
    return reduce.sum(d * total, axis=axis)


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (half the period by default) between
    neighbours along ``axis`` taken back by whole periods, like ``np.unwrap``.

    Example:
        >>> import engine as en
        >>> [round(v, 4) for v in en.unwrap(en.tensor([0.0, 3.0, 6.5])).tolist()]
        [0.0, 3.0, 0.2168]
    """
    p = as_tensor(p)
    axis = user_axis(axis, p.ndim, "unwrap")
    dd = cumulative.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(np.dtype(dd.dtype), period)
    if dtype.kind in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = math_binary.mod(dd - low, period) + low
    if ambiguous:
        ddmod = compare.where(compare.logical_and(compare.equal(ddmod, low),
                                                  compare.greater(dd, 0)), high, ddmod)
    correct = compare.where(compare.less(elementwise.abs(dd), discont), 0, ddmod - dd)
    head = creation.cast(along(p, axis, slice(0, 1)), dtype)
    rest = creation.cast(along(p, axis, slice(1, None)), dtype) + \
        cumulative.cumsum(creation.cast(correct, dtype), axis=axis)
    return join.concat([head, rest], axis=axis)


# ---- interp --------------------------------------------------------------------------------
def interp(x, xp, fp, left=None, right=None, period=None):
    """The piecewise-linear interpolant through ``(xp, fp)`` at ``x``, like
    ``np.interp``: ``xp`` increasing (or any order with ``period``), ``left`` /
    ``right`` (``fp[0]`` / ``fp[-1]`` by default) outside. Differentiable in ``x``
    (the slope) and in ``fp``.

    Example:
        >>> import engine as en
        >>> en.interp(en.tensor([0.5, 2.5, 9.0]), en.tensor([0.0, 1.0, 3.0]),
        ...           en.tensor([0.0, 10.0, 30.0])).tolist()
        [5.0, 25.0, 30.0]
    """
    x, xp, fp = as_tensor(x), as_tensor(xp), as_tensor(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape[0] != fp.shape[0]:
        raise ShapeError(f"interp: xp and fp must be 1-D of the same length, got shapes "
                         f"{tuple(xp.shape)} and {tuple(fp.shape)}{at_user_line()}")
    if xp.shape[0] == 0:
        raise ShapeError(f"interp: xp and fp are empty{at_user_line()}")
    x, xp = _float(x), _float(xp)
    if xp.dtype in dtypes.COMPLEX or x.dtype in dtypes.COMPLEX:
        raise DTypeError(f"interp: x and xp must be real{at_user_line()}")
    fp = fp if fp.dtype in dtypes.COMPLEX else creation.cast(fp, dtypes.float64)
    x, xp = creation.cast(x, dtypes.float64), creation.cast(xp, dtypes.float64)
    if period is not None:
        if period == 0:
            raise ShapeError(f"interp: period must be a non-zero value{at_user_line()}")
        period = abs(period)
        left = right = None
        x = math_binary.mod(x, period)
        xp = math_binary.mod(xp, period)
        order = sorting.argsort(xp)
        xp, fp = xp[order], fp[order]
        xp = join.concat([xp[-1:] - period, xp, xp[0:1] + period], axis=0)
        fp = join.concat([fp[-1:], fp, fp[0:1]], axis=0)
    n = xp.shape[0]
    flat = shape_ops.reshape(x, (-1,))
    if n == 1:
        inside = creation.cast(fp[0], fp.dtype) + creation.zeros_like(flat) * 0
    else:
        j = elementwise.minimum(elementwise.maximum(
            sorting.searchsorted(xp, flat, side="right") - 1, 0), n - 2)
        x0, x1, f0, f1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
        slope = (f1 - f0) / (x1 - x0)
        inside = slope * (flat - x0) + f0
        # numpy's fallbacks: from the right end where that is NaN, the value at a knot
        inside = compare.where(math_unary.isnan(inside), slope * (flat - x1) + f1, inside)
        inside = compare.where(compare.equal(flat, x0), f0, inside)
    last = xp[n - 1]
    inside = compare.where(compare.equal(flat, last), fp[n - 1], inside)
    lo = fp[0] if left is None else left
    hi = fp[n - 1] if right is None else right
    out = compare.where(compare.less(flat, xp[0]), lo,
                        compare.where(compare.greater(flat, last), hi, inside))
    return shape_ops.reshape(out, tuple(x.shape))


# ---- special functions ---------------------------------------------------------------------
def sinc(x):
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0 (``np.sinc``).

    Example:
        >>> import engine as en
        >>> en.sinc(en.tensor([0.0, 0.5])).tolist()
        [1.0, 0.6366197723675814]
    """
    x = _float(as_tensor(x))
    y = np.pi * compare.where(compare.equal(x, 0), 1.0e-20, x)
    return elementwise.sin(y) / y


# Cephes' Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and of exp(-x) sqrt(x) I0(x)
# on (8, inf), the ones numpy's i0 uses.
_I0A = [-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
        1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
        -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
        9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
        -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
        1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
        -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
        1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
        -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
        1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1]
_I0B = [-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
        3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
        1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
        -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
        7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
        -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
        3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
        2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
        8.04490411014108831608e-1]


def _chbevl(x, coefficients):
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def i0(x):
    """The modified Bessel function of the first kind, order 0 (``np.i0``, by the same
    Chebyshev expansions); real input only, integers as float64.

    Example:
        >>> import engine as en
        >>> round(float(en.i0(en.tensor(1.0))), 12)
        1.266065877752
    """
    x = as_tensor(x)
    if x.dtype in dtypes.COMPLEX:
        raise DTypeError(f"i0: not supported for complex values, got {x.dtype}"
                         f"{at_user_line()}")
    x = elementwise.abs(_float(x))
    small = compare.less_equal(x, 8.0)
    # Each branch sees only arguments in its own range, so the one not taken stays finite
    # (and so does its zero cotangent).
    xs = compare.where(small, x, 0.0)
    xl = compare.where(small, 9.0, x)
    near = elementwise.exp(xs) * _chbevl(xs / 2.0 - 2, _I0A)
    far = elementwise.exp(xl) * _chbevl(32.0 / xl - 2.0, _I0B) / elementwise.sqrt(xl)
    return compare.where(small, near, far)

