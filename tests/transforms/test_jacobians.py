"""Jacobians and Hessians: ``en.jacfwd``, ``en.jacrev``, ``en.hessian`` and
``GradientTape.jacobian`` / ``batch_jacobian``, against closed forms and finite
differences of the gradient, eagerly and inside ``en.function``."""
import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference


def rosenbrock(x):
    return en.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1.0 - x[:-1]) ** 2.0)


def rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def test_hessian_of_rosenbrock_is_the_closed_form():
    x = np.array([0.3, -1.2, 0.8, 1.5])
    np.testing.assert_allclose(np.asarray(en.hessian(rosenbrock)(en.tensor(x))),
                               rosenbrock_hessian(x), rtol=1e-13, atol=1e-10)


def test_hessian_of_logsumexp_is_the_closed_form():
    x = np.array([0.5, -1.0, 2.0, 0.1])
    p = np.exp(x - np.max(x))
    p /= p.sum()
    got = en.hessian(lambda v: en.logsumexp(v))(en.tensor(x))
    np.testing.assert_allclose(np.asarray(got), np.diag(p) - np.outer(p, p), rtol=1e-12,
                               atol=1e-15)


def _mlp_loss(w1, w2, x, y):
    return en.mean((en.tanh(x @ w1) @ w2 - y) ** 2.0)


def test_hessian_of_an_mlp_loss_matches_differences_of_the_gradient():
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4, 2)) * 0.5
    x, y = en.tensor(rng.standard_normal((5, 3))), en.tensor(rng.standard_normal((5, 2)))
    h = np.asarray(en.hessian(_mlp_loss)(en.tensor(w1), en.tensor(w2), x, y))
    assert h.shape == (3, 4, 3, 4)
    grad_w1 = en.grad(_mlp_loss)
    for idx in [(0, 0), (1, 2), (2, 3)]:
        def g_entry(w, idx=idx):
            return float(grad_w1(en.tensor(w), en.tensor(w2), x, y)[idx])
        fd = central_difference(g_entry, w1, eps=1e-5)
        np.testing.assert_allclose(h[idx], fd, rtol=1e-6, atol=1e-8)


def test_hessian_over_several_arguments_is_a_nested_tuple():
    f = lambda a, b: en.sum(a * a * b)   # noqa: E731
    h = en.hessian(f, argnums=(0, 1))(en.tensor([1.0, 2.0]), en.tensor([3.0, 4.0]))
    (haa, hab), (hba, hbb) = h
    np.testing.assert_array_equal(np.asarray(haa), np.diag([6.0, 8.0]))
    np.testing.assert_array_equal(np.asarray(hab), np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(hba), np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(np.asarray(hbb), np.zeros((2, 2)))


@pytest.mark.parametrize("f", [
    lambda x: en.tanh(x @ x.T),
    lambda x: en.softmax(x, axis=-1),
    lambda x: en.concat([en.sin(x), x[:, ::-1] ** 3.0], axis=0),
], ids=["tanh_gram", "softmax", "concat"])
def test_jacfwd_equals_jacrev_and_finite_differences(f):
    x = np.random.default_rng(1).standard_normal((2, 3))
    fwd = np.asarray(en.jacfwd(f)(en.tensor(x)))
    rev = np.asarray(en.jacrev(f)(en.tensor(x)))
    np.testing.assert_allclose(fwd, rev, rtol=1e-12, atol=1e-14)
    out = np.asarray(f(en.tensor(x)))
    for idx in np.ndindex(out.shape):
        fd = central_difference(lambda v: float(np.asarray(f(en.tensor(v)))[idx]), x)
        np.testing.assert_allclose(fwd[idx], fd, rtol=1e-6, atol=1e-8)


def test_jacobians_with_argnums_and_several_outputs():
    def f(a, b):
        return a * b, en.sum(a)
    a, b = en.tensor([1.0, 2.0]), en.tensor([3.0, 5.0])
    for jac in (en.jacfwd, en.jacrev):
        (j_ab, j_sum) = jac(f, argnums=1)(a, b)
        np.testing.assert_array_equal(np.asarray(j_ab), np.diag([1.0, 2.0]))
        np.testing.assert_array_equal(np.asarray(j_sum), [0.0, 0.0])
        (ja, jb), _ = jac(f, argnums=(0, 1))(a, b)
        np.testing.assert_array_equal(np.asarray(ja), np.diag([3.0, 5.0]))


def test_jacobians_inside_a_traced_function():
    f = en.function(lambda x: (en.hessian(rosenbrock)(x), en.jacrev(en.sin)(x)))
    x = np.array([0.3, -1.2, 0.8])
    h, j = f(en.tensor(x))
    np.testing.assert_allclose(np.asarray(h), rosenbrock_hessian(x), rtol=1e-13, atol=1e-10)
    np.testing.assert_allclose(np.asarray(j), np.diag(np.cos(x)), rtol=1e-15)
    f.get_concrete_function(en.tensor(x)).graph.lint()


def test_tape_jacobian_and_batch_jacobian():
    rng = np.random.default_rng(2)
    w = en.tensor(rng.standard_normal((3, 2)))
    x = en.tensor(rng.standard_normal((4, 3)))
    with en.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = en.tanh(x @ w)
    full = np.asarray(tape.jacobian(y, x))                     # (4, 2, 4, 3)
    loop = np.asarray(tape.jacobian(y, x, experimental_use_pfor=False))
    np.testing.assert_allclose(full, loop, rtol=1e-14)
    per = np.asarray(tape.batch_jacobian(y, x))                # (4, 2, 3)
    d = 1 - np.tanh(np.asarray(x) @ np.asarray(w)) ** 2
    expected = d[:, :, None] * np.asarray(w).T[None]
    np.testing.assert_allclose(per, expected, rtol=1e-13)
    np.testing.assert_allclose(full[np.arange(4), :, np.arange(4), :], expected, rtol=1e-13)
    # Rows of different examples do not depend on each other.
    assert np.all(full[0, :, 1, :] == 0)


def test_tape_jacobian_of_a_variable_and_a_one_use_tape():
    v = en.Variable([1.0, 2.0])
    with en.GradientTape() as tape:
        y = v * v
    np.testing.assert_array_equal(np.asarray(tape.jacobian(y, v)), np.diag([2.0, 4.0]))
    with pytest.raises(en.EngineError, match="persistent"):
        tape.jacobian(y, v)
    with en.GradientTape() as tape:
        tape.watch(v)
        z = en.sum(v)
    with pytest.raises(en.EngineError, match="batch"):
        tape.batch_jacobian(z, v)
