"""Gradient clipping (by global norm, by value) against numpy, eager and in a traced
step, and its errors."""
import math

import numpy as np
import pytest

import engine as en


# ---- clipping ------------------------------------------------------------------------
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_by_global_norm_matches_numpy(max_norm):
    rng = np.random.default_rng(7)
    gs = [rng.normal(size=(3, 2)), rng.normal(size=4).astype(np.float32), None]
    norm = math.sqrt(sum(float(np.sum(np.square(g.astype(np.float64)))) for g in gs[:2]))
    scale = max_norm / max(norm, max_norm)
    clipped, got_norm = en.optim.clip_by_global_norm(
        [en.tensor(gs[0]), en.tensor(gs[1]), None], max_norm)
    assert float(got_norm) == pytest.approx(norm, rel=1e-7)
    np.testing.assert_allclose(clipped[0].numpy(), gs[0] * scale, rtol=1e-12)
    np.testing.assert_allclose(clipped[1].numpy(), gs[1] * scale, rtol=1e-6)
    assert clipped[1].dtype == np.float32 and clipped[2] is None
    if max_norm > norm:
        np.testing.assert_array_equal(clipped[0].numpy(), gs[0])   # untouched below the limit


def test_clip_by_value_and_traced_clipped_step():
    g = np.array([-3.0, -0.2, 0.0, 0.7, 9.0])
    got = en.optim.clip_by_value([en.tensor(g), None], -0.5, 0.5)
    np.testing.assert_array_equal(got[0].numpy(), np.clip(g, -0.5, 0.5))
    assert got[1] is None

    w = en.Variable(np.zeros(2))
    opt = en.optim.SGD(1.0)

    @en.function
    def step(g):
        (g,), norm = en.optim.clip_by_global_norm([g], 1.0)
        opt.step(g, w)
        return norm

    assert float(step(en.tensor([3.0, 4.0]))) == pytest.approx(5.0)
    np.testing.assert_allclose(w.numpy(), [-0.6, -0.8], rtol=1e-12)
    step(en.tensor([0.3, 0.4]))
    np.testing.assert_allclose(w.numpy(), [-0.9, -1.2], rtol=1e-12)
    assert step.trace_count == 1


def test_clipping_errors():
    with pytest.raises(ValueError):
        en.optim.clip_by_global_norm([en.tensor(1.0)], 0.0)
    with pytest.raises(ValueError):
        en.optim.clip_by_value([en.tensor(1.0)], 1.0, -1.0)
    with pytest.raises(en.EngineError, match="list of gradients"):
        en.optim.clip_by_global_norm(en.tensor([1.0]), 1.0)
