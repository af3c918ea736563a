"""Tensors: construction, dtypes, operators, methods and conversions, checked against numpy."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import engine as en

SUPPORTED = ["float32", "float64", "int32", "int64", "bool"]


def assert_same(t, expected):
    """``t`` is a tensor equal to the numpy array ``expected``, dtype and shape included."""
    assert isinstance(t, en.Tensor), type(t)
    expected = np.asarray(expected)
    assert t.dtype == expected.dtype, (t.dtype, expected.dtype)
    assert t.shape == expected.shape
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6)


# ---- construction and dtypes --------------------------------------------------
@pytest.mark.parametrize("dtype", SUPPORTED)
def test_tensor_with_dtype(dtype):
    data = [[0, 1, 2], [3, 4, 5]]
    t = en.tensor(data, dtype=dtype)
    assert_same(t, np.array(data, dtype=dtype))
    assert t.dtype == np.dtype(dtype)


@pytest.mark.parametrize("data, expected", [
    ([1.0, 2.0], "float64"),
    ([1, 2], "int64"),
    ([True, False], "bool"),
    (3.5, "float64"),
    (7, "int64"),
    (np.array([1, 2], dtype=np.int32), "int32"),
    (np.array([1, 2], dtype=np.float32), "float32"),
    (np.float32(1.5), "float32"),
])
def test_default_dtypes_follow_numpy(data, expected):
    t = en.tensor(data)
    assert t.dtype == np.dtype(expected)
    assert t.dtype == np.asarray(data).dtype


def test_dtype_constants_are_numpy_dtypes():
    assert en.float32 == np.dtype("float32")
    assert en.float64 == np.dtype("float64")
    assert en.int32 == np.dtype("int32")
    assert en.int64 == np.dtype("int64")
    assert en.bool_ == np.dtype("bool")
    assert en.tensor([1.0], dtype=en.float32).dtype == np.float32


@pytest.mark.parametrize("np_dtype, hint", [(np.longdouble, "dtype='float64'"),
                                            (np.clongdouble, "complex128")])
def test_unsupported_numpy_dtype_is_rejected_with_hint(np_dtype, hint):
    with pytest.raises(en.DTypeError) as info:
        en.tensor(np.ones(3, dtype=np_dtype))
    msg = str(info.value)
    assert np.dtype(np_dtype).name in msg
    assert hint in msg  # how to convert
    assert "float32" in msg and "int64" in msg  # the supported dtypes are listed
    assert isinstance(info.value, TypeError)


@pytest.mark.parametrize("dtype", ["float128", "U3", object, np.datetime64])
def test_unsupported_dtype_argument_is_rejected(dtype):
    with pytest.raises(en.DTypeError, match="supported"):
        en.tensor([1, 2], dtype=dtype)


def test_unsupported_dtype_in_an_op_argument():
    with pytest.raises(en.DTypeError, match="float128"):
        en.add(en.tensor([1, 2]), np.array([1, 2], dtype=np.longdouble))


def test_shape_dtype_ndim_size():
    ref = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = en.tensor(ref)
    assert t.shape == (2, 3, 4)
    assert t.dtype == np.float32
    assert t.ndim == 3
    assert t.size == 24
    assert len(t) == 2
    s = en.tensor(1.0)
    assert (s.shape, s.ndim, s.size) == ((), 0, 1)


def test_tensor_of_a_tensor():
    t = en.tensor([1.0, 2.0])
    copy = en.tensor(t)           # a new tensor, as np.array(a) and torch.tensor(t)
    copy[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    assert_same(en.tensor(t, dtype="float32"), np.array([1.0, 2.0], dtype=np.float32))


# ---- values and immutability ----------------------------------------------------
def test_numpy_shares_the_tensors_memory():
    t = en.tensor([1.0, 2.0, 3.0])
    view = t.numpy()          # PyTorch's .numpy(): a writable view
    view[0] = 10.0
    np.testing.assert_array_equal(t.numpy(), [10.0, 2.0, 3.0])


def test_asarray_gives_a_view_of_the_values():
    t = en.tensor([[1, 2], [3, 4]], dtype="int32")
    arr = np.asarray(t)
    assert isinstance(arr, np.ndarray)
    assert arr.dtype == np.int32
    np.testing.assert_array_equal(arr, [[1, 2], [3, 4]])
    assert np.shares_memory(arr, t.numpy())
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    copy = np.array(t)
    copy[0, 0] = 9  # a copy asked for explicitly is the caller's to change
    assert t.numpy()[0, 0] == 1


def test_tensor_does_not_alias_the_source_array():
    source = np.array([1.0, 2.0, 3.0])
    t = en.tensor(source)
    source[0] = 100.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0, 3.0])


def test_op_result_does_not_alias_a_numpy_input():
    source = np.arange(4.0)
    r = en.reshape(source, (2, 2))  # a view-producing op fed a plain numpy array
    source[0] = 100.0
    np.testing.assert_array_equal(r.numpy(), [[0.0, 1.0], [2.0, 3.0]])


def test_item_assignment_writes_in_place_as_numpy():
    t, a = en.tensor([1.0, 2.0]), np.array([1.0, 2.0])
    t[0] = 5.0
    a[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), a)


def test_augmented_assignment_updates_the_tensor_object():
    x = en.tensor([1.0, 2.0])
    y = x
    y += 1.0
    assert y is x          # numpy's and PyTorch's semantics: both names see the update
    np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])


def test_ops_do_not_change_their_inputs():
    a = en.tensor([1.0, -2.0, 3.0])
    before = a.numpy().copy()
    for f in (en.exp, en.neg, en.abs, en.sigmoid, en.relu, en.square):
        f(a)
    _ = a + a, a * 2.0, a.T, a.reshape(3, 1), -a
    np.testing.assert_array_equal(a.numpy(), before)


def test_repr_shows_values_shape_and_dtype():
    r = repr(en.tensor([1.5, 2.5], dtype="float32"))
    assert "1.5" in r and "2.5" in r
    assert "shape=(2,)" in r
    assert "float32" in r
    r2 = repr(en.tensor([[1, 2], [3, 4]], dtype="int32"))
    assert "shape=(2, 2)" in r2 and "int32" in r2 and "4" in r2


def test_python_conversions():
    assert float(en.tensor(2.5)) == 2.5
    assert isinstance(float(en.tensor(2.5, dtype="float32")), float)
    assert int(en.tensor(7)) == 7
    assert int(en.tensor(2.7)) == int(np.float64(2.7))
    assert bool(en.tensor(1.0)) is True
    assert bool(en.tensor(0.0)) is False
    assert bool(en.tensor(True)) is True
    assert en.tensor(3.0).item() == 3.0
    assert en.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert [1, 2, 3][en.tensor(1)] == 2  # __index__


def test_bool_of_a_vector_is_ambiguous_like_numpy():
    with pytest.raises(ValueError):
        bool(en.tensor([1.0, 2.0]))


def test_iteration_gives_rows():
    ref = np.arange(6.0).reshape(3, 2)
    rows = list(en.tensor(ref))
    assert len(rows) == 3
    for r, e in zip(rows, ref):
        assert_same(r, e)
    with pytest.raises(TypeError):
        iter(en.tensor(1.0))


# ---- operators -------------------------------------------------------------------
A = np.array([[1.0, 2.0], [3.0, 4.0]])
B = np.array([[0.5, -1.0], [2.0, 0.25]])

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
          operator.matmul]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_binary_operators_tensor_tensor(op):
    assert_same(op(en.tensor(A), en.tensor(B)), op(A, B))


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_binary_operators_with_numpy_on_either_side(op):
    assert_same(op(en.tensor(A), B), op(A, B))
    assert_same(op(A, en.tensor(B)), op(A, B))  # reflected: ndarray defers to the tensor


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.pow], ids=lambda f: f.__name__)
@pytest.mark.parametrize("scalar", [2, 2.5])
def test_binary_operators_with_python_scalars(op, scalar):
    assert_same(op(en.tensor(A), scalar), op(A, scalar))
    assert_same(op(scalar, en.tensor(A)), op(scalar, A))


def test_unary_operators():
    assert_same(-en.tensor(A), -A)
    assert_same(+en.tensor(A), A)
    assert_same(abs(en.tensor(-A)), A)
    ints = np.array([1, -2], dtype=np.int32)
    assert_same(-en.tensor(ints), -ints)
    flags = np.array([True, False])
    assert_same(~en.tensor(flags), ~flags)


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge,
                                operator.eq, operator.ne], ids=lambda f: f.__name__)
def test_comparisons(op):
    assert_same(op(en.tensor(A), en.tensor(B)), op(A, B))
    assert_same(op(en.tensor(A), 2.0), op(A, 2.0))
    assert_same(op(2.0, en.tensor(A)), op(2.0, A))
    assert_same(op(en.tensor(A), B), op(A, B))


def test_logical_operators():
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    assert_same(en.tensor(p) & en.tensor(q), p & q)
    assert_same(en.tensor(p) | en.tensor(q), p | q)


def test_tensors_are_hashable_by_identity():
    a, b = en.tensor(1.0), en.tensor(1.0)
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b"


def test_transpose_property_and_method():
    ref = np.arange(24.0).reshape(2, 3, 4)
    t = en.tensor(ref)
    assert_same(t.T, ref.T)
    assert_same(t.transpose(1, 0, 2), ref.transpose(1, 0, 2))
    assert_same(t.transpose((2, 0, 1)), ref.transpose((2, 0, 1)))


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_methods(name, axis, keepdims):
    ref = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    got = getattr(en.tensor(ref), name)(axis=axis, keepdims=keepdims)
    expected = getattr(ref, name)(axis=axis, keepdims=keepdims)
    if name.startswith("arg"):
        expected = np.asarray(expected, dtype=np.int64)
    assert_same(got, expected)


def test_reduction_over_a_tuple_of_axes():
    ref = np.arange(24.0).reshape(2, 3, 4)
    assert_same(en.tensor(ref).sum(axis=(0, 2)), ref.sum(axis=(0, 2)))
    assert_same(en.tensor(ref).mean(axis=(1, 2), keepdims=True), ref.mean(axis=(1, 2), keepdims=True))


def test_int_reductions_follow_numpy_dtypes():
    ref = np.array([[1, 2], [3, 4]], dtype=np.int32)
    assert_same(en.tensor(ref).sum(), ref.sum())  # int32 sums accumulate in int64
    assert_same(en.tensor(ref).mean(), ref.mean())
    assert_same(en.tensor(ref).max(axis=0), ref.max(axis=0))


def test_shape_methods():
    ref = np.arange(12.0).reshape(3, 4)
    t = en.tensor(ref)
    assert_same(t.reshape(4, 3), ref.reshape(4, 3))
    assert_same(t.reshape((2, -1)), ref.reshape((2, -1)))
    assert_same(t.flatten(), ref.flatten())
    assert_same(t.reshape(1, 12, 1).squeeze(), ref.reshape(12))
    assert_same(t.astype("int32"), ref.astype(np.int32))


def test_indexing_like_numpy():
    ref = np.arange(12.0).reshape(3, 4)
    t = en.tensor(ref)
    assert_same(t[1], ref[1])
    assert_same(t[:, 2], ref[:, 2])
    assert_same(t[1:, ::2], ref[1:, ::2])


def test_math_methods():
    ref = np.array([0.5, 1.0, 2.0])
    t = en.tensor(ref)
    assert_same(t.exp(), np.exp(ref))
    assert_same(t.log(), np.log(ref))
    assert_same(t.sqrt(), np.sqrt(ref))
    assert_same(t.tanh(), np.tanh(ref))
    assert_same(t.sigmoid(), 1.0 / (1.0 + np.exp(-ref)))
    assert_same((t - 1.0).relu(), np.maximum(ref - 1.0, 0.0))


# ---- promotion ----------------------------------------------------------------------
def test_weak_float_scalar_keeps_float32():
    x = en.tensor([1.0, 2.0], dtype="float32")
    for y in (x * 2.0, 2.0 * x, x + 1.5, x - 1, x / 3, 3.0 / x, x ** 2, x ** 2.0, 2.0 ** x):
        assert y.dtype == np.float32, y


def test_weak_int_scalar_keeps_int32():
    x = en.tensor([1, 2], dtype="int32")
    for y in (x + 2, 2 + x, x * 3, x - 1, 5 - x):
        assert y.dtype == np.int32, y
    assert_same(x + 2, np.array([1, 2], dtype=np.int32) + 2)


def test_int32_times_float_scalar_is_float64_like_numpy2():
    x = en.tensor([1, 2], dtype="int32")
    ref = np.array([1, 2], dtype=np.int32) * 2.0
    assert ref.dtype == np.float64
    assert_same(x * 2.0, ref)


def test_true_division_of_ints_is_float64_like_numpy():
    x = np.array([1, 2], dtype=np.int32)
    assert_same(en.tensor(x) / 2, x / 2)
    assert_same(en.tensor(x) / en.tensor(x), x / x)


def test_numpy_scalars_are_strong_like_numpy2():
    x32 = np.array([1.0, 2.0], dtype=np.float32)
    assert_same(en.tensor(x32) * np.float64(2.0), x32 * np.float64(2.0))


PAIRS = [(a, b) for a in ["float32", "float64", "int32", "int64"]
         for b in ["float32", "float64", "int32", "int64"]]


@pytest.mark.parametrize("a, b", PAIRS)
def test_two_tensors_promote_like_numpy(a, b):
    x = np.array([1, 2], dtype=a)
    y = np.array([3, 4], dtype=b)
    assert_same(en.tensor(x) + en.tensor(y), x + y)
    assert_same(en.tensor(x) * en.tensor(y), x * y)
    assert_same(en.tensor(x) @ en.tensor(y), x @ y)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4),
                  elements=st.floats(-10, 10)),
       st.floats(-10, 10))
def test_elementwise_arithmetic_matches_numpy(a, s):
    t = en.tensor(a)
    assert_same(t + s, a + s)
    assert_same(t * t - s, a * a - s)
    assert_same(en.exp(t / 10.0), np.exp(a / 10.0))
    assert_same(t.sum(), a.sum())


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_matmul_matches_numpy(m, k, n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    assert_same(en.tensor(a) @ en.tensor(b), a @ b)
    assert_same(en.matmul(a, b[:, 0]), a @ b[:, 0])


def test_python_scalars_beside_a_tensor_keep_dtype_sign_and_nan():
    # Eager mode reuses one read-only 0-d tensor per (scalar, dtype): the reuse must
    # not mix up 0.0 and -0.0 (equal as keys) or depend on NaN, and results stay
    # fresh, writable-by-nobody arrays of the tensor's dtype, as numpy 2 computes them.
    x = en.tensor(np.array([1.5, -2.0], np.float32))
    for _ in range(2):                      # the second round takes the cached scalars
        for s in (2.0, -0.0, 0.0, 3, True, float("nan"), 1e300):
            for got, want in ((x * s, x.numpy() * s), (s * x, s * x.numpy()),
                              (x - s, x.numpy() - s)):
                with np.errstate(over="ignore"):
                    assert got.dtype == want.dtype == np.float32
                    np.testing.assert_array_equal(got.numpy(), want)
                    assert np.array_equal(np.signbit(got.numpy()), np.signbit(want))
    i = en.tensor(np.array([3], np.int32))
    assert (i * 2).dtype == np.int32 and (i * 2.5).dtype == np.float64
    np.testing.assert_array_equal((i * 2.5).numpy(), [7.5])
