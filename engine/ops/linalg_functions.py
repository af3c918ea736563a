"""The public linear-algebra functions (``engine.linalg``) over the registry entries of
``linalg_solve`` and ``linalg_spectral``, with numpy's and the Array API's
signatures and result tuples, and the composites made of them (``svdvals``,
``eigvalsh``, ``lstsq``, ``matrix_rank``, ``matrix_power``, ``trace``,
``diagonal``, ``multi_dot``)."""
import collections

import numpy as np

from .. import dtypes
from ..errors import DomainError, ShapeError
from ..lifting import TensorLike
from ..modes import apply, current_mode
from ._args import at_user_line
from . import compare, creation, reduce, shape_ops
from .einsum import einsum
from .linalg import matmul
from .linalg_solve import cholesky_op, det_op, inv_op, pinv_op, slogdet_op, solve_op
from .linalg_spectral import eigh_op, qr_op, svd_op
from .products import matrix_transpose

SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
LstsqResult = collections.namedtuple("LstsqResult", ["x", "residuals", "rank", "s"])


def _tensor(x):
    return x if isinstance(x, TensorLike) else current_mode().lift([x])[0]


def inv(x):
    """Inverse of a (stack of) square matrix.

    Example:
        >>> import engine as en
        >>> en.linalg.inv(en.tensor([[2.0, 0.0], [0.0, 4.0]])).numpy().tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    return apply(inv_op, x)


def det(x):
    """Determinant of a (stack of) square matrix.

    Example:
        >>> import engine as en
        >>> round(float(en.linalg.det(en.tensor([[2.0, 1.0], [1.0, 3.0]]))), 12)
        5.0
    """
    return apply(det_op, x)


def slogdet(x):
    """``(sign, logabsdet)`` of the determinant, without overflow.

    Example:
        >>> import engine as en
        >>> sign, logdet = en.linalg.slogdet(en.eye(3) * 2.0)
        >>> float(sign), round(float(logdet), 4)
        (1.0, 2.0794)
    """
    return SlogdetResult(*apply(slogdet_op, x))


def solve(a, b):
    """``X`` with ``a @ X = b``. ``b`` is a vector only when it is 1-D (numpy 2 and the
    Array API); otherwise a (stack of) matrix, broadcast against ``a``.

    Example:
        >>> import engine as en
        >>> en.linalg.solve(en.tensor([[2.0, 0.0], [0.0, 4.0]]), en.tensor([1.0, 1.0])).numpy()
        array([0.5 , 0.25])
    """
    b = _tensor(b)
    if b.ndim == 1:
        return apply(solve_op, a, shape_ops.expand_dims(b, -1))[..., 0]
    return apply(solve_op, a, b)


def cholesky(x, upper=False):
    """Cholesky factor of a symmetric positive-definite (stack of) matrix: lower ``L``
    with ``x = L L^T`` (``upper``: ``U`` with ``x = U^T U``). As LAPACK, only the
    lower (upper) triangle is read, and gradients are with respect to that triangle.

    Example:
        >>> import engine as en
        >>> en.linalg.cholesky(en.tensor([[4.0, 2.0], [2.0, 5.0]])).numpy().tolist()
        [[2.0, 0.0], [1.0, 2.0]]
    """
    if upper:
        return matrix_transpose(apply(cholesky_op, matrix_transpose(x)))
    return apply(cholesky_op, x)


def qr(x, mode="reduced"):
    """QR factorization: ``(Q, R)`` (``mode`` 'reduced' or 'complete'), or ``R`` alone
    for ``mode='r'``.

    Example:
        >>> import engine as en
        >>> q, r = en.linalg.qr(en.ones((4, 2)) + en.eye(4, 2))
        >>> q.shape, r.shape
        ((4, 2), (2, 2))
    """
    if mode == "r":
        return apply(qr_op, x, mode="reduced")[1]
    if mode not in ("reduced", "complete"):
        raise DomainError(f"qr: mode={mode!r}; expected 'reduced', 'complete' or 'r'"
                          f"{at_user_line()}")
    return QRResult(*apply(qr_op, x, mode=mode))


def svd(x, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition ``(U, S, Vh)`` with ``x = U diag(S) Vh`` (``S``
    descending); ``compute_uv=False``: ``S`` alone. ``hermitian`` is accepted for
    numpy's signature; the general algorithm runs either way (a valid SVD).
    Gradients need ``full_matrices=False`` for non-square inputs.

    Example:
        >>> import engine as en
        >>> u, s, vh = en.linalg.svd(en.ones((3, 2)), full_matrices=False)
        >>> u.shape, s.shape, vh.shape
        ((3, 2), (2,), (2, 2))
    """
    if not compute_uv:
        return svdvals(x)
    return SVDResult(*apply(svd_op, x, full_matrices=bool(full_matrices)))


