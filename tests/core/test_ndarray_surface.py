"""ndarray's public surface on tensors and variables (engine/tensor_methods.py and
engine/tensor_memory.py), checked against numpy: every public ndarray name exists on
tensors or is refused on purpose, with its reason, and each method gives numpy's
values, dtypes and shapes, differentiates (finite differences) and traces."""
import io
import pickle

import numpy as np
import pytest

import engine as en
from engine.tensor_memory import REFUSED
from support.finite_diff import grad_checker, numeric_grad

# ndarray's names that tensors refuse on purpose: why, and the numpy spelling the
# error points to instead.
REFUSED_ON_PURPOSE = {
    "base": "a tensor does not expose which memory it shares",
    "ctypes": "no memory address for C code (values may not exist yet while tracing)",
    "data": "no buffer: a back end or graph lays the values out as it likes",
    "flags": "no memory layout flags",
    "strides": "no strides: the layout belongs to the back end or compiled graph",
    "byteswap": "values are in the machine's byte order; swapped bytes are unrelated numbers",
    "getfield": "no structured dtypes, no reinterpreting raw bytes",
    "setfield": "no structured dtypes, no reinterpreting raw bytes",
    "setflags": "no memory flags to set",
    "resize": "in place it changes the shape, which tapes and traced graphs rely on",
}

MASK_2X3 = np.array([[True, False, True], [True, True, False]])
NDARRAY_NAMES = sorted(n for n in dir(np.ndarray) if not n.startswith("_"))

RNG = np.random.default_rng(48)
INPUTS = {
    "float 2x3": RNG.standard_normal((2, 3)),
    "float 3x4x2": RNG.standard_normal((3, 4, 2)),
    "int 4x3": RNG.integers(-5, 6, size=(4, 3)),
    "int32 6": RNG.integers(-5, 6, size=6).astype(np.int32),
    "bool 3x3": RNG.random((3, 3)) > 0.5,
    "complex 3x2": RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2)),
    "float32 5": RNG.standard_normal(5).astype(np.float32),
}


