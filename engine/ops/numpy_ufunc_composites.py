"""numpy's ufuncs of two results (``frexp``, ``modf``), its ``angle`` and its matrix-vector
gufuncs (``matvec``, ``vecmat``), as composites of registry ops: each result is an
elementwise op (or a product), so they trace, fuse and differentiate like their parts.

- ``frexp(x)`` is ``(ldexp(x, -e), e)`` with ``e = frexp_exponent(x)``: the mantissa is
  exact, and its gradient ``2**-e`` (the exponent is piecewise constant);
- ``modf(x)`` is ``(x - trunc(x), trunc(x))`` with numpy's signs and infinities;
- ``angle(z, deg=False)`` is ``arctan2(imag(z), real(z))``;
- ``matvec(A, v)`` is ``A @ v`` over the last axes, ``vecmat(v, A)`` ``conj(v) @ A``,
  both broadcasting their leading axes.

Example:
    >>> import engine as en
    >>> m, e = en.frexp(en.tensor([8.0, 0.3]))
    >>> m.tolist(), e.tolist()
    ([0.5, 0.6], [4, -1])
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ._args import at_user_line
from . import compare, complex_parts, creation, linalg, math_binary, math_unary, shape_ops
from . import elementwise as ew
from .numpy_ufuncs import frexp_exponent
from .numpy_ufuncs_binary import ldexp

__all__ = ["frexp", "modf", "angle", "matvec", "vecmat"]


def frexp(x):
    """``(m, e)`` with ``x = m * 2**e``, ``0.5 <= |m| < 1`` (``m = x``, ``e = 0`` for zero,
    infinities and NaN), as numpy's ``frexp``: ``e`` is int32, ``m`` x's floating dtype.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.frexp(en.tensor([-3.0, 0.0]))]
        [[-0.75, 0.0], [2, 0]]
    """
    e = frexp_exponent(x)
    return ldexp(x, ew.neg(e)), e


def modf(x):
    """``(fractional part, integral part)`` of x, both with x's sign, as numpy's ``modf``
    (``modf(-inf)`` is ``(-0.0, -inf)``; integers compute in numpy's floating dtype).

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.modf(en.tensor([2.5, -1.25]))]
        [[0.5, -0.25], [2.0, -1.0]]
    """
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        dtype = np.asarray(x).dtype
    if dtype in dtypes.INTS or dtype == dtypes.bool_:
        x = creation.cast(x, dtypes.float_result(dtype))
    # x - trunc(x) would be inf - inf for infinities (numpy's part is 0, and no warning):
    # they take 0 first. A negative whole number gives +0.0 (numpy: -0.0): copysign puts
    # x's sign back on the zeros.
    finite = compare.where(math_unary.isinf(x), 0.0, x)
    frac = ew.sub(finite, math_unary.trunc(finite))
    return math_binary.copysign(frac, x), math_unary.trunc(x)


def angle(z, deg=False):
    """The angle of complex ``z`` from the positive real axis, in radians (degrees with
    ``deg=True``), as numpy's ``angle``: ``arctan2(imag(z), real(z))``; a real ``z``
    gives 0 or pi.

    Example:
        >>> import engine as en
        >>> en.angle(en.tensor([1j, -1.0 + 0j]), deg=True).tolist()
        [90.0, 180.0]
    """
    dtype = getattr(z, "dtype", None)
    if dtype in dtypes.COMPLEX or (dtype is None and isinstance(z, complex)):
        a = math_binary.arctan2(complex_parts.imag(z), complex_parts.real(z))
    else:
        a = math_binary.arctan2(0.0, z)   # numpy: imag 0, so 0 or pi (-0.0 gives pi)
    return ew.mul(a, 180.0 / math.pi) if deg else a


def _check_ranks(name, a, b, ranks):
    for arg, rank, what in zip((a, b), ranks, ("first", "second")):
        if len(getattr(arg, "shape", np.shape(arg))) < rank:
            raise ShapeError(f"{name}: the {what} input must have at least {rank} "
                             f"dimension{'s' if rank > 1 else ''}, got shapes "
                             f"{np.shape(a)} and {np.shape(b)}{at_user_line()}")


def matvec(x1, x2):
    """Matrix-vector products over the last axes: ``x1[..., m, n] @ x2[..., n]`` gives
    ``[..., m]``, the leading axes broadcast (numpy's ``matvec``).

    Example:
        >>> import engine as en
        >>> en.matvec(en.tensor([[1.0, 2.0], [3.0, 4.0]]), en.tensor([1.0, 1.0])).tolist()
        [3.0, 7.0]
    """
    _check_ranks("matvec", x1, x2, (2, 1))
    return shape_ops.squeeze(linalg.matmul(x1, shape_ops.expand_dims(x2, -1)), -1)


def vecmat(x1, x2):
    """Vector-matrix products over the last axes: ``conj(x1[..., n]) @ x2[..., n, m]``
    gives ``[..., m]``, the leading axes broadcast (numpy's ``vecmat``, which conjugates
    the vector).

    Example:
        >>> import engine as en
        >>> en.vecmat(en.tensor([1.0, 1.0]), en.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [4.0, 6.0]
    """
    _check_ranks("vecmat", x1, x2, (1, 2))
    dtype = getattr(x1, "dtype", None)
    if dtype in dtypes.COMPLEX:
        x1 = complex_parts.conj(x1)
    return shape_ops.squeeze(linalg.matmul(shape_ops.expand_dims(x1, -2), x2), -2)
