"""Inputs numpy (or PyTorch) accepts that the engine used to refuse: a tuple of axes to
``expand_dims``, tensor endpoints of ``linspace``, integer images to ``max_pool2d`` and
nearest ``interpolate``, and the 0-d input of ``argwhere``. Each is checked against numpy
(or a direct numpy computation), eagerly and traced."""
import numpy as np
import pytest

import engine as en

RNG = np.random.default_rng(45)


def _both(fn, *args):
    """``fn`` run eagerly and as an ``en.function``, as numpy arrays."""
    return fn(*args).numpy(), en.function(fn)(*args).numpy()


@pytest.mark.parametrize("axis", [(0, 3), (-1, 0), (1, 2), [0, -1]])
def test_expand_dims_takes_a_tuple_of_axes(axis):
    x = RNG.standard_normal((2, 3))
    want = np.expand_dims(x, axis)
    for got in _both(lambda t: en.expand_dims(t, axis), en.tensor(x)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # numpy's own function on a tensor dispatches to the engine
    assert np.expand_dims(en.tensor(x), axis).shape == want.shape


def test_expand_dims_tuple_gradient_and_vmap():
    x = RNG.standard_normal((2, 3))
    g = en.grad(lambda t: en.sum(en.expand_dims(t, (0, 3)) * 3.0))(en.tensor(x))
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3), 3.0))
    batched = en.vmap(lambda t: en.expand_dims(t, (0, -1)))(en.tensor(x))
    assert batched.shape == (2,) + np.expand_dims(x[0], (0, -1)).shape


@pytest.mark.parametrize("axis", [(0, 0), (0, 3), (1.0,)])
def test_expand_dims_bad_axes_are_clear_errors(axis):
    with pytest.raises(en.ShapeError, match="expand_dims") as info:
        en.expand_dims(en.tensor(np.ones(3)), axis)
    assert __file__ in str(info.value)


@pytest.mark.parametrize("start,stop,num,kw", [
    (0.5, 2.0, 5, {}),
    ([0.0, 1.0], [2.0, 5.0], 4, dict(axis=1)),
    ([0.0, 1.0], 3.0, 1, dict(endpoint=False)),
    ([[-3.0], [1.0]], [2.0, -5.0], 7, dict(dtype="int32")),
    (0.0, [[1.0, 2.0]], 3, dict(axis=-1)),
])
def test_linspace_takes_tensor_endpoints(start, stop, num, kw):
    want = np.linspace(np.asarray(start), np.asarray(stop), num, **kw)
    got = en.linspace(en.tensor(start), en.tensor(stop), num, **kw)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-15, atol=1e-15)
    traced = en.function(lambda a, b: en.linspace(a, b, num, **kw))(en.tensor(start),
                                                                    en.tensor(stop))
    np.testing.assert_allclose(traced.numpy(), want, rtol=1e-15, atol=1e-15)


def test_linspace_keeps_float32_endpoints_and_differentiates():
    got = en.linspace(en.tensor(np.float32(0.0)), 1.0, 3)
    assert got.dtype == np.linspace(np.float32(0.0), 1.0, 3).dtype == np.float32
    # d/da sum(x_i^2) with x_i = a + i (b - a) / (n - 1): the closed form
    a, b, n = 1.0, 3.0, 5
    t = np.arange(n) / (n - 1)
    xs = a + t * (b - a)
    ga, gb = en.grad(lambda a, b: en.sum(en.linspace(a, b, n) ** 2), argnums=(0, 1))(
        en.tensor(a), en.tensor(b))
    np.testing.assert_allclose(float(ga), np.sum(2 * xs * (1 - t)))
    np.testing.assert_allclose(float(gb), np.sum(2 * xs * t))


def _window_max(x, k):
    n, h, w, c = x.shape
    return x[:, :h // k * k, :w // k * k].reshape(n, h // k, k, w // k, k, c).max(axis=(2, 4))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64])
def test_max_pool2d_takes_integers(dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, 6, 4, 3), dtype=dtype, endpoint=True)
    for got in _both(lambda t: en.max_pool2d(t, 2), en.tensor(x)):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, _window_max(x, 2))
    # padding never wins, even against the dtype's smallest values
    low = np.full((1, 3, 3, 1), info.min, dtype)
    np.testing.assert_array_equal(en.max_pool2d(en.tensor(low), 3, 1, padding=1).numpy(), low)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32])
def test_integer_max_pool2d_exports_to_onnx(dtype, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    x = RNG.integers(0, 100, (1, 4, 6, 2)).astype(dtype)
    path = str(tmp_path / "pool.onnx")
    en.export_onnx(en.function(lambda t: en.max_pool2d(t, 2)), path, en.tensor(x))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {sess.get_inputs()[0].name: x})
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _window_max(x, 2))


def test_int64_max_pool2d_export_is_refused_clearly(tmp_path):
    pytest.importorskip("onnx")
    x = en.tensor(np.ones((1, 2, 2, 1), np.int64))
    with pytest.raises(en.EngineError, match="int64"):
        en.export_onnx(en.function(lambda t: en.max_pool2d(t, 2)), str(tmp_path / "p.onnx"), x)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_interpolate_takes_uint8(mode):
    x = RNG.integers(0, 256, (1, 3, 4, 2), dtype=np.uint8)
    exact = mode == "nearest-exact"
    rows = np.minimum(np.floor((np.arange(5) + 0.5 * exact) * 3 / 5), 2).astype(int)
    cols = np.minimum(np.floor((np.arange(7) + 0.5 * exact) * 4 / 7), 3).astype(int)
    want = x[:, rows][:, :, cols]
    for got in _both(lambda t: en.interpolate(t, size=(5, 7), mode=mode), en.tensor(x)):
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)


def test_bilinear_interpolate_of_integers_says_cast():
    with pytest.raises(en.DTypeError, match="bilinear"):
        en.interpolate(en.tensor(np.ones((1, 2, 2, 1), np.uint8)), size=3, mode="bilinear")


@pytest.mark.parametrize("value", [2.5, 0.0, True, 0])
def test_argwhere_of_a_0d_tensor_is_numpys(value):
    want = np.argwhere(np.array(value))
    got = en.argwhere(en.tensor(value))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert en.argwhere(en.tensor(value), size=3).shape == (3, 0)