def assert_like_numpy(got, want):
    """``got`` (a tensor, or a tuple of them, or a Python value) equals numpy's ``want``,
    dtype and shape included."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_like_numpy(g, w)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        assert isinstance(got, en.Tensor), type(got)
        want = np.asarray(want)
        assert got.shape == want.shape, (got.shape, want.shape)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    else:
        assert got == want, (got, want)


# ---- the surface ------------------------------------------------------------------------------
def test_refused_table_matches_the_engines():
    assert set(REFUSED_ON_PURPOSE) == set(REFUSED)


@pytest.mark.parametrize("make", [en.tensor, en.Variable], ids=["Tensor", "Variable"])
@pytest.mark.parametrize("name", NDARRAY_NAMES)
def test_every_ndarray_name_is_there_or_refused_with_a_reason(make, name):
    t = make(np.arange(6.0).reshape(2, 3))
    if name not in REFUSED_ON_PURPOSE:
        assert hasattr(t, name), f"{type(t).__name__} lacks ndarray's {name!r}"
        return
    assert not hasattr(t, name)       # an AttributeError, so probing code keeps working
    with pytest.raises(en.UnsupportedError) as info:
        getattr(t, name)
    message = str(info.value)
    assert f"{type(t).__name__}.{name}" in message
    assert REFUSED[name].split(" ")[0] in message       # the reason
    assert f"t.numpy().{name}" in message or f"np.array(t).{name}" in message
    assert "test_ndarray_surface.py" in message        # the user's line
    assert isinstance(info.value, AttributeError)


# ---- methods against numpy ------------------------------------------------------------------
def _cases():
    """(method, args, kwargs, the inputs it applies to)."""
    floats = ["float 2x3", "float 3x4x2", "float32 5"]
    reals = floats + ["int 4x3", "int32 6"]
    every = list(INPUTS)
    return [
        ("sum", (), {}, every), ("sum", (0,), {"keepdims": True}, every),
        ("sum", (), {"dtype": np.float32}, reals), ("sum", (), {"axis": -1, "initial": 3}, reals),
        ("prod", (), {"axis": 0}, reals), ("prod", (), {"initial": 2.0}, floats),
        ("max", (), {"axis": 0}, reals), ("max", (), {"initial": 0.5}, floats),
        ("min", (), {"axis": -1, "keepdims": True}, reals),
        ("all", (), {}, every), ("all", (), {"axis": 0}, every),
        ("any", (), {"axis": -1, "keepdims": True}, every),
        ("mean", (), {}, every), ("mean", (), {"axis": 0, "dtype": np.float32}, reals),
        ("var", (), {}, every), ("var", (), {"axis": 0, "ddof": 1}, reals),
        ("std", (), {"axis": -1, "keepdims": True}, every),
        ("argmax", (), {}, reals), ("argmax", (), {"axis": 0, "keepdims": True}, reals),
        ("argmin", (-1,), {}, reals),
        ("cumsum", (), {}, every), ("cumsum", (0,), {}, reals),
        ("cumsum", (), {"dtype": np.float64}, reals),
        ("cumprod", (), {"axis": -1}, reals),
        ("clip", (-0.5, 0.5), {}, floats), ("clip", (None, 1), {}, reals),
        ("clip", (), {"min": 0}, reals),
        ("round", (), {}, floats), ("round", (2,), {}, floats), ("round", (-1,), {}, ["int 4x3"]),
        ("conj", (), {}, every), ("conjugate", (), {}, every),
        ("astype", (np.float32,), {}, every), ("astype", ("int64",), {}, reals),
        ("copy", (), {}, every), ("copy", ("F",), {}, every),
        ("ravel", (), {}, every), ("ravel", ("F",), {}, every), ("flatten", ("F",), {}, every),
        ("reshape", (-1,), {}, every), ("reshape", ((-1, 2),), {"order": "F"}, ["float 2x3"]),
        ("reshape", (2, 3, 4), {"order": "F"}, ["float 3x4x2"]),
        ("transpose", (), {}, every), ("transpose", ((1, 0, 2),), {}, ["float 3x4x2"]),
        ("transpose", (2, 0, 1), {}, ["float 3x4x2"]),
        ("swapaxes", (0, -1), {}, every),
        ("squeeze", (), {}, every), ("repeat", (2,), {}, every),
        ("repeat", ([1, 2, 0],), {"axis": -1}, ["float 2x3", "bool 3x3"]),
        ("diagonal", (), {}, ["float 2x3", "int 4x3", "bool 3x3"]),
        ("diagonal", (1,), {"axis1": 1, "axis2": 0}, ["float 3x4x2", "int 4x3"]),
        ("trace", (), {}, ["float 2x3", "int 4x3", "complex 3x2"]),
        ("trace", (-1,), {"dtype": np.float32}, ["int 4x3"]),
        ("take", ([0, 2, -1],), {}, every), ("take", ([[0, 1], [1, 0]],), {"axis": 0}, every),
        ("take", ([0, 7, -9],), {"mode": "wrap"}, every),
        ("take", ([0, 7, -9],), {"axis": -1, "mode": "clip"}, every),
        ("compress", ([True, False, True],), {}, every),
        ("compress", ([False, True],), {"axis": 0}, every),
        ("nonzero", (), {}, every),
        ("argsort", (), {}, reals + ["bool 3x3"]), ("argsort", (0,), {"kind": "stable"}, reals),
        ("argsort", (None,), {"kind": "stable"}, reals),
        ("dot", (np.linspace(-1, 1, 3),), {}, ["float 2x3", "int 4x3"]),
        ("item", (0,), {}, every), ("item", (), {}, ["float 2x3"]), ("tolist", (), {}, every),
        ("tobytes", (), {}, every), ("tobytes", ("F",), {}, every),
    ]


def _applies(cases):
    for method, args, kwargs, inputs in cases:
        for key in inputs:
            if method == "item" and not args and INPUTS[key].size != 1:
                continue
            yield pytest.param(method, args, kwargs, key, id=f"{method}{args}{kwargs}-{key}")


@pytest.mark.parametrize("method, args, kwargs, key", _applies(_cases()))
def test_method_matches_numpy(method, args, kwargs, key):
    a = INPUTS[key]
    if method == "item" and not args:
        a = a[:1, :1]
    want = getattr(a, method)(*args, **kwargs)
    got = getattr(en.tensor(a), method)(*args, **kwargs)
    assert_like_numpy(got, want)


@pytest.mark.parametrize("method, args, kwargs", [
    ("sum", (), {"axis": 0}), ("mean", (), {}), ("var", (1,), {"ddof": 1}), ("take", ([2, 0],), {}),
    ("reshape", (3, 2), {"order": "F"}), ("cumsum", (), {}), ("argsort", (), {}),
])
def test_methods_on_a_variable_match_numpy(method, args, kwargs):
    a = INPUTS["float 2x3"]
    assert_like_numpy(getattr(en.Variable(a), method)(*args, **kwargs),
                      getattr(a, method)(*args, **kwargs))


STRICT_CASES = [     # (a mask as a list: a numpy array would be data of the numpy back end)
    ("sum", (), {"axis": 0, "initial": 1.0, "where": MASK_2X3.tolist()}),
    ("var", (1,), {"ddof": 1}), ("std", (), {"axis": 0, "where": MASK_2X3.tolist()}), ("take", ([0, 7, -8],), {"mode": "wrap"}),
    ("take", ([[0, 9]],), {"axis": 1, "mode": "clip"}), ("reshape", (3, 2), {"order": "F"}),
    ("argsort", (None,), {"kind": "stable"}), ("clip", (-0.5, 0.5), {}), ("cumsum", (0,), {}),
    ("compress", ([True, False, True],), {"axis": 1}), ("round", (1,), {}), ("diagonal", (), {}),
]


@pytest.mark.parametrize("method, args, kwargs", STRICT_CASES, ids=[c[0] for c in STRICT_CASES])
def test_methods_on_another_back_end_stay_there_and_match_numpy(method, args, kwargs):
    a = INPUTS["float 2x3"]
    got = getattr(en.tensor(a, backend="array_api_strict"), method)(*args, **kwargs)
    assert got.backend.name == "array_api_strict"
    assert_like_numpy(got.to("numpy"), getattr(a, method)(*args, **kwargs))


@pytest.mark.parametrize("key", ["float 2x3", "float 3x4x2", "int 4x3", "complex 3x2",
                                 "float32 5", "int32 6"])
@pytest.mark.parametrize("method", ["sum", "prod", "max", "min", "mean", "all", "any", "var",
                                    "std"])
def test_reductions_with_where_match_numpy(method, key):
    a = INPUTS[key]
    if method in ("max", "min"):      # the engine orders no complex numbers (numpy does)
        a = a.real
    mask = RNG.random(a.shape) > 0.3
    mask[(0,) * a.ndim] = True       # a counted element in every reduced slice for axis 0
    mask[0, ...] = True
    extra = {"initial": -10} if method in ("max", "min") else {}
    for axis in (None, 0):
        want = getattr(a, method)(axis=axis, where=mask, **extra)
        got = getattr(en.tensor(a), method)(axis=axis, where=mask, **extra)
        assert_like_numpy(got, want)


@pytest.mark.parametrize("method", ["var", "std"])
def test_var_with_a_given_mean_matches_numpy(method):
    a = INPUTS["float 3x4x2"]
    mean = a.mean(axis=1, keepdims=True) + 0.25
    assert_like_numpy(getattr(en.tensor(a), method)(axis=1, mean=mean, ddof=1),
                      getattr(a, method)(axis=1, mean=mean, ddof=1))


@pytest.mark.parametrize("key", ["int 4x3", "float 2x3"])
def test_choose_matches_numpy(key):
    n = 3
    index = RNG.integers(0, n, size=INPUTS[key].shape[-1:])
    choices = [INPUTS[key] * k for k in range(1, n + 1)]
    assert_like_numpy(en.tensor(index).choose(choices), index.choose(choices))
    wild = index + np.array([0, 3, -4])[: index.size]
    for mode in ("wrap", "clip"):
        assert_like_numpy(en.tensor(wild).choose(choices, mode=mode),
                          wild.choose(choices, mode=mode))


def test_searchsorted_matches_numpy():
    a = np.sort(RNG.standard_normal(8))
    v = RNG.standard_normal((2, 3))
    for side in ("left", "right"):
        assert_like_numpy(en.tensor(a).searchsorted(v, side=side), a.searchsorted(v, side=side))


@pytest.mark.parametrize("key", ["float 2x3", "int 4x3", "complex 3x2", "bool 3x3"])
def test_real_imag_itemsize_nbytes_size_match_numpy(key):
    a = INPUTS[key]
    t = en.tensor(a)
    assert_like_numpy(t.real, a.real)
    assert_like_numpy(t.imag, np.imag(a))
    assert (t.itemsize, t.nbytes, t.size, t.ndim) == (a.itemsize, a.nbytes, a.size, a.ndim)


@pytest.mark.parametrize("kth", [0, 2, -1, (1, 3)])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_argpartition_puts_the_kth_in_place_and_splits_the_rest(kth, axis):
    a = RNG.standard_normal((5, 6))
    got = en.tensor(a).argpartition(kth, axis=axis).numpy()
    values = np.take_along_axis(a.ravel() if axis is None else a, got,
                                axis=0 if axis is None else axis)
    sorted_ = np.sort(a, axis=axis)
    ax = 0 if axis is None else axis
    for k in np.atleast_1d(kth):
        kth_value = np.take(values, [k], axis=ax)
        np.testing.assert_array_equal(kth_value, np.take(sorted_, [k], axis=ax))
        n = values.shape[ax]
        k = k % n
        assert np.all(np.take(values, range(k), axis=ax) <= kth_value)
        assert np.all(np.take(values, range(k + 1, n), axis=ax) >= kth_value)


def test_astype_copy_false_gives_the_tensor_itself_only_without_a_conversion():
    t = en.tensor([1.0, 2.0])
    assert t.astype("float64", copy=False) is t
    assert t.astype("float64") is not t
    assert_like_numpy(t.astype("float32", copy=False), np.array([1.0, 2.0], np.float32))
    with pytest.raises(en.DTypeError, match="astype.*float64 to int64.*'safe'"):
        t.astype("int64", casting="safe")
    assert_like_numpy(t.astype("int64", casting="unsafe"), np.array([1, 2]))


# ---- memory and serialization ------------------------------------------------------------------
@pytest.mark.parametrize("key", ["float 2x3", "int32 6", "bool 3x3"])
def test_dumps_dump_and_tofile_round_trip(key, tmp_path):
    a = INPUTS[key]
    t = en.tensor(a)
    assert_like_numpy(pickle.loads(t.dumps()), a)
    buffer = io.BytesIO()
    t.dump(buffer)
    assert_like_numpy(pickle.loads(buffer.getvalue()), a)
    t.dump(tmp_path / "t.pkl")
    with open(tmp_path / "t.pkl", "rb") as f:
        assert_like_numpy(pickle.load(f), a)
    t.tofile(tmp_path / "raw")
    np.testing.assert_array_equal(np.fromfile(tmp_path / "raw", dtype=a.dtype), a.ravel())
    t.tofile(str(tmp_path / "text"), sep=" ")
    a.tofile(str(tmp_path / "text_np"), sep=" ")
    assert (tmp_path / "text").read_text() == (tmp_path / "text_np").read_text()


def test_flat_reads_like_numpys_flatiter():
    a = INPUTS["float 3x4x2"]
    t = en.tensor(a)
    assert len(t.flat) == len(a.flat)
    for index in (5, -1, slice(2, 9, 3), [0, 7, 23], a.ravel() > 0):
        assert_like_numpy(t.flat[index], a.flat[index])
    assert [float(v) for v in t.flat] == list(a.flat)
    np.testing.assert_array_equal(np.asarray(t.flat), np.asarray(a.flat))


# ---- gradients and tracing ---------------------------------------------------------------------
CHECK = grad_checker(np.random.default_rng(1))
MASK = np.array([[True, False, True], [True, True, False]])


GRADIENT_CASES = [
    lambda x: x.sum(axis=0, initial=2.0, where=MASK),
    lambda x: x.prod(axis=1, where=MASK),
    lambda x: x.max(axis=1, where=MASK, initial=-5.0),
    lambda x: x.mean(axis=1, where=MASK),
    lambda x: x.var(axis=1, where=MASK, ddof=1),
    lambda x: x.std(axis=0, where=MASK),
    lambda x: x.var(mean=en.tensor(0.3)),
    lambda x: x.std(axis=1, ddof=1, keepdims=True),
    lambda x: x.cumsum(), lambda x: x.cumprod(axis=1), lambda x: x.trace(),
    lambda x: x.diagonal(), lambda x: x.clip(-0.5, 0.5), lambda x: x.dot(en.tensor([1.0, 2, 3])),
    lambda x: x.reshape(3, 2, order="F"), lambda x: x.ravel("F"), lambda x: x.swapaxes(0, 1),
    lambda x: x.take([5, -1, 7], mode="wrap"), lambda x: x.take([2, 9], axis=1, mode="clip"),
    lambda x: x.compress([True, False, True], axis=1), lambda x: x.repeat(2, axis=0),
    lambda x: en.tensor([[0, 1, 2], [2, 0, 1]]).choose([x[0], x[1], 2 * x[0]]),
    lambda x: x.real * x.conj() + x.imag, lambda x: x.astype("float64"), lambda x: x.copy(),
]


@pytest.mark.parametrize("case", range(len(GRADIENT_CASES)))
def test_gradients_match_finite_differences(case):
    x = np.array([[0.3, -1.2, 0.8], [1.5, 0.1, -0.4]])
    CHECK(GRADIENT_CASES[case], x)


def test_methods_inside_en_function_match_eager():
    a = INPUTS["float 2x3"]

    def f(x):
        return (x.sum(axis=0, where=MASK, initial=1.0) + x.var(axis=0, ddof=1)
                + x.reshape(3, 2, order="F").ravel()[:3] + x.take([4, 9], mode="wrap").mean()
                + x.clip(max=0.5).cumsum()[-3:] + x.astype("float64", copy=False)[0]
                + x.std(axis=0, where=MASK) + x.argsort(axis=None)[:3].astype("float64"))

    traced = en.function(f)
    got = traced(en.tensor(a))
    assert_like_numpy(got, f(en.tensor(a)).numpy())
    want = (a.sum(axis=0, where=MASK, initial=1.0) + a.var(axis=0, ddof=1)
            + a.reshape(3, 2, order="F").ravel()[:3] + a.take([4, 9], mode="wrap").mean()
            + a.clip(max=0.5).cumsum()[-3:] + a.astype("float64")[0]
            + a.std(axis=0, where=MASK) + a.argsort(axis=None)[:3])
    assert_like_numpy(got, want)
    g = en.grad(lambda x: traced(x).sum())(en.tensor(a))
    num = numeric_grad(lambda x: f(x).sum(), [a])
    np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-6)


# ---- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, pattern", [
    (lambda t: t.take([0], mode="nearest"), en.InvalidArgumentError, "Tensor.take: mode"),
    (lambda t: t.argsort(kind="bogo"), en.InvalidArgumentError, "Tensor.argsort: kind"),
    (lambda t: t.argsort(order="x"), en.UnsupportedError, "Tensor.argsort: order= .*structured"),
    (lambda t: t.argpartition(6), en.InvalidArgumentError, "Tensor.argpartition: kth=6 .*length 3"),
    (lambda t: t.reshape(3, 2, order="Q"), en.InvalidArgumentError, "Tensor.reshape: order"),
    (lambda t: t.ravel(order="X"), en.InvalidArgumentError, "order"),
    (lambda t: t.sum(out=np.zeros(3)), en.ArgumentTypeError, "Tensor.sum: out= must be a tensor"),
    (lambda t: t.sum(axis=0, out=en.zeros(2)), en.ShapeError, r"Tensor.sum: out= has shape \(2,\)"),
    (lambda t: t.clip(0, 1, casting="unsafe"), en.UnsupportedError, "Tensor.clip: casting"),
    (lambda t: t.view("int64"), en.UnsupportedError, "Tensor.view: .*reinterpret"),
    (lambda t: t.view(np.matrix), en.UnsupportedError, "Tensor.view"),
    (lambda t: t.put([0], [1.0], mode="bad"), en.InvalidArgumentError, "Tensor.put: mode"),
    (lambda t: t.put([6], [1.0]), en.InvalidArgumentError, "Tensor.put: an index is out of bounds"),
])
def test_bad_arguments_are_refused_naming_the_method_and_the_line(call, error, pattern):
    t = en.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(error, match=pattern) as info:
        call(t)
    assert "test_ndarray_surface.py" in str(info.value)


def test_nbytes_needs_a_known_shape_while_tracing():
    @en.function(input_signature=[en.TensorSpec((None, 2), "float64")])
    def f(x):
        return x.nbytes

    with pytest.raises(en.TracingError, match="nbytes"):
        f(en.ones((3, 2)))
