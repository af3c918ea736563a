"""Ops that make new arrays (zeros, ones, full, arange, eye, *_like) and ``cast``."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from .. import default_dtype, dtypes
from ..names import also_named as _also_named
from ..errors import (DTypeError, ScalarOverflowError, ShapeError, ShapeTypeError,
                      describe_inputs)
from ..modes import apply
from ..op import Op, declare, register
from ..op import lookup as _lookup
from ._args import at_user_line, int_tuple, is_one_index as _is_one_index
from ._define import call

if TYPE_CHECKING:
    from typing import Any

    from ..contracts import DTypeLike, ShapeLike
    from ..tensor import Tensor


def check_shape(name, shape):
    """A static shape as a tuple of non-negative ints, or a ShapeError naming ``name``
    (a ShapeTypeError, also a TypeError as in numpy, for a dim that is not an int)."""
    if _is_one_index(shape):      # (a 0-d integer tensor too, as numpy takes it)
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise ShapeTypeError(f"{name}: shape must be a tuple of ints, got "
                             f"{shape!r}{at_user_line()}") from None
    shape = int_tuple(name, dims, "shape")
    if any(d < 0 for d in shape):
        raise ShapeError(f"{name}: negative dimension in shape {shape}{at_user_line()}")
    return shape


def _fill_value(value, dtype):
    """``value`` as the Python number numpy would store in an array of ``dtype``."""
    return np.asarray(value).astype(dtype).item()


def _full_generic(be, *, shape, value, dtype):
    return be.xp.full(shape, _fill_value(value, dtype), dtype=be.dtype(dtype))


def _filled(name, fill):
    def impl(*, shape, dtype):
        return np.full(shape, fill, dtype=dtype)

    def generic(be, *, shape, dtype):
        return _full_generic(be, shape=shape, value=fill, dtype=dtype)

    def abstract_eval(*, shape, dtype):
        return (check_shape(name, shape), dtypes.as_dtype(dtype))
    return register(Op(name, impl, abstract_eval, None, n_inputs=0, generic=generic,
                       doc=f"A new tensor of {fill}s."))


zeros_op = _filled("zeros", 0)
declare(zeros_op, onnx=("value_at_export",))
ones_op = _filled("ones", 1)
declare(ones_op, onnx=("value_at_export",))


def _full_impl(*, shape, value, dtype):
    return np.full(shape, value, dtype=dtype)


def _full_eval(*, shape, value, dtype):
    return (check_shape("full", shape), dtypes.as_dtype(dtype))


full_op = register(Op("full", _full_impl, _full_eval, None, n_inputs=0, generic=_full_generic,
                      doc="A new tensor filled with ``value``."))
declare(full_op, onnx=("value_at_export",))


def zeros(shape: ShapeLike, dtype: DTypeLike = None) -> Tensor:
    """A tensor of zeros, float64 unless ``dtype`` or ``en.set_default_dtype`` says otherwise.
    Example: ``en.zeros((2, 3), dtype="float32")``."""
    return apply(zeros_op, shape=check_shape("zeros", shape),
                 dtype=default_dtype.data_float(dtype))


def ones(shape: ShapeLike, dtype: DTypeLike = None) -> Tensor:
    """A tensor of ones, float64 unless ``dtype`` or ``en.set_default_dtype`` says otherwise.
    Example: ``en.ones(3)``."""
    return apply(ones_op, shape=check_shape("ones", shape), dtype=default_dtype.data_float(dtype))


def full(shape: ShapeLike, value: Any, dtype: DTypeLike = None) -> Tensor:
    """A tensor filled with ``value``; the dtype follows the value unless given: a
    Python number's default dtype (a float's follows ``en.set_default_dtype``), a numpy
    scalar's or 0-d array's own (``np.full``).

    Example:
        >>> import engine as en, numpy as np
        >>> en.full(2, np.float32(1.5)).dtype
        dtype('float32')
    """
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        own = np.asarray(value)
        value = own.item()   # a plain number: op parameters are hashable
        dt = dtypes.as_dtype(dtype if dtype is not None else own.dtype)
    else:
        dt = dtypes.as_dtype(dtype) if dtype is not None else (
            default_dtype.python_data_dtype(value) or dtypes.scalar_dtype(value))
    return apply(full_op, shape=check_shape("full", shape), value=value, dtype=dt)


# ---- arange / eye ------------------------------------------------------------
def _arange_length(start, stop, step):
    # numpy's rule: ceil((stop - start) / step), never negative.
    if isinstance(start, int) and isinstance(stop, int) and isinstance(step, int):
        return len(range(start, stop, step))
    return max(int(np.ceil((stop - start) / step)), 0)


def _arange_eval(*, start, stop, step, dtype):
    if step == 0:
        raise ShapeError("arange: step must not be zero")
    for v in (start, stop, step):
        if not np.isfinite(v):
            raise ShapeError(f"arange: bounds and step must be finite, got "
                             f"start={start}, stop={stop}, step={step}")
    return ((_arange_length(start, stop, step),), dtypes.as_dtype(dtype))


def _arange_impl(*, start, stop, step, dtype):
    # Values as numpy computes them in its natural dtype, then converted.
    return np.arange(start, stop, step).astype(dtype, copy=False)


def _arange_generic(be, *, start, stop, step, dtype):
    return be.astype(be.xp.arange(start, stop, step), dtype)


arange_op = register(Op("arange", _arange_impl, _arange_eval, None, n_inputs=0,
                        generic=_arange_generic,
                        doc="Evenly spaced values in ``[start, stop)``."))
declare(arange_op, onnx=("value_at_export",))


def _number(name, value, what):
    if getattr(value, "ndim", None) == 0 and not isinstance(value, np.generic):
        value = value.item()   # a 0-d tensor or array: its number, as numpy reads it
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ShapeError(f"{name}: {what} must be a number, got {value!r}")
    return int(value) if isinstance(value, (int, np.integer)) else float(value)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: DTypeLike = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` with ``step``, like ``np.arange``.

    With one argument it counts from 0. The dtype is int64 when every
    argument is an int, else float64 (or the ``en.set_default_dtype`` dtype), unless
    ``dtype`` is given.

    Example:
        >>> import engine as en
        >>> en.arange(5).numpy()
        array([0, 1, 2, 3, 4])
        >>> en.arange(0.0, 1.0, 0.25).numpy()
        array([0.  , 0.25, 0.5 , 0.75])
    """
    if stop is None:
        start, stop = 0, start
    start = _number("arange", start, "start")
    stop = _number("arange", stop, "stop")
    step = _number("arange", step, "step")
    if dtype is None:
        all_int = all(isinstance(v, int) for v in (start, stop, step))
        dt = dtypes.int64 if all_int else default_dtype.data_float()
    else:
        dt = dtypes.as_dtype(dtype)
    if dt in dtypes.INTS and step != 0:
        _check_arange_fits(start, stop, step, dt)
    return apply(arange_op, start=start, stop=stop, step=step, dtype=dt)


