"""``std`` and the norms at 0: a subgradient of 0 (PyTorch's), not ``inf * 0 = nan``,
in reverse mode, forward mode and graph mode; finite differences away from 0."""
import math
import warnings

import numpy as np
import pytest

import engine as en
from support.finite_diff import numeric_grad


@pytest.fixture(autouse=True)
def _no_numpy_warnings():
    # The fix must keep the singular point out of both passes, not hide a nan.
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def test_std_gradient_of_a_scalar_is_zero():
    g = en.grad(en.std)(en.tensor(3.5))
    np.testing.assert_array_equal(g.numpy(), 0.0)


def test_std_gradient_over_an_axis_of_one_is_zero():
    g = en.grad(lambda x: en.sum(en.std(x, axis=0)))(en.tensor(np.ones((1, 3))))
    np.testing.assert_array_equal(g.numpy(), np.zeros((1, 3)))


def test_std_gradient_at_a_constant_row_is_zero_beside_the_others():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    g = en.grad(lambda t: en.sum(en.std(t, axis=1)))(en.tensor(x)).numpy()
    np.testing.assert_array_equal(g[0], 0.0)
    # The other row: the closed form (x - mean) / (n std).
    row = x[1]
    np.testing.assert_allclose(g[1], (row - row.mean()) / (row.size * row.std()))


def test_std_jvp_at_a_constant_is_zero():
    y, t = en.jvp(en.std, (en.tensor(np.ones(3)),), (en.tensor([1.0, -2.0, 0.5]),))
    assert float(y) == 0.0 and float(t) == 0.0


def test_std_gradient_in_graph_mode_is_zero_at_a_constant():
    f = lambda x: en.sum(en.std(x, axis=0))   # noqa: E731
    x = en.tensor(np.full((4, 3), 7.0))
    np.testing.assert_array_equal(en.function(en.grad(f))(x).numpy(), np.zeros((4, 3)))
    np.testing.assert_array_equal(en.grad(en.function(f))(x).numpy(), np.zeros((4, 3)))


@pytest.mark.parametrize("ddof", [0, 1])
def test_std_gradient_matches_finite_differences_away_from_zero(ddof):
    x = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.7]])
    f = lambda t: en.sum(en.std(t, axis=0, ddof=ddof))   # noqa: E731
    np.testing.assert_allclose(en.grad(f)(en.tensor(x)).numpy(), numeric_grad(f, (x,)),
                               rtol=1e-6, atol=1e-8)


def test_std_value_unchanged_at_zero_and_nan():
    assert float(en.std(en.tensor(np.full(4, 2.5, dtype=np.float32)))) == 0.0
    assert en.std(en.tensor(np.ones(3, dtype=np.float32))).dtype == np.float32
    assert math.isnan(float(en.std(en.tensor([np.nan, 1.0]))))


def test_var_gradient_at_a_constant_is_zero():
    g = en.grad(lambda x: en.sum(en.var(x, axis=0)))(en.tensor(np.ones((1, 3))))
    np.testing.assert_array_equal(g.numpy(), np.zeros((1, 3)))


NORMS = [
    ("norm", lambda x: en.linalg.norm(x)),
    ("vector_norm_2", lambda x: en.linalg.vector_norm(x)),
    ("vector_norm_3", lambda x: en.linalg.vector_norm(x, ord=3)),
    ("vector_norm_1.5", lambda x: en.linalg.vector_norm(x, ord=1.5)),
    ("fro", lambda x: en.linalg.matrix_norm(x, ord="fro")),
    ("norm_axis", lambda x: en.sum(en.linalg.norm(x, axis=1))),
]


@pytest.mark.parametrize("name,f", NORMS, ids=[n for n, _ in NORMS])
def test_norm_gradient_at_zero_is_zero(name, f):
    x = en.tensor(np.zeros((2, 3)))
    np.testing.assert_array_equal(en.grad(f)(x).numpy(), np.zeros((2, 3)))
    _, t = en.jvp(f, (x,), (en.tensor(np.ones((2, 3))),))
    assert float(t) == 0.0


@pytest.mark.parametrize("name,f", NORMS, ids=[n for n, _ in NORMS])
def test_norm_gradient_matches_finite_differences_away_from_zero(name, f):
    x = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.7]])
    np.testing.assert_allclose(en.grad(f)(en.tensor(x)).numpy(), numeric_grad(f, (x,)),
                               rtol=1e-6, atol=1e-8)


def test_norm_of_a_zero_row_has_zero_gradient_beside_the_others():
    x = np.array([[0.0, 0.0], [3.0, -4.0]])
    g = en.grad(lambda t: en.sum(en.linalg.norm(t, axis=1)))(en.tensor(x)).numpy()
    np.testing.assert_allclose(g, [[0.0, 0.0], [3.0 / 5.0, -4.0 / 5.0]])   # x / |x|
