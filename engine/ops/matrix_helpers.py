"""Small pieces the linear-algebra ops share: shape rules for stacks of matrices,
and the matrices their gradients are written with (in engine ops, so they trace
and differentiate again)."""
import functools

import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, NotDifferentiableError, ShapeError, describe_inputs
from . import compare, creation, shape_ops


#: What LAPACK takes (numpy's linalg refuses float16): the dtypes of these ops.
#: Complex matrices compute with numpy's complex LAPACK routines; their gradients
#: are refused by the tape, as for every complex value.
LINALG_DTYPES = frozenset((dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128))


def float_inputs(name, avals):
    """The result dtype of inputs that must all be float32/64 or complex64/128."""
    for _, dt in avals:
        if dt not in LINALG_DTYPES:
            raise DTypeError(f"{name}: expected float32, float64, complex64 or complex128 "
                             f"inputs, got {describe_inputs(avals)}")
    return np.result_type(*[dt for _, dt in avals])


def lapack_errors(name, kernel, generic=False):
    """``kernel`` raising :class:`DomainError` naming the op and its inputs where LAPACK
    fails on the values (a singular matrix, one not positive definite), instead of
    numpy's ``LinAlgError``; ``generic``: a kernel taking the back end first."""
    @functools.wraps(kernel)
    def run(*args, **params):
        try:
            return kernel(*args, **params)
        except np.linalg.LinAlgError as err:
            arrays = args[1:] if generic else args
            avals = [(tuple(a.shape), np.dtype(str(a.dtype).split(".")[-1])) for a in arrays]
            raise DomainError(f"{name}: {err} (inputs {describe_inputs(avals)})") from None
    return run


def real_dtype(dt):
    """The dtype of the real numbers a result on ``dt`` holds (singular values,
    eigenvalues of a Hermitian matrix, log |det|): complex64 -> float32."""
    return np.finfo(dt).dtype


def matrix_shape(name, aval, square=False):
    """``(batch, m, n)`` of a stack of matrices, checked."""
    shape = aval[0]
    if len(shape) < 2:
        raise ShapeError(f"{name}: expected a (stack of) matrix with at least 2 dims, got "
                         f"{describe_inputs([aval])}")
    m, n = shape[-2:]
    if square and None not in (m, n) and m != n:
        raise ShapeError(f"{name}: expected (a stack of) square matrices, got "
                         f"{describe_inputs([aval])}")
    return tuple(shape[:-2]), m, n


def mT(a):
    """Swap the last two axes."""
    nd = a.ndim
    return shape_ops.transpose(a, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def eye(n, dtype):
    if n is None:
        raise NotDifferentiableError("linalg gradient: a matrix dim is unknown at trace time")
    return creation.eye(n, dtype=dtype)


def phi_mask(n, dtype, upper=False):
    """The lower (``upper``: upper) triangle of ones with 0.5 on the diagonal.

    ``phi_mask * Y`` is the map Phi of Murray (2016), and ``phi_mask * (S + S^T)``
    the gradient with respect to a symmetric matrix whose lower triangle alone is
    read (as LAPACK's cholesky and eigh read it) from the gradient ``S`` of the
    symmetric formula.
    """
    i = creation.arange(n)
    rows, cols = shape_ops.expand_dims(i, 1), shape_ops.expand_dims(i, 0)
    tri = compare.greater_equal(cols, rows) if upper else compare.greater_equal(rows, cols)
    return creation.cast(tri, dtype) - eye(n, dtype) * 0.5


def diag_embed(v):
    """``(..., k) -> (..., k, k)`` with ``v`` on the diagonal."""
    k = v.shape[-1]
    return shape_ops.expand_dims(v, -1) * eye(k, v.dtype)


def safe_reciprocal_differences(w):
    """``F[..., i, j] = 1 / (w_j - w_i)``, and 0 where ``w_j == w_i`` (the diagonal, and
    degenerate pairs, whose true value is unbounded)."""
    diff = shape_ops.expand_dims(w, -2) - shape_ops.expand_dims(w, -1)
    zero = compare.equal(diff, 0.0)
    safe = compare.where(zero, creation.ones_like(diff), diff)
    return compare.where(zero, creation.zeros_like(diff), 1.0 / safe)
