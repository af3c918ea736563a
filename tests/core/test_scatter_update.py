"""``Variable.scatter_update``: row writes, eager and traced, in place only when safe."""
import json
import os

import numpy as np
import pytest

import engine as en


def _reference(initial, writes):
    """The rows after ``writes`` [(indices, updates), ...], with numpy's fancy assignment."""
    out = np.array(initial, copy=True)
    for idx, upd in writes:
        out[np.asarray(idx)] = upd
    return out


WRITES = [
    (1, np.array([5.0, 6.0, 7.0], np.float32)),
    (np.array([0, 3]), np.arange(6, dtype=np.float32).reshape(2, 3)),
    (-1, np.full(3, 9.0, np.float32)),
    (np.array([2, 2]), np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], np.float32)),  # last wins
    (np.array([], np.int64), np.zeros((0, 3), np.float32)),
]


def test_eager_writes_match_numpy():
    init = np.arange(12, dtype=np.float32).reshape(4, 3)
    v = en.Variable(init)
    for i, (idx, upd) in enumerate(WRITES):
        assert v.scatter_update(idx, upd) is v
        np.testing.assert_array_equal(v.numpy(), _reference(init, WRITES[:i + 1]))
    assert v.dtype == np.float32 and not v.numpy().flags.writeable


@pytest.mark.parametrize("optimize", [False, True])
def test_traced_writes_match_eager(optimize):
    init = np.arange(12, dtype=np.float32).reshape(4, 3)
    v = en.Variable(init)

    @en.function(optimize=optimize)
    def write(idx, upd):
        v.scatter_update(idx, upd)
        return v.read() * 2.0

    for i, (idx, upd) in enumerate(WRITES[:4]):
        got = write(np.asarray(idx), upd)
        want = _reference(init, WRITES[:i + 1])
        np.testing.assert_array_equal(v.numpy(), want)
        np.testing.assert_array_equal(got.numpy(), want * 2.0)


def test_earlier_reads_never_change():
    v = en.Variable(np.zeros((3, 2)))
    eager_read, array = v.read(), v.numpy()
    v.scatter_update(0, [1.0, 1.0])
    assert not eager_read.numpy().any() and not array.any()

    @en.function
    def read_write_read(row):
        before = v.read()
        v.scatter_update(1, row)
        return before, v.read()

    before, after = read_write_read(np.array([4.0, 4.0]))
    np.testing.assert_array_equal(before.numpy(), [[1, 1], [0, 0], [0, 0]])
    np.testing.assert_array_equal(after.numpy(), [[1, 1], [4, 4], [0, 0]])
    np.testing.assert_array_equal(v.numpy(), after.numpy())
    read_write_read(np.array([5.0, 5.0]))
    np.testing.assert_array_equal(after.numpy(), [[1, 1], [4, 4], [0, 0]])   # still


def test_writes_in_place_when_nothing_else_holds_the_value():
    # The point of scatter_update: storing a row of a big buffer costs a row.
    v = en.Variable(np.zeros((64, 1000), np.float32))
    v.scatter_update(0, np.ones(1000, np.float32))     # may copy once (initial value)
    first = id(v.numpy())
    for i in range(1, 5):
        v.scatter_update(i, np.ones(1000, np.float32))
    assert id(v.numpy()) == first

    @en.function
    def step(i, row):
        v.scatter_update(i, row)
        return en.sum(v.read()[:8])

    for i in range(5, 10):
        step(np.int64(i), np.ones(1000, np.float32))
    assert id(v.numpy()) == first
    assert float(en.sum(v.read())) == 10 * 1000


def test_scatter_under_a_tape_keeps_recorded_reads():
    w = en.Variable(np.ones((2, 2)))
    with en.GradientTape() as tape:
        y = en.sum(w * w)
        w.scatter_update(0, [3.0, 3.0])      # the tape's read still sees ones
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), 2 * np.ones((2, 2)))
    np.testing.assert_array_equal(w.numpy(), [[3, 3], [1, 1]])


