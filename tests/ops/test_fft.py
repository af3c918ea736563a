"""engine.fft and the complex parts beyond the op database: numpy's dtypes and values
over norms, lengths and axes, tracing, the errors, the Array API signatures, and
gradients through complex values (JAX's convention) against finite differences of
numpy, in reverse and forward mode, of order 1 and 2."""
import numpy as np
import pytest

import engine as en
import engine.array_api as xp

FFT = en.fft


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "bool",
                                   "complex64", "complex128"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("kw", [{}, dict(n=5), dict(n=12, axis=0), dict(norm="ortho"),
                                dict(norm="forward", n=7, axis=-2)])
def test_one_axis_transforms_match_numpy_dtypes_and_values(name, dtype, kw):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8)) * 2
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal((3, 8))
    x = x.astype(dtype)
    fn = getattr(np.fft, name)
    try:
        want = fn(x, **kw)
    except TypeError:          # numpy's rfft/ihfft refuse complex input
        with pytest.raises(en.DTypeError, match="rfft|ihfft"):
            getattr(FFT, name)(en.tensor(x), **kw)
        return
    got = getattr(FFT, name)(en.tensor(x), **kw)
    traced = en.function(lambda t: getattr(FFT, name)(t, **kw))(en.tensor(x))
    for g in (got, traced):
        assert g.dtype == want.dtype and g.shape == want.shape
        tol = 2e-3 if dtype == "float16" else 1e-5 if dtype in ("float32", "complex64") else 1e-12
        np.testing.assert_allclose(g.numpy(), want, rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2",
                                  "rfft2", "irfft2"])
@pytest.mark.parametrize("kw", [{}, dict(axes=(0, 2)), dict(s=(5, 3), axes=(2, 0), norm="ortho"),
                                dict(s=(4, 6), axes=(-2, -1), norm="forward")])
def test_many_axes_transforms_match_numpy(name, kw):
    x = np.random.default_rng(1).standard_normal((4, 5, 6))
    want = getattr(np.fft, name)(x, **kw)
    got = getattr(FFT, name)(en.tensor(x), **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


def test_parts_follow_numpy_on_real_and_complex_input():
    z = np.array([1 + 2j, -3 - 0.5j], dtype=np.complex64)
    for fn, ref in ((en.real, np.real), (en.imag, np.imag), (en.conj, np.conj),
                    (en.conjugate, np.conjugate)):
        for x in (z, np.array([1.5, -2.0]), np.array([1, 2], dtype=np.int32),
                  np.array([True, False])):
            got, want = fn(en.tensor(x)), ref(x)
            assert got.dtype == want.dtype, (fn, x.dtype)
            np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: FFT.fft(x, axis=2), en.ShapeError, "fft: axis 2 is out of range"),
    (lambda x: FFT.fft(x, n=0), en.ShapeError, "fft: the number of data points"),
    (lambda x: FFT.rfft(x, n=True), en.ShapeError, "rfft: the number of data points"),
    (lambda x: FFT.ifft(x, norm="sideways"), en.DomainError, "ifft: norm must be one of"),
    (lambda x: FFT.fftn(x, s=(2, 3), axes=(0,)), en.ShapeError, "differ in length"),
    (lambda x: FFT.fftn(x, axes=(1, -1)), en.ShapeError, "distinct axes"),
    (lambda x: FFT.rfft(x + 1j), en.DTypeError, "rfft: expected a real"),
    (lambda x: FFT.ihfft(x * 1j), en.DTypeError, "ihfft: expected a real"),
    (lambda x: FFT.irfft(x[:, :1]), en.ShapeError, "irfft: invalid number of data points 0"),
    (lambda x: FFT.fft(x[0, 0]), en.ShapeError, "fft: axis -1 is out of range"),
])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_bad_input_raises_engine_errors_naming_the_function(call, error, match, graph):
    f = en.function(call) if graph else call
    with pytest.raises(error, match=match) as info:
        f(en.tensor(np.ones((3, 4))))
    assert "test_fft.py" in str(info.value)          # the user's line


def test_array_api_namespace_has_the_standard_signatures():
    x = en.tensor(np.arange(8.0))
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
        got = getattr(xp.fft, name)(x, n=6, axis=0, norm="ortho")
        np.testing.assert_allclose(got.numpy(), getattr(np.fft, name)(x.numpy(), n=6, axis=0,
                                                                        norm="ortho"))
    m = en.tensor(np.arange(12.0).reshape(3, 4))
    for name in ("fftn", "ifftn", "rfftn", "irfftn"):
        got = getattr(xp.fft, name)(m, s=(3, 4), axes=(0, 1), norm="forward")
        np.testing.assert_allclose(got.numpy(), getattr(np.fft, name)(m.numpy(), s=(3, 4),
                                                                        axes=(0, 1),
                                                                        norm="forward"))
    assert xp.real(x * 1j).tolist() == [0.0] * 8 and xp.conj(x).dtype == x.dtype
    assert x.__array_namespace__().fft.rfft(x).shape == (5,)


# ---- gradients through complex values ----------------------------------------------------------
def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


_W = np.random.default_rng(2).standard_normal(5) + 1j * np.random.default_rng(3).standard_normal(5)

