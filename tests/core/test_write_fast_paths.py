"""The fast paths of writes on eager tensors (engine/writes.py: ``setitem`` and the
in-place operator methods) against numpy: values, dtypes and errors on the inputs the
fast paths take, and the features of the checked path (tapes, version counters,
tracing, read-only memory, other back ends) on the same statements next to them.

Every case runs the same write on a numpy array and on a tensor and compares; a case
the fast path declines (another dtype, a tape, a trace) must give the same answer
through the checked path. Every test runs twice: through the C extension's type slots
(engine/fast_writes.py, when built) and through engine/writes.py's Python functions."""
import gc

import numpy as np
import pytest

import engine as en
from engine import fast_writes, writes
from support.finite_diff import numeric_grad

DTYPES = ["float32", "float64", "int64", "int8", "bool", "complex64"]

# Index forms the fast path takes: ints (Python's and numpy's), slices, basic tuples,
# the ellipsis and boolean masks of at least one axis.
INDEXES = [1, -2, np.int64(3), np.int32(0), slice(1, 4), slice(None, None, -2), (2, 1),
           (slice(0, 3), -1), (Ellipsis, 0), Ellipsis, (), "mask", "row mask"]


@pytest.fixture(autouse=True, params=["c", "python"])
def write_path(request):
    """Each test through the C slots (skipped where the extension is not built) and
    through the Python functions."""
    if request.param == "c":
        if not fast_writes.BUILT:
            pytest.skip("the C extension engine._fast_writes is not built here")
        yield request.param
        return
    with fast_writes.python_writes():
        yield request.param


def _values(dtype, shape=(5, 3), seed=7):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.uniform(size=shape) < 0.5)
    if dtype.startswith("complex"):
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape),
                          dtype=dtype)
    return np.asarray(rng.standard_normal(shape) * 10).astype(dtype)


def _index(index, a):
    """numpy's index and the tensor's for one of INDEXES (a mask is a tensor)."""
    if index == "mask":
        mask = np.arange(a.size).reshape(a.shape) % 3 == 0
        return mask, en.tensor(mask)
    if index == "row mask":
        mask = np.array([True, False, True, True, False])
        return mask, en.tensor(mask)
    return index, index


def _same(t, a):
    assert t.dtype == a.dtype
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_setitem_of_numbers_matches_numpy(dtype, index):
    for value in (3, True, 2.5, -1.75):
        a = _values(dtype)
        t = en.tensor(a)
        np_index, t_index = _index(index, a)
        a[np_index] = value
        t[t_index] = value
        _same(t, a)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_setitem_of_a_tensor_matches_numpy(dtype, index):
    a = _values(dtype)
    t = en.tensor(a)
    np_index, t_index = _index(index, a)
    shape = np.shape(a[np_index])
    for values in (_values(dtype, shape, seed=1), _values(dtype, shape[-1:], seed=2),
                   _values("float64", shape, seed=3)):      # the last: another dtype, cast
        if a.dtype.kind not in "c" and values.dtype.kind == "c":
            continue
        a[np_index] = values
        t[t_index] = en.tensor(values)
        _same(t, a)


def test_setitem_from_a_view_of_itself_matches_numpy():
    a = np.arange(10.0)
    t = en.tensor(a)
    a[1:] = a[:-1]
    t[1:] = t[:-1]           # overlapping memory: numpy copies first, as here
    _same(t, a)


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(7, 1.0),                              # index out of range
    lambda x: x.__setitem__((0, 0), 1.0),                         # too many indices
    lambda x: x.__setitem__(slice(0, 3), en.ones(2)),             # does not broadcast
    lambda x: x.__setitem__(en.tensor([True, False]), 1.0),       # mask of another shape
    lambda x: x.__setitem__(1, 1 + 2j),                           # complex into float
], ids=["range", "rank", "broadcast", "mask", "complex"])
def test_bad_writes_raise_the_engines_error_and_write_nothing(write):
    a = np.arange(5.0)
    t = en.tensor(a)
    with pytest.raises(en.EngineError) as info:
        write(t)
    assert isinstance(info.value, type(_numpy_error(write)))      # numpy's error class too
    message = str(info.value)
    assert "index_update" in message or "getitem" in message     # the op
    assert any(s in message for s in ("float64[5]", "(5,)", "size 5"))   # the tensor
    _same(t, a)


def _numpy_error(write):
    """The error numpy raises for the same write on an array (tensors made numpy's)."""
    class Numpy(np.ndarray):
        def __setitem__(self, index, value):
            index = index.numpy() if isinstance(index, en.Tensor) else index
            value = value.numpy() if isinstance(value, en.Tensor) else value
            np.ndarray.__setitem__(self, index, value)
    try:
        write(np.arange(5.0).view(Numpy))
    except Exception as err:      # noqa: BLE001 - whichever numpy raises
        return err
    raise AssertionError("numpy accepted the write")


