"""A classic pure-numpy program run unchanged on engine tensors: BFGS with a
backtracking (Armijo) line search, minimizing the n-dimensional Rosenbrock function
whose gradient is written by hand (slice writes ``g[1:-1] = ...``, in-place updates
of the inverse Hessian).

It runs once from a numpy starting point and once from an engine tensor; every
iterate must agree to 1e-12, the numpy run must reach the known minimum (all ones),
and ``en.grad`` of the Rosenbrock function must agree with the hand-written gradient.
"""
import numpy as np

import engine as en


# ---- the program (numpy only) -------------------------------------------------------------
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    g = np.zeros_like(x)
    inner = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * inner - 2 * (1 - x[:-1])
    g[1:] += 200.0 * inner
    return g


def bfgs(f, grad, x0, iterations=200, tol=1e-10):
    """The iterates of BFGS from ``x0`` (a copy of it is updated in place)."""
    x = np.copy(x0)
    n = x.shape[0]
    H = np.eye(n)
    g = grad(x)
    path = [np.copy(x)]
    for _ in range(iterations):
        if np.linalg.norm(g) < tol:
            break
        p = -np.dot(H, g)
        step, fx, slope = 1.0, f(x), np.dot(g, p)
        while f(x + step * p) > fx + 1e-4 * step * slope:
            step *= 0.5
        s = step * p
        x += s
        g_new = grad(x)
        y = g_new - g
        g = g_new
        sy = np.dot(s, y)
        if sy > 1e-12:   # the curvature condition; skip the update otherwise
            rho = 1.0 / sy
            I = np.eye(n)   # noqa: E741  (the textbook's name)
            H = np.dot(I - rho * np.outer(s, y), np.dot(H, I - rho * np.outer(y, s)))
            H += rho * np.outer(s, s)
        path.append(np.copy(x))
    return path


# ---- the tests ----------------------------------------------------------------------------
X0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.5])


def test_the_numpy_run_finds_the_minimum():
    path = bfgs(rosenbrock, rosenbrock_grad, X0)
    np.testing.assert_allclose(path[-1], np.ones_like(X0), atol=1e-6)


def test_the_hand_written_gradient_matches_en_grad():
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal(6)
        got = en.grad(rosenbrock)(en.tensor(x))
        np.testing.assert_allclose(got.numpy(), rosenbrock_grad(x), rtol=1e-12, atol=1e-12)


def test_the_gradient_runs_on_tensors_and_matches_numpy():
    x = np.random.default_rng(1).standard_normal(7)
    got = rosenbrock_grad(en.tensor(x))
    assert isinstance(got, en.Tensor)
    np.testing.assert_allclose(got.numpy(), rosenbrock_grad(x), rtol=1e-12, atol=1e-12)


def test_bfgs_from_a_tensor_matches_numpy_at_every_iterate():
    want = bfgs(rosenbrock, rosenbrock_grad, X0)
    got = bfgs(rosenbrock, rosenbrock_grad, en.tensor(X0))
    assert len(got) == len(want)
    assert all(isinstance(x, en.Tensor) for x in got)
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-12, err_msg=f"iterate {i}")
