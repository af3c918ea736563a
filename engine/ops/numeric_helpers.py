"""numpy's small numeric helpers as composites of registered ops: ``fix``,
``geomspace``, ``packbits``, ``unpackbits``, ``iscomplex``, ``isreal``, ``isposinf``,
``isneginf`` and ``real_if_close``.

All but ``real_if_close`` have static shapes and dtypes, so they trace;
``real_if_close`` chooses its dtype from the values (numpy's contract), so it needs
them (eagerly). ``fix`` and ``geomspace`` differentiate.

Example:
    >>> import engine as en
    >>> en.fix(en.tensor([-2.5, 2.5])).tolist()
    [-2.0, 2.0]
    >>> en.packbits(en.tensor([1, 0, 1])).tolist()
    [160]
"""
import operator

import numpy as np

from .. import dtypes
from ..errors import (DTypeError, DomainError, InvalidArgumentError, TracingError,
                      UnsupportedError)
from ..lifting import TensorLike
from ..modes import current_mode
from . import compare, elementwise, join, math_unary, shape_ops
from ._args import at_user_line
from .complex_parts import imag, real
from .creation import cast
from .cumulative import as_tensor, user_axis
from .concrete import constant_like
from .manipulation import moveaxis
from .math_unary import trunc
from .misc import identity
from .numpy_names import all as _all
from .rearranging import full_like
from .reduce import sum as _sum

__all__ = ["fix", "geomspace", "packbits", "unpackbits", "iscomplex", "isreal", "isposinf",
           "isneginf", "real_if_close"]


def fix(x, out=None):
    """``x`` rounded towards zero, like ``np.fix`` (integers and bools unchanged).

    Example:
        >>> import engine as en
        >>> en.fix(en.tensor([2.1, 2.9, -2.1, -2.9])).tolist()
        [2.0, 2.0, -2.0, -2.0]
    """
    if out is not None:
        raise UnsupportedError(f"fix: out= is not supported; use the returned tensor"
                               f"{at_user_line()}")
    x = as_tensor(x)
    return identity(x) if x.dtype.kind in "biu" else trunc(x)


