"""engine.array_api: the standard's namespace over the engine (the conformance
suite itself runs in CI, see tests/run_array_api_tests.py); these check the
parts the engine adds, against numpy."""
import inspect

import numpy as np
import pytest

import engine as en
import engine.array_api as xp


def test_every_tensor_gives_the_namespace():
    t = en.tensor([1.0, 2.0])
    assert t.__array_namespace__() is xp
    assert t.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="2099.12"):
        t.__array_namespace__(api_version="2099.12")
    assert xp.__array_api_version__ == "2024.12"


def test_results_are_engine_tensors_that_differentiate():
    def loss(x):
        return xp.sum(xp.multiply(xp.sin(x), x), dtype=xp.float64)
    x = np.array([0.3, -1.2, 2.0])
    g = en.grad(loss)(en.tensor(x))
    np.testing.assert_allclose(g.numpy(), np.cos(x) * x + np.sin(x), rtol=1e-12)
    traced = en.function(loss)
    np.testing.assert_allclose(traced(en.tensor(x)).numpy(), np.sum(np.sin(x) * x))


def test_signatures_are_the_standards():
    params = inspect.signature(xp.add).parameters
    assert [p.kind for p in params.values()] == [inspect.Parameter.POSITIONAL_ONLY] * 2
    params = inspect.signature(xp.sum).parameters
    assert params["axis"].kind is inspect.Parameter.KEYWORD_ONLY
    with pytest.raises(TypeError):
        xp.sum(xp.ones(3), 0)   # axis is keyword-only


