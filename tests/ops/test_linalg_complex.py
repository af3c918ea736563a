"""Linear algebra on complex matrices (numpy's complex LAPACK routines), norms of
complex inputs, and the standard's per-matrix ``rtol`` of ``pinv``, against numpy."""
import warnings

import numpy as np
import pytest

import engine as en

LA = en.linalg


def _complex(shape, dtype="complex128", seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def _hermitian_pd(n, dtype="complex128"):
    a = _complex((n, n), dtype)
    return (a @ a.conj().T + n * np.eye(n)).astype(dtype)


def _close(got, want, dtype):
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4 if dtype == "complex64" else 1e-10,
                               atol=1e-5 if dtype == "complex64" else 1e-12)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_factorizations_and_inverses_match_numpy(dtype):
    a = _complex((2, 3, 3), dtype)
    b = _complex((2, 3, 2), dtype, seed=1)
    _close(LA.det(en.tensor(a)), np.linalg.det(a), dtype)
    _close(LA.inv(en.tensor(a)), np.linalg.inv(a), dtype)
    _close(LA.solve(en.tensor(a), en.tensor(b)), np.linalg.solve(a, b), dtype)
    sign, logabs = LA.slogdet(en.tensor(a))
    want_sign, want_logabs = np.linalg.slogdet(a)
    _close(sign, want_sign, dtype)
    _close(logabs, want_logabs, dtype)           # real: float32 for complex64
    _close(LA.pinv(en.tensor(a)), np.linalg.pinv(a), dtype)
    h = _hermitian_pd(3, dtype)
    _close(LA.cholesky(en.tensor(h)), np.linalg.cholesky(h), dtype)
    _close(LA.cholesky(en.tensor(h), upper=True), np.linalg.cholesky(h, upper=True), dtype)
    w, v = LA.eigh(en.tensor(h))
    _close(w, np.linalg.eigh(h)[0], dtype)
    recon = (v.numpy() * w.numpy()[None, :]) @ v.numpy().conj().T   # V diag(w) V^H
    np.testing.assert_allclose(recon, h, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_svd_qr_and_rank_match_numpy(dtype):
    a = _complex((4, 3), dtype)
    u, s, vh = LA.svd(en.tensor(a), full_matrices=False)
    _close(s, np.linalg.svd(a)[1], dtype)       # singular values are real
    recon = (u.numpy() * s.numpy()[None, :]) @ vh.numpy()
    np.testing.assert_allclose(recon, a, rtol=1e-4, atol=1e-4)
    _close(LA.svdvals(en.tensor(a)), np.linalg.svd(a, compute_uv=False), dtype)
    q, r = LA.qr(en.tensor(a))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, rtol=1e-4, atol=1e-4)
    assert q.dtype == r.dtype == np.dtype(dtype)
    low = a[:, :2] @ _complex((2, 3), dtype, seed=2)     # rank 2
    assert int(LA.matrix_rank(en.tensor(low))) == np.linalg.matrix_rank(low) == 2


def test_complex_eigh_of_the_upper_triangle_is_refused_not_conjugated():
    with pytest.raises(en.DomainError, match="UPLO='U'"):
        LA.eigh(en.tensor(_hermitian_pd(2)), UPLO="U")


def test_complex_linalg_refuses_a_gradient():
    with pytest.raises(en.NotDifferentiableError):
        en.grad(lambda x: en.sum(en.abs(LA.det(en.cast(x, "complex128")))))(en.eye(2))


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms_of_complex_matrices_are_numpys(ord):
    z = _complex((3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)   # no imaginary part dropped
        got = LA.norm(en.tensor(z), ord=ord)
    np.testing.assert_allclose(got.numpy(), np.linalg.norm(z, ord=ord), rtol=1e-12)


@pytest.mark.parametrize("ord", [2, 1, 0, 3, np.inf, -np.inf])
def test_vector_norms_of_complex_vectors_are_numpys(ord):
    z = _complex((3, 4))
    got = LA.vector_norm(en.tensor(z), ord=ord, axis=1)
    np.testing.assert_allclose(got.numpy(), np.linalg.vector_norm(z, ord=ord, axis=1), rtol=1e-12)
    assert LA.vector_norm(en.tensor(z.astype("complex64"))).dtype == np.float32
    assert float(LA.vector_norm(en.tensor(np.array([3 + 4j])))) == 5.0


def test_pinv_takes_one_cutoff_per_matrix():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3, 3))
    rtol = np.array([0.1, 0.9])
    want = np.linalg.pinv(a, rcond=rtol)
    for cut in (rtol, en.tensor(rtol)):
        np.testing.assert_allclose(LA.pinv(en.tensor(a), rtol=cut).numpy(), want, rtol=1e-12)
    traced = en.function(lambda x: LA.pinv(x, rtol=rtol))
    np.testing.assert_allclose(traced(en.tensor(a)).numpy(), want, rtol=1e-12)
    assert LA.pinv(en.zeros((0, 2, 2)), rtol=en.zeros((0,), dtype="float32")).shape == (0, 2, 2)
    with pytest.raises(en.ShapeError, match="broadcast"):
        LA.pinv(en.tensor(a), rtol=np.array([0.1, 0.2, 0.3]))


def test_vecdot_and_vdot_conjugate_their_first_complex_argument():
    a, b = _complex((3, 4)), _complex((4,), seed=1)
    np.testing.assert_allclose(en.vecdot(en.tensor(a), en.tensor(b)).numpy(), np.vecdot(a, b),
                               rtol=1e-12)
    np.testing.assert_allclose(complex(en.vdot(en.tensor(a[0]), en.tensor(b))),
                               np.vdot(a[0], b), rtol=1e-12)
    x1, x2 = np.array([1j, 2j, 3j]), np.array([1, 2j, 3])     # the standard's own example
    assert complex(en.linalg.vecdot(en.tensor(x1), en.tensor(x2))) == 4 - 10j
    r = np.arange(4.0)
    assert float(en.vecdot(en.tensor(r), en.tensor(r))) == 14.0   # real: unchanged
