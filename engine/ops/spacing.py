"""Evenly spaced values: the creation op ``linspace`` and the composite ``logspace``.

Example:
    >>> import engine as en
    >>> en.linspace(0.0, 1.0, 5).numpy()
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
"""
import operator

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from ..modes import apply
from ..op import Op, declare, register
from . import creation, elementwise


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


def _number(name, value, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ShapeError(f"{name}: {what} must be a real number, got {value!r}")
    return float(value) if isinstance(value, (float, np.floating)) else int(value)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """``num`` evenly spaced numbers from ``start`` to ``stop`` (included unless
    ``endpoint=False``), like ``np.linspace``; float64 unless ``dtype`` is given.

    Example:
        >>> import engine as en
        >>> en.linspace(0, 10, 3, dtype="int64").numpy()
        array([ 0,  5, 10])
    """
    start = _number("linspace", start, "start")
    stop = _number("linspace", stop, "stop")
    try:
        num = operator.index(num)
    except TypeError:
        raise ShapeError(f"linspace: num must be an int, got {num!r}") from None
    dt = dtypes.float64 if dtype is None else dtypes.as_dtype(dtype)
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