def test_dtypes_and_their_functions_match_numpy():
    dts = [xp.bool, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32,
           xp.uint64, xp.float32, xp.float64, xp.complex64, xp.complex128]
    for a in dts:
        for b in dts:
            assert xp.result_type(a, b) == np.result_type(a, b)
            assert xp.can_cast(a, b) == np.can_cast(a, b)
    assert xp.result_type(xp.float32, 1.0) == xp.float32
    assert xp.result_type(xp.asarray([1], dtype=xp.int8), 3) == xp.int8
    assert xp.finfo(xp.float32).eps == float(np.finfo(np.float32).eps)
    assert xp.finfo(xp.complex64).dtype == xp.float32
    assert xp.iinfo(xp.int16).min == -2 ** 15
    assert xp.isdtype(xp.uint8, "unsigned integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.complex64, ("bool", "complex floating"))
    with pytest.raises(ValueError, match="unknown kind"):
        xp.isdtype(xp.int8, "integers")


def test_astype_and_copy():
    x = xp.asarray([1.5, -2.5, 3.0])
    assert xp.astype(x, xp.int32).tolist() == [1, -2, 3]
    assert xp.astype(x, xp.float64, copy=False) is x
    assert xp.asarray(x) is x and xp.asarray(x, copy=True) is not x
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    shared = np.zeros(2)
    t = xp.asarray(shared, copy=False)      # numpy's memory itself, as np.asarray
    shared[0] = 5.0
    assert t.tolist() == [5.0, 0.0]
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(np.zeros(2), dtype=xp.float32, copy=False)
    frozen = np.zeros(2)
    frozen.flags.writeable = False
    assert xp.asarray(frozen, copy=False).tolist() == [0.0, 0.0]
    with pytest.raises(en.DTypeError, match="complex"):
        xp.astype(xp.asarray([1j]), xp.float64)


def test_creation_follows_the_standard_defaults():
    assert xp.full((2,), True).dtype == xp.bool
    assert xp.full((2,), 1j).dtype == xp.complex128
    assert xp.zeros(3).dtype == xp.float64 and xp.empty((2, 2)).shape == (2, 2)
    assert xp.zeros_like(xp.asarray([1, 2]), dtype=xp.float32).dtype == xp.float32
    assert xp.full_like(xp.asarray([1, 2], dtype=xp.int8), 7).dtype == xp.int8
    np.testing.assert_array_equal(xp.eye(2, 3, k=1).numpy(), np.eye(2, 3, k=1))
    assert xp.arange(3, dtype=xp.uint16).dtype == xp.uint16


def test_dlpack_round_trip_and_devices():
    x = xp.asarray([[1, 2], [3, 4]], dtype=xp.int16)
    assert x.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(y, [[1, 2], [3, 4]])
    y[0, 0] = 7                       # the tensor's memory, shared (as PyTorch's)
    assert int(x[0, 0]) == 7
    z = xp.from_dlpack(np.arange(3))
    assert z.tolist() == [0, 1, 2]
    assert x.device == xp.__array_namespace_info__().default_device()
    assert x.to_device(x.device) is x
    with pytest.raises(ValueError, match="device"):
        xp.zeros(2, device="gpu:7")
    x.__dlpack__(copy=True)
    x.__dlpack__(copy=False)          # writable memory: shared
    frozen = en.Variable([1.0]).value()
    with pytest.raises(BufferError):
        frozen.__dlpack__(copy=False)  # DLPack 0.x cannot mark a variable's memory read-only


def test_array_object_extras():
    x = xp.reshape(xp.arange(6.0), (1, 2, 3))
    assert x.mT.shape == (1, 3, 2)
    np.testing.assert_array_equal(x.mT.numpy(), np.swapaxes(np.arange(6.0).reshape(1, 2, 3),
                                                             -1, -2))
    assert complex(xp.asarray(2.0)) == 2 + 0j
    assert np.asarray(x, copy=True).flags.writeable
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(x, dtype=np.float32, copy=False)
    x[0, 0, 0] = 5.0
    y = x
    y += 1.0          # in place, as numpy's: x and y are the same tensor
    assert y is x and float(x[0, 0, 0]) == 6.0 and float(x[0, 0, 1]) == 2.0


def test_info():
    info = xp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_dtypes()["real floating"] == xp.float64
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert len(info.dtypes()) == 13


def test_reductions_and_sorting_adapters():
    x = xp.asarray([3, 1, 2], dtype=xp.int8)
    assert xp.sum(x).dtype == xp.int64 and xp.sum(x, dtype=xp.int8).dtype == xp.int8
    assert xp.prod(xp.asarray([2, 3], dtype=xp.uint8)).dtype == xp.uint64
    if hasattr(xp, "argsort"):
        v = xp.asarray([1, 2, 2, 0])
        assert xp.argsort(v, descending=True).tolist() == [1, 2, 0, 3]   # stable
        assert xp.sort(v, descending=True).tolist() == [2, 2, 1, 0]
    assert xp.concat([xp.ones((2, 2)), xp.zeros(3)], axis=None).shape == (7,)
    a, b = xp.broadcast_arrays(xp.ones((2, 1)), xp.ones(3))
    assert a.shape == b.shape == (2, 3)
    assert [t.tolist() for t in xp.unstack(xp.asarray([[1, 2], [3, 4]]), axis=1)] == [[1, 3],
                                                                                    [2, 4]]


def test_linalg_diagonal_and_trace_take_the_last_two_axes():
    a = np.arange(24.0).reshape(2, 3, 4)
    for offset in (-1, 0, 2):
        np.testing.assert_array_equal(xp.linalg.diagonal(xp.asarray(a), offset=offset).numpy(),
                                      np.diagonal(a, offset=offset, axis1=-2, axis2=-1))
        np.testing.assert_array_equal(xp.linalg.trace(xp.asarray(a), offset=offset).numpy(),
                                      np.trace(a, offset=offset, axis1=-2, axis2=-1))
    assert xp.linalg.trace(xp.asarray(a), dtype=xp.float32).dtype == xp.float32


def test_an_axis_out_of_range_is_an_index_error():
    x = xp.zeros((2, 3))
    assert xp.expand_dims(x, axis=2).shape == (2, 3, 1)
    assert xp.expand_dims(x, axis=-3).shape == (1, 2, 3)
    for axis in (3, -4):
        with pytest.raises(IndexError, match="out of range"):   # numpy's AxisError is one too
            xp.expand_dims(x, axis=axis)
        with pytest.raises(en.ShapeError):
            en.expand_dims(x, axis)