# (engine loss, numpy loss, input shape): real -> complex -> real chains
LOSSES = {
    "irfft(rfft(x) * w)": (lambda x, m: m.sum(m.fft.irfft(m.fft.rfft(x) * _W.real, n=8) ** 2),
                           (8,)),
    "irfft(rfft(x) * complex w), odd n": (
        lambda x, m: m.sum(m.sin(m.fft.irfft(m.fft.rfft(x) * _W, n=9))), (9,)),
    "real(fft(x)) ** 2": (lambda x, m: m.sum(m.real(m.fft.fft(x)) ** 2), (3, 6)),
    "imag(fft(x, n, axis, ortho)) ** 3": (
        lambda x, m: m.sum(m.imag(m.fft.fft(x, n=7, axis=0, norm="ortho")) ** 3), (4, 3)),
    "conj(ifft) * fft": (lambda x, m: m.sum(m.real(m.conj(m.fft.ifft(x * 1.5, n=3))
                                                   * m.fft.fft(x, n=3))), (2, 5)),
    "irfftn(rfftn(x)) * x": (lambda x, m: m.sum(m.fft.irfftn(m.fft.rfftn(x, axes=(0, 1)) * 2.0,
                                                             s=(4, 5), axes=(0, 1)) * x[:, :5]),
                             (4, 6)),
    "fft2 forward * fft2": (lambda x, m: m.sum(m.real(m.fft.fft2(x, norm="forward")
                                                      * m.fft.fft2(x))), (3, 4)),
    "hfft": (lambda x, m: m.sum(m.fft.hfft(x, n=6) ** 2), (4,)),
    "ihfft": (lambda x, m: m.sum(m.imag(m.fft.ihfft(x)) * m.real(m.fft.ihfft(x))), (7,)),
    "abs(fft(x)) ** 2 (power spectrum)": (lambda x, m: m.sum(m.abs(m.fft.fft(x)) ** 2), (6,)),
    "sqrt(abs(rfft) + 1)": (lambda x, m: m.sum(m.sqrt(m.abs(m.fft.rfft(x, axis=0)) + 1.0)),
                            (5, 2)),
}


class _NP:
    """numpy spelled as the engine (``m.fft.rfft``, ``m.real``) for the references."""
    fft = np.fft
    sum, sin, sqrt, abs, real, imag, conj = (np.sum, np.sin, np.sqrt, np.abs, np.real,
                                             np.imag, np.conj)


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_gradient_through_complex_values_matches_finite_differences(name, graph):
    loss, shape = LOSSES[name]
    x = np.random.default_rng(4).standard_normal(shape)
    grad = en.grad(lambda t: loss(t, en))
    got = (en.function(grad) if graph else grad)(en.tensor(x))
    np.testing.assert_allclose(got.numpy(), _fd(lambda a: loss(a, _NP), x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["irfft(rfft(x) * complex w), odd n", "real(fft(x)) ** 2",
                                  "sqrt(abs(rfft) + 1)", "irfftn(rfftn(x)) * x"])
def test_second_order_and_forward_mode_through_complex_values(name):
    loss, shape = LOSSES[name]
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal(shape), rng.standard_normal(shape)
    grad = en.grad(lambda t: loss(t, en))
    hv = en.grad(lambda t: en.sum(grad(t) * v))(en.tensor(x)).numpy()
    hv_fd = (grad(en.tensor(x + 1e-5 * v)).numpy() - grad(en.tensor(x - 1e-5 * v)).numpy()) / 2e-5
    np.testing.assert_allclose(hv, hv_fd, rtol=1e-4, atol=1e-5)
    _, tangent = en.jvp(lambda t: loss(t, en), (en.tensor(x),), (en.tensor(v),))
    fd = (loss(x + 1e-6 * v, _NP) - loss(x - 1e-6 * v, _NP)) / 2e-6
    np.testing.assert_allclose(float(tangent), fd, rtol=1e-5, atol=1e-6)


def test_vmap_of_transforms_and_of_their_gradients():
    X = np.random.default_rng(6).standard_normal((4, 6))
    got = en.vmap(lambda r: FFT.fft(r, axis=0), in_axes=1)(en.tensor(X))
    np.testing.assert_allclose(got.numpy(), np.fft.fft(X, axis=0).T, rtol=1e-12)
    per_example = en.vmap(en.grad(lambda r: en.sum(en.abs(FFT.rfft(r)) ** 2)))(en.tensor(X))
    # d/dx sum |rfft(x)|^2 by finite differences, row by row
    want = np.stack([_fd(lambda a: np.sum(np.abs(np.fft.rfft(a)) ** 2), r) for r in X])
    np.testing.assert_allclose(per_example.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss, op", [
    (lambda t: en.sum(en.real(en.sin(FFT.fft(t)))), "sin"),
    (lambda t: en.sum(en.real(FFT.fft(t) ** 3.0)), "pow"),
    (lambda t: en.sum(en.real(en.sign(FFT.fft(t)))), "sign"),
])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_an_op_without_a_complex_gradient_refuses_naming_itself(loss, op, mode):
    # Its real-valued VJP would be silently wrong on complex values.
    x = en.tensor(np.arange(4.0))
    with pytest.raises(en.NotDifferentiableError, match=f"^{op}: a gradient was requested "
                                                        "through complex values"):
        if mode == "grad":
            en.grad(loss)(x)
        else:
            en.jvp(loss, (x,), (en.ones_like(x),))
