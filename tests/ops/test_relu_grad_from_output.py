"""relu's gradient is read from its output (out > 0 exactly where x > 0), so a bias add
before it is read by relu alone and fuses with it: the gradient is unchanged, at zeros,
signed zeros, infinities and NaN, eagerly and traced."""
import numpy as np

import engine as en
from support.finite_diff import numeric_grad


def test_relu_gradient_is_one_exactly_where_the_input_is_positive():
    x = np.array([-2.0, -0.0, 0.0, 1e-300, 3.0, np.inf, -np.inf, np.nan])
    want = (x > 0).astype(np.float64)                      # NaN > 0 is False
    for grad in (en.grad(lambda t: en.sum(en.relu(t))),
                 en.function(en.grad(lambda t: en.sum(en.relu(t))))):
        np.testing.assert_array_equal(grad(en.tensor(x)).numpy(), want)


def test_relu_after_a_bias_add_matches_finite_differences():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((6, 5, 4))
    b = rng.standard_normal(4)
    c = rng.standard_normal((6, 5, 4))

    def loss(xt, bt):
        return en.sum(en.relu(xt + bt) * en.tensor(c))
    traced = en.function(en.grad(loss, argnums=(0, 1)))
    gx, gb = traced(en.tensor(x), en.tensor(b))
    np.testing.assert_allclose(gx.numpy(), numeric_grad(loss, (x, b), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb.numpy(), numeric_grad(loss, (x, b), 1), rtol=1e-6, atol=1e-7)
