"""Op-database entries for einsum, tensordot and the products, for ``engine.linalg``,
and for the real helpers of ``engine.fft``:
numpy references, samples (well-conditioned, symmetric positive-definite where the
op needs it, distinct eigen- and singular values for the spectral gradients),
error inputs; the suites check values, shape rules, gradients of order 1 and 2
against finite differences, and the array_api_strict back end."""
import warnings

import numpy as np

import engine as en

from op_db.core import (ALL, F32, F64, FLOATS, I32, I64, NUMERIC, ErrorInput, OpInfo, Sample, add,
                        composite, make, make_distinct, make_nonzero, op_dtypes)


LA = en.linalg


def _small(rng, shape, dtype):
    return make(rng, shape, dtype, -1.0, 1.0)


def well_conditioned(rng, shape, dtype):
    """Random matrices plus a multiple of the identity (condition numbers near 1-3)."""
    a = rng.uniform(-1, 1, size=shape)
    n = shape[-1]
    if len(shape) >= 2 and shape[-2] == n:
        a = a + (n + 1.0) * np.eye(n)
    return a.astype(dtype)


def spd(rng, shape, dtype):
    m = rng.uniform(-1, 1, size=shape)
    n = shape[-1]
    return (m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype)


def symmetric_distinct(rng, shape, dtype):
    """Symmetric matrices with eigenvalues at least 0.5 apart."""
    n = shape[-1]
    q, _ = np.linalg.qr(rng.standard_normal(shape))
    w = np.arange(n) * 1.0 - n / 2 + rng.uniform(0, 0.3, size=shape[:-1])
    return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(dtype)


def full_rank(rng, shape, dtype):
    """Matrices with distinct singular values in [1, 1 + k]."""
    m, n = shape[-2:]
    k = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, k)))
    v, _ = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, k)))
    s = 1.0 + np.arange(k)[::-1] + rng.uniform(0, 0.3, size=shape[:-2] + (k,))
    return ((u * s[..., None, :]) @ np.swapaxes(v, -1, -2)).astype(dtype)


def _float(dtype):
    return dtype if dtype in FLOATS else F64


def _samples(cases):
    """``(maker, shapes, kwargs)`` cases -> samples (one array per shape)."""
    def gen(dtype, rng):
        for maker, shapes, kwargs in cases:
            yield Sample(tuple(maker(rng, s, dtype) for s in shapes), dict(kwargs))
    return gen


def _not_square():
    return [ErrorInput(Sample((np.ones((2, 3)),)), en.ShapeError),
            ErrorInput(Sample((np.ones(3),)), en.ShapeError)]


