"""Loss modules under PyTorch's names and arguments (CrossEntropyLoss, NLLLoss, BCELoss,
BCEWithLogitsLoss, MSELoss, L1Loss, HuberLoss, SmoothL1Loss, KLDivLoss).

References: the op database's numpy formulas (the losses' gradients by central
differences), and torch's loss modules with the same arguments (values and
input gradients) when torch is installed. Eager and inside ``en.function``.
"""
import numpy as np
import pytest

import engine as en
from op_db.composites import _np_cross_entropy
from op_db.nn import _np_bce, _np_bce_logits, _np_nll
from op_db.nn_layers_functional import (_np_huber, _np_kl_div, _np_l1, _np_mse,
                                        _np_smooth_l1)
from support.finite_diff import central_difference

W3 = np.array([0.5, 2.0, 1.25])


def _ids(rng, shape, n=3, ignore=None):
    ids = rng.integers(0, n, size=shape)
    if ignore is not None:
        ids.flat[1] = ignore
    return ids


def _log_probs(x, axis):
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


# name, kwargs (numpy values; tensors for the engine and torch), make(rng) -> (input, target),
# numpy reference(input, target)
CASES = [
    ("CrossEntropyLoss", {}, lambda r: (r.normal(size=(5, 3)), _ids(r, 5)),
     lambda x, t: _np_cross_entropy(x, t, axis=1)),
    ("CrossEntropyLoss", dict(weight=W3, ignore_index=1, label_smoothing=0.2),
     lambda r: (r.normal(size=(6, 3)), _ids(r, 6)),
     lambda x, t: _np_cross_entropy(x, t, 1, W3, 1, "mean", 0.2)),
    ("CrossEntropyLoss", dict(reduction="none", label_smoothing=0.1),
     lambda r: (r.normal(size=(2, 3, 4)), _ids(r, (2, 4), ignore=-100)),
     lambda x, t: _np_cross_entropy(x, t, 1, None, -100, "none", 0.1)),
    ("CrossEntropyLoss", dict(weight=W3, reduction="sum"),
     lambda r: (r.normal(size=(2, 3, 2, 2)), _ids(r, (2, 2, 2))),
     lambda x, t: _np_cross_entropy(x, t, 1, W3, -100, "sum")),
    ("CrossEntropyLoss", dict(label_smoothing=0.3),
     lambda r: (r.normal(size=(4, 3)), r.dirichlet(np.ones(3), size=4)),
     lambda x, t: _np_cross_entropy(x, t, 1, None, -100, "mean", 0.3)),
    ("CrossEntropyLoss", {}, lambda r: (r.normal(size=3), np.array(2)),
     lambda x, t: _np_cross_entropy(x, t, 0)),
    ("NLLLoss", dict(weight=W3, ignore_index=0),
     lambda r: (_log_probs(r.normal(size=(6, 3)), 1), _ids(r, 6)),
     lambda x, t: _np_nll(x, t, W3, 0, "mean", 1)),
    ("NLLLoss", dict(reduction="none"), lambda r: (_log_probs(r.normal(size=(2, 3, 4)), 1),
                                                   _ids(r, (2, 4))),
     lambda x, t: _np_nll(x, t, None, -100, "none", 1)),
    ("BCELoss", dict(weight=np.array([1.0, 2.0, 0.5])),
     lambda r: (r.uniform(0.05, 0.95, (4, 3)), r.uniform(0, 1, (4, 3))),
     lambda x, t: _np_bce(x, t, np.array([1.0, 2.0, 0.5]))),
    ("BCEWithLogitsLoss", dict(pos_weight=np.array([3.0, 0.5]), reduction="sum"),
     lambda r: (r.normal(size=(5, 2)), (r.uniform(size=(5, 2)) > 0.5).astype(float)),
     lambda x, t: _np_bce_logits(x, t, None, np.array([3.0, 0.5]), "sum")),
    ("MSELoss", {}, lambda r: (r.normal(size=(4, 3)), r.normal(size=(4, 3))), _np_mse),
    ("L1Loss", dict(reduction="sum"), lambda r: (r.normal(size=(6,)), r.normal(size=(6,)) + 3),
     lambda x, t: _np_l1(x, t, "sum")),
    ("HuberLoss", dict(delta=0.7), lambda r: (r.normal(size=(8,)) * 2, r.normal(size=(8,))),
     lambda x, t: _np_huber(x, t, "mean", 0.7)),
    ("SmoothL1Loss", dict(beta=0.5, reduction="none"),
     lambda r: (r.normal(size=(3, 4)) * 2, r.normal(size=(3, 4))),
     lambda x, t: _np_smooth_l1(x, t, "none", 0.5)),
    ("KLDivLoss", dict(reduction="batchmean"),
     lambda r: (_log_probs(r.normal(size=(4, 5)), 1), r.dirichlet(np.ones(5), size=4)),
     lambda x, t: _np_kl_div(x, t, "batchmean")),
    ("KLDivLoss", dict(reduction="sum", log_target=True),
     lambda r: (_log_probs(r.normal(size=(3, 4)), 1),
                np.log(r.dirichlet(np.ones(4), size=3))),
     lambda x, t: _np_kl_div(x, t, "sum", True)),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _engine_kwargs(kwargs):
    return {k: en.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _value_and_grad(loss_fn, x, t, c):
    with en.GradientTape() as tape:
        tape.watch(x)
        value = loss_fn(x, t)
        total = en.sum(value * c)
    return value, tape.gradient(total, x)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_numpy_and_finite_differences(case, graph):
    name, kwargs, make, ref = case
    rng = np.random.default_rng(0)
    x, t = make(rng)
    loss_fn = getattr(en.nn, name)(**_engine_kwargs(kwargs))
    expected = ref(x, t)
    c = rng.normal(size=np.shape(expected))

    def run(x, t):
        return _value_and_grad(loss_fn, x, t, c)
    value, grad = (en.function(run) if graph else run)(en.tensor(x), en.tensor(t))
    np.testing.assert_allclose(value.numpy(), expected, rtol=1e-12, atol=1e-12)
    fd = central_difference(lambda v: float(np.sum(ref(v, t) * c)), x)
    np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_torch(case):
    torch = pytest.importorskip("torch")
    name, kwargs, make, _ = case
    x, t = make(np.random.default_rng(1))
    loss_fn = getattr(en.nn, name)(**_engine_kwargs(kwargs))
    t_loss = getattr(torch.nn, name)(**{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                        for k, v in kwargs.items()})
    value, grad = _value_and_grad(loss_fn, en.tensor(x), en.tensor(t), 1.0)
    tx = torch.tensor(x, requires_grad=True)
    t_value = t_loss(tx, torch.tensor(t))
    t_value.sum().backward()
    np.testing.assert_allclose(value.numpy(), t_value.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_class_axis_option_takes_channels_last_data():
    rng = np.random.default_rng(2)
    x, t = rng.normal(size=(2, 4, 3)), rng.integers(0, 3, size=(2, 4))
    first = en.nn.CrossEntropyLoss(reduction="none")(en.tensor(np.moveaxis(x, -1, 1)),
                                                     en.tensor(t))
    last = en.nn.CrossEntropyLoss(reduction="none", axis=-1)(en.tensor(x), en.tensor(t))
    np.testing.assert_allclose(last.numpy(), first.numpy(), atol=1e-12)


def test_functional_cross_entropy_keeps_its_default():
    # Integer labels on the last axis, averaged: the behaviour before the new options.
    logits = np.array([[2.0, 0.0, 1.0], [0.5, 0.5, 3.0]])
    logp = _log_probs(logits, 1)
    expected = -(logp[0, 0] + logp[1, 2]) / 2
    assert float(en.cross_entropy(en.tensor(logits), en.tensor([0, 2]))) == \
        pytest.approx(expected, rel=1e-12)


def test_errors():
    with pytest.raises(en.DomainError, match="CrossEntropyLoss: reduction must be one of"):
        en.nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(en.DomainError, match="KLDivLoss: reduction"):
        en.nn.KLDivLoss(reduction="batch")
    with pytest.raises(en.ShapeError, match=r"(?s)mse_loss: target must have the input's shape"
                                            r".*test_loss_modules.py"):
        en.nn.MSELoss()(en.ones((3, 1)), en.ones(3))
    with pytest.raises(en.ShapeError, match=r"cross_entropy: label ids must be in \[0, 3\)"):
        en.nn.CrossEntropyLoss()(en.ones((2, 3)), en.tensor([0, 3]))
    with pytest.raises(en.DomainError, match="cross_entropy: label_smoothing"):
        en.nn.CrossEntropyLoss(label_smoothing=2.0)(en.ones((2, 3)), en.tensor([0, 1]))