@pytest.mark.parametrize("dtype,value,error", [
    ("int8", 300, OverflowError), ("uint8", -1, OverflowError), ("int8", -129, OverflowError),
    ("int64", float("nan"), ValueError), ("int32", float("inf"), OverflowError),
    ("int8", 300.0, OverflowError), ("uint8", -1.0, OverflowError),
    ("int64", 1e20, OverflowError), ("int32", 2.0 ** 31, OverflowError),
])
def test_a_number_an_integer_tensor_cannot_hold_is_refused_as_numpy_refuses_it(dtype, value,
                                                                               error):
    a = np.zeros(3, dtype)
    with pytest.raises(error):
        a[0] = value
    t = en.zeros(3, dtype=dtype)
    for write in (lambda: t.__setitem__(0, value), lambda: t.__setitem__(slice(0, 2), value)):
        with pytest.raises(error, match=f"{dtype}\\[3\\]"):
            write()
    assert t.tolist() == [0, 0, 0]
    with en.GradientTape():          # the checked path itself (a tape takes it)
        with pytest.raises(error):
            t[0] = value


@pytest.mark.parametrize("dtype,value", [("int8", 127), ("uint8", 0), ("int64", -2.9),
                                         ("int16", True), ("uint8", 255.9), ("int8", -128.7),
                                         ("bool", 2.5), ("bool", float("nan"))])
def test_a_number_an_integer_tensor_holds_is_written_as_numpy_writes_it(dtype, value):
    a, t = np.zeros(3, dtype), en.zeros(3, dtype=dtype)
    a[1] = value
    t[1] = value
    _same(t, a)


# ---- in-place operators -------------------------------------------------------------------
OPERATORS = ["+=", "-=", "*=", "/=", "**=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>="]


def _in_place(symbol, x, y):
    scope = {"x": x, "y": y}
    exec(f"x {symbol} y", {}, scope)
    return scope["x"]


def _operand_cases(dtype):
    """Operands of the kinds the fast path takes, and some it leaves to the checked path."""
    base = _values(dtype, (4, 3))
    yield base, _values(dtype, (4, 3), seed=1)              # a tensor of x's dtype
    yield base, _values(dtype, (3,), seed=2)                # broadcast along rows
    yield base, 2                                           # a Python int
    yield base, 1.5                                         # a Python float
    yield base, True                                        # a Python bool
    yield base, _values("float64", (3,))                    # another dtype


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool",
                                   "complex128"])
@pytest.mark.parametrize("symbol", OPERATORS)
def test_in_place_operators_match_numpy(symbol, dtype):
    for a, y in _operand_cases(dtype):
        if dtype in ("int32", "int64", "uint8") and symbol in ("**=", "<<=", ">>="):
            y = abs(y) % 3 if not isinstance(y, np.ndarray) else np.abs(y) % 3
        if symbol in ("//=", "%=") and not isinstance(y, np.ndarray) and y == 0:
            continue
        a = a.copy()
        expected_error = None
        with np.errstate(all="ignore"):
            try:
                want = _in_place(symbol, a.copy(), y.copy() if isinstance(y, np.ndarray) else y)
            except (TypeError, ValueError) as err:
                expected_error = err
        t = en.tensor(a)
        operand = en.tensor(y) if isinstance(y, np.ndarray) else y
        if expected_error is not None:
            with pytest.raises((TypeError, ValueError)), np.errstate(all="ignore"):
                _in_place(symbol, t, operand)
            _same(t, a)                                      # nothing half-written
            continue
        with np.errstate(all="ignore"):
            got = _in_place(symbol, t, operand)
        assert got is t
        assert t.dtype == want.dtype
        if dtype.startswith(("float", "complex")):
            np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(t.numpy(), want)


def test_in_place_float_division_by_zero_warns_as_numpy():
    a = np.ones(3, np.float32)
    with pytest.warns(RuntimeWarning):
        a /= 0
    t = en.ones(3, dtype="float32")
    with pytest.warns(RuntimeWarning):
        t /= 0
    _same(t, a)


def test_in_place_operator_writes_through_views_as_numpy():
    a = np.arange(6.0).reshape(2, 3)
    t = en.tensor(a)
    row, t_row = a[1], t[1]
    row += 10.0
    t_row += 10.0
    col, t_col = a[:, 0], t[:, 0]
    col *= en.tensor(2.0).numpy()
    t_col *= en.tensor(2.0)
    _same(t, a)
    _same(t_row, row)


