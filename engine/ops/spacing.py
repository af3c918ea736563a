"""Evenly spaced values: the creation op ``linspace`` and the composite ``logspace``.

Example:
    >>> import engine as en
    >>> en.linspace(0.0, 1.0, 5).numpy()
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
"""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np

from .. import default_dtype, dtypes
from ..errors import DTypeError, ShapeError
from ..lifting import TensorLike
from ..modes import apply
from ..op import Op, declare, register
from ._args import at_user_line
from .cumulative import as_tensor
from . import compare, creation, elementwise, manipulation, math_unary, shape_ops

if TYPE_CHECKING:
    from typing import Any

    from ..contracts import DTypeLike
    from ..tensor import Tensor


def _linspace_eval(*, start, stop, num, endpoint, dtype):
    if dtypes.as_dtype(dtype) not in dtypes.NUMERIC:
        raise DTypeError(f"linspace: expected a numeric dtype, got {dtype}")
    if num < 0:
        raise ShapeError(f"linspace: the number of samples must be non-negative, got {num}")
    for v in (start, stop):
        if not np.isfinite(v):
            raise ShapeError(f"linspace: start and stop must be finite, got {start}, {stop}")
    return ((num,), dtypes.as_dtype(dtype))


def _linspace_impl(*, start, stop, num, endpoint, dtype):
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def _linspace_generic(be, *, start, stop, num, endpoint, dtype):
    # numpy computes in float64 and floors for an integer dtype; so does this.
    xp = be.xp
    out = xp.linspace(float(start), float(stop), num, dtype=xp.float64, endpoint=endpoint)
    if dtypes.as_dtype(dtype) not in dtypes.FLOATS:
        out = xp.floor(out)
    return be.astype(out, dtype)


linspace_op = register(Op("linspace", _linspace_impl, _linspace_eval, None, n_inputs=0,
                          generic=_linspace_generic,
                          doc="``num`` evenly spaced values from ``start`` to ``stop``."))
declare(linspace_op, onnx=("value_at_export",))


def _num(num):
    try:
        return operator.index(num)
    except TypeError:
        raise ShapeError(f"linspace: num must be an int, got {num!r}{at_user_line()}") from None


def _is_scalar(value):
    """A Python or numpy number (the op's own path); tensors, arrays and lists are not."""
    return not isinstance(value, (TensorLike, np.ndarray, list, tuple))


def _linspace_of_arrays(start, stop, num, endpoint, dtype, axis):
    """numpy's linspace of array endpoints, written in engine ops so it traces and
    differentiates: ``start + i * step`` with the last sample exactly ``stop``."""
    # A Python number beside a tensor stays weak (numpy 2): float32 endpoints give float32.
    ends = [v if _is_scalar(v) else as_tensor(v) for v in (start, stop)]
    for name, v in zip(("start", "stop"), ends):
        kind = _number("linspace", v, name) if _is_scalar(v) else v.dtype
        if not _is_scalar(v) and kind not in dtypes.NUMERIC:
            raise DTypeError(f"linspace: {name} must be numeric, got {kind}{at_user_line()}")
    if num < 0:
        raise ShapeError(f"linspace: the number of samples must be non-negative, got {num}"
                         f"{at_user_line()}")
    compute = dtypes.result_type(*(v if _is_scalar(v) else v.dtype for v in ends), 1.0)
    start, stop = (creation.cast(v, compute) if not _is_scalar(v) else v for v in ends)
    nd = max(getattr(v, "ndim", 0) for v in (start, stop))
    steps = shape_ops.reshape(creation.arange(num, dtype=compute), (num,) + (1,) * nd)
    delta = stop - start
    div = num - 1 if endpoint else num
    # numpy multiplies by the step when there is one, else by the whole span (one sample)
    out = start + steps * (delta / div) if div > 0 else start + steps * delta
    if endpoint and num > 1:
        last = compare.equal(steps, num - 1)
        out = compare.where(last, stop, out)
    if axis != 0:
        out = manipulation.moveaxis(out, 0, axis)
    if dtype is None:
        return out
    target = dtypes.as_dtype(dtype)
    if target not in dtypes.INEXACT:
        out = math_unary.floor(out)     # numpy floors before an integer cast
    return creation.cast(out, target)


def _number(name, value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ShapeError(f"{name}: {what} must be a real number, got {value!r}")
    return float(value) if isinstance(value, (float, np.floating)) else int(value)


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             dtype: DTypeLike = None, axis: int = 0) -> Tensor:
    """``num`` evenly spaced numbers from ``start`` to ``stop`` (included unless
    ``endpoint=False``), like ``np.linspace``; float64 (or the ``en.set_default_dtype``
    dtype) unless ``dtype`` is given.

    ``start`` and ``stop`` may be tensors or arrays, as numpy's: the samples then run
    along a new axis ``axis`` of their broadcast shape, in their floating dtype, and the
    result is differentiable in both (as ``jnp.linspace``).

    Example:
        >>> import engine as en
        >>> en.linspace(0, 10, 3, dtype="int64").numpy()
        array([ 0,  5, 10])
        >>> en.linspace(en.tensor([0.0, 1.0]), 2.0, 3).numpy()
        array([[0. , 1. ],
               [1. , 1.5],
               [2. , 2. ]])
    """
    if not (_is_scalar(start) and _is_scalar(stop)):
        return _linspace_of_arrays(start, stop, _num(num), bool(endpoint), dtype, axis)
    if axis not in (0, -1):
        raise ShapeError(f"linspace: axis {axis!r} is out of range for a result of rank 1"
                         f"{at_user_line()}")
    start = _number("linspace", start, "start")
    stop = _number("linspace", stop, "stop")
    num = _num(num)
    dt = default_dtype.data_float(dtype)
    return apply(linspace_op, start=start, stop=stop, num=num, endpoint=bool(endpoint), dtype=dt)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None):
    """``base ** linspace(start, stop, num)``, like ``np.logspace``.

    Example:
        >>> import engine as en
        >>> en.logspace(0, 2, 3).numpy()
        array([  1.,  10., 100.])
    """
    exponents = linspace(start, stop, num, endpoint)
    out = elementwise.pow(float(_number("logspace", base, "base")), exponents)
    return out if dtype is None else creation.cast(out, dtype)


__all__ = ["linspace", "linspace_op", "logspace"]
