"""AdamW, RMSprop and Adagrad against numpy implementations of the published rules
(PyTorch's definitions), eager and traced: updates, dtypes, convergence, errors, each
variable's own step count, and the optimizer modules' docstring examples."""
import doctest

import numpy as np
import pytest

import engine as en
from engine.optim import adagrad, adamw, clipping, rmsprop, schedules
from support.optim_refs import ref_adagrad, ref_adamw, ref_rmsprop


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


@pytest.mark.parametrize("module", [adamw, rmsprop, adagrad, schedules, clipping])
def test_docstring_examples(module):
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0


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
