"""numpy's own kernels by address (graph/lowering/numpy_kernels.py): a ufunc's inner loop
called through ctypes gives the ufunc's bits, and the cblas products give np.dot's."""
import ctypes

import numpy as np
import pytest

from engine.graph.lowering import numpy_kernels


def _call_loop(found, ufunc, arrays, dtype):
    out = np.empty(arrays[0].shape, dtype)
    pointers = (ctypes.c_void_p * (len(arrays) + 1))(*[a.ctypes.data for a in arrays],
                                                     out.ctypes.data)
    steps = (ctypes.c_ssize_t * (len(arrays) + 1))(*[np.dtype(dtype).itemsize] *
                                                   (len(arrays) + 1))
    size = (ctypes.c_ssize_t * 1)(out.size)
    numpy_kernels.LOOP(found[0])(pointers, size, steps, found[1] or None)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ufunc", [np.exp, np.tanh, np.log, np.sin, np.expm1, np.arctan2,
                                   np.power])
def test_a_ufunc_loop_by_address_gives_the_ufuncs_bits(ufunc, dtype):
    found = numpy_kernels.ufunc_loop(ufunc, dtype)
    assert found is not None and found[0] > 0
    rng = np.random.default_rng(0)
    arrays = []
    for _ in range(ufunc.nin):
        a = (rng.standard_normal(10_001) * 20).astype(dtype)
        a[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 89.0, -104.0, 1e-30]
        arrays.append(a)
    with np.errstate(all="ignore"):
        got = _call_loop(found, ufunc, arrays, dtype)
        want = ufunc(*arrays)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_no_loop_for_what_numpy_has_none_or_for_a_non_ufunc():
    assert numpy_kernels.ufunc_loop(np.exp, np.int64) is None   # (exp of ints goes via float)
    assert numpy_kernels.ufunc_loop(np.sum, np.float32) is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpys_cblas_product_gives_np_dots_bits(dtype):
    found = numpy_kernels.cblas_gemm()
    if found is None:
        pytest.skip("numpy's BLAS has no cblas_?gemm here (the C lowering then keeps "
                    "products on numpy under bitwise)")
    integer = ctypes.c_int64 if found[2] == "int64_t" else ctypes.c_int
    scalar = ctypes.c_float if dtype == "float32" else ctypes.c_double
    address = found[0] if dtype == "float32" else found[1]
    rng = np.random.default_rng(1)
    a = rng.standard_normal((33, 70)).astype(dtype)
    b = rng.standard_normal((70, 20)).astype(dtype)
    out = np.empty((33, 20), dtype)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer,
                          integer, scalar, ctypes.c_void_p, integer, ctypes.c_void_p, integer,
                          scalar, ctypes.c_void_p, integer)(address)
    fn(101, 111, 111, 33, 20, 70, 1.0, a.ctypes.data, 70, b.ctypes.data, 20, 0.0,
       out.ctypes.data, 20)
    assert np.array_equal(out, np.dot(a, b))
    # (and the product itself is right: against a float64 sum of products)
    assert np.allclose(out, (a.astype(float)[:, :, None] * b.astype(float)[None]).sum(1),
                       rtol=1e-4, atol=1e-4)
