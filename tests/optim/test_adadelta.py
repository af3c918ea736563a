"""Adadelta against a numpy implementation of torch.optim.Adadelta's documented
algorithm (eager and traced), and against torch itself when it is installed."""
import numpy as np
import pytest

import engine as en


def ref_adadelta(w, grads, lr=1.0, rho=0.9, eps=1e-6, wd=0.0):
    """torch.optim.Adadelta's algorithm, written from its documentation."""
    v, u = np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        g = g + wd * w
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        w = w - lr * delta
    return w


CASES = [("defaults", {}, {}),
         ("all", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1),
          dict(lr=0.5, rho=0.8, eps=1e-4, wd=0.1))]


@pytest.fixture
def problem():
    rng = np.random.default_rng(5)
    return rng.normal(size=(3, 4)), [rng.normal(size=(3, 4)) for _ in range(6)]


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("name, kwargs, ref_kwargs", CASES, ids=[c[0] for c in CASES])
def test_update_matches_reference(problem, name, kwargs, ref_kwargs, graph):
    w0, gs = problem
    w = en.Variable(w0)
    opt = en.optim.Adadelta(**kwargs)

    def step(g):
        opt.step(g, w)
    run = en.function(step) if graph else step
    for g in gs:
        run(en.tensor(g))
    np.testing.assert_allclose(w.numpy(), ref_adadelta(w0, gs, **ref_kwargs), rtol=1e-11,
                               atol=1e-13)
    assert int(opt.iterations) == len(gs)


def test_float32_state_and_minimize():
    w = en.Variable(np.array([3.0, -2.0], np.float32))
    opt = en.optim.Adadelta(lr=1.0)
    for _ in range(200):
        opt.minimize(lambda: en.sum(w * w), w)
    assert w.dtype == np.float32 and opt.slot(w, "square_avg").dtype == np.float32
    assert np.abs(w.numpy()).max() < 3.0     # Adadelta moves slowly at first, but it moves


def test_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    w0, gs = rng.normal(size=(5,)), [rng.normal(size=(5,)) for _ in range(4)]
    w = en.Variable(w0)
    opt = en.optim.Adadelta(lr=0.7, rho=0.85, weight_decay=0.01)
    tw = torch.tensor(w0, requires_grad=True)
    topt = torch.optim.Adadelta([tw], lr=0.7, rho=0.85, weight_decay=0.01)
    for g in gs:
        opt.step(en.tensor(g), w)
        tw.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_errors():
    with pytest.raises(en.InvalidArgumentError, match="Adadelta: rho must be in"):
        en.optim.Adadelta(rho=1.5)
    with pytest.raises(en.InvalidArgumentError, match="Adadelta: eps must be >= 0"):
        en.optim.Adadelta(eps=-1.0)
