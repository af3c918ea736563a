"""ndarray's methods that write (fill, sort, partition, put, flat, out=) and numpy's
functions that write into their first argument (copyto, place, put, putmask,
fill_diagonal) on tensors and variables: the same values as numpy on a numpy copy,
gradients through the writes (finite differences), and the writes inside en.function."""
import numpy as np
import pytest

import engine as en
from support.finite_diff import numeric_grad

RNG = np.random.default_rng(4848)


def assert_same(t, a):
    """The tensor (or variable) ``t`` holds exactly numpy's ``a``: values, dtype, shape."""
    got = np.asarray(t.numpy())
    assert got.dtype == a.dtype and got.shape == a.shape, (got.dtype, a.dtype, got.shape)
    np.testing.assert_allclose(got, a, rtol=1e-12, atol=0)


def both(a, make=en.tensor):
    """A numpy copy of ``a`` and an engine value holding it."""
    return np.array(a, copy=True), make(np.array(a, copy=True))


WRITES = [
    ("fill", lambda x: x.fill(2.5)),
    ("fill int into float", lambda x: x.fill(3)),
    ("sort", lambda x: x.sort()),
    ("sort axis 0", lambda x: x.sort(axis=0)),
    ("sort stable kind", lambda x: x.sort(kind="stable")),
    ("put", lambda x: x.put([0, 5, -1], [9.0, 8.0, 7.0])),
    ("put repeats values", lambda x: x.put([1, 2, 3, 4], [-1.0, -2.0])),
    ("put wrap", lambda x: x.put([13, -14], [1.5, 2.5], mode="wrap")),
    ("put clip", lambda x: x.put([100, -3], [1.5, 2.5], mode="clip")),
    ("flat index", lambda x: x.flat.__setitem__(4, -3.0)),
    ("flat slice", lambda x: x.flat.__setitem__(slice(1, 10, 3), [1.0, 2.0])),
    ("flat mask", lambda x: x.flat.__setitem__(np.arange(12) % 5 == 1, 0.0)),
    ("flat attribute", lambda x: setattr(x, "flat", [4.0, 5.0, 6.0])),
    ("numpy copyto", lambda x: np.copyto(x, np.arange(4.0))),
    ("numpy copyto where", lambda x: np.copyto(x, -1.0, where=np.eye(3, 4, dtype=bool))),
    ("numpy place", lambda x: np.place(x, np.eye(3, 4, dtype=bool), [10.0, 20.0])),
    ("numpy put", lambda x: np.put(x, [2, 3], [0.5, 0.25])),
    ("numpy putmask", lambda x: np.putmask(x, np.eye(3, 4, dtype=bool), [1.0, 2.0, 3.0])),
    ("numpy fill_diagonal", lambda x: np.fill_diagonal(x, [7.0, 8.0])),
    ("numpy fill_diagonal wrap", lambda x: np.fill_diagonal(x, [1.0, 2.0], wrap=True)),
]


@pytest.mark.parametrize("make", [en.tensor, en.Variable], ids=["Tensor", "Variable"])
@pytest.mark.parametrize("name, write", WRITES, ids=[w[0] for w in WRITES])
def test_a_write_gives_numpys_values(name, write, make):
    a, x = both(RNG.standard_normal((3, 4)), make)
    assert write(a) is None
    assert write(x) is None
    assert_same(x, a)