def _check_arange_fits(start, stop, step, dtype):
    """Refuse an integer arange whose values leave ``dtype`` (numpy raises; a cast
    would wrap them silently)."""
    n = _arange_length(start, stop, step) if all(np.isfinite(v) for v in (start, stop)) else 0
    if n == 0:
        return
    info = np.iinfo(dtype)
    first, last = start, start + (n - 1) * step
    for v in (first, last):
        if not info.min <= v <= info.max:
            raise ScalarOverflowError(
                f"arange: the values from {first} to {last} do not fit {dtype} "
                f"(range {info.min} to {info.max}); pick a wider dtype{at_user_line()}")


def _eye_eval(*, n, m, k, dtype):
    if n < 0 or m < 0:
        raise ShapeError(f"eye: sizes must be non-negative, got n={n}, m={m}")
    return ((n, m), dtypes.as_dtype(dtype))


def _eye_impl(*, n, m, k, dtype):
    return np.eye(n, m, k, dtype=dtype)


def _eye_generic(be, *, n, m, k, dtype):
    return be.xp.eye(n, m, k=k, dtype=be.dtype(dtype))


eye_op = register(Op("eye", _eye_impl, _eye_eval, None, n_inputs=0, generic=_eye_generic,
                     doc="A 2-D tensor with ones on the ``k``-th diagonal."))
declare(eye_op, onnx=("value_at_export",))


def eye(n: int, m: int | None = None, dtype: DTypeLike = None, k: int = 0) -> Tensor:
    """An ``n`` x ``m`` matrix with ones on diagonal ``k`` (the main one by default), float64
    unless ``dtype`` or ``en.set_default_dtype`` says otherwise.

    Example:
        >>> import engine as en
        >>> en.eye(2).numpy()
        array([[1., 0.],
               [0., 1.]])
    """
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    return apply(eye_op, n=n, m=m, k=operator.index(k), dtype=default_dtype.data_float(dtype))