# ---- geomspace ---------------------------------------------------------------------------------
def _check_no_zero(start, stop):
    for v in (start, stop):
        if isinstance(v, TensorLike) and not current_mode().is_concrete:
            continue      # unknown while tracing: a zero gives inf/nan, as numpy computes it
        if np.any(np.asarray(v.numpy() if isinstance(v, TensorLike) else v) == 0):
            raise DomainError(f"geomspace: a geometric sequence cannot include zero"
                              f"{at_user_line()}")


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` numbers from ``start`` to ``stop`` spaced evenly on a log scale (a
    geometric progression), like ``np.geomspace``: negative (both) and complex ends
    work, the ends are exact, array ends give one sequence per element along ``axis``.

    Example:
        >>> import engine as en
        >>> en.geomspace(1, 1000, num=4).tolist()
        [1.0, 10.0, 100.0, 1000.0]
    """
    num = operator.index(num)
    if num < 0:
        raise InvalidArgumentError(f"geomspace: num must be non-negative, got {num}"
                                   f"{at_user_line()}")
    _check_no_zero(start, stop)
    spec = [a.dtype if isinstance(a, TensorLike) else np.asarray(a) for a in (start, stop)]
    dt = np.result_type(*spec, float(num), np.zeros((), dtype))
    dtype = dt if dtype is None else dtypes.as_dtype(dtype)
    start, stop = cast(as_tensor(start), dt), cast(as_tensor(stop), dt)
    start, stop = shape_ops.broadcast_to(start, _shape(start, stop)), \
        shape_ops.broadcast_to(stop, _shape(start, stop))
    sign = elementwise.sign(start)      # rotate start to the positive reals, then back
    start, stop = start / sign, stop / sign
    log_start, log_stop = math_unary.log10(start), math_unary.log10(stop)
    div = (num - 1) if endpoint else num
    steps = constant_like(start, np.arange(num, dtype=dt).reshape(
        (-1,) + (1,) * start.ndim))
    y = steps * ((log_stop - log_start) / div) + log_start if div > 0 else \
        steps * (log_stop - log_start) + log_start
    parts = [shape_ops.reshape(start, (1,) + tuple(start.shape)),
             elementwise.pow(constant_like(start, np.asarray(10.0, dtype=dt)),
                             y)[1:num - 1 if endpoint else num]]
    if endpoint and num > 1:
        parts.append(shape_ops.reshape(stop, (1,) + tuple(stop.shape)))
    result = join.concat(parts, axis=0)[:num] * sign
    if axis != 0:
        result = moveaxis(result, 0, user_axis(axis, result.ndim, "geomspace"))
    return cast(result, dtype)


def _shape(start, stop):
    return tuple(np.broadcast_shapes(tuple(start.shape), tuple(stop.shape)))


# ---- bits --------------------------------------------------------------------------------------
def _bitorder(name, bitorder):
    if bitorder not in ("big", "little"):
        raise InvalidArgumentError(f"{name}: bitorder must be 'big' or 'little', got "
                                   f"{bitorder!r}{at_user_line()}")
    return 2 ** np.arange(8)[::-1 if bitorder == "big" else 1]


def _along_last(name, a, axis):
    if axis is None:
        return shape_ops.reshape(a, (-1,)), 0
    axis = user_axis(axis, a.ndim, name)
    return moveaxis(a, axis, -1), axis


def packbits(a, axis=None, bitorder="big"):
    """The non-zero-ness of ``a``'s elements packed into uint8 bytes, 8 along ``axis`` to
    a byte (the flattened array when None; the last byte padded with zero bits), like
    ``np.packbits``.

    Example:
        >>> import engine as en
        >>> en.packbits(en.tensor([[1, 0, 1], [0, 1, 0]]), axis=1, bitorder="little").tolist()
        [[5], [2]]
    """
    a = as_tensor(a)
    if a.dtype.kind not in "biu":
        raise DTypeError(f"packbits: needs integers or bools, got {a.dtype}{at_user_line()}")
    weights = _bitorder("packbits", bitorder)
    x, axis = _along_last("packbits", a, axis)
    bits = cast(compare.not_equal(x, 0), dtypes.uint8)
    n = x.shape[-1]
    pad = -n % 8
    if pad:
        bits = join.concat([bits, cast(shape_ops.broadcast_to(
            constant_like(a, np.zeros((), np.uint8)), tuple(x.shape[:-1]) + (pad,)),
            dtypes.uint8)], axis=-1)
    bits = shape_ops.reshape(bits, tuple(x.shape[:-1]) + ((n + pad) // 8, 8))
    packed = _sum(bits * constant_like(a, weights.astype(np.uint8)), axis=-1)
    packed = cast(packed, dtypes.uint8)
    return packed if axis is None else moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the uint8 ``a`` as a uint8 array of 0s and 1s, 8 along ``axis`` per
    byte (the flattened array when None), like ``np.unpackbits``; ``count`` keeps that
    many bits (padding with zeros), a negative one drops that many from the end.

    Example:
        >>> import engine as en
        >>> en.unpackbits(en.tensor([5], dtype="uint8"), bitorder="little", count=4).tolist()
        [1, 0, 1, 0]
    """
    a = as_tensor(a)
    if a.dtype != dtypes.uint8:
        raise DTypeError(f"unpackbits: needs uint8 input, got {a.dtype}{at_user_line()}")
    shifts = constant_like(a, np.log2(_bitorder("unpackbits", bitorder))
                                    .astype(np.uint8))
    x, axis = _along_last("unpackbits", a, axis)
    bits = (shape_ops.reshape(x, tuple(x.shape) + (1,)) >> shifts) & \
        constant_like(a, np.ones((), np.uint8))
    bits = shape_ops.reshape(bits, tuple(x.shape[:-1]) + (x.shape[-1] * 8,))
    if count is not None:
        count = operator.index(count)
        total = x.shape[-1] * 8
        keep = count if count >= 0 else max(total + count, 0)
        bits = bits[..., :keep]
        if keep > total:
            bits = join.concat([bits, shape_ops.broadcast_to(
                constant_like(a, np.zeros((), np.uint8)),
                tuple(x.shape[:-1]) + (keep - total,))], axis=-1)
    return bits if axis is None else moveaxis(bits, -1, axis)


# ---- complex and infinity tests ----------------------------------------------------------------
def iscomplex(x):
    """Whether each element has a non-zero imaginary part (all False for a real dtype),
    like ``np.iscomplex``.

    Example:
        >>> import engine as en
        >>> en.iscomplex(en.tensor([1 + 1j, 1 + 0j])).tolist()
        [True, False]
    """
    x = as_tensor(x)
    if x.dtype.kind == "c":
        return compare.not_equal(imag(x), 0)
    return full_like(x, False, dtype=dtypes.bool_)


def isreal(x):
    """Whether each element has a zero imaginary part (all True for a real dtype), like
    ``np.isreal``.

    Example:
        >>> import engine as en
        >>> en.isreal(en.tensor([1 + 1j, 1 + 0j])).tolist()
        [False, True]
    """
    return compare.logical_not(iscomplex(x))


def _real_only(name, x):
    x = as_tensor(x)
    if x.dtype.kind == "c":
        raise DTypeError(f"{name}: not defined for complex values (which infinity would it "
                         f"be?); test en.real(x) and en.imag(x){at_user_line()}")
    return x


def isposinf(x, out=None):
    """Whether each element is positive infinity, like ``np.isposinf``.

    Example:
        >>> import engine as en
        >>> en.isposinf(en.tensor([float("inf"), -float("inf"), 1.0])).tolist()
        [True, False, False]
    """
    x = _real_only("isposinf", x)
    return compare.logical_and(math_unary.isinf(x), compare.logical_not(math_unary.signbit(x)))


def isneginf(x, out=None):
    """Whether each element is negative infinity, like ``np.isneginf``.

    Example:
        >>> import engine as en
        >>> en.isneginf(en.tensor([float("inf"), -float("inf"), 1.0])).tolist()
        [False, True, False]
    """
    x = _real_only("isneginf", x)
    return compare.logical_and(math_unary.isinf(x), math_unary.signbit(x))


def real_if_close(a, tol=100):
    """``a``'s real part when ``a`` is complex with every imaginary part within ``tol``
    machine epsilons of zero (``tol`` itself when it is at most 1), else ``a``, like
    ``np.real_if_close``. The dtype depends on the values, so they must exist.

    Example:
        >>> import engine as en
        >>> en.real_if_close(en.tensor([2.1 + 4e-14j, 5.2 + 3e-15j]), tol=1000).dtype
        dtype('float64')
    """
    a = as_tensor(a)
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = np.finfo(a.dtype).eps * tol
    close = _all(compare.less(elementwise.abs(imag(a)), tol))
    if not current_mode().is_concrete:
        raise TracingError(f"real_if_close: its dtype depends on the values of "
                           f"{a._describe()}, which are not known while tracing; use "
                           f"en.real(x) or call it eagerly{at_user_line()}")
    return real(a) if bool(close) else a
