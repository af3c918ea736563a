"""Ops that make new arrays (zeros, ones, full, arange, eye, *_like) and ``cast``."""
import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ..op import Op, register
from ._define import call


def _check_shape(name, shape):
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise ShapeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ShapeError(f"{name}: negative dimension in shape {shape}")
    return shape


def _filled(name, fill):
    def impl(*, shape, dtype):
        return np.full(shape, fill, dtype=dtype)

    def abstract_eval(*, shape, dtype):
        return (_check_shape(name, shape), dtypes.as_dtype(dtype))
    return register(Op(name, impl, abstract_eval, None, n_inputs=0,
                       doc=f"A new tensor of {fill}s."))


zeros_op = _filled("zeros", 0)
ones_op = _filled("ones", 1)


def _full_impl(*, shape, value, dtype):
    return np.full(shape, value, dtype=dtype)


def _full_eval(*, shape, value, dtype):
    return (_check_shape("full", shape), dtypes.as_dtype(dtype))


full_op = register(Op("full", _full_impl, _full_eval, None, n_inputs=0,
                      doc="A new tensor filled with ``value``."))


def zeros(shape, dtype="float64"):
    """A tensor of zeros. Example: ``en.zeros((2, 3), dtype="float32")``."""
    from ..modes import apply
    return apply(zeros_op, shape=_check_shape("zeros", shape), dtype=dtypes.as_dtype(dtype))


def ones(shape, dtype="float64"):
    """A tensor of ones. Example: ``en.ones(3)``."""
    from ..modes import apply
    return apply(ones_op, shape=_check_shape("ones", shape), dtype=dtypes.as_dtype(dtype))


def full(shape, value, dtype=None):
    """A tensor filled with ``value``; the dtype follows the value unless given."""
    from ..modes import apply
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.scalar_dtype(value)
    return apply(full_op, shape=_check_shape("full", shape), value=value, dtype=dt)


def _like(name, fill):
    def impl(x):
        return np.full(x.shape, fill, dtype=x.dtype)

    def abstract_eval(x):
        return x

    # The result does not depend on x's values, so no gradient flows to x.
    return register(Op(name, impl, abstract_eval, lambda g, out, x: (None,), n_inputs=1,
                       elementwise=True, dtypes=dtypes.ALL, doc=f"A tensor of {fill}s shaped like ``x``."))


zeros_like_op = _like("zeros_like", 0)
ones_like_op = _like("ones_like", 1)
zeros_like = call(zeros_like_op)
ones_like = call(ones_like_op)


def _cast_eval(x, *, dtype):
    return (x[0], dtypes.as_dtype(dtype))


def _cast_impl(x, *, dtype):
    return x.astype(dtype)


def _cast_vjp(g, out, x, *, dtype):
    if not dtypes.is_float(x.dtype):
        return (None,)
    return (cast(g, x.dtype),)


cast_op = register(Op("cast", _cast_impl, _cast_eval, _cast_vjp, elementwise=True, n_inputs=1,
                      dtypes=dtypes.ALL, doc="Convert to another dtype."))


def cast(x, dtype):
    """Convert ``x`` to ``dtype``. Example: ``en.cast(x, "float32")``."""
    from ..modes import apply
    return apply(cast_op, x, dtype=dtypes.as_dtype(dtype))
