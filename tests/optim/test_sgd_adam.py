"""SGD (plain, momentum, Nesterov) and Adam against hand-written numpy references:
one-step updates, dtypes, API forms, errors, and least squares solved by batch,
stochastic and mini-batch gradient descent against the closed-form solution."""
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
