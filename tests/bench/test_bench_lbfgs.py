"""The L-BFGS benchmark's modes compute the same thing: losses agree over the first iterations.

Tiny batches and few iterations, so the whole file runs in a few seconds.
PyTorch and JAX modes are checked when installed and skipped otherwise.
"""
import argparse

import numpy as np
import pytest

import engine as en
from bench import common
from bench.workloads import lbfgs


def _args(**kw):
    base = dict(quick=True, batch=None, history=None, iters=None, timed=None, mnist=None)
    base.update(kw)
    return argparse.Namespace(**base)


def _available_modes():
    modes = ["eager", "graph_loss", "graph", "numpy"]
    if common.torch_or_none() is not None:
        modes += ["torch", "torch_loop"]
    if common.jax_or_none() is not None:
        modes += ["jax"]
    return modes


@pytest.mark.parametrize("history", [3, 5])
def test_every_mode_agrees_with_eager(history):
    # history 3 with 12 iterations: the ring buffer wraps around several times.
    config = {"batch": 32, "history": history, "iters": 12, "timed": 2}
    ticks = []
    results = lbfgs.run(config, _available_modes(), _args(), lambda: ticks.append(1))
    by_mode = {r["mode"]: r for r in results}
    eager = by_mode["eager"]["loss"]
    assert len(eager) == 12 + lbfgs.timing_rounds(2) and eager[-1] < eager[0]
    for mode, r in by_mode.items():
        assert r["skipped"] is None and "error" not in r, (mode, r.get("error"))
        assert r["check_ok"], (mode, r["check_rel"])
        np.testing.assert_allclose(r["loss"][:lbfgs.CHECK_ITERS], eager[:lbfgs.CHECK_ITERS],
                                   rtol=lbfgs.CHECK_RTOL, err_msg=mode)
        assert r["n"] == 2 and r["median_ms"] > 0
    assert len(ticks) == 2 * len(by_mode)


def test_a_diverging_mode_fails_the_check():
    worst, bad = lbfgs.check_agreement([1.0, 1.0, 1.01], [1.0, 1.0, 1.0])
    assert bad == 2 and worst == pytest.approx(0.01)
    assert lbfgs.check_agreement([1.0, 1.0005], [1.0, 1.0])[1] is None


def test_graph_mode_traces_once():
    x, _ = lbfgs.load_data(16)
    run = lbfgs.EngineRun("graph", x, history=4)
    for _ in range(7):
        run()
    assert run.traced.trace_count == 1
    assert int(run.opt._count) == 4 and int(run.opt.iterations) == 7


def test_numpy_gradient_matches_the_engine():
    x, _ = lbfgs.load_data(8)
    p = lbfgs.flat_weights(seed=3)
    g = np.empty_like(p)
    loss = lbfgs.numpy_loss_grad(p, x, g)
    w, b1, b2 = (en.tensor(a) for a in (p[:lbfgs.N_W].reshape(784, 196),
                                         p[lbfgs.N_W:lbfgs.N_W + 196], p[lbfgs.N_W + 196:]))
    value, grads = en.value_and_grad(lambda w, b1, b2: lbfgs.engine_loss(en.tensor(x), w, b1, b2),
                                     argnums=(0, 1, 2))(w, b1, b2)
    assert float(value) == pytest.approx(loss, rel=1e-5)
    flat = np.concatenate([np.asarray(a).ravel() for a in grads])
    np.testing.assert_allclose(g, flat, rtol=1e-3, atol=1e-7)


@pytest.mark.parametrize("compiled", [False, True])
def test_lbfgs_history_in_several_chunks_matches_one_chunk(monkeypatch, compiled):
    # The optimizer takes its products with the history over chunks of rows
    # (a traced step skips chunks not yet filled); with a tiny budget the small
    # problem below is split into chunks of 1, 2 and 3 rows (the last chunk
    # shorter when the chunk size does not divide the history).
    rng = np.random.default_rng(0)
    q = rng.normal(size=(10, 10))
    a, b = q @ q.T + np.eye(10), rng.normal(size=10)

    def losses(budget, history=5):
        monkeypatch.setattr(en.config.cost, "lbfgs_chunk_bytes", budget)
        w, v = en.Variable(np.zeros((2, 4))), en.Variable(np.zeros(2))
        opt = en.optim.LBFGS(history=history).build([w, v])

        def loss():
            f = en.concat([en.reshape(w, (-1,)), v])
            return 0.5 * en.matmul(f, en.matmul(a, f)) - en.matmul(b, f) + en.sum(f ** 4) * 0.01

        step = (lambda: opt.minimize(loss, [w, v]))
        step = en.function(step) if compiled else step
        return np.array([float(step()) for _ in range(14)]), opt._k

    one, k = losses(1 << 30)
    assert k == 5
    for budget, want_k in [(10 * 8, 1), (2 * 10 * 8, 2), (3 * 10 * 8 + 7, 3)]:
        got, k = losses(budget)
        assert k == want_k
        np.testing.assert_allclose(got, one, rtol=1e-10, atol=1e-12)
