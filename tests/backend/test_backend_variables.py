"""Variables hold their back end's own arrays: a variable made from a strict tensor
keeps an ``array_api_strict`` array, eagerly and in graphs on that back end; values
from another back end are refused, as in an op."""
import array_api_strict as xps
import numpy as np
import pytest

import engine as en

STRICT = "array_api_strict"


def strict(data):
    return en.tensor(data, backend=STRICT)


def test_a_variable_keeps_its_backends_array():
    v = en.Variable(strict([1.0, 2.0]), name="w")
    assert v.backend.name == STRICT and isinstance(v._value, type(xps.asarray(0.0)))
    assert (v.shape, v.dtype) == ((2,), np.dtype("float64"))
    read = v.read()
    assert read.backend.name == STRICT
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert en.Variable([1.0]).backend.name == "numpy"
    assert en.Variable(xps.asarray([3.0])).backend.name == STRICT   # the library's own array


def test_eager_assignments_stay_on_the_backend():
    v = en.Variable(strict([1.0, 2.0]))
    before = v.read()
    v.assign_add(1.0)
    v.assign_sub(strict([0.5, 0.25]))
    np.testing.assert_array_equal(v.numpy(), [1.5, 2.75])
    v.assign([4.0, 5.0])                      # Python data: made on the variable's back end
    assert v.read().backend.name == STRICT
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])   # earlier reads never change


@pytest.mark.parametrize("other", [lambda: np.ones(2), lambda: en.ones(2),
                                   lambda: en.Variable(np.ones(2))],
                         ids=["ndarray", "tensor", "variable"])
def test_assigning_another_backends_value_is_refused(other):
    v = en.Variable(strict([1.0, 2.0]))
    with pytest.raises(en.BackendError, match="array_api_strict and numpy"):
        v.assign(other())
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_shape_and_dtype_are_checked_and_rows_need_in_place_updates():
    v = en.Variable(strict([1.0, 2.0]))
    with pytest.raises(en.ShapeError, match="does not match"):
        v.assign(strict([1.0, 2.0, 3.0]))
    with pytest.raises(en.DTypeError, match="float32"):
        v.assign(en.tensor([1.0, 2.0], dtype="float32", backend=STRICT))
    with pytest.raises(en.UnimplementedError, match="no in-place updates"):
        v.scatter_update(0, strict([9.0]))


def test_a_tape_differentiates_a_strict_variable():
    v = en.Variable(strict([0.5, -1.0]))
    with en.GradientTape() as tape:
        y = en.sum(v * v * 3.0)
    g = tape.gradient(y, v)
    assert g.backend.name == STRICT
    np.testing.assert_allclose(g.numpy(), 6.0 * np.array([0.5, -1.0]))


def test_graphs_on_the_backend_read_and_assign_it():
    v = en.Variable(strict([1.0, 2.0]))
    scale = en.function(lambda x: x * v)
    bump = en.function(lambda x: v.assign_add(x * 2.0))
    out = scale(strict([3.0, 4.0]))
    assert out.backend.name == STRICT
    np.testing.assert_array_equal(out.numpy(), [3.0, 8.0])
    bump(strict([1.0, 1.0]))
    assert v.read().backend.name == STRICT
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])


def test_a_graph_mixing_a_variable_with_another_backend_is_refused_when_traced():
    v, w = en.Variable(strict([1.0, 2.0])), en.Variable(np.ones(2))
    with pytest.raises(en.BackendError, match="variable 'Variable"):
        en.function(lambda x: x * v)(en.ones(2))
    with pytest.raises(en.BackendError, match="numpy"):
        en.function(lambda x: x * w)(strict([1.0, 1.0]))
    with pytest.raises(en.BackendError, match="'mul'"):
        v * w


@pytest.mark.parametrize("make", [lambda: en.optim.SGD(0.1), lambda: en.optim.Adagrad(0.1),
                                  lambda: en.optim.Adam(0.1), lambda: en.optim.AdamW(0.1)],
                         ids=["sgd", "adagrad", "adam", "adamw"])
def test_an_optimizer_keeps_its_slots_on_the_variables_backend(make):
    on_strict, on_numpy = en.Variable(strict([1.0, -2.0])), en.Variable([1.0, -2.0])
    for var, opt in ((on_strict, make()), (on_numpy, make())):
        for _ in range(3):
            with en.GradientTape() as tape:
                loss = en.sum(var * var * var)
            opt.apply_gradients([(tape.gradient(loss, var), var)])
        assert all(s.backend is var.backend for s in opt.variables()
                   if s is not opt.iterations)
    assert on_strict.backend.name == STRICT
    np.testing.assert_allclose(on_strict.numpy(), on_numpy.numpy(), rtol=1e-12)
