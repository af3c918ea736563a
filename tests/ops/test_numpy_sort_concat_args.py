"""numpy's spellings of sort/argsort (``kind=``, ``order=``) and concatenate (``axis=None``)
give numpy's results, and what numpy would read differently is refused, never misread."""
import numpy as np
import pytest

import engine as en
from support.finite_diff import numeric_grad

_KINDS = [None, "quicksort", "mergesort", "heapsort", "stable"]


@pytest.mark.parametrize("kind", _KINDS)
def test_every_numpy_kind_gives_numpys_stable_order(kind):
    a = np.array([[3, 1, 2, 1, 3], [0, 0, 5, -1, 0]])
    np.testing.assert_array_equal(en.sort(en.tensor(a), kind=kind).numpy(), np.sort(a, kind=kind))
    np.testing.assert_array_equal(en.argsort(en.tensor(a), axis=1, kind=kind).numpy(),
                                  np.argsort(a, axis=1, kind="stable"))


def test_a_positional_kind_is_refused_not_read_as_descending():
    x = en.tensor([3, 1, 2])
    with pytest.raises(TypeError, match="descending must be True or False.*kind="):
        en.sort(x, -1, "quicksort")
    with pytest.raises(TypeError, match="descending must be True or False"):
        en.argsort(x, -1, "stable")


def test_unknown_kind_and_structured_order_are_refused():
    x = en.tensor([3, 1, 2])
    with pytest.raises(ValueError, match="kind must be one of"):
        en.argsort(x, kind="bubble")
    with pytest.raises(TypeError, match="structured arrays"):
        en.sort(x, order="f0")


@pytest.mark.parametrize("traced", [False, True])
def test_concat_with_axis_none_flattens_as_numpy(traced):
    a, b = np.arange(6.0).reshape(2, 3), np.arange(4, dtype=np.float32).reshape(2, 2, 1)
    f = (lambda x, y: en.concat([x, y], axis=None))
    f = en.function(f) if traced else f
    got = f(en.tensor(a), en.tensor(b)).numpy()
    want = np.concatenate([a, b], axis=None)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


def test_concat_axis_none_gradient_matches_finite_differences():
    a, b = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(0, 2, 4).reshape(2, 2)
    w = np.linspace(0.5, 3, 10)

    def loss(x, y):
        return en.sum(en.concat([x, y], axis=None) ** 2 * en.tensor(w))

    gx, gy = en.grad(loss, argnums=(0, 1))(en.tensor(a), en.tensor(b))
    np.testing.assert_allclose(gx.numpy(), numeric_grad(loss, (a, b), 0), rtol=1e-6)
    np.testing.assert_allclose(gy.numpy(), numeric_grad(loss, (a, b), 1), rtol=1e-6)


def test_concat_refuses_an_axis_that_is_not_an_integer():
    x = en.ones((2, 2))
    with pytest.raises(TypeError, match="concat: axis .* not an integer"):
        en.concat([x, x], axis=1.0)
