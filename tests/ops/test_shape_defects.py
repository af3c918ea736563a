"""Regression tests of defects in the shape and product ops: ``dot`` beyond two vectors,
lists of tensors passed to ops (their gradient was lost eagerly and tracing failed),
and the gradient of an empty vector-matrix product."""
import numpy as np
import pytest

import engine as en


@pytest.mark.parametrize("sx,sy", [((2, 3), (3,)), ((2, 3), (3, 4)), ((), (2, 3)), ((3,), ()),
                                   ((2, 3, 4), (5, 4, 2)), ((3,), (3, 2))])
def test_dot_is_numpys_dot(sx, sy):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(sx), rng.standard_normal(sy)
    got = en.dot(en.tensor(x), en.tensor(y))
    np.testing.assert_allclose(got.numpy(), np.dot(x, y), rtol=1e-12)
    traced = en.function(en.dot)(en.tensor(x), en.tensor(y))
    np.testing.assert_allclose(traced.numpy(), np.dot(x, y), rtol=1e-12)


def test_dot_of_matrices_has_the_matrix_product_gradient():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    ga, gb = en.grad(lambda a, b: en.sum(en.dot(a, b)), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga.numpy(), np.ones((2, 4)) @ b.T)
    np.testing.assert_allclose(gb.numpy(), a.T @ np.ones((2, 4)))


def _mean_of_list(x):
    return en.mean([x, x + 2])


def test_a_list_of_tensors_keeps_its_gradient_eagerly():
    assert float(en.grad(_mean_of_list)(0.0)) == 1.0
    assert float(en.grad(lambda x: en.sum(en.tensor([x, 3 * x])))(1.0)) == 4.0
    # Nested lists, with Python numbers beside the tensors.
    g = en.grad(lambda x: en.sum(en.mul([[x, 1.0], [x * x, 2.0]], 2.0)))(3.0)
    assert float(g) == 2.0 + 2.0 * 2 * 3.0


def test_a_list_of_tensors_traces():
    f = en.function(_mean_of_list)
    assert float(f(en.tensor(1.0))) == 2.0
    assert float(en.function(en.grad(_mean_of_list))(en.tensor(0.0))) == 1.0
    g = en.function(en.grad(lambda x: en.sum(en.tensor([x, 3 * x], dtype="float32"))))
    out = g(en.tensor(1.0, dtype="float32"))
    assert out.dtype == np.float32 and float(out) == 4.0


def test_a_list_of_tensors_under_a_tape_records_the_stack():
    x = en.tensor([1.0, 2.0])
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(en.mul([x, 2 * x], [[1.0], [10.0]]))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [21.0, 21.0])


def test_a_list_of_strict_tensors_stays_on_its_back_end():
    t = en.tensor([1.0, 2.0], backend="array_api_strict")
    g = en.grad(lambda t: en.sum([t, t * 2]))(t)
    assert g.backend.name == "array_api_strict"
    np.testing.assert_array_equal(g.to("numpy").numpy(), [3.0, 3.0])


def test_lists_without_tensors_are_still_constants():
    out = en.add([1.0, 2.0], en.tensor([[1.0], [2.0]]))
    np.testing.assert_array_equal(out.numpy(), [[2.0, 3.0], [3.0, 4.0]])


def test_ragged_list_of_tensors_is_a_shape_error_naming_stack():
    with pytest.raises(en.ShapeError, match="stack"):
        en.sum([en.ones(2), en.ones(3)])


@pytest.mark.parametrize("sx,sy", [((0,), (0, 8)), ((3, 0), (0,)), ((2, 0), (0, 3)),
                                   ((0,), (2, 0, 4))])
def test_gradient_of_empty_products(sx, sy):
    x, y = np.zeros(sx), np.zeros(sy)
    gx, gy = en.grad(lambda x, y: en.sum(en.matmul(x, y)), argnums=(0, 1))(x, y)
    assert gx.shape == sx and gy.shape == sy
    assert not gx.numpy().any() and not gy.numpy().any()
