"""Learning-rate schedules (step, exponential, cosine, linear warm-up) against their
formulas, in optimizers eager and traced once, over several variables and dtypes."""

import numpy as np
import pytest

import engine as en
from support.optim_refs import ref_adamw, ref_schedule


SCHEDULES = {
    "step": lambda: en.optim.StepDecay(0.1, step_size=3, gamma=0.5),
    "exp": lambda: en.optim.ExponentialDecay(0.1, decay_steps=4, decay_rate=0.8),
    "exp_stair": lambda: en.optim.ExponentialDecay(0.1, 4, 0.8, staircase=True),
    "cosine": lambda: en.optim.CosineDecay(0.1, decay_steps=7, alpha=0.1),
    "warmup": lambda: en.optim.LinearWarmup(en.optim.StepDecay(0.1, 3, 0.5), warmup_steps=3,
                                            start_factor=0.25),
}


@pytest.mark.parametrize("kind", sorted(SCHEDULES))
def test_schedule_values(kind):
    sched = SCHEDULES[kind]()
    got = [float(sched(t)) for t in range(12)]
    np.testing.assert_allclose(got, [ref_schedule(kind, t) for t in range(12)], rtol=1e-12)


@pytest.mark.parametrize("kind", sorted(SCHEDULES))
def test_scheduled_sgd_traced_once_matches_reference(kind):
    """The traced step reads the step counter at run time: one trace, the scheduled rates."""
    rng = np.random.default_rng(5)
    w0 = rng.normal(size=4)
    gs = [rng.normal(size=4) for _ in range(10)]
    w = en.Variable(w0)
    opt = en.optim.SGD(lr=SCHEDULES[kind]())

    @en.function
    def step(g):
        opt.step(g, w)

    for g in gs:
        step(en.tensor(g))
    assert step.trace_count == 1
    expected = w0.copy()
    for t, g in enumerate(gs):
        expected = expected - ref_schedule(kind, t) * g
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-12)


def test_scheduled_adamw_and_float32_learning_rate():
    rng = np.random.default_rng(6)
    w0 = rng.normal(size=5)
    gs = [rng.normal(size=5) for _ in range(8)]
    sched = SCHEDULES["cosine"]()
    w = en.Variable(w0)
    opt = en.optim.AdamW(lr=sched, weight_decay=0.1)

    @en.function
    def step(g):
        opt.step(g, w)

    for g in gs:
        step(en.tensor(g))
    assert step.trace_count == 1
    lrs = [ref_schedule("cosine", t) for t in range(8)]
    np.testing.assert_allclose(w.numpy(), ref_adamw(w0, gs, None, wd=0.1, lrs=lrs), rtol=1e-11)
    w32 = en.Variable(np.ones(2, dtype=np.float32))
    en.optim.RMSprop(lr=SCHEDULES["exp"]()).step(en.tensor(np.ones(2, np.float32)), w32)
    assert w32.dtype == np.float32
    assert float(opt.learning_rate()) == pytest.approx(ref_schedule("cosine", 8))


def test_schedule_over_several_variables_and_dtypes_eager():
    """Every variable of a step gets that step's rate (evaluated once per step and dtype)."""
    sched = SCHEDULES["warmup"]()
    ws = [en.Variable(np.ones(3)), en.Variable(np.ones(2, np.float32)), en.Variable(np.ones(1))]
    opt = en.optim.SGD(lr=sched, momentum=0.0)
    expected = [np.ones(3), np.ones(2), np.ones(1)]
    for t in range(6):
        opt.step([en.tensor(np.ones(3)), en.tensor(np.ones(2, np.float32)),
                  en.tensor(np.ones(1))], ws)
        expected = [e - ref_schedule("warmup", t) for e in expected]
    for w, e in zip(ws, expected):
        np.testing.assert_allclose(w.numpy(), e, rtol=1e-6)
    assert opt._lr_this_step is None
