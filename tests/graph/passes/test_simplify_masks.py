"""Simplification of constant masks: ``logical_and``/``logical_or`` decided by a constant
input and ``where`` on a constant condition (graph/passes/simplify.py).

The case that matters: the derivative rules of ``pow`` guard the point x = 0, y = 0
with ``where((x == 0) & (y == 0), 1, y)``. When the exponent is a known nonzero
constant (``(y - x) ** 2.0``) the mask is all False; without these rewrites every
JVP, VJP and Hessian of a squared error computed ``x ** (2 - 1)`` with a float power
over the whole array, behind two masks.
"""
import numpy as np
import pytest

import engine as en
from support.pass_helpers import SPECIAL, assert_same_bits, concrete, op_names

X = en.tensor(SPECIAL)


def _simplified(fn, *args):
    """``(ops after simplify + constant folding + dce, the function)``; values bit-equal."""
    f, c = concrete(fn, *args, passes=["cleanup"])
    assert_same_bits(f(*args), en.function(fn, optimize=False)(*args), "cleanup vs unoptimized")
    assert_same_bits(en.function(fn)(*args), en.function(fn, optimize=False)(*args),
                     "default pipeline vs unoptimized")
    return op_names(c.graph)


MASK_OPS = {"logical_and", "logical_or", "where", "greater"}


@pytest.mark.parametrize("fn", [
    lambda x: en.logical_and(x > 0.0, np.zeros(8, bool)),
    lambda x: en.logical_and(np.False_, x > 0.0),
    lambda x: en.logical_or(x > 0.0, np.True_),
    lambda x: en.where(np.True_, x, 2.0 * x),
    lambda x: en.where(np.zeros(8, bool), 2.0 * x, x),
    lambda x: en.where(en.broadcast_to(np.False_, (3, 8)), 1.0, x),
], ids=["and-false", "false-and", "or-true", "where-true", "where-false", "where-broadcast"])
def test_constant_masks_decide_the_result(fn):
    names = _simplified(fn, X)
    assert not MASK_OPS & set(names), names


@pytest.mark.parametrize("fn", [
    lambda x: en.logical_and(x > 0.0, np.array([True, False] * 4)),
    lambda x: en.logical_or(x > 0.0, np.zeros(8, bool)),
    lambda x: en.where(np.array([True, False] * 4), x, 2.0 * x),
    lambda x: en.where(x > 0.0, x, 2.0 * x),
], ids=["and-mixed", "or-false", "where-mixed", "where-data"])
def test_masks_that_do_not_decide_stay(fn):
    names = _simplified(fn, X)
    assert any(n in ("logical_and", "logical_or", "where") for n in names), names


def test_where_of_another_dtype_is_not_replaced_by_a_branch():
    # where(True, int, float) is a float: the int branch alone would change the dtype.
    fn = lambda x: en.where(np.True_, np.arange(8), x)   # noqa: E731
    _simplified(fn, X)


def _squared_error_jvp(y, x, t):
    return en.jvp(lambda y: en.mean((y - x) ** 2.0), (y,), (t,))


def test_jvp_of_a_squared_error_computes_no_power():
    # Regression: the tangent of (y - x) ** 2.0 kept pow(y - x, 2.0 - 1.0) behind the
    # masks of pow's derivative at 0 ** 0 (a float power over the whole array).
    rng = np.random.default_rng(0)
    y, x, t = (en.tensor(rng.standard_normal((5, 7)).astype(np.float32)) for _ in range(3))
    _, c = concrete(_squared_error_jvp, y, x, t, passes=["cleanup"])   # before fusion
    names = [n.op.name for n in c.graph.nodes]
    assert not {"pow", "where", "equal", "logical_and"} & set(names), c.graph
    out, tangent = en.function(_squared_error_jvp)(y, x, t)
    d = np.asarray(y, np.float64) - np.asarray(x, np.float64)
    np.testing.assert_allclose(float(tangent), np.mean(2.0 * d * np.asarray(t)), rtol=1e-5)
    np.testing.assert_allclose(float(out), np.mean(d ** 2), rtol=1e-5)


def test_gradient_of_a_cube_keeps_the_closed_form_without_pow_guards():
    # d/dx x ** 3 = 3 x ** 2: the exponent is a nonzero constant, so no guard remains;
    # at x = 0 the value is 0 (no NaN), as unoptimized.
    g = en.grad(lambda x: en.sum(x ** 3.0))
    f, c = concrete(g, X, passes=["cleanup"])
    names = [n.op.name for n in c.graph.nodes]
    assert not {"where", "equal", "logical_and"} & set(names), c.graph
    assert_same_bits(f(X), en.function(g, optimize=False)(X), "x**3 gradient")
    assert_same_bits(en.function(g)(X), en.function(g, optimize=False)(X), "x**3 gradient")


def test_second_derivative_of_x_to_the_zero_is_still_zero_at_zero():
    # The guard stays where it is needed: y = 0 is a constant, so the mask is x == 0.
    g = en.function(en.grad(en.grad(lambda x: x ** 0.0)))
    assert float(g(en.tensor(0.0))) == 0.0
    assert float(g(en.tensor(2.0))) == 0.0