@pytest.mark.parametrize("make", [en.tensor, en.Variable], ids=["Tensor", "Variable"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32"])
def test_setting_real_and_imag_writes_numpys_parts(dtype, make):
    start = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(
        np.dtype(dtype) if dtype.startswith("complex") else np.complex128)
    a, x = both(start if dtype.startswith("complex") else start.real.astype(dtype), make)
    a.real = [1.5, -2.0, 0.25]
    x.real = [1.5, -2.0, 0.25]
    assert_same(x, a)
    if a.dtype.kind == "c":
        a.imag = 3.0
        x.imag = 3.0
        assert_same(x, a)
    else:
        with pytest.raises(en.DTypeError, match=r"\.imag: a float32 tensor has no imaginary"):
            x.imag = 3.0


@pytest.mark.parametrize("kth, axis", [(1, -1), ((0, 2), -1), (2, 0), (-1, 1)])
def test_partition_in_place_has_the_partition_property(kth, axis):
    a = RNG.standard_normal((3, 5))
    x = en.tensor(a)
    x.partition(kth, axis=axis)
    got = x.numpy()
    np.testing.assert_array_equal(np.sort(got, axis=axis), np.sort(a, axis=axis))
    _check_partition(got, a, kth, axis)


def _check_partition(got, a, kth, axis):
    want = np.sort(a, axis=axis)
    n = got.shape[axis]
    for k in np.atleast_1d(kth):
        k = int(k) % n
        at_k = np.take(got, [k], axis=axis)
        np.testing.assert_array_equal(at_k, np.take(want, [k], axis=axis))
        assert np.all(np.take(got, range(k), axis=axis) <= at_k)
        assert np.all(np.take(got, range(k + 1, n), axis=axis) >= at_k)


@pytest.mark.parametrize("method, args, kwargs, out_dtype", [
    ("sum", (), {"axis": 0}, "float64"), ("sum", (), {"axis": 1}, "int64"),
    ("mean", (), {"axis": 1}, "float64"), ("max", (), {"axis": 0}, "float64"),
    ("argmax", (), {"axis": 1}, "int64"), ("cumsum", (), {"axis": 0}, "float64"),
    ("clip", (-0.5, 0.5), {}, "float64"), ("round", (1,), {}, "float32"),
    ("take", ([0, 3],), {"axis": 1}, "float64"), ("std", (), {"axis": 0}, "float64"),
    ("trace", (), {}, "float64"), ("dot", (np.ones(4),), {}, "float64"),
])
def test_out_writes_the_result_into_the_given_tensor(method, args, kwargs, out_dtype):
    a = RNG.standard_normal((3, 4))
    want = getattr(a, method)(*args, **kwargs)
    out_np = np.zeros(np.shape(want), out_dtype)
    getattr(a, method)(*args, out=out_np, **kwargs)
    out = en.zeros(np.shape(want), out_dtype)
    result = getattr(en.tensor(a), method)(*args, out=out, **kwargs)
    assert result is out
    assert_same(out, out_np)


def test_out_refuses_a_cast_numpy_refuses():
    with pytest.raises(en.DTypeError, match="Tensor.clip: cannot store the float64 result.*int64"):
        en.tensor([0.5, 1.5]).clip(0, 1, out=en.zeros(2, "int64"))


def test_copy_and_flatten_are_independent_and_ravel_and_view_share_writes():
    a, x = both(np.arange(6.0).reshape(2, 3))
    for make_alias in (lambda t: t.copy(), lambda t: t.flatten(), lambda t: t.ravel(),
                       lambda t: t.reshape(6, copy=True), lambda t: t.reshape(3, 2, order="F"),
                       lambda t: t.view(), lambda t: t.reshape(3, 2), lambda t: t.T):
        alias_np, alias_en = make_alias(a), make_alias(x)
        alias_np.flat[0] += 10.0
        alias_en.flat[0] += 10.0
        assert_same(x, a)              # the write reached the base exactly where numpy's did
        assert_same(alias_en, alias_np)


def test_astype_copy_false_aliases_like_numpy():
    a, x = both(np.arange(3.0))
    same_np, same_en = a.astype("float64", copy=False), x.astype("float64", copy=False)
    same_np[0] = 5.0
    same_en[0] = 5.0
    assert_same(x, a)
    other_en = x.astype("float64")      # copy=True: a new tensor
    other_en[1] = -1.0
    assert_same(x, a)


def test_gradient_flows_through_in_place_methods():
    a = RNG.standard_normal((3, 4))
    w = RNG.standard_normal((3, 4))

    def f(x):
        y = x * 1.0
        y.sort(axis=1)
        y.put([0, 5], x[2, :2] * 3.0)
        np.fill_diagonal(y, x[0, :3] ** 2)
        np.putmask(y, np.eye(3, 4, k=1, dtype=bool), x[1] * 0.5)
        np.copyto(y, x * x, where=np.eye(3, 4, k=-1, dtype=bool))
        return (y * w).sum()

    g = en.grad(f)(en.tensor(a))
    np.testing.assert_allclose(g.numpy(), numeric_grad(f, [a]), rtol=1e-6, atol=1e-7)


def test_in_place_methods_inside_en_function_match_eager():
    a = RNG.standard_normal((3, 4))

    def f(x):
        y = x + 0.0
        y.sort(axis=0)
        y.put([1, 6], [10.0, 20.0])
        np.fill_diagonal(y, -1.0)
        np.putmask(y, y > 1.0, 1.0)
        y.flat[::5] = x[0, :3]
        out = en.zeros((4,))
        y.sum(axis=0, out=out)
        return y, out

    traced = en.function(f)
    for got, want in zip(traced(en.tensor(a)), f(en.tensor(a))):
        assert_same(got, want.numpy())
    y = a + 0.0
    y.sort(axis=0)
    y.put([1, 6], [10.0, 20.0])
    np.fill_diagonal(y, -1.0)
    np.putmask(y, y > 1.0, 1.0)
    y.flat[::5] = a[0, :3]
    assert_same(traced(en.tensor(a))[0], y)


def test_numpy_writes_a_tensors_values_into_a_numpy_array():
    t = en.tensor([1.0, 2.0, 3.0])
    a = np.zeros(3)
    np.copyto(a, t)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    np.putmask(a, en.tensor([True, False, True]), t * 10)
    np.testing.assert_array_equal(a, [10.0, 2.0, 30.0])
    np.put(a, en.tensor([1]), 5.0)
    np.place(a, a > 6, en.tensor([0.0]))
    np.testing.assert_array_equal(a, [0.0, 5.0, 0.0])


@pytest.mark.parametrize("call, error, pattern", [
    (lambda x: np.copyto(x, np.ones(3)), en.ShapeError, r"numpy.copyto: src of shape \(3,\)"),
    (lambda x: np.copyto(x, np.ones((2, 2), complex)), en.DTypeError, "numpy.copyto: cannot copy"),
    (lambda x: np.putmask(x, [True], 1.0), en.ShapeError, "numpy.putmask: mask has shape"),
    (lambda x: np.place(x, np.ones(3, bool), 1.0), en.ShapeError, "numpy.place: mask has 3"),
    (lambda x: np.place(x, np.ones(4, bool), []), en.InvalidArgumentError, "vals is empty"),
    (lambda x: np.fill_diagonal(x[0], 1.0), en.ShapeError, "fill_diagonal: a must be at least"),
    (lambda x: x.put([4], [1.0]), en.InvalidArgumentError, "Tensor.put: an index is out of"),
    (lambda x: x.partition(2), en.InvalidArgumentError, "Tensor.partition: kth=2"),
    (lambda x: x.sort(axis=None), en.ArgumentTypeError, "Tensor.sort: axis=None"),
    (lambda x: x.partition(1, axis=None), TypeError, "Tensor.partition: axis=None"),
])
def test_bad_writes_are_refused_before_anything_is_written(call, error, pattern):
    x = en.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(error, match=pattern) as info:
        call(x)
    assert "test_ndarray_writes.py" in str(info.value)
    assert_same(x, np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_in_place_methods_on_a_variable_inside_en_function_assign_it():
    start = np.array([[3.0, 1.0], [2.0, 0.0]])
    v = en.Variable(start)

    @en.function
    def step(x):
        v.sort(axis=1)
        v.put([0], x)
        np.fill_diagonal(v, x * 2.0)
        return v.sum()

    want = start.copy()
    want.sort(axis=1)
    want.put([0], 5.0)
    np.fill_diagonal(want, 10.0)
    assert float(step(en.tensor(5.0))) == want.sum()
    assert_same(v, want)
