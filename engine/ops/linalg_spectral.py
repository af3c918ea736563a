"""Orthogonal factorizations: ``qr``, ``svd``, ``eigh`` (registry entries with several
results; the public functions are in ``engine.linalg``).

Gradients (real matrices), written in engine ops:

* ``qr`` (reduced, ``A = QR``): with ``M = R gR^T - gQ^T Q``,
  ``gA = (gQ + Q copyltu(M)) R^-T`` for ``m >= n``; a wide matrix ``[X | Y]``
  is differentiated through its square left block. ``mode="complete"`` of a
  tall matrix has no gradient (its extra columns are arbitrary).
* ``svd`` (``A = U diag(S) Vh``): Townsend (2016), with
  ``F[i, j] = 1 / (s_j^2 - s_i^2)``.
* ``eigh`` (``A = V diag(w) V^T``, lower triangle read): ``S = V (diag(gw) +
  F * (V^T gV)) V^T`` with ``F[i, j] = 1 / (w_j - w_i)``, folded onto the
  triangle that is read.

Caveat: for repeated eigenvalues (singular values) the eigenvectors (singular
vectors) are not unique and their gradient is unbounded; ``F`` is set to 0 for
equal pairs, so gradients of functions of the values alone (``eigvalsh``,
``svdvals``, norms) stay right, while gradients through the vectors of a
degenerate matrix are those of one arbitrary basis.
"""
import numpy as np

from ..errors import NotDifferentiableError, ShapeError, describe_inputs
from ..op import Op, declare, register
from ._define import call
from . import _rules, shape_ops
from .join import concat
from .linalg import matmul
from .linalg_solve import solve_matrix
from .matrix_helpers import (LINALG_DTYPES, diag_embed, eye, float_inputs, lapack_errors,
                             matrix_shape, mT, phi_mask, real_dtype,
                             safe_reciprocal_differences)


def _op(name, impl, abstract_eval, vjp, generic, doc):
    return register(Op(name, lapack_errors(name, impl), abstract_eval, vjp, dtypes=LINALG_DTYPES,
                       generic=lapack_errors(name, generic, generic=True), doc=doc, n_inputs=1,
                       multiple_results=True))


# ---- qr --------------------------------------------------------------------------------------
_QR_MODES = ("reduced", "complete")


def _qr_eval(x, *, mode):
    dt = float_inputs("qr", [x])
    batch, m, n = matrix_shape("qr", x)
    if mode not in _QR_MODES:
        raise ShapeError(f"qr: mode={mode!r}; expected one of {_QR_MODES}")
    k = m if mode == "complete" else (None if None in (m, n) else min(m, n))
    return ((batch + (m, k), dt), (batch + (k, n), dt))


def _qr_impl(x, *, mode):
    q, r = np.linalg.qr(x, mode=mode)
    return q, r


def _qr_generic(be, x, *, mode):
    q, r = be.xp.linalg.qr(x, mode=mode)
    return q, r


def _copyltu(m):
    """The symmetric matrix with ``m``'s lower triangle (diagonal included)."""
    low = phi_mask(m.shape[-1], m.dtype) * m
    return low + mT(low)


def _qr_square_grad(q, r, gq, gr):
    """``gA`` for ``A = QR`` with ``A`` tall or square (``R`` square, invertible)."""
    m = matmul(r, mT(gr)) - matmul(mT(gq), q)
    b = gq + matmul(q, _copyltu(m))
    return mT(solve_matrix(r, mT(b)))          # b R^-T


def _qr_vjp(g, out, x, *, mode):
    q, r = out
    gq, gr = g
    rows, cols = x.shape[-2:]
    if rows >= cols:
        if mode == "complete" and rows > cols:
            raise NotDifferentiableError(
                f"qr: mode='complete' of a tall matrix ({describe_inputs([(x.shape, x.dtype)])}) "
                "has no gradient (its extra columns of Q are arbitrary); use mode='reduced'")
        return (_qr_square_grad(q, r, gq, gr),)
    # A wide matrix: A = [X | Y] = Q [U | V] with X = Q U square.
    u = r[..., :, :rows]
    gu, gv = gr[..., :, :rows], gr[..., :, rows:]
    y = x[..., :, rows:]
    gx = _qr_square_grad(q, u, gq + matmul(y, mT(gv)), gu)
    return (concat([gx, matmul(q, gv)], axis=-1),)


