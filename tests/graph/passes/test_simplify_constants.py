"""Constant products joined: ``c1 * (c2 * x)`` -> ``(c1 * c2) * x`` where one constant is a
power of two (graph/passes/simplify.py).

The case that matters: the gradient of a mean squared error is ``(1 / n) * (2 * r)``,
two passes over the residual where one does. The rewrite must give the bits the two
products give, so every check here compares the optimized graph with the unoptimized
one byte for byte.
"""
import numpy as np
import pytest

import engine as en
from support.pass_helpers import assert_same_bits, concrete, count


def _graph_of(fn, *args):
    """The cleaned-up graph of ``fn``, after checking that it and the default pipeline
    give the unoptimized graph's bits."""
    f, c = concrete(fn, *args, passes=["cleanup"])
    want = en.function(fn, optimize=False)(*args)
    assert_same_bits(f(*args), want, "cleanup vs unoptimized")
    assert_same_bits(en.function(fn)(*args), want, "default pipeline vs unoptimized")
    return c.graph


def _wide_range(dtype, low, high, n=4005, seed=0):
    """Values of both signs over many binades, and the special values, as (1003, 4)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(low, high, n)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]
    return en.tensor(np.concatenate([x, special]).astype(dtype).reshape(-1, 4))


@pytest.mark.parametrize("dtype, low, high", [("float64", -290, 290), ("float32", -30, 30)])
@pytest.mark.parametrize("fn", [
    lambda x: 2.0 * (x * 0.3),
    lambda x: (0.3 * x) * 2.0,
    lambda x: 0.7 * (x * 0.25),
    lambda x: -4.0 * (0.1 * x),
    lambda x: 2.0 * (x * np.array([0.3, 0.5, 0.7, 0.9], np.dtype(x.dtype))),
], ids=["2*(x*c)", "(c*x)*2", "c*(x*0.25)", "-4*(c*x)", "2*(x*array)"])
def test_products_with_a_power_of_two_join(fn, dtype, low, high):
    x = _wide_range(dtype, low, high)
    graph = _graph_of(fn, x)
    assert count(graph, "mul") == 1


def test_the_mean_squared_error_gradient_scales_once():
    rng = np.random.default_rng(1)
    x = en.tensor(rng.standard_normal((50, 32)).astype(np.float32))
    t = en.tensor(rng.standard_normal((50, 32)).astype(np.float32))
    grad = en.grad(lambda x, t: en.mean((x - t) ** 2.0))
    graph = _graph_of(grad, x, t)
    assert count(graph, "mul") == 1
    # The reference: numpy's own 2 (x - t) / n.
    want = 2.0 * (x.numpy() - t.numpy()) / x.numpy().size
    np.testing.assert_allclose(en.function(grad)(x, t).numpy(), want, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("fn", [
    lambda x: 0.3 * (x * 0.7),                       # no power of two: would round once less
    lambda x: 2.0 ** -1000 * (x * 2.0 ** -100),      # the joined constant is subnormal
    lambda x: 2.0 ** 1000 * (x * 2.0 ** 100),        # the joined constant overflows
], ids=["no-power-of-two", "subnormal", "overflow"])
def test_products_that_would_round_differently_stay(fn):
    x = en.tensor(np.linspace(-3.0, 3.0, 4))
    graph = _graph_of(fn, x)
    assert count(graph, "mul") == 2


def test_an_inner_product_read_elsewhere_stays():
    x = en.tensor(np.linspace(-3.0, 3.0, 8))

    def fn(x):
        y = x * 0.3
        return 2.0 * y, y
    graph = _graph_of(fn, x)
    assert count(graph, "mul") == 2


def test_a_product_that_changes_dtype_stays():
    # float32 times a float64 array is float64: joining the constants would move the
    # rounding of x from its own dtype, so nothing is joined.
    x = en.tensor(np.linspace(-3.0, 3.0, 8).astype(np.float32).reshape(2, 4))
    graph = _graph_of(lambda x: 2.0 * (x * np.array([0.3, 0.5, 0.7, 0.9])), x)
    assert count(graph, "mul") == 2