def svdvals(x):
    """Singular values, descending.

    Example:
        >>> import engine as en
        >>> en.linalg.svdvals(en.tensor([[3.0, 0.0], [0.0, -4.0]])).numpy().tolist()
        [4.0, 3.0]
    """
    return apply(svd_op, x, full_matrices=False)[1]


def _lower_from(x, uplo, name):
    """``x`` with the triangle ``uplo`` in the lower one (the op reads the lower)."""
    if uplo not in ("L", "U"):
        raise DomainError(f"{name}: UPLO={uplo!r}; expected 'L' or 'U'{at_user_line()}")
    if uplo == "U" and getattr(x, "dtype", None) in dtypes.COMPLEX:
        # A Hermitian matrix's upper triangle is the lower one of its conjugate transpose;
        # the plain transpose would give the conjugate eigenvectors.
        raise DomainError(f"{name}: UPLO='U' of a complex matrix is not supported; pass the "
                          f"lower triangle (UPLO='L'){at_user_line()}")
    return x if uplo == "L" else matrix_transpose(x)


def eigh(x, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of a symmetric (stack of) matrix; the
    triangle ``UPLO`` is read. Eigenvectors are unique up to sign only, and for
    ``UPLO="U"`` their signs may differ from numpy's. See ``linalg_spectral`` for
    the degenerate-eigenvalue caveat of the eigenvectors' gradient.

    Example:
        >>> import engine as en
        >>> w, v = en.linalg.eigh(en.tensor([[2.0, 0.0], [0.0, 1.0]]))
        >>> w.numpy().tolist()
        [1.0, 2.0]
    """
    return EighResult(*apply(eigh_op, _lower_from(x, UPLO, "eigh")))


def eigvalsh(x, UPLO="L"):
    """Eigenvalues (ascending) of a symmetric (stack of) matrix.

    Example:
        >>> import engine as en
        >>> en.linalg.eigvalsh(en.tensor([[2.0, 1.0], [1.0, 2.0]])).numpy().tolist()
        [1.0, 3.0]
    """
    return apply(eigh_op, _lower_from(x, UPLO, "eigvalsh"))[0]


_NO_VALUE = object()


def pinv(x, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    """Moore-Penrose pseudo-inverse; singular values at most ``rcond`` (or ``rtol``)
    times the largest are treated as zero (numpy's defaults: ``rcond=1e-15``; ``rtol``
    None: ``max(M, N) * eps``). The gradient assumes the rank does not change nearby.

    Example:
        >>> import engine as en
        >>> en.linalg.pinv(en.tensor([[2.0, 0.0], [0.0, 0.0]])).numpy().tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    x = _tensor(x)
    if rcond is not None and rtol is not _NO_VALUE:
        raise DomainError(f"pinv: rtol and rcond can't both be set{at_user_line()}")
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = _eps_cutoff(x)
        else:
            rcond = rtol
    return apply(pinv_op, x, rcond=_cutoff_param(rcond))


def _cutoff_param(rcond):
    """``rcond`` as an op parameter: a float, or for one cutoff per matrix of the
    stack (the standard's array ``rtol``) the values as nested tuples."""
    values = np.asarray(rcond.numpy() if isinstance(rcond, TensorLike) else rcond)
    if values.ndim == 0:
        return float(values)
    return _tuples(values.astype(np.float64).tolist())


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _eps_cutoff(x):
    dt = x.dtype if x.dtype in dtypes.INEXACT else dtypes.float64   # complex64: float32's eps
    dims = [d for d in x.shape[-2:] if d is not None] or [1]
    return max(dims) * float(np.finfo(dt).eps)


def matrix_rank(x, tol=None, hermitian=False, *, rtol=None):
    """Number of singular values above ``tol`` (absolute) or ``rtol`` times the largest
    (default ``max(M, N) * eps``), as int64. No gradient (an integer).

    Example:
        >>> import engine as en
        >>> int(en.linalg.matrix_rank(en.tensor([[1.0, 2.0], [2.0, 4.0]])))
        1
    """
    x = _tensor(x)
    if x.ndim < 2:   # numpy: 1 unless every element is zero
        return reduce.max(creation.cast(compare.not_equal(x, 0), dtypes.int64))
    s = svdvals(x)
    if tol is None:
        rel = _eps_cutoff(x) if rtol is None else rtol
        tol = reduce.max(s, axis=-1, keepdims=True) * rel
    elif isinstance(tol, TensorLike):
        tol = shape_ops.expand_dims(tol, -1)
    return reduce.sum(creation.cast(compare.greater(s, tol), dtypes.int64), axis=-1)


def lstsq(a, b, rcond=None):
    """Least-squares solution of ``a @ x = b``: ``(x, residuals, rank, s)`` as numpy
    gives them (``x`` from the pseudo-inverse, singular values below ``rcond`` times
    the largest dropped, default ``max(M, N) * eps``). ``residuals`` are the squared
    residual norms when ``M > N`` and ``a`` has full rank, else empty; in a traced
    function the rank is not known, and residuals are given whenever ``M > N``.

    Example:
        >>> import engine as en
        >>> x, res, rank, s = en.linalg.lstsq(en.tensor([[1.0, 0], [0, 1], [0, 0]]),
        ...                                   en.tensor([1.0, 2.0, 3.0]))
        >>> x.numpy().tolist(), res.numpy().tolist(), int(rank)
        ([1.0, 2.0], [9.0], 2)
    """
    a, b = _tensor(a), _tensor(b)
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise ShapeError(f"lstsq: expected a matrix and a vector or matrix, got "
                         f"{a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)}{at_user_line()}")
    m, n = a.shape
    if None not in (m, b.shape[0]) and m != b.shape[0]:
        raise ShapeError(f"lstsq: {m} equations but b has {b.shape[0]} rows{at_user_line()}")
    cutoff = _eps_cutoff(a) if rcond is None else rcond
    s = svdvals(a)
    # int32, as numpy's lstsq gives it (LAPACK's integer).
    rank = creation.cast(reduce.sum(creation.cast(compare.greater(s, reduce.max(s) * cutoff),
                                                  dtypes.int64)), dtypes.int32)
    x = matmul(pinv(a, rcond=cutoff), b)
    r = matmul(a, x) - b
    residuals = reduce.sum(r * r, axis=0)
    if b.ndim == 1:
        residuals = shape_ops.reshape(residuals, (1,))
    if m is not None and n is not None and m <= n:
        residuals = residuals[:0]
    elif current_mode().is_concrete and int(rank) < n:
        residuals = residuals[:0]
    return LstsqResult(x, residuals, rank, s)


def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (``n`` < 0: the inverse's powers; 0: the
    identity), by repeated squaring.

    Example:
        >>> import engine as en
        >>> en.linalg.matrix_power(en.tensor([[1.0, 1.0], [0.0, 1.0]]), 3).numpy().tolist()
        [[1.0, 3.0], [0.0, 1.0]]
    """
    a = _tensor(a)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise DomainError(f"matrix_power: the exponent must be an integer, got {n!r}"
                          f"{at_user_line()}")
    if a.ndim < 2 or (None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]):
        raise ShapeError(f"matrix_power: expected (a stack of) square matrices, got "
                         f"{a.dtype}{list(a.shape)}{at_user_line()}")
    n = int(n)
    if n == 0:
        eye = creation.eye(a.shape[-1], dtype=a.dtype)
        return shape_ops.broadcast_to_shape_of(eye, a)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def diagonal(x, offset=0):
    """The diagonals of the last two axes (``offset`` > 0: above the main one).

    Example:
        >>> import engine as en
        >>> en.linalg.diagonal(en.tensor([[1.0, 2.0], [3.0, 4.0]]), offset=1).numpy().tolist()
        [2.0]
    """
    x = _tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"diagonal: expected at least 2 dims, got {x.dtype}{list(x.shape)}"
                         f"{at_user_line()}")
    offset = int(offset)
    m, n = x.shape[-2:]
    k = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    if k == 0:      # (slices starting past the end are not in the Array API)
        block = x[..., :0, :0]
    elif offset >= 0:
        block = x[..., :k, offset:offset + k]
    else:
        block = x[..., -offset:-offset + k, :k]
    return einsum("...ii->...i", block)


def trace(x, offset=0, dtype=None):
    """Sum of the diagonal of the last two axes (``dtype``: of the sum).

    Example:
        >>> import engine as en
        >>> float(en.linalg.trace(en.eye(3)))
        3.0
    """
    d = diagonal(x, offset=offset)
    if dtype is not None:
        d = creation.cast(d, dtype)
    return reduce.sum(d, axis=-1)


def multi_dot(arrays):
    """The product of a list of matrices (the first may be a vector, the last too), in
    the order einsum's path picks.

    Example:
        >>> import engine as en
        >>> en.linalg.multi_dot([en.ones((2, 9)), en.ones((9, 9)), en.ones((9, 2))]).shape
        (2, 2)
    """
    arrays = [_tensor(a) for a in arrays]
    if len(arrays) < 2:
        raise ShapeError(f"multi_dot: needs at least two arrays{at_user_line()}")
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if len(arrays) + 1 > len(letters):
        raise ShapeError(f"multi_dot: at most {len(letters) - 1} arrays{at_user_line()}")
    terms = []
    for i, a in enumerate(arrays):
        first, last = i == 0, i == len(arrays) - 1
        if a.ndim == 1 and (first or last):
            terms.append(letters[i + 1] if first else letters[i])
        elif a.ndim == 2:
            terms.append(letters[i] + letters[i + 1])
        else:
            raise ShapeError(f"multi_dot: array {i} has {a.ndim} dims; only the first and last "
                             f"may be vectors, the others are matrices{at_user_line()}")
    out = "".join(c for c in letters[:len(arrays) + 1]
                  if sum(t.count(c) for t in terms) == 1)
    return einsum(",".join(terms) + "->" + out, *arrays)