def test_read_only_memory_is_copied_by_every_write_form():
    data = np.arange(4.0)
    data.flags.writeable = False
    t = en.tensor(data)
    t[0] = 9.0
    t += 1.0
    t[en.tensor([False, True, False, False])] = -1.0
    np.testing.assert_array_equal(data, [0.0, 1.0, 2.0, 3.0])      # not written
    np.testing.assert_array_equal(t.numpy(), [10.0, -1.0, 3.0, 4.0])
    v = en.Variable([1.0, 2.0])
    r = v.value()
    r += 1.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


# ---- what the checked path keeps, next to the fast path ----------------------------------------
def test_captured_tensor_written_by_each_fast_form_is_not_stale():
    c = en.tensor([1.0, 2.0, 3.0, 4.0])
    view = c[1:]
    f = en.function(lambda x: x * c)
    one = en.ones(4)
    np.testing.assert_array_equal(f(one).numpy(), [1.0, 2.0, 3.0, 4.0])
    c[0] = 10.0                                           # an int index
    np.testing.assert_array_equal(f(one).numpy(), [10.0, 2.0, 3.0, 4.0])
    view[0] = 20.0                                        # through a view
    np.testing.assert_array_equal(f(one).numpy(), [10.0, 20.0, 3.0, 4.0])
    c[en.tensor([False, False, True, False])] = 30.0      # a mask
    np.testing.assert_array_equal(f(one).numpy(), [10.0, 20.0, 30.0, 4.0])
    c *= en.tensor(2.0)                                   # an in-place operator
    np.testing.assert_array_equal(f(one).numpy(), [20.0, 40.0, 60.0, 8.0])


def _fast_forms(x):
    y = x * 1.0
    z = y * y                   # the tape keeps y's value before the writes below
    y[0] = 2.0
    y[1:] *= 3.0
    y += x
    y[en.tensor([True, False, True])] = y[0] * 0.5   # a traced-on-tape mask write
    return en.sum(z) + en.sum(y * y)


def test_gradients_flow_through_the_fast_forms_under_a_tape():
    x = np.array([0.5, -1.5, 2.0])
    want = numeric_grad(_fast_forms, (x,))
    np.testing.assert_allclose(en.grad(_fast_forms)(en.tensor(x)).numpy(), want, rtol=1e-6)
    t = en.tensor(x)
    with en.GradientTape() as tape:
        tape.watch(t)
        out = _fast_forms(t)
    np.testing.assert_allclose(tape.gradient(out, t).numpy(), want, rtol=1e-6)


def test_a_tensor_saved_for_backward_then_overwritten_keeps_its_old_value():
    x = en.tensor([1.0, 2.0, 3.0])
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
        z = en.sum(y * y)
        y[1] = 100.0              # an int index and a number: the fast path's form
        y += 1.0
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(y.numpy(), [2.0, 101.0, 4.0])


def test_the_fast_forms_inside_a_function_are_functional_updates():
    def step(x, y):
        x = x * 1.0
        x[0] = 5.0
        x[1:3] = y[:2]
        x += y
        x *= 2.0
        x[en.tensor([True, False, False, True])] = -1.0
        return x
    x, y = en.tensor([1.0, 2.0, 3.0, 4.0]), en.tensor([0.5, 0.25, 0.125, 1.0])
    f = en.function(step)
    np.testing.assert_array_equal(f(x, y).numpy(), step(x, y).numpy())
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0, 4.0])      # argument kept
    graph_ops = {n.op.name for n in f.graph_for(x, y).nodes if hasattr(n, "op")}
    assert "index_update" in graph_ops or "where" in graph_ops


