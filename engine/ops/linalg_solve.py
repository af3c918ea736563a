"""Inverses and factorizations of stacks of square matrices: ``inv``, ``solve``,
``det``, ``slogdet``, ``cholesky``, ``pinv`` (registry entries; the public
functions are in ``engine.linalg``).

The gradients are the standard closed forms, written in engine ops:
``inv``: ``-A^-T g A^-T``; ``det``: ``g det(A) A^-T``; ``slogdet``: ``g A^-T``;
``solve`` (``X = A^-1 B``): ``gB = A^-T g``, ``gA = -gB X^T``; ``cholesky``
(``A = L L^T``, lower triangle read): ``Phi(S + S^T)`` with
``S = L^-T Phi(L^T gL) L^-1`` (Murray 2016); ``pinv``: Golub and Pereyra's
formula for a matrix of constant rank.
"""
import numpy as np

from ..errors import ShapeError, describe_inputs
from ..op import Op, declare, register
from ..shapes import broadcast_shapes
from ._define import call, unbroadcast
from . import _rules, shape_ops
from .linalg import matmul
from .matrix_helpers import (LINALG_DTYPES, float_inputs, lapack_errors, matrix_shape, mT,
                             phi_mask, real_dtype)


def _square_eval(name):
    def abstract_eval(x):
        dt = float_inputs(name, [x])
        matrix_shape(name, x, square=True)
        return (tuple(x[0]), dt)
    return abstract_eval


def _linalg_op(name, impl, abstract_eval, vjp, generic, doc, **kw):
    return register(Op(name, lapack_errors(name, impl), abstract_eval, vjp, dtypes=LINALG_DTYPES,
                       generic=lapack_errors(name, generic, generic=True), doc=doc, **kw))


# ---- inv -------------------------------------------------------------------------------------
def _inv_vjp(g, out, x):
    t = mT(out)
    return (-matmul(matmul(t, g), t),)


inv_op = _linalg_op("inv", np.linalg.inv, _square_eval("inv"), _inv_vjp,
                    lambda be, x: be.xp.linalg.inv(x),
                    "Inverse of (a stack of) square matrices.", n_inputs=1)
declare(inv_op, onnx=None, fold_cost="contraction")


# ---- det, slogdet ------------------------------------------------------------------------------
def _det_eval(x):
    dt = float_inputs("det", [x])
    batch, _, _ = matrix_shape("det", x, square=True)
    return (batch, dt)


def _det_vjp(g, out, x):
    scale = shape_ops.expand_dims(shape_ops.expand_dims(g * out, -1), -1)
    return (scale * mT(inv(x)),)


det_op = _linalg_op("det", np.linalg.det, _det_eval, _det_vjp,
                    lambda be, x: be.xp.linalg.det(x),
                    "Determinant of (a stack of) square matrices.", n_inputs=1)
declare(det_op, onnx=("node", "Det"), fold_cost="factorization")


def _slogdet_eval(x):
    dt = float_inputs("slogdet", [x])
    batch, _, _ = matrix_shape("slogdet", x, square=True)
    return ((batch, dt), (batch, real_dtype(dt)))


def _slogdet_impl(x):
    sign, logabs = np.linalg.slogdet(x)
    return np.asarray(sign), np.asarray(logabs)


def _slogdet_generic(be, x):
    sign, logabs = be.xp.linalg.slogdet(x)
    return sign, logabs


def _slogdet_vjp(g, out, x):
    # The sign is piecewise constant: no gradient from it.
    scale = shape_ops.expand_dims(shape_ops.expand_dims(g[1], -1), -1)
    return (scale * mT(inv(x)),)


slogdet_op = _linalg_op("slogdet", _slogdet_impl, _slogdet_eval, _slogdet_vjp, _slogdet_generic,
                        "Sign and log of the absolute determinant (two results).",
                        n_inputs=1, multiple_results=True)
declare(slogdet_op, onnx=None, fold_cost="factorization")