def _like(name, fill):
    def impl(x):
        return np.full(x.shape, fill, dtype=x.dtype)

    def abstract_eval(x):
        return x

    def out_impl(x, out):
        out.fill(fill)
        return out

    def generic(be, x):
        return be.xp.full(x.shape, _fill_value(fill, be.dtype_of(x)), dtype=x.dtype)

    # The result does not depend on x's values, so no gradient flows to x.
    return register(Op(name, impl, abstract_eval, lambda g, out, x: (None,), n_inputs=1,
                       elementwise=True, dtypes=dtypes.ALL, out_impl=out_impl, generic=generic,
                       doc=f"A tensor of {fill}s shaped like ``x``."))


zeros_like_op = _like("zeros_like", 0)
declare(zeros_like_op, onnx=("ConstantOfShape", 0), scalar_form="ZERO", shape_only=True)
ones_like_op = _like("ones_like", 1)
declare(ones_like_op, onnx=("ConstantOfShape", 1), scalar_form="ONE", shape_only=True)
_zeros_like = call(zeros_like_op)
_ones_like = call(ones_like_op)


def _in_dtype(out, dtype):
    return out if dtype is None or out.dtype == dtypes.as_dtype(dtype) else cast(out, dtype)


def zeros_like(x, dtype=None):
    """Zeros of ``x``'s shape, in ``x``'s dtype or ``dtype`` (``np.zeros_like``).

    Example:
        >>> import engine as en
        >>> en.zeros_like(en.tensor([1.5, 2.5]), dtype="int32").numpy()
        array([0, 0], dtype=int32)
    """
    return _in_dtype(_zeros_like(x), dtype)


def ones_like(x, dtype=None):
    """Ones of ``x``'s shape, in ``x``'s dtype or ``dtype`` (``np.ones_like``).

    Example:
        >>> import engine as en
        >>> en.ones_like(en.tensor([1, 2]), dtype="float32").numpy()
        array([1., 1.], dtype=float32)
    """
    return _in_dtype(_ones_like(x), dtype)


def _cast_eval(x, *, dtype):
    return (x[0], dtypes.as_dtype(dtype))


def _cast_impl(x, *, dtype):
    return x.astype(dtype)


def _cast_out(x, *, dtype, out):
    np.copyto(out, x, casting="unsafe")
    return out


def _real_part(z):
    # The op "real" (engine/ops/complex_parts.py builds on this module: looked up, not imported).
    return apply(_lookup("real"), z)


def _cast_vjp(g, out, x, *, dtype):
    if x.dtype not in dtypes.INEXACT:
        return (None,)
    if g.dtype in dtypes.COMPLEX and x.dtype not in dtypes.COMPLEX:
        g = _real_part(g)                 # real -> complex: the real part (JAX's convention)
    return (cast(g, x.dtype),)


def _cast_generic(be, x, *, dtype):
    return be.astype(x, dtype)


cast_op = register(Op("cast", _cast_impl, _cast_eval, _cast_vjp, elementwise=True, n_inputs=1,
                      out_impl=_cast_out, generic=_cast_generic,
                      dtypes=dtypes.ALL, doc="Convert to another dtype."))
declare(cast_op, onnx=("Cast",), scalar_form="{0}")  # each numba step converts to its dtype


def cast(x, dtype):
    """Convert ``x`` to ``dtype``. Example: ``en.cast(x, "float32")``."""
    try:
        dt = dtypes.as_dtype(dtype)
    except DTypeError as err:
        aval = (getattr(x, "shape", np.shape(x)), getattr(x, "dtype", None) or np.asarray(x).dtype)
        raise DTypeError(f"cast: cannot cast {describe_inputs([aval])} to {dtype!r}: "
                         f"{err}{at_user_line()}") from None
    return apply(cast_op, x, dtype=dt)


_also_named(cast, numpy="astype", array_api="astype")


# ---- forward mode (see engine.op.RULE_KINDS; elementwise ops batch by their flag) -----------
def _no_tangent(primals, tangents, out, **params):
    return None


def _cast_jvp(primals, tangents, out, *, dtype):
    dt, t = dtypes.as_dtype(dtype), tangents[0]
    if dt not in dtypes.INEXACT:
        return None
    if t.dtype in dtypes.COMPLEX and dt not in dtypes.COMPLEX:
        t = _real_part(t)
    return cast(t, dt)


declare(zeros_like_op, jvp=_no_tangent)
declare(ones_like_op, jvp=_no_tangent)
declare(cast_op, jvp=_cast_jvp)
