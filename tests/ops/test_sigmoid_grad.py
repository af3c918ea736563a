"""sigmoid_grad, the sigmoid's backward pass as one op."""
import numpy as np
import pytest

import engine.eager.mode as mode
import engine as en


def _reference(y, g):
    return g * y * (1.0 - y)


@pytest.mark.parametrize("target", ["y", "g", "fresh"])
def test_out_kernel_is_right_when_it_writes_over_an_input(target):
    # Memory planning and fusion may hand the kernel one of its inputs as out.
    rng = np.random.default_rng(0)
    y = rng.uniform(0.01, 0.99, (4, 5))
    g = rng.standard_normal((4, 5))
    want = _reference(y, g)
    out = {"y": y, "g": g, "fresh": np.empty_like(y)}[target]
    en.ops.sigmoid_grad_op.out_impl(y, g, out=out)
    np.testing.assert_allclose(out, want, rtol=1e-15)


def test_sigmoid_backward_is_one_op_and_matches_the_closed_form(monkeypatch):
    x = np.linspace(-4.0, 4.0, 12).reshape(3, 4)
    with en.GradientTape() as tape:
        xt = en.tensor(x)
        tape.watch(xt)
        y = en.sigmoid(xt)
        loss = en.sum(y * np.arange(12.0).reshape(3, 4))
    seen = []
    apply = mode.EagerMode.apply

    def counting(self, op, args, params):
        seen.append(op.name)
        return apply(self, op, args, params)
    monkeypatch.setattr(mode.EagerMode, "apply", counting)
    (gx,) = tape.gradient(loss, [xt])
    monkeypatch.undo()
    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(gx.numpy(), np.arange(12.0).reshape(3, 4) * s * (1 - s),
                               rtol=1e-14)
    assert "sigmoid_grad" in seen and "sub" not in seen


def test_second_derivative_of_sigmoid_against_the_closed_form():
    x = np.linspace(-3.0, 3.0, 7)
    d2 = en.grad(lambda t: en.sum(en.grad(lambda u: en.sum(en.sigmoid(u)))(t)))(en.tensor(x))
    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(d2.numpy(), s * (1 - s) * (1 - 2 * s), rtol=1e-12, atol=1e-15)
