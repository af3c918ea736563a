"""L-BFGS against a numpy reference of one step with history, on quadratics (closed-form
minimum) and Rosenbrock, with both line searches; and training steps of SGD, Adam and
L-BFGS traced once and matching eager."""
import numpy as np
import pytest

import engine as en


# ---- L-BFGS ------------------------------------------------------------------------
def _quadratic(n=12, cond=100.0, seed=3):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    A = Q @ np.diag(np.geomspace(1.0, cond, n)) @ Q.T
    return A, rng.normal(size=n)


def _rosenbrock_np(x):
    f = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


def _rosenbrock_en(x, n):
    # x[1:] and x[:-1] as matmuls with shift matrices (no indexing needed).
    lo, hi = np.eye(n)[:-1], np.eye(n)[1:]
    a, b = en.matmul(lo, x), en.matmul(hi, x)
    return en.sum(100.0 * en.square(b - a * a) + en.square(1.0 - a))


def lbfgs_reference(f_and_grad, x0, steps, lr=1.0, m=10, line_search=False, c1=1e-4,
                    max_backtracks=10, curvature_eps=1e-10):
    """Textbook L-BFGS (Nocedal & Wright Alg. 7.4) with the conventions of en.optim.LBFGS."""
    x = np.array(x0, dtype=float)
    hist, gamma, prev = [], 1.0, None
    path = []
    for _ in range(steps):
        f, g = f_and_grad(x)
        if prev is not None:
            s, y = x - prev[0], g - prev[1]
            if s @ y > curvature_eps * (y @ y):
                hist = (hist + [(s, y)])[-m:]
                gamma = (s @ y) / (y @ y)
        q, alphas = g.copy(), []
        for s, y in reversed(hist):                     # newest first
            a = (s @ q) / (s @ y)
            q -= a * y
            alphas.append(a)
        r = gamma * q
        for (s, y), a in zip(hist, reversed(alphas)):   # oldest first
            b = (y @ r) / (s @ y)
            r += (a - b) * s
        d = -r
        if not hist:
            d = d * min(1.0, 1.0 / np.abs(g).sum())
        prev = (x.copy(), g.copy())
        t = lr
        if line_search:
            lengths = [lr * 0.5 ** j for j in range(max_backtracks)]
            t = lengths[-1]
            for tj in lengths:
                if f_and_grad(x + tj * d)[0] <= f + c1 * tj * (g @ d):
                    t = tj
                    break
        x = x + t * d
        path.append(x.copy())
    return path


@pytest.mark.parametrize("op_by_op", [False, True], ids=["numpy_step", "engine_op_step"])
@pytest.mark.parametrize("line_search", [None, "backtracking"])
def test_lbfgs_one_step_with_history_matches_reference(line_search, op_by_op):
    # history 3 and 9 steps: the ring buffer wraps around twice.
    # With lr=4 the line search has to halve the step several times.
    # Eagerly the step runs on numpy values; under check_numerics it runs op
    # by op as engine ops (the code a trace records): both must match.
    n = 6
    lr = 0.5 if line_search is None else 4.0
    x0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.1, 0.3])
    ref = lbfgs_reference(_rosenbrock_np, x0, 9, lr=lr, m=3, line_search=line_search is not None)
    x = en.Variable(x0)
    opt = en.optim.LBFGS(lr=lr, history=3, line_search=line_search)
    lengths = []
    for k in range(9):
        with en.debug.check_numerics(op_by_op):
            opt.minimize(lambda: _rosenbrock_en(x, n), x)
        np.testing.assert_allclose(x.numpy(), ref[k], rtol=1e-9, atol=1e-12, err_msg=f"step {k}")
        lengths.append(float(opt.step_size))
    assert int(opt._count) == 3
    if line_search:
        assert min(lengths) <= lr / 4


def test_lbfgs_step_under_check_numerics_names_the_op_that_made_nan():
    # The step runs op by op when numerics are checked, so a NaN gradient is
    # caught at the first pass over it, before any variable changes.
    x = en.Variable(np.array([1.0, 2.0]))
    opt = en.optim.LBFGS(history=3)
    opt.step(en.tensor([0.5, 0.5]), [x])
    before = x.numpy().copy()
    with en.debug.check_numerics(), pytest.raises(en.NumericsError, match="op '"):
        opt.step(en.tensor([np.nan, 0.5]), [x])
    np.testing.assert_array_equal(x.numpy(), before)


