"""Optimizers against hand-written numpy references and closed-form solutions."""
import numpy as np
import pytest

import engine as en
from engine.errors import EngineError, ShapeError


# ---- first-order optimizers: one-step updates ------------------------------------
def _run(opt, w0, grads):
    w = en.Variable(w0)
    for g in grads:
        opt.step(en.tensor(g), w)
    return w.numpy()


@pytest.fixture
def w_and_grads():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 4)), [rng.normal(size=(3, 4)) for _ in range(3)]


def test_sgd_step(w_and_grads):
    w0, gs = w_and_grads
    np.testing.assert_allclose(_run(en.optim.SGD(0.1), w0, gs[:1]), w0 - 0.1 * gs[0], rtol=1e-12)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_matches_reference(w_and_grads, nesterov):
    w0, gs = w_and_grads
    lr, mu = 0.1, 0.9
    w, v = w0.copy(), np.zeros_like(w0)
    for g in gs:
        v = mu * v + g
        w = w - lr * (g + mu * v if nesterov else v)
    got = _run(en.optim.SGD(lr, momentum=mu, nesterov=nesterov), w0, gs)
    np.testing.assert_allclose(got, w, rtol=1e-12)


def test_adam_matches_reference(w_and_grads):
    w0, gs = w_and_grads
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for t, g in enumerate(gs, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    opt = en.optim.Adam(lr, b1, b2, eps)
    np.testing.assert_allclose(_run(opt, w0, gs), w, rtol=1e-12)
    assert int(opt.iterations) == 3
    assert opt.slot(opt._slots[next(iter(opt._slots))][0], "m").shape == (3, 4)


@pytest.mark.parametrize("make", [lambda: en.optim.SGD(0.1, momentum=0.5),
                                  lambda: en.optim.Adam(0.1), lambda: en.optim.LBFGS()])
def test_float32_variables_stay_float32(make):
    w = en.Variable(np.ones(3, dtype=np.float32))
    opt = make()
    for _ in range(2):
        opt.minimize(lambda: en.sum(w * w), w)
    assert w.dtype == np.float32 and np.all(np.isfinite(w.numpy()))


def test_api_forms_agree():
    rng = np.random.default_rng(1)
    a0, b0 = rng.normal(size=3), rng.normal(size=(2, 2))
    ga, gb = rng.normal(size=3), rng.normal(size=(2, 2))
    a1, b1 = en.Variable(a0), en.Variable(b0)
    en.optim.Adam(0.1).apply_gradients([(en.tensor(ga), a1), (en.tensor(gb), b1)])
    a2, b2 = en.Variable(a0), en.Variable(b0)
    en.optim.Adam(0.1).step([ga, gb], [a2, b2])
    np.testing.assert_array_equal(a1.numpy(), a2.numpy())
    np.testing.assert_array_equal(b1.numpy(), b2.numpy())


def test_minimize_returns_loss_and_watches_non_trainable():
    w = en.Variable(3.0, trainable=False)
    loss = en.optim.SGD(0.25).minimize(lambda: w * w, w)
    assert float(loss) == 9.0 and float(w) == 1.5


def test_none_gradient_leaves_variable_alone():
    a, b = en.Variable([1.0]), en.Variable([2.0])
    en.optim.SGD(0.5, momentum=0.9).minimize(lambda: en.sum(a * a), [a, b])
    assert b.numpy().tolist() == [2.0] and a.numpy().tolist() == [0.0]


def test_errors():
    w = en.Variable([1.0, 2.0])
    with pytest.raises(EngineError, match="2 gradients for 1 variables"):
        en.optim.SGD(0.1).step([en.tensor([1.0, 1.0]), en.tensor([1.0, 1.0])], [w])
    with pytest.raises(ShapeError, match="gradient of shape"):
        en.optim.SGD(0.1).step(en.tensor([1.0, 1.0, 1.0]), w)
    with pytest.raises(EngineError, match="not an en.Variable"):
        en.optim.SGD(0.1).step([en.tensor([1.0, 1.0])], [en.tensor([1.0, 2.0])])
    with pytest.raises(EngineError, match="not a \\(gradient, variable\\) pair"):
        en.optim.SGD(0.1).apply_gradients([w])
    with pytest.raises(ShapeError, match="scalar"):
        en.optim.SGD(0.1).minimize(lambda: w * w, w)
    with pytest.raises(ValueError, match="nesterov"):
        en.optim.SGD(0.1, nesterov=True)
    with pytest.raises(ValueError, match="beta1"):
        en.optim.Adam(beta1=1.0)
    with pytest.raises(ValueError, match="line_search"):
        en.optim.LBFGS(line_search="wolfe")
    opt = en.optim.LBFGS(line_search="backtracking")
    with pytest.raises(EngineError, match="needs loss_fn"):
        opt.step(en.tensor([1.0, 1.0]), w)
    opt = en.optim.LBFGS()
    opt.step(en.tensor([1.0, 1.0]), w)
    with pytest.raises(EngineError, match="another list of variables"):
        opt.step(en.tensor([1.0, 1.0]), en.Variable([0.0, 0.0]))


# ---- least squares: batch, stochastic and mini-batch gradient descent -------------
@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(2)
    X = np.hstack([rng.normal(size=(200, 4)), np.ones((200, 1))])
    y = X @ np.array([1.5, -2.0, 0.5, 3.0, -1.0]) + 0.01 * rng.normal(size=200)
    w_star = np.linalg.lstsq(X, y, rcond=None)[0]
    return X, y, w_star


def _fit(X, y, opt, batch_size, epochs, seed=0):
    w = en.Variable(np.zeros(X.shape[1]))
    loader = en.data.DataLoader((X, y), batch_size, shuffle=batch_size is not None, seed=seed)
    for _ in range(epochs):
        for xb, yb in loader:
            opt.minimize(lambda: en.mean(en.square(en.matmul(xb, w) - yb)), w)
    return w.numpy()


def test_least_squares_batch_gd(regression):
    X, y, w_star = regression
    w = _fit(X, y, en.optim.SGD(0.3), None, 300)
    np.testing.assert_allclose(w, w_star, atol=1e-6)


def test_least_squares_sgd(regression):
    X, y, w_star = regression
    w = _fit(X, y, en.optim.SGD(0.005), 1, 15)
    np.testing.assert_allclose(w, w_star, atol=5e-3)


def test_least_squares_minibatch_momentum_and_adam(regression):
    X, y, w_star = regression
    w = _fit(X, y, en.optim.SGD(0.05, momentum=0.9, nesterov=True), 20, 40)
    np.testing.assert_allclose(w, w_star, atol=5e-3)
    w = _fit(X, y, en.optim.Adam(0.05), 20, 60)
    np.testing.assert_allclose(w, w_star, atol=5e-3)


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