def test_a_capture_written_inside_a_function_is_refused_by_each_fast_form():
    c = en.zeros(3)
    for write in (lambda: c.__setitem__(0, 1.0), lambda: c.__iadd__(1.0)):
        with pytest.raises(en.TracingError):
            en.function(lambda x, w=write: (w(), x)[1])(en.ones(3))
    np.testing.assert_array_equal(c.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("backend", ["array_api_strict", "dask"])
def test_writes_on_other_back_ends_match_numpy(backend):
    pytest.importorskip(backend)
    a = np.arange(6.0)
    t = en.tensor(a, backend=backend)
    other = en.tensor(a)          # on numpy: the same writes, one back end each
    for x in (a, t, other):
        x[1] = 5.0
        x[2:4] = 7.0
    a += 1.0
    t += 1.0
    a *= 2.0
    t *= en.tensor(2.0, backend=backend)
    assert t.backend.name == backend
    np.testing.assert_array_equal(t.numpy(), a)


# ---- t.shape = s ---------------------------------------------------------------------------
def test_setting_shape_is_refused_and_changes_nothing():
    t = en.ones(6)
    with pytest.raises(AttributeError, match=r"reshape\(\(2, 3\)\)") as info:
        t.shape = (2, 3)
    assert isinstance(info.value, en.EngineError)
    assert "test_write_fast_paths.py" in str(info.value)       # the user's line
    assert t.shape == (6,) and t.numpy().shape == (6,)
    assert t.reshape((2, 3)).shape == np.ones(6).reshape(2, 3).shape
    with pytest.raises(AttributeError):
        del t.shape


# ---- t.dtype = d ---------------------------------------------------------------------------
def test_setting_dtype_is_refused_and_changes_nothing():
    t = en.tensor([1.5, -2.0, 3.25])
    with pytest.raises(AttributeError, match=r"astype\('int64'\)") as info:
        t.dtype = "int64"      # numpy would reinterpret the bytes: 4609434218613702656 ...
    assert isinstance(info.value, en.EngineError)
    assert "test_write_fast_paths.py" in str(info.value)       # the user's line
    assert t.dtype == np.float64
    np.testing.assert_array_equal(t.numpy(), np.array([1.5, -2.0, 3.25]))
    np.testing.assert_array_equal((t + 1).numpy(), np.array([1.5, -2.0, 3.25]) + 1)
    with pytest.raises(AttributeError):
        del t.dtype


@pytest.mark.parametrize("name, value, fix", [("shape", (3, 2), "reshape"),
                                               ("dtype", np.float32, "astype")])
def test_setting_shape_or_dtype_is_refused_while_tracing_and_under_transformations(
        name, value, fix):
    def set_it(x):
        setattr(x, name, value)
        return x
    for transformed in (en.function(set_it), en.vmap(set_it),
                        lambda x: en.jvp(set_it, (x,), (x,)),
                        en.grad(lambda x: en.sum(set_it(x)))):
        with pytest.raises(AttributeError, match=fix):
            transformed(en.ones((2, 6)))


def _refuse_the_checked_path(monkeypatch):
    def checked(*args):
        raise AssertionError(f"the checked path ran for {args[1:]!r}")
    gc.collect()          # tapes of earlier tests, held in reference cycles, are gone
    monkeypatch.setattr(writes, "_checked_setitem", checked)
    monkeypatch.setattr(writes, "in_place", checked)


def test_the_common_forms_never_reach_the_checked_path(monkeypatch):
    _refuse_the_checked_path(monkeypatch)
    x, y = en.zeros(100, dtype="float32"), en.ones(100, dtype="float32")
    x[3] = 1.0
    x[np.int64(4)] = 2
    x[10:20] = 0.5
    x[en.tensor(np.arange(100) % 2 == 0)] = -1.0
    x[:50] = y[50:]
    x += y
    x -= 1.0
    x *= 2
    x /= 2
    m = en.zeros((4, 3))
    m[1, 2] = 3.0
    m[:, 0] = en.ones(4)
    a = np.zeros(100, np.float32)
    a[3], a[4], a[10:20] = 1.0, 2, 0.5
    a[np.arange(100) % 2 == 0] = -1.0
    a[:50] = 1.0
    a += 1.0
    a -= 1.0
    a *= 2
    a /= 2
    np.testing.assert_array_equal(x.numpy(), a)


def test_updates_after_a_spent_tape_take_the_fast_path(monkeypatch):
    w = en.tensor([1.0, -2.0, 3.0])
    with en.GradientTape() as tape:
        tape.watch(w)
        loss = en.sum(w * w)
    (g,) = tape.gradient(loss, [w])        # the tape is spent, though still bound here
    _refuse_the_checked_path(monkeypatch)
    w -= 0.25 * g
    w[0] = 0.0
    np.testing.assert_array_equal(w.numpy(), [0.0, -1.0, 1.5])


def test_a_persistent_tape_keeps_the_checked_path_for_its_memory():
    w = en.tensor([1.0, 2.0])
    with en.GradientTape(persistent=True) as tape:
        tape.watch(w)
        y = w * 1.0
        loss = en.sum(y * y)
    y[0] = 10.0                 # after the block: the tape still holds y for loss
    y += 1.0
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(y.numpy(), [11.0, 3.0])


def test_setting_shape_is_refused_as_pytorch_refuses_it():
    torch = pytest.importorskip("torch")
    with pytest.raises(AttributeError):
        torch.ones(6).shape = (2, 3)
    with pytest.raises(AttributeError):
        en.ones(6).shape = (2, 3)