# ---- solve -------------------------------------------------------------------------------------
def _solve_eval(a, b):
    dt = float_inputs("solve", [a, b])
    batch_a, m, _ = matrix_shape("solve", a, square=True)
    if len(b[0]) < 2:
        raise ShapeError(f"solve: the op takes a (stack of) matrix right-hand side, got "
                         f"{describe_inputs([a, b])}")
    batch_b, mb, k = tuple(b[0][:-2]), b[0][-2], b[0][-1]
    if None not in (m, mb) and m != mb:
        raise ShapeError(f"solve: {m} equations but a right-hand side of {mb} rows: "
                         f"{describe_inputs([a, b])}")
    return (broadcast_shapes(batch_a, batch_b, op_name="solve") + (m, k), dt)


def _solve_impl(a, b):
    return np.linalg.solve(a, b)


def _solve_generic(be, a, b):
    return be.xp.linalg.solve(*be.promote(a, b))


def _solve_vjp(g, out, a, b, needs=(True, True)):
    gb = solve_matrix(mT(a), g)
    ga = -matmul(gb, mT(out)) if needs[0] else None
    return (None if ga is None else unbroadcast(ga, a.shape),
            unbroadcast(gb, b.shape) if needs[1] else None)


solve_op = _linalg_op("solve", _solve_impl, _solve_eval, _solve_vjp, _solve_generic,
                      "Solve ``A X = B`` for stacks of square ``A`` and matrices ``B``.",
                      n_inputs=2, vjp_needs=True)
declare(solve_op, onnx=None, fold_cost="contraction")


# ---- cholesky ------------------------------------------------------------------------------------
def _cholesky_vjp(g, out, x):
    n = x.shape[-1]
    lt = mT(out)
    p = phi_mask(n, g.dtype) * matmul(lt, g)
    y = solve_matrix(lt, p)                     # L^-T Phi(L^T gL)
    s = mT(solve_matrix(lt, mT(y)))             # ... L^-1
    return (phi_mask(n, g.dtype) * (s + mT(s)),)


cholesky_op = _linalg_op("cholesky", lambda x: np.linalg.cholesky(x), _square_eval("cholesky"),
                         _cholesky_vjp, lambda be, x: be.xp.linalg.cholesky(x),
                         "Lower Cholesky factor of (a stack of) symmetric positive-definite "
                         "matrices (the lower triangle is read).", n_inputs=1)
declare(cholesky_op, onnx=None, fold_cost="contraction")


# ---- pinv ------------------------------------------------------------------------------------------
def _pinv_eval(x, *, rcond):
    dt = float_inputs("pinv", [x])
    batch, m, n = matrix_shape("pinv", x)
    if isinstance(rcond, tuple):   # one cutoff per matrix: it broadcasts against the stack
        cutoffs = np.shape(rcond)
        try:
            broadcast_shapes(cutoffs, batch, op_name="pinv")
        except ShapeError:
            raise ShapeError(f"pinv: cutoffs of shape {cutoffs} do not broadcast against the "
                             f"stack of {describe_inputs([x])}") from None
    return (batch + (n, m), dt)


def _pinv_impl(x, *, rcond):
    return np.linalg.pinv(x, rcond=np.asarray(rcond) if isinstance(rcond, tuple) else rcond)


def _pinv_generic(be, x, *, rcond):
    if isinstance(rcond, tuple):
        rcond = be.asarray(np.asarray(rcond, dtype=real_dtype(be.dtype_of(x))))
    return be.xp.linalg.pinv(x, rtol=rcond)


def _pinv_vjp(g, out, x, *, rcond):
    # d A+ = -A+ dA A+ + A+ A+^T dA^T (I - A A+) + (I - A+ A) dA^T A+^T A+ (constant rank).
    p, pt = out, mT(out)
    gt = mT(g)
    term1 = -matmul(matmul(pt, g), pt)
    term2 = matmul(gt, matmul(p, pt)) - matmul(matmul(x, p), matmul(gt, matmul(p, pt)))
    term3 = matmul(matmul(pt, p), gt) - matmul(matmul(matmul(pt, p), gt), matmul(p, x))
    return (term1 + term2 + term3,)


