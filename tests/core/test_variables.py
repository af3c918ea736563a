"""Variables: assignment, validation, reads as immutable tensors, and tapes."""
import sys

import numpy as np
import pytest

import engine as en


def test_initial_value_and_properties():
    v = en.Variable([1.0, 2.0, 3.0], name="w")
    assert v.name == "w"
    assert v.shape == (3,)
    assert v.dtype == np.float64
    assert v.ndim == 1 and v.size == 3
    assert v.trainable is True
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(v), [1.0, 2.0, 3.0])
    assert en.Variable(1.0, dtype="float32").dtype == np.float32
    assert en.Variable(np.zeros(2, np.int32)).dtype == np.int32


def test_variables_get_distinct_default_names():
    a, b = en.Variable(1.0), en.Variable(1.0)
    assert a.name != b.name


def test_initial_array_is_copied():
    source = np.array([1.0, 2.0])
    v = en.Variable(source)
    source[0] = 50.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_value_is_read_only():
    v = en.Variable([1.0, 2.0])
    with pytest.raises(ValueError):
        v.numpy()[0] = 3.0
    with pytest.raises(ValueError):
        v.read().numpy()[0] = 3.0


def test_assign_assign_add_assign_sub():
    v = en.Variable([1.0, 2.0])
    assert v.assign([5.0, 6.0]) is v
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    v.assign_add(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(v.numpy(), [6.0, 7.0])
    v.assign_sub(en.tensor([0.5, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [5.5, 5.0])
    v.assign_add(1.0)  # a Python scalar is broadcast
    np.testing.assert_array_equal(v.numpy(), [6.5, 6.0])
    v.assign(en.Variable([0.0, 0.0]))
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])


def test_assign_does_not_alias_the_source():
    v = en.Variable([0.0, 0.0])
    source = np.array([1.0, 2.0])
    v.assign(source)
    source[0] = 99.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_weak_scalars_keep_the_variable_dtype():
    v = en.Variable([1.0, 2.0], dtype="float32")
    v.assign_add(0.5)
    v.assign_sub(1)
    assert v.dtype == np.float32 and v.numpy().dtype == np.float32
    np.testing.assert_allclose(v.numpy(), np.array([0.5, 1.5], np.float32))
    i = en.Variable([1, 2], dtype="int32")
    i.assign_add(3)
    assert i.numpy().dtype == np.int32
    np.testing.assert_array_equal(i.numpy(), [4, 5])


def test_float_scalar_into_an_int_variable_is_an_error():
    # numpy 2 promotes int32 + 1.5 to float64, so this cannot be stored without loss.
    i = en.Variable([1, 2], dtype="int32", name="counter")
    with pytest.raises(en.DTypeError, match="counter"):
        i.assign_add(1.5)
    np.testing.assert_array_equal(i.numpy(), [1, 2])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_shape_mismatch_names_the_variable(method):
    v = en.Variable(np.zeros((2, 3)), name="kernel")
    with pytest.raises(en.ShapeError) as info:
        getattr(v, method)(np.zeros((3, 2)))
    msg = str(info.value)
    assert "kernel" in msg
    assert method in msg
    assert "(3, 2)" in msg and "(2, 3)" in msg
    assert isinstance(info.value, ValueError)
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 3)))  # unchanged


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_dtype_mismatch_names_the_variable(method):
    v = en.Variable(np.zeros(2, dtype=np.float32), name="bias")
    with pytest.raises(en.DTypeError) as info:
        getattr(v, method)(np.zeros(2, dtype=np.float64))
    msg = str(info.value)
    assert "bias" in msg and "float32" in msg and "float64" in msg
    assert isinstance(info.value, TypeError)


def test_assign_error_names_the_user_line():
    v = en.Variable([1.0], name="w")
    line = sys._getframe().f_lineno + 2
    with pytest.raises(en.ShapeError) as info:
        v.assign([1.0, 2.0])
    assert f"{__file__}:{line}" in str(info.value)


