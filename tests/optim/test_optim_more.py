"""AdamW, RMSprop, Adagrad, learning-rate schedules and gradient clipping against numpy
implementations of the published rules (PyTorch's definitions), eager and traced."""
import doctest
import math

import numpy as np
import pytest

import engine as en
from engine.optim import adagrad, adamw, clipping, rmsprop, schedules


# ---- numpy references (torch.optim's documented algorithms) ---------------------------
def ref_adamw(w, grads, lr, b1=0.9, b2=0.999, eps=1e-8, wd=1e-2, lrs=None):
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        a = lr if lrs is None else lrs[t - 1]
        w = w * (1 - a * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - a / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return w


def ref_rmsprop(w, grads, lr, alpha=0.99, eps=1e-8, momentum=0.0, centered=False, wd=0.0):
    v, gavg, buf = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        g = g + wd * w
        v = alpha * v + (1 - alpha) * g * g
        if centered:
            gavg = alpha * gavg + (1 - alpha) * g
            avg = np.sqrt(v - gavg * gavg) + eps
        else:
            avg = np.sqrt(v) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            w = w - lr * buf
        else:
            w = w - lr * g / avg
    return w


def ref_adagrad(w, grads, lr, lr_decay=0.0, wd=0.0, init=0.0, eps=1e-10):
    s = np.full_like(w, init)
    for t, g in enumerate(grads, start=1):
        g = g + wd * w
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        w = w - clr * g / (np.sqrt(s) + eps)
    return w


CASES = [
    ("adamw", lambda: en.optim.AdamW(0.01, weight_decay=0.1),
     lambda w, gs: ref_adamw(w, gs, 0.01, wd=0.1)),
    ("adamw_betas", lambda: en.optim.AdamW(0.05, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.0),
     lambda w, gs: ref_adamw(w, gs, 0.05, 0.8, 0.99, 1e-6, 0.0)),
    ("rmsprop", lambda: en.optim.RMSprop(0.01), lambda w, gs: ref_rmsprop(w, gs, 0.01)),
    ("rmsprop_centered_momentum",
     lambda: en.optim.RMSprop(0.01, alpha=0.9, momentum=0.8, centered=True, weight_decay=0.05),
     lambda w, gs: ref_rmsprop(w, gs, 0.01, 0.9, 1e-8, 0.8, True, 0.05)),
    ("adagrad", lambda: en.optim.Adagrad(0.1), lambda w, gs: ref_adagrad(w, gs, 0.1)),
    ("adagrad_all",
     lambda: en.optim.Adagrad(0.1, lr_decay=0.3, weight_decay=0.02, initial_accumulator_value=0.5),
     lambda w, gs: ref_adagrad(w, gs, 0.1, 0.3, 0.02, 0.5)),
]


@pytest.fixture
def problem():
    rng = np.random.default_rng(3)
    return rng.normal(size=(3, 4)), [rng.normal(size=(3, 4)) for _ in range(5)]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_update_matches_reference_eager(problem, name, make, ref):
    w0, gs = problem
    w = en.Variable(w0)
    opt = make()
    for g in gs:
        opt.step(en.tensor(g), w)
    np.testing.assert_allclose(w.numpy(), ref(w0, gs), rtol=1e-11, atol=1e-13)
    assert int(opt.iterations) == len(gs)


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_update_matches_reference_traced(problem, name, make, ref):
    w0, gs = problem
    w = en.Variable(w0)
    opt = make()

    @en.function
    def step(g):
        opt.step(g, w)

    for g in gs:
        step(en.tensor(g))
    assert step.trace_count == 1
    np.testing.assert_allclose(w.numpy(), ref(w0, gs), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("make", [lambda: en.optim.AdamW(0.1), lambda: en.optim.RMSprop(0.1),
                                  lambda: en.optim.Adagrad(0.5)])
def test_float32_stays_float32_and_minimize_converges(make):
    target = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    w = en.Variable(np.zeros(3, dtype=np.float32))
    opt = make()
    for _ in range(300):
        opt.minimize(lambda: en.sum((w - en.tensor(target)) ** 2.0), w)
    assert w.dtype == np.float32
    assert opt.slot(w, next(iter(opt._slots[id(w)][1]))).dtype == np.float32
    # AdamW's decay pulls slightly towards 0; the others reach the target.
    np.testing.assert_allclose(w.numpy(), target, atol=0.05)


def test_none_gradient_leaves_variable_alone_adamw():
    a, b = en.Variable([1.0]), en.Variable([2.0])
    en.optim.AdamW(0.1, weight_decay=0.5).step([en.tensor([1.0]), None], [a, b])
    assert b.numpy().tolist() == [2.0]


@pytest.mark.parametrize("bad", [lambda: en.optim.AdamW(weight_decay=-1.0),
                                 lambda: en.optim.RMSprop(alpha=1.0),
                                 lambda: en.optim.RMSprop(momentum=-0.1),
                                 lambda: en.optim.Adagrad(eps=-1.0),
                                 lambda: en.optim.StepDecay(0.1, step_size=0),
                                 lambda: en.optim.CosineDecay(0.1, 10, alpha=2.0),
                                 lambda: en.optim.LinearWarmup(0.1, warmup_steps=0)])
def test_bad_hyperparameters_raise(bad):
    with pytest.raises(ValueError):
        bad()


# ---- schedules -----------------------------------------------------------------------
def ref_schedule(kind, t):
    if kind == "step":
        return 0.1 * 0.5 ** (t // 3)
    if kind == "exp":
        return 0.1 * 0.8 ** (t / 4)
    if kind == "exp_stair":
        return 0.1 * 0.8 ** (t // 4)
    if kind == "cosine":
        return 0.1 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 7) / 7)))
    if kind == "warmup":   # 3 warm-up steps from 0.25 * 0.1, then the step decay from its 0
        return 0.1 * (0.25 + 0.75 * t / 3) if t < 3 else ref_schedule("step", t - 3)
    raise AssertionError(kind)


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


@pytest.mark.parametrize("module", [adamw, rmsprop, adagrad, schedules, clipping])
def test_docstring_examples(module):
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


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


@pytest.mark.parametrize("make, closed_form", [
    # Adam's first update of a variable moves it by lr (bias-corrected m / sqrt(v) is 1).
    (lambda: en.optim.Adam(lr=0.1), lambda first: 1.0 - 0.1),
    # Adagrad's first update of a variable: lr / (0 * lr_decay + 1) * g / sqrt(g^2).
    (lambda: en.optim.Adagrad(lr=0.1, lr_decay=0.5), lambda first: 1.0 - 0.1),
], ids=["adam", "adagrad"])
def test_a_variable_counts_only_its_own_updates(make, closed_form):
    # b gets no gradient on the first step: its first update is still a first step
    # (PyTorch keeps a step count per parameter), not the optimizer's second.
    a, b = en.Variable([1.0]), en.Variable([1.0])
    opt = make()
    opt.step([en.tensor([1.0]), None], [a, b])
    np.testing.assert_allclose(b.numpy(), [1.0])
    opt.step([en.tensor([1.0]), en.tensor([1.0])], [a, b])
    np.testing.assert_allclose(b.numpy(), [closed_form(True)], rtol=1e-8)   # eps aside