qr_op = _op("qr", _qr_impl, _qr_eval, _qr_vjp, _qr_generic,
            "QR factorization (``mode`` 'reduced' or 'complete'): results Q and R.")
declare(qr_op, onnx=None, fold_cost="factorization")


# ---- svd -------------------------------------------------------------------------------------
def _svd_eval(x, *, full_matrices):
    dt = float_inputs("svd", [x])
    batch, m, n = matrix_shape("svd", x)
    k = None if None in (m, n) else min(m, n)
    ucols, vrows = (m, n) if full_matrices else (k, k)
    return ((batch + (m, ucols), dt), (batch + (k,), real_dtype(dt)), (batch + (vrows, n), dt))


def _svd_impl(x, *, full_matrices):
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def _svd_generic(be, x, *, full_matrices):
    u, s, vh = be.xp.linalg.svd(x, full_matrices=full_matrices)
    return u, s, vh


def _svd_vjp(g, out, x, *, full_matrices):
    u, s, vh = out
    gu, gs, gvh = g
    m, n = x.shape[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        raise NotDifferentiableError(
            f"svd: full_matrices=True of a non-square matrix "
            f"({describe_inputs([(x.shape, x.dtype)])}) has no gradient (the extra singular "
            "vectors are arbitrary); use full_matrices=False")
    v, gv = mT(vh), mT(gvh)
    f = safe_reciprocal_differences(s * s)               # 1 / (s_j^2 - s_i^2)
    ut_gu, vt_gv = matmul(mT(u), gu), matmul(mT(v), gv)
    j = f * (ut_gu - mT(ut_gu))
    kk = f * (vt_gv - mT(vt_gv))
    inner = j * shape_ops.expand_dims(s, -2) + diag_embed(gs) + shape_ops.expand_dims(s, -1) * kk
    ga = matmul(matmul(u, inner), vh)
    if m > k:      # (I - U U^T) gU S^-1 Vh
        ga = ga + matmul((gu - matmul(u, ut_gu)) / shape_ops.expand_dims(s, -2), vh)
    if n > k:      # U S^-1 gV^T (I - V V^T)
        ga = ga + matmul(u, (mT(gv) - matmul(mT(vt_gv), vh)) / shape_ops.expand_dims(s, -1))
    return (ga,)


svd_op = _op("svd", _svd_impl, _svd_eval, _svd_vjp, _svd_generic,
             "Singular value decomposition: results U, S (descending) and Vh.")
declare(svd_op, onnx=None, fold_cost="factorization")


# ---- eigh ------------------------------------------------------------------------------------
def _eigh_eval(x):
    dt = float_inputs("eigh", [x])
    batch, m, _ = matrix_shape("eigh", x, square=True)
    return ((batch + (m,), real_dtype(dt)), (batch + (m, m), dt))


def _eigh_impl(x):
    w, v = np.linalg.eigh(x)
    return w, v


def _eigh_generic(be, x):
    w, v = be.xp.linalg.eigh(x)
    return w, v


def _eigh_vjp(g, out, x):
    w, v = out
    gw, gv = g
    f = safe_reciprocal_differences(w)                    # 1 / (w_j - w_i)
    s = matmul(matmul(v, diag_embed(gw) + f * matmul(mT(v), gv)), mT(v))
    return (phi_mask(x.shape[-1], gw.dtype) * (s + mT(s)),)


eigh_op = _op("eigh", _eigh_impl, _eigh_eval, _eigh_vjp, _eigh_generic,
              "Eigenvalues (ascending) and eigenvectors of symmetric matrices (the lower "
              "triangle is read).")
declare(eigh_op, onnx=None, fold_cost="factorization")

qr = call(qr_op)
svd = call(svd_op)
eigh = call(eigh_op)
__all__ = []


# ---- batching (see engine.op.RULE_KINDS) --------------------------------------------------------
# Each factorizes the last two axes of a stack of matrices: a vmap batch is one more stack axis.
for _factor_op in (qr_op, svd_op, eigh_op):
    declare(_factor_op, batch=_rules.batch_over_leading_axes(_factor_op))


def _eigh_jvp(primals, tangents, out):
    # With dA the read (lower) triangle made symmetric and M = V^T dA V:
    # dw = diag(M), dV = V (F * M), F[i, j] = 1 / (w_j - w_i) (0 for equal pairs).
    w, v = out
    t = tangents[0]
    lower = phi_mask(t.shape[-1], t.dtype) * t
    sym = lower + mT(lower)
    m = matmul(mT(v), matmul(sym, v))
    dw = (v * matmul(sym, v)).sum(axis=-2)
    return dw, matmul(v, safe_reciprocal_differences(w) * m)


declare(eigh_op, jvp=_eigh_jvp)


def _qr_square_jvp(q, r, t):
    """``(dQ, dR)`` for ``A = QR`` with ``A`` tall or square: with ``X = Q^T dA R^-1``
    and ``O`` the antisymmetric matrix of its strict lower triangle, ``dR = (X - O) R``
    and ``dQ = dA R^-1 - Q (X - O)``."""
    n = r.shape[-1]
    t_rinv = mT(solve_matrix(mT(r), mT(t)))                  # dA R^-1
    x = matmul(mT(q), t_rinv)
    low = (phi_mask(n, t.dtype) - 0.5 * eye(n, t.dtype)) * x
    upper = x - low + mT(low)
    return t_rinv - matmul(q, upper), matmul(upper, r)


def _qr_jvp(primals, tangents, out, *, mode):
    (x,), (t,) = primals, tangents
    q, r = out
    rows, cols = x.shape[-2:]
    if rows >= cols:
        if mode == "complete" and rows > cols:
            raise NotDifferentiableError(
                f"qr: mode='complete' of a tall matrix ({describe_inputs([(x.shape, x.dtype)])}) "
                "has no derivative (its extra columns of Q are arbitrary); use mode='reduced'")
        return _qr_square_jvp(q, r, t)
    # A wide matrix: A = [X | Y] = Q [U | V] with X = Q U square; dV = Q^T (dY - dQ V).
    dq, du = _qr_square_jvp(q, r[..., :, :rows], t[..., :, :rows])
    dv = matmul(mT(q), t[..., :, rows:] - matmul(dq, r[..., :, rows:]))
    return dq, concat([du, dv], axis=-1)


declare(qr_op, jvp=_qr_jvp)


def _svd_jvp(primals, tangents, out, *, full_matrices):
    # A = U S V^T (reduced), P = U^T dA V, F[i, j] = 1 / (s_j^2 - s_i^2): dS = diag(P),
    # dU = U (F * (P S + S P^T)) + (I - U U^T) dA V S^-1, and dV alike with A^T.
    (x,), (t,) = primals, tangents
    u, s, vh = out
    m, n = x.shape[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        raise NotDifferentiableError(
            f"svd: full_matrices=True of a non-square matrix "
            f"({describe_inputs([(x.shape, x.dtype)])}) has no derivative (the extra "
            "singular vectors are arbitrary); use full_matrices=False")
    v = mT(vh)
    t_v, tt_u = matmul(t, v), matmul(mT(t), u)
    p = matmul(mT(u), t_v)
    f = safe_reciprocal_differences(s * s)
    s_row, s_col = shape_ops.expand_dims(s, -2), shape_ops.expand_dims(s, -1)
    ds = (u * t_v).sum(axis=-2)                                  # diag(U^T dA V)
    du = matmul(u, f * (p * s_row + s_col * mT(p)))
    dv = matmul(v, f * (s_col * p + mT(p) * s_row))
    if m > k:
        du = du + (t_v - matmul(u, p)) / s_row
    if n > k:
        dv = dv + (tt_u - matmul(v, mT(p))) / s_row
    return du, ds, mT(dv)


declare(svd_op, jvp=_svd_jvp)