pinv_op = _linalg_op("pinv", _pinv_impl, _pinv_eval, _pinv_vjp, _pinv_generic,
                     "Moore-Penrose pseudo-inverse (singular values below ``rcond`` times the "
                     "largest are dropped; ``rcond`` a float, or nested tuples of one cutoff "
                     "per matrix).", n_inputs=1)
declare(pinv_op, onnx=None, fold_cost="contraction")


# ---- entry points the gradients use (the public ones are in engine.linalg) -------------------
inv = call(inv_op)
solve_matrix = call(solve_op)   # A^-1 B for a (stack of) matrix B


__all__ = []


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
# Each works on the last two axes of a stack of matrices, so a vmap batch is one more stack axis.
# inv's tangent is -X dA X; the others' tangents are declared below.
declare(inv_op, jvp=lambda primals, tangents, out: -matmul(matmul(out, tangents[0]), out))
for _op in (inv_op, det_op, slogdet_op, cholesky_op, pinv_op):
    declare(_op, batch=_rules.batch_over_leading_axes(_op))


# Tangents by the standard closed forms (the transposes of the VJPs above).
def _det_jvp(primals, tangents, out):
    # d det(A) = det(A) tr(A^-1 dA)
    return out * _trace_of_inverse_times(primals[0], tangents[0])


def _trace_of_inverse_times(a, t):
    """tr(A^-1 T) over the last two axes, as the sum of A^-T * T."""
    return (mT(inv(a)) * t).sum(axis=(-2, -1))


def _slogdet_jvp(primals, tangents, out):
    # The sign is piecewise constant; d log|det A| = tr(A^-1 dA).
    return None, _trace_of_inverse_times(primals[0], tangents[0])


def _solve_jvp(primals, tangents, out):
    # X = A^-1 B: dX = A^-1 (dB - dA X)
    (a, _), (ta, tb) = primals, tangents
    rhs = None if ta is None else -matmul(ta, out)
    if tb is not None:
        rhs = tb if rhs is None else rhs + tb
    return solve_matrix(a, rhs)


def _cholesky_jvp(primals, tangents, out):
    # A = L L^T with the lower triangle of A read: dA is that triangle made symmetric;
    # dL = L Phi(L^-1 dA L^-T) (Murray 2016).
    t = tangents[0]
    lower = phi_mask(t.shape[-1], t.dtype) * t
    sym = lower + mT(lower)
    y = solve_matrix(out, sym)                    # L^-1 dA
    z = mT(solve_matrix(out, mT(y)))              # ... L^-T
    return matmul(out, phi_mask(t.shape[-1], t.dtype) * z)


def _pinv_jvp(primals, tangents, out, *, rcond):
    # d A+ = -A+ dA A+ + A+ A+^T dA^T (I - A A+) + (I - A+ A) dA^T A+^T A+ (constant rank)
    (x,), (t,) = primals, tangents
    p, pt, tt = out, mT(out), mT(t)
    term1 = -matmul(matmul(p, t), p)
    ppt_tt = matmul(matmul(p, pt), tt)
    term2 = ppt_tt - matmul(ppt_tt, matmul(x, p))
    tt_ptp = matmul(tt, matmul(pt, p))
    term3 = tt_ptp - matmul(matmul(p, x), tt_ptp)
    return term1 + term2 + term3


declare(det_op, jvp=_det_jvp)
declare(slogdet_op, jvp=_slogdet_jvp)
declare(solve_op, jvp=_solve_jvp)
declare(cholesky_op, jvp=_cholesky_jvp)
declare(pinv_op, jvp=_pinv_jvp)


def _solve_batch(size, args, dims):
    # numpy's solve broadcasts the stack axes: the batch axis goes first in each batched
    # operand, after singleton axes that give both the same stack rank (an unbatched
    # operand then broadcasts over the batch by itself).
    rank = max(a.ndim - (d is not None) for a, d in zip(args, dims)) - 2
    out = []
    for a, d in zip(args, dims):
        if d is not None:
            a = _rules.move_to_front(a, d)
            missing = rank - (a.ndim - 3)
            if missing:
                a = shape_ops.reshape(a, (size,) + (1,) * missing + tuple(a.shape[1:]))
        out.append(a)
    return solve_matrix(*out), 0


declare(solve_op, batch=_solve_batch)
