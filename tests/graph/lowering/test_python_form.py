"""The numpy lowering writes some nodes as Python expressions (the ``python_form`` rule):
a basic index of a static shape is ``x[0:32]`` in the generated source, not a kernel call.
Results are compared with numpy's own indexing of the same arrays."""
import numpy as np
import pytest

import engine as en

BASIC_INDICES = [
    (slice(0, 2),),
    (slice(1, None),),
    (slice(None, None, -1),),
    (slice(0, 4, 2), -1),
    (1,),
    (-1, slice(None, 2)),
    (Ellipsis, 0),
    (None, slice(1, 3)),
    (slice(None), None, 2),
]


@pytest.mark.parametrize("index", BASIC_INDICES, ids=repr)
def test_a_basic_index_of_a_static_shape_is_written_as_python(index):
    x = np.arange(24.0).reshape(4, 3, 2)
    fn = en.function(lambda t: t[index] * 2.0)
    got = fn(en.tensor(x)).numpy()
    np.testing.assert_array_equal(got, x[index] * 2.0)
    source = fn.source_for(en.tensor(x))
    assert "k_getitem" not in source and "x0[" in source


def test_the_expression_is_a_view_as_the_kernel_gives():
    x = np.arange(12.0).reshape(4, 3)
    fn = en.function(lambda t: (t[1:3], t[0]))
    a, b = fn(en.tensor(x))
    np.testing.assert_array_equal(a.numpy(), x[1:3])
    np.testing.assert_array_equal(b.numpy(), x[0])


def test_an_unknown_dimension_or_an_index_array_keeps_the_kernel():
    # An int index into a dimension unknown while tracing may be out of range at call
    # time: the kernel raises the error that names getitem.
    fn = en.function(lambda t: t[2] + 1.0,
                     input_signature=[en.TensorSpec((None, 3), "float64")])
    x = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(fn(en.tensor(x)).numpy(), x[2] + 1.0)
    assert "k_getitem" in fn.source_for(en.tensor(x))
    with pytest.raises(en.errors.ShapeError, match="getitem"):
        fn(en.tensor(x[:2]))
    rows = en.function(lambda t, i: t[i] + 1.0)
    i = np.array([2, 0])
    np.testing.assert_array_equal(rows(en.tensor(x), en.tensor(i)).numpy(), x[i] + 1.0)
    assert "k_getitem" in rows.source_for(en.tensor(x), en.tensor(i))


def test_the_gradient_through_a_written_index_is_numpys_scatter():
    x = np.arange(12.0).reshape(4, 3)
    grad = en.function(en.grad(lambda t: en.sum(t[1:3, ::2] ** 2.0)))
    expected = np.zeros_like(x)
    expected[1:3, ::2] = 2.0 * x[1:3, ::2]
    np.testing.assert_array_equal(grad(en.tensor(x)).numpy(), expected)