def test_lbfgs_step_with_explicit_gradients_matches_reference():
    A, b = _quadratic(n=8)
    fg = lambda x: (0.5 * x @ A @ x - b @ x, A @ x - b)   # noqa: E731
    ref = lbfgs_reference(fg, np.zeros(8), 5, m=4)
    x = en.Variable(np.zeros(8))
    opt = en.optim.LBFGS(history=4)
    for k in range(5):
        opt.step(en.tensor(fg(x.numpy())[1]), [x])
        np.testing.assert_allclose(x.numpy(), ref[k], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("line_search", [None, "backtracking"])
def test_lbfgs_quadratic_over_several_variables(line_search):
    # The flat parameter vector is split over a matrix and a vector variable.
    A, b = _quadratic(n=12)
    W, v = en.Variable(np.zeros((2, 4))), en.Variable(np.zeros(4))

    def loss():
        flat = en.matmul(en.reshape(W, (-1,)), np.eye(12)[:8]) + en.matmul(v, np.eye(12)[8:])
        return 0.5 * en.matmul(flat, en.matmul(A, flat)) - en.matmul(b, flat)

    opt = en.optim.LBFGS(history=10, line_search=line_search)
    for _ in range(80):
        opt.minimize(loss, [W, v])
    x_star = np.linalg.solve(A, b)
    np.testing.assert_allclose(W.numpy().ravel(), x_star[:8], atol=1e-6)
    np.testing.assert_allclose(v.numpy(), x_star[8:], atol=1e-6)


@pytest.mark.parametrize("line_search", [None, "backtracking"])
def test_lbfgs_rosenbrock_converges(line_search):
    n = 2
    x = en.Variable(np.array([-1.2, 1.0]))
    opt = en.optim.LBFGS(history=10, line_search=line_search)
    for _ in range(100):
        opt.minimize(lambda: _rosenbrock_en(x, n), x)
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0], atol=1e-6)


def test_lbfgs_backtracking_rescues_a_too_long_step():
    # lr=10 overshoots on every step; the line search must shorten it.
    A, b = _quadratic(n=6, cond=10.0)
    x = en.Variable(np.zeros(6))
    opt = en.optim.LBFGS(lr=10.0, line_search="backtracking")
    loss = lambda: 0.5 * en.matmul(x, en.matmul(A, x)) - en.matmul(b, x)   # noqa: E731
    losses = [float(opt.minimize(loss, x)) for _ in range(30)]
    assert all(l1 <= l0 + 1e-12 for l0, l1 in zip(losses, losses[1:]))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(A, b), atol=1e-6)
    assert float(opt.step_size) < 10.0


def test_lbfgs_reset_forgets_history():
    x = en.Variable(np.array([3.0, -2.0]))
    opt = en.optim.LBFGS(history=4)
    for _ in range(3):
        opt.minimize(lambda: en.sum(en.square(x - 1.0)), x)
    opt.reset()
    assert int(opt._count) == 0 and int(opt.iterations) == 0
    assert not np.any(opt.slot(x, "s").numpy())


@pytest.mark.parametrize("make", [lambda: en.optim.SGD(0.01, momentum=0.9, nesterov=True),
                                  lambda: en.optim.Adam(0.05),
                                  lambda: en.optim.LBFGS(history=3),
                                  lambda: en.optim.LBFGS(lr=4.0, history=3, line_search="backtracking")])
def test_training_step_traces_and_matches_eager(make):
    A, b = _quadratic(n=6, cond=10.0)

    def run(compiled):
        x = en.Variable(np.zeros(6))
        opt = make().build([x])
        loss = lambda: 0.5 * en.matmul(x, en.matmul(A, x)) - en.matmul(b, x)   # noqa: E731

        def step():
            return opt.minimize(loss, [x])
        step = en.function(step) if compiled else step
        losses = [float(step()) for _ in range(8)]
        return x.numpy().copy(), losses, step

    x_eager, l_eager, _ = run(False)
    x_graph, l_graph, fn = run(True)
    np.testing.assert_allclose(x_graph, x_eager, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(l_graph, l_eager, rtol=1e-9, atol=1e-12)
    assert fn.trace_count == 1