def test_earlier_reads_are_unchanged_by_later_assigns():
    v = en.Variable([1.0, 2.0])
    before = v.read()
    derived = v * 10.0
    view = before.numpy()
    v.assign([7.0, 8.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(view, [1.0, 2.0])
    np.testing.assert_array_equal(derived.numpy(), [10.0, 20.0])
    np.testing.assert_array_equal(v.read().numpy(), [8.0, 9.0])


def test_variable_in_ops_and_operators():
    v = en.Variable([[1.0, 2.0], [3.0, 4.0]])
    ref = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((v + 1.0).numpy(), ref + 1.0)
    np.testing.assert_array_equal((2.0 * v).numpy(), 2.0 * ref)
    np.testing.assert_array_equal((v @ v).numpy(), ref @ ref)
    np.testing.assert_array_equal((ref @ v).numpy(), ref @ ref)
    np.testing.assert_array_equal(en.exp(v).numpy(), np.exp(ref))
    np.testing.assert_array_equal(v.sum(axis=0).numpy(), ref.sum(axis=0))
    np.testing.assert_array_equal(v.T.numpy(), ref.T)
    assert float(en.Variable(2.5)) == 2.5
    assert "shape=(2, 2)" in repr(v) and "float64" in repr(v)


# ---- tapes -----------------------------------------------------------------------
def test_trainable_variable_is_watched_automatically():
    v = en.Variable([1.0, 2.0, 3.0])
    with en.GradientTape() as tape:
        y = en.sum(v * v)
    assert tape.watched_variables() == [v]
    g = tape.gradient(y, v)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])


def test_reads_are_recorded_each_time():
    v = en.Variable(3.0)
    with en.GradientTape() as tape:
        a = v.read()
        b = v.value()
        y = a * b * v  # three reads: y = v**3
    np.testing.assert_allclose(float(tape.gradient(y, v)), 27.0)


def test_non_trainable_variable_is_not_watched():
    v = en.Variable(2.0, trainable=False)
    w = en.Variable(5.0)
    with en.GradientTape() as tape:
        y = v * w
    assert tape.watched_variables() == [w]
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None
    assert float(gw) == 2.0


def test_non_trainable_variable_can_be_watched_explicitly():
    v = en.Variable(2.0, trainable=False)
    with en.GradientTape() as tape:
        tape.watch(v)
        y = v * v
    assert float(tape.gradient(y, v)) == 4.0


def test_watch_accessed_variables_false():
    v = en.Variable(2.0)
    w = en.Variable(3.0)
    with en.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(w)
        y = v * w
    gv, gw = tape.gradient(y, [v, w])
    assert gv is None
    assert float(gw) == 2.0


def test_int_variable_is_not_watched():
    v = en.Variable([1, 2])
    with en.GradientTape() as tape:
        y = v * 2
    assert tape.watched_variables() == []
    assert tape.gradient(en.cast(y, "float64"), v) is None


def test_gradient_uses_the_value_read_before_an_assign():
    v = en.Variable(3.0)
    with en.GradientTape() as tape:
        y = v * v
        v.assign(10.0)  # later reads see 10; the recorded read saw 3
    assert float(tape.gradient(y, v)) == pytest.approx(6.0)
    assert float(v) == 10.0


def test_reads_after_assign_under_one_tape_add_up():
    v = en.Variable(2.0)
    with en.GradientTape() as tape:
        a = v * 1.0          # read at 2
        v.assign_add(1.0)
        b = v * v            # reads at 3
        y = a + b
    # dy/dv: 1 from the first read plus 2 * 3 from the second.
    assert float(tape.gradient(y, v)) == pytest.approx(7.0)


def test_gradient_descent_with_variables():
    w = en.Variable(np.array([0.0, 0.0]))
    target = np.array([1.0, -2.0])
    for _ in range(100):
        with en.GradientTape() as tape:
            loss = en.sum((w - target) ** 2)
        w.assign_sub(tape.gradient(loss, w) * 0.1)
    np.testing.assert_allclose(w.numpy(), target, atol=1e-6)