def test_errors_name_the_variable_shapes_and_line():
    v = en.Variable(np.zeros((4, 3), np.float32), name="hist")
    with pytest.raises(en.ShapeError, match=r"'hist'.scatter_update: updates have shape \(4,\).*need \(3,\)"):
        v.scatter_update(0, np.zeros(4, np.float32))
    with pytest.raises(en.DTypeError, match="updates have dtype float64, the variable's dtype is float32"):
        v.scatter_update(0, np.zeros(3))
    with pytest.raises(en.DTypeError, match="indices must be an integer"):
        v.scatter_update(np.array([0.5]), np.zeros((1, 3), np.float32))
    with pytest.raises(en.DTypeError, match="indices must be an integer"):
        v.scatter_update(np.zeros((1, 1), np.int64), np.zeros((1, 1, 3), np.float32))
    with pytest.raises(en.EngineError, match=r"index \[0, 4\] is out of range for 4 rows") as info:
        v.scatter_update(np.array([0, 4]), np.ones((2, 3), np.float32))
    assert "test_scatter_update.py" in str(info.value)
    assert not v.numpy().any()                   # nothing half-written
    with pytest.raises(en.ShapeError, match="scalar variable has no rows"):
        en.Variable(1.0).scatter_update(0, 2.0)


def test_traced_errors_at_trace_and_run_time():
    v = en.Variable(np.zeros((4, 3), np.float32), name="hist")
    with pytest.raises(en.ShapeError, match="need \\(3,\\)"):
        en.function(lambda u: v.scatter_update(0, u))(np.zeros(2, np.float32))

    @en.function
    def write(i):
        v.scatter_update(i, en.ones((3,), "float32"))
        return v.read()

    with pytest.raises(en.EngineError, match="index 7 is out of range for 4 rows") as info:
        write(np.array(7))
    assert "test_scatter_update.py" in str(info.value)
    assert not v.numpy().any()


def test_save_and_load_keep_scatter_updates(tmp_path):
    v = en.Variable(np.zeros((3, 2)), name="rows")

    @en.function
    def write(i, row):
        v.scatter_update(i, row)
        return en.sum(v.read())

    path = str(tmp_path / "scatter")
    en.save(write, path, np.array(0), np.zeros(2))
    loaded = en.load(path)
    rows = next(u for u in loaded.variables if u.name == "rows")
    loaded(np.array(2), np.array([1.0, 2.0]))
    assert float(loaded(np.array(0), np.array([3.0, 3.0]))) == 9.0
    np.testing.assert_array_equal(rows.numpy(), [[3, 3], [0, 0], [1, 2]])

    # A scatter node without its indices is refused at load time.
    doc_path = os.path.join(path, "graph.json")
    with open(doc_path) as f:
        doc = json.load(f)
    text = json.dumps(doc)
    assert "scatter_update" in text
    _drop_scatter_indices(doc)
    with open(doc_path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(en.LoadError, match="kind 'scatter_update' takes 2"):
        en.load(path)


def _drop_scatter_indices(doc):
    """Remove the second input of every scatter node in a saved document."""
    if isinstance(doc, dict):
        if doc.get("op") == "assign_variable" and doc.get("params", {}).get("kind") == "scatter_update":
            doc["inputs"] = doc["inputs"][:1]
        for value in doc.values():
            _drop_scatter_indices(value)
    elif isinstance(doc, list):
        for value in doc:
            _drop_scatter_indices(value)


def test_graph_assign_takes_fresh_values_without_sharing_what_others_hold():
    # A traced assign keeps a fresh intermediate as the new value (no copy);
    # a caller's array, a constant or a returned value must stay independent.
    v = en.Variable(np.zeros((2, 3)))
    user = np.ones((2, 3))
    en.function(lambda x: v.assign(x).read())(user)
    user[0, 0] = 7.0                                   # still the caller's, still writeable
    assert v.numpy()[0, 0] == 1.0

    @en.function
    def assign_and_return(x):
        y = x * 2.0
        v.assign(y)
        return y

    out = assign_and_return(user)
    v.scatter_update(0, [9.0, 9.0, 9.0])               # must not write into ``out``
    np.testing.assert_array_equal(out.numpy(), user * 2.0)
    np.testing.assert_array_equal(v.numpy()[1], user[1] * 2.0)

    const = en.function(lambda: v.assign(en.ones((2, 3), "float64")).read())
    const()
    v.scatter_update(1, [5.0, 5.0, 5.0])
    np.testing.assert_array_equal(const().numpy(), np.ones((2, 3)))