# ---- einsum -----------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(3, 2), (2, 3)]), ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]), ("ii", [(4, 4)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]),
    ("i,i->", [(5,), (5,)]), ("i,j->ij", [(2,), (3,)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("...i,i", [(2, 3), (3,)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("i,i->i", [(1,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("abc,cd,de,ea->b", [(2, 3, 4), (4, 2), (2, 3),
                                                                   (3, 2)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij,jk->ik", [(0, 3), (3, 2)]), ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("i,i,i->", [(4,), (4,), (4,)]), ("ba,ab->", [(2, 3), (3, 2)]), ("ij,ji->", [(3, 3), (3, 3)]),
    # Large enough for the kernel's batched-matmul path (small ones run np.einsum).
    ("bij,bjk->bik", [(4, 16, 16), (4, 16, 16)]), ("ij,jk->ki", [(32, 16), (16, 32)]),
    ("iij,jk->ik", [(20, 20, 24), (24, 20)]), ("abc,cba->b", [(8, 40, 30), (30, 40, 8)]),
]


def _einsum_samples(dtype, rng):
    for subs, shapes in EINSUM_CASES:
        yield Sample((subs,) + tuple(_small(rng, s, dtype) for s in shapes))
    x, y = _small(rng, (2, 3), dtype), _small(rng, (3, 4), dtype)
    yield Sample((x, [0, 1], y, [1, 2], [0, 2]), desc="sublist form")
    yield Sample(("ij,jk,kl->il", x, y, _small(rng, (4, 2), dtype)), dict(optimize=False),
                 desc="optimize=False: one op")
    yield Sample(("ij,jk,kl->il", x, y, _small(rng, (4, 2), dtype)),
                 dict(optimize=["einsum_path", (1, 2), (0, 1)]), desc="a given path")
    if dtype in NUMERIC:
        other = {F32: I32, F64: F32, I32: I64, I64: I32}[dtype]
        yield Sample(("ij,jk", x, _small(rng, (3, 2), other)), desc=f"promotion with {other}")


def _einsum_ref(*args, optimize=True):
    if not isinstance(args[0], str):
        return np.einsum(*args)
    return np.einsum(*args, optimize=False)


def _einsum_errors():
    two = (np.ones((2, 3)), np.ones((3, 4)))
    return [ErrorInput(Sample(("ij,jk->ik", np.ones((2, 3)))), en.ShapeError),
            ErrorInput(Sample(("ij,kl->ik",) + (np.ones((2, 3)), np.ones((2,)))), en.ShapeError),
            ErrorInput(Sample(("ij,jk->ik", np.ones((2, 3)), np.ones((4, 4)))), en.ShapeError),
            ErrorInput(Sample(("ij,jk->iz",) + two), en.ShapeError),
            ErrorInput(Sample(("ij,jk->ii",) + two), en.ShapeError),
            ErrorInput(Sample(("i1,jk->ik",) + two), en.ShapeError),
            ErrorInput(Sample(("...j,jk->k", np.ones((2, 3)), np.ones((3, 4)))), en.ShapeError),
            ErrorInput(Sample(("ij->i->j", np.ones((2, 3)))), en.ShapeError),
            ErrorInput(Sample(("ij,jk",) + two, dict(optimize="best")), en.ShapeError)]


add(OpInfo("einsum", en.einsum, _einsum_ref, _einsum_samples, op_dtypes("einsum"),
           error_inputs=_einsum_errors))


def _tensordot_samples(dtype, rng):
    for sa, sb, axes in [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
                         ((2, 3, 4), (4, 3, 2), ([1, 2], [1, 0])), ((3, 2), (3, 4), ([0], [0])),
                         ((2, 3), (2, 3), ([0, 1], [0, 1])), ((0, 3), (3, 2), 1),
                         ((2, 3), (3,), (-1, 0))]:
        yield Sample((_small(rng, sa, dtype), _small(rng, sb, dtype)), dict(axes=axes))


composite(OpInfo("tensordot", en.tensordot, lambda a, b, axes=2: np.tensordot(a, b, axes),
                 _tensordot_samples, NUMERIC, error_inputs=lambda: [
                     ErrorInput(Sample((np.ones((2, 3)), np.ones((4, 3))), dict(axes=1)),
                                en.ShapeError, "tensordot"),
                     ErrorInput(Sample((np.ones((2, 3)), np.ones((3,))), dict(axes=3)),
                                en.ShapeError, "tensordot"),
                     ErrorInput(Sample((np.ones((2, 3)), np.ones((3,))),
                                       dict(axes=([0, 1], [0]))), en.ShapeError, "tensordot"),
                     ErrorInput(Sample((np.ones((2, 3)), np.ones((3,))), dict(axes=([5], [0]))),
                                en.ShapeError, "tensordot")]))


def _pairs(cases):
    def gen(dtype, rng):
        for sa, sb, kw in cases:
            yield Sample((_small(rng, sa, dtype), _small(rng, sb, dtype)), dict(kw))
    return gen


composite(OpInfo("kron", en.kron, np.kron, _pairs([
    ((2, 2), (2, 3), {}), ((3,), (2,), {}), ((2, 1, 2), (3, 2), {}), ((), (2,), {}),
    ((0, 2), (2, 2), {})]), NUMERIC))
composite(OpInfo("inner", en.inner, np.inner, _pairs([
    ((3,), (3,), {}), ((2, 3), (4, 3), {}), ((2, 2, 3), (3,), {}), ((), (2, 3), {})]), NUMERIC,
    error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError)]))
composite(OpInfo("vdot", en.vdot, np.vdot, _pairs([
    ((3,), (3,), {}), ((2, 3), (6,), {}), ((2, 2), (2, 2), {})]), NUMERIC,
    error_inputs=lambda: [ErrorInput(Sample((np.ones(3), np.ones(4))), en.ShapeError, "vdot")]))
def _np_cross(a, b, **kw):
    with warnings.catch_warnings():   # numpy 2 deprecates 2-vectors (still computes them)
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.cross(a, b, **kw)


composite(OpInfo("cross", en.cross, _np_cross, _pairs([
    ((3,), (3,), {}), ((4, 3), (4, 3), {}), ((3, 2), (3, 2), dict(axis=0)),
    ((2, 3), (3,), {}), ((5, 3), (1, 3), {}), ((3, 4), (4, 3), dict(axisa=0)),
    ((3, 4), (2, 4), dict(axisa=0, axisb=0, axisc=0)), ((5, 1, 3), (2, 3), dict(axisc=1)),
    ((2, 4, 3), (3, 1, 4), dict(axisb=0, axisc=-2)), ((4, 2), (4, 3), dict(axisc=0)),
    ((2,), (3,), {}), ((2, 2), (2,), {})]), NUMERIC,
    error_inputs=lambda: [ErrorInput(Sample((np.ones(4), np.ones(4))), en.ShapeError, "cross"),
                          ErrorInput(Sample((np.ones(3), np.ones(1))), en.ShapeError, "cross"),
                          ErrorInput(Sample((np.ones(3), np.ones(3)), dict(axisa=1)),
                                     en.ShapeError, "axisa"),
                          ErrorInput(Sample((np.ones(3), np.ones((3, 2))), dict(axisc=3)),
                                     en.ShapeError, "axisc")]))
composite(OpInfo("vecdot", en.vecdot, lambda a, b, axis=-1: np.vecdot(a, b, axis=axis), _pairs([
    ((3,), (3,), {}), ((2, 3), (3,), {}), ((2, 3), (2, 3), dict(axis=0)),
    ((4, 1, 3), (2, 3), {})]), NUMERIC,
    error_inputs=lambda: [ErrorInput(Sample((np.ones((2, 3)), np.ones(4))), en.ShapeError,
                                     "vecdot")]))
composite(OpInfo("matrix_transpose", en.matrix_transpose,
                 lambda x: np.swapaxes(x, -1, -2), _samples([
                     (_small, [(2, 3)], {}), (_small, [(2, 3, 4)], {}), (_small, [(0, 2)], {})]),
                 ALL, error_inputs=lambda: [ErrorInput(Sample((np.ones(3),)), en.ShapeError)]))


# ---- the registered linalg ops ----------------------------------------------------------------
def _square_cases(maker):
    return [(maker, [(3, 3)], {}), (maker, [(2, 4, 4)], {}), (maker, [(1, 1)], {}),
            (maker, [(2, 1, 2, 2)], {})]


def _transposed(maker):
    def gen(rng, shape, dtype):
        return np.ascontiguousarray(maker(rng, shape, dtype)).swapaxes(-1, -2)
    return gen


add(OpInfo("inv", LA.inv, np.linalg.inv,
           _samples(_square_cases(well_conditioned) + [(_transposed(well_conditioned), [(3, 3)],
                                                        {})]),
           op_dtypes("inv"), error_inputs=_not_square))
add(OpInfo("det", LA.det, np.linalg.det, _samples(_square_cases(well_conditioned)),
           op_dtypes("det"), error_inputs=_not_square))
add(OpInfo("slogdet", LA.slogdet, np.linalg.slogdet, _samples(
    _square_cases(well_conditioned) + [(lambda r, s, d: -well_conditioned(r, s, d), [(3, 3)], {})]),
    op_dtypes("slogdet"), error_inputs=_not_square))
add(OpInfo("solve", LA.solve, np.linalg.solve, _samples([
    (well_conditioned, [(3, 3), (3, 2)], {}), (well_conditioned, [(2, 3, 3), (3, 1)], {}),
    (well_conditioned, [(3, 3), (3,)], {}), (well_conditioned, [(2, 4, 4), (5, 1, 4, 3)], {}),
    (well_conditioned, [(2, 2), (2, 2)], {})]), op_dtypes("solve"),
    error_inputs=lambda: [ErrorInput(Sample((np.eye(3), np.ones((4, 2)))), en.ShapeError),
                          ErrorInput(Sample((np.ones((2, 3)), np.ones((2, 2)))), en.ShapeError),
                          ErrorInput(Sample((np.eye(3)[None].repeat(2, 0), np.ones((3, 3, 1)))),
                                     en.ShapeError)]))
add(OpInfo("cholesky", LA.cholesky, lambda x, upper=False: np.linalg.cholesky(x, upper=upper),
           _samples([(spd, [(3, 3)], {}), (spd, [(2, 4, 4)], {}), (spd, [(1, 1)], {}),
                     (spd, [(3, 3)], dict(upper=True))]),
           op_dtypes("cholesky"), error_inputs=_not_square))
_PINV_CASES = [(full_rank, [(4, 3)], {}), (full_rank, [(3, 5)], {}), (full_rank, [(2, 3, 3)], {}),
               (full_rank, [(4, 2)], dict(rcond=1e-10)), (full_rank, [(3, 2)], dict(rtol=None))]


def _pinv_samples(dtype, rng):
    yield from _samples(_PINV_CASES)(dtype, rng)
    a = rng.uniform(-1, 1, size=(4, 2)) @ rng.uniform(-1, 1, size=(2, 3))
    yield Sample((a.astype(dtype),), desc="rank 2 of 3 (no gradient: the rank would change)")


add(OpInfo("pinv", LA.pinv, np.linalg.pinv, _pinv_samples, op_dtypes("pinv"),
           grad_samples=lambda rng: _samples(_PINV_CASES)(F64, rng),
    error_inputs=lambda: [ErrorInput(Sample((np.ones(3),)), en.ShapeError),
                          ErrorInput(Sample((np.ones((2, 2)),), dict(rcond=0.1, rtol=0.1)),
                                     en.DomainError, "pinv")]))


def _qr_samples(dtype, rng):
    for shape, mode in [((4, 3), "reduced"), ((3, 3), "reduced"), ((2, 5, 3), "reduced"),
                        ((3, 5), "reduced"), ((4, 3), "complete"), ((3, 3), "complete")]:
        yield Sample((full_rank(rng, shape, dtype),), dict(mode=mode))


def _qr_grad_samples(rng):
    for sample in _qr_samples(F64, rng):
        if not (sample.kwargs["mode"] == "complete" and sample.args[0].shape[-2] >
                sample.args[0].shape[-1]):
            yield sample


add(OpInfo("qr", LA.qr, lambda x, mode="reduced": np.linalg.qr(x, mode=mode), _qr_samples,
           op_dtypes("qr"), grad_samples=_qr_grad_samples,
           error_inputs=lambda: [ErrorInput(Sample((np.ones(3),)), en.ShapeError),
                                 ErrorInput(Sample((np.ones((2, 2)),), dict(mode="raw")),
                                            en.DomainError, "qr")]))


def _svd_samples(dtype, rng):
    for shape, full in [((4, 3), False), ((3, 3), True), ((2, 3, 5), False), ((3, 4), True),
                        ((1, 3), False)]:
        yield Sample((full_rank(rng, shape, dtype),), dict(full_matrices=full))


def _svd_grad_samples(rng):
    for sample in _svd_samples(F64, rng):
        m, n = sample.args[0].shape[-2:]
        if m == n or not sample.kwargs["full_matrices"]:
            yield sample


add(OpInfo("svd", LA.svd, lambda x, full_matrices=True: np.linalg.svd(x, full_matrices),
           _svd_samples, op_dtypes("svd"), grad_samples=_svd_grad_samples,
           error_inputs=lambda: [ErrorInput(Sample((np.ones(3),)), en.ShapeError)]))
add(OpInfo("eigh", LA.eigh, lambda x, UPLO="L": np.linalg.eigh(x, UPLO=UPLO), _samples([
    (symmetric_distinct, [(3, 3)], {}), (symmetric_distinct, [(2, 4, 4)], {}),
    (symmetric_distinct, [(1, 1)], {}),
    (lambda r, s, d: np.tril(symmetric_distinct(r, s, d)), [(3, 3)], {})]),
    op_dtypes("eigh"), error_inputs=lambda: _not_square() + [
        ErrorInput(Sample((np.eye(2),), dict(UPLO="X")), en.DomainError)]))


# ---- linalg composites ----------------------------------------------------------------------
def _linalg_composite(name, ref, cases, errors=None, **kw):
    fn = getattr(LA, name)
    if name == "multi_dot":   # the samples hold the matrices one by one
        fn = lambda *xs: LA.multi_dot(list(xs))  # noqa: E731
    composite(OpInfo(f"linalg.{name}", fn, ref, _samples(cases), FLOATS,
                     error_inputs=errors or (lambda: []), **kw))


_linalg_composite("svdvals", np.linalg.svdvals, [
    (full_rank, [(4, 3)], {}), (full_rank, [(2, 3, 5)], {}), (full_rank, [(3, 3)], {})])
_linalg_composite("eigvalsh", np.linalg.eigvalsh, [
    (symmetric_distinct, [(3, 3)], {}), (symmetric_distinct, [(2, 4, 4)], {})])
_linalg_composite("matrix_power", np.linalg.matrix_power, [
    (well_conditioned, [(3, 3)], dict(n=3)), (well_conditioned, [(2, 2, 2)], dict(n=5)),
    (well_conditioned, [(3, 3)], dict(n=0)), (well_conditioned, [(3, 3)], dict(n=-2)),
    (well_conditioned, [(3, 3)], dict(n=1))],
    lambda: [ErrorInput(Sample((np.ones((2, 3)),), dict(n=2)), en.ShapeError, "matrix_power"),
             ErrorInput(Sample((np.eye(2),), dict(n=1.5)), en.DomainError, "matrix_power")])
_linalg_composite("trace", lambda x, offset=0: np.linalg.trace(x, offset=offset), [
    (_small, [(3, 3)], {}), (_small, [(2, 3, 4)], dict(offset=1)),
    (_small, [(4, 3)], dict(offset=-2)), (_small, [(2, 3)], dict(offset=5))],
    lambda: [ErrorInput(Sample((np.ones(3),)), en.ShapeError, "diagonal")])
_linalg_composite("diagonal", lambda x, offset=0: np.linalg.diagonal(x, offset=offset), [
    (_small, [(3, 3)], {}), (_small, [(2, 3, 4)], dict(offset=1)),
    (_small, [(4, 3)], dict(offset=-1))])
_linalg_composite("multi_dot", lambda *xs: np.linalg.multi_dot(xs),
                  [(_small, [(3,), (3, 4), (4, 2)], {}), (_small, [(2, 3), (3, 4), (4, 5), (5,)], {}),
                   (_small, [(2, 3), (3, 2)], {})])
_linalg_composite("vector_norm",
                  lambda x, axis=None, keepdims=False, ord=2:
                  np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord), [
                      (make_nonzero, [(5,)], {}), (make_nonzero, [(2, 3)], dict(axis=1)),
                      (make_nonzero, [(2, 3, 2)], dict(axis=(0, 2), keepdims=True)),
                      (make_distinct, [(2, 3)], dict(ord=np.inf)),
                      (make_distinct, [(2, 3)], dict(ord=-np.inf, axis=0)),
                      (make_nonzero, [(4,)], dict(ord=1)), (make_nonzero, [(4,)], dict(ord=3)),
                      (make_nonzero, [(2, 2)], dict(ord=0.5))],
                  lambda: [ErrorInput(Sample((np.ones(3),), dict(ord="fro")), en.DomainError,
                                      "vector_norm")])
_linalg_composite("matrix_norm",
                  lambda x, keepdims=False, ord="fro":
                  np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord), [
                      (full_rank, [(3, 4)], {}), (full_rank, [(2, 3, 3)], dict(ord="nuc")),
                      (full_rank, [(3, 4)], dict(ord=2)), (full_rank, [(4, 3)], dict(ord=-2)),
                      (make_distinct, [(3, 4)], dict(ord=1)),
                      (make_distinct, [(3, 4)], dict(ord=-1, keepdims=True)),
                      (make_distinct, [(3, 4)], dict(ord=np.inf)),
                      (make_distinct, [(3, 4)], dict(ord=-np.inf))],
                  lambda: [ErrorInput(Sample((np.ones((2, 2)),), dict(ord=3)), en.DomainError,
                                      "matrix_norm"),
                           ErrorInput(Sample((np.ones(2),)), en.ShapeError, "matrix_norm")])
_linalg_composite("norm", lambda x, ord=None, axis=None, keepdims=False:
                  np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims), [
                      (make_nonzero, [(2, 3)], {}), (make_nonzero, [(2, 3, 2)], {}),
                      (make_nonzero, [(2, 3)], dict(keepdims=True)),
                      (make_nonzero, [(4,)], dict(ord=1)),
                      (full_rank, [(3, 3)], dict(ord="nuc")), (full_rank, [(3, 4)], dict(ord=2)),
                      (make_distinct, [(3, 4)], dict(ord=np.inf)),
                      (make_nonzero, [(2, 3)], dict(axis=1)),
                      (make_distinct, [(2, 3, 4)], dict(axis=(2, 0), ord=1, keepdims=True)),
                      (make_nonzero, [(2, 3)], dict(axis=-1, ord=3))],
                  lambda: [ErrorInput(Sample((np.ones((2, 2, 2)),), dict(ord=1)), en.ShapeError,
                                      "norm"),
                           ErrorInput(Sample((np.ones(3),), dict(ord="fro")), en.DomainError,
                                      "norm"),
                           ErrorInput(Sample((np.ones((2, 2)),), dict(axis=(0, 0))),
                                      en.ShapeError, "norm")])


def _lstsq_ref(a, b, rcond=None):
    return np.linalg.lstsq(a, b, rcond=rcond)


def _lstsq_samples(dtype, rng):
    for sa, sb in [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 3), (3, 2)), ((2, 4), (2,))]:
        yield Sample((full_rank(rng, sa, dtype), _small(rng, sb, dtype)))


composite(OpInfo("linalg.lstsq", LA.lstsq, _lstsq_ref, _lstsq_samples, FLOATS,
                 error_inputs=lambda: [ErrorInput(Sample((np.ones((3, 2)), np.ones(4))),
                                                  en.ShapeError, "lstsq")]))


def _rank_samples(dtype, rng):
    yield Sample((full_rank(rng, (4, 3), dtype),))
    a = rng.uniform(-1, 1, size=(4, 2)) @ rng.uniform(-1, 1, size=(2, 3))
    yield Sample((a.astype(dtype),), desc="rank 2")
    yield Sample((np.zeros((3, 3), dtype),), desc="zero matrix")
    yield Sample((np.array([0.0, 1.0], dtype),), desc="a vector")
    yield Sample((np.stack([full_rank(rng, (3, 3), dtype), np.zeros((3, 3), dtype)]),),
                 desc="a stack")


composite(OpInfo("linalg.matrix_rank", LA.matrix_rank,
                 lambda x: np.asarray(np.linalg.matrix_rank(x)), _rank_samples, FLOATS,
                 supports_grad=False))


# ---- engine.fft: the real helpers ---------------------------------------------------------------
def _freq_samples(dtype, rng):
    for n, d in [(1, 1.0), (4, 1.0), (5, 0.5), (8, 2.0)]:
        yield Sample((), dict(n=n, d=d, dtype=dtype))


def _freq_ref(fn):
    return lambda n, d=1.0, dtype=None: fn(n, d).astype(dtype or F64)


def _freq_errors(name):
    return lambda: [ErrorInput(Sample((), dict(n=0)), en.ShapeError, name),
                    ErrorInput(Sample((), dict(n=2.5)), en.ShapeError, name)]


composite(OpInfo("fft.fftfreq", en.fft.fftfreq, _freq_ref(np.fft.fftfreq), _freq_samples, FLOATS,
                 supports_grad=False, error_inputs=_freq_errors("fftfreq")))
composite(OpInfo("fft.rfftfreq", en.fft.rfftfreq, _freq_ref(np.fft.rfftfreq), _freq_samples,
                 FLOATS, supports_grad=False, error_inputs=_freq_errors("rfftfreq")))

_SHIFT_CASES = [(make, [(5,)], {}), (make, [(6,)], {}), (make, [(5, 6)], {}),
                (make, [(5, 6)], dict(axes=0)), (make, [(3, 4, 5)], dict(axes=(0, 2))),
                (make, [(1, 2)], {}), (make, [(0, 3)], dict(axes=[1]))]
for _name in ("fftshift", "ifftshift"):
    composite(OpInfo(f"fft.{_name}", getattr(en.fft, _name), getattr(np.fft, _name),
                     _samples(_SHIFT_CASES), ALL, error_inputs=lambda n=_name: [
                         ErrorInput(Sample((np.ones(3),), dict(axes=1)), en.ShapeError, n)]))
