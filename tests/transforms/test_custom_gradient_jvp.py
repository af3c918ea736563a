"""A ``custom_gradient`` rule wins under forward mode too: ``jvp`` pushes the tangent
through the rule's VJP, not through the function's forward ops, in eager mode, in
``en.function``, and nested with ``grad``, ``jvp`` and ``vmap``.

The functions here return ``stop_gradient`` of their value, so their forward ops
have a derivative of 0 and only the rule gives the closed forms checked."""
import numpy as np
import pytest

import engine as en


@en.custom_gradient
def log1pexp(x):
    """The gradients guide's example (docs/guide/autodiff.md): stable only through its rule."""
    e = en.exp(x)

    def grad_fn(dy):
        return dy * (1.0 - 1.0 / (1.0 + e))
    return en.log(1.0 + e), grad_fn


@en.custom_gradient
def sin_by_rule(x):
    """``sin`` whose only derivative is its rule, ``cos``."""
    return en.stop_gradient(en.sin(x)), lambda dy: dy * en.cos(x)


@en.custom_gradient
def product_and_sum(x, y):
    """``(x * y, x + y)`` whose only derivatives are its rule's."""
    def grad_fn(dys):
        dp, ds = dys
        return dp * y + ds, dp * x + ds
    return (en.stop_gradient(x * y), en.stop_gradient(x + y)), grad_fn


X = 0.7


def _jvp_sin(x):
    return en.jvp(sin_by_rule, (x,), (en.ones_like(x),))[1]


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")
def test_readme_log1pexp_jvp_at_large_float32_uses_the_rule():
    x = en.tensor(100.0, dtype="float32")
    one = en.tensor(1.0, dtype="float32")
    expected = 1.0 / (1.0 + np.exp(-100.0))     # sigmoid(100) in float64
    _, t = en.jvp(log1pexp, (x,), (one,))
    assert t.dtype == np.float32
    assert float(t) == pytest.approx(expected)
    traced = en.function(lambda x: en.jvp(log1pexp, (x,), (en.ones_like(x),))[1])
    assert float(traced(x)) == pytest.approx(expected)
    assert float(en.jvp(en.function(log1pexp), (x,), (one,))[1]) == pytest.approx(expected)


def test_jvp_is_the_rule_times_the_tangent():
    y, t = en.jvp(sin_by_rule, (en.tensor(X),), (en.tensor(3.0),))
    assert float(y) == pytest.approx(np.sin(X))
    assert float(t) == pytest.approx(3.0 * np.cos(X))


def test_jvp_uses_the_rule_inside_en_function():
    assert float(en.function(_jvp_sin)(en.tensor(X))) == pytest.approx(np.cos(X))


def test_jvp_of_grad_differentiates_the_rule():
    # d/dx of grad(f^2) = d/dx (2 sin cos) = 2 cos(2x): both the value's tangent and
    # the gradient's come from the rule.
    g = en.grad(lambda x: sin_by_rule(x) ** 2)
    _, t = en.jvp(g, (en.tensor(X),), (en.tensor(1.0),))
    assert float(t) == pytest.approx(2.0 * np.cos(2.0 * X))
    traced = en.function(lambda x: en.jvp(g, (x,), (en.ones_like(x),))[1])
    assert float(traced(en.tensor(X))) == pytest.approx(2.0 * np.cos(2.0 * X))


def test_grad_of_jvp_and_jvp_of_jvp_differentiate_the_rule():
    assert float(en.grad(_jvp_sin)(en.tensor(X))) == pytest.approx(-np.sin(X))
    _, t = en.jvp(_jvp_sin, (en.tensor(X),), (en.tensor(1.0),))
    assert float(t) == pytest.approx(-np.sin(X))


def test_jvp_with_vmap_uses_the_rule():
    xs = np.array([0.7, 0.1, -1.3])
    np.testing.assert_allclose(en.vmap(_jvp_sin)(en.tensor(xs)).numpy(), np.cos(xs))
    _, t = en.jvp(en.vmap(sin_by_rule), (en.tensor(xs),), (en.tensor([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(t.numpy(), np.cos(xs) * [1.0, 2.0, 3.0])


def test_jvp_through_a_rule_of_two_inputs_and_two_outputs():
    x, y, tx, ty = 1.5, -2.0, 0.3, 0.7
    (p, s), (tp, ts) = en.jvp(product_and_sum, (en.tensor(x), en.tensor(y)),
                              (en.tensor(tx), en.tensor(ty)))
    assert (float(p), float(s)) == pytest.approx((x * y, x + y))
    assert float(tp) == pytest.approx(y * tx + x * ty)
    assert float(ts) == pytest.approx(tx + ty)


def test_a_tangent_on_one_input_only():
    _, (tp, ts) = en.jvp(lambda x: product_and_sum(x, en.tensor(4.0)),
                         (en.tensor(2.0),), (en.tensor(1.0),))
    assert (float(tp), float(ts)) == pytest.approx((4.0, 1.0))
