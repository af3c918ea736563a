"""The PyTorch-named normalization and pooling layers (GroupNorm, InstanceNorm1d/2d,
RMSNorm, BatchNorm1d/2d, MaxPool2d, AvgPool2d, adaptive pools) and the global pools.

References: numpy formulas (``op_db.nn_layers_functional`` and the ones here),
their gradients by central differences, and, when torch is installed, torch's
layers with the same parameters (values and gradients). Eager and in ``en.function``.
"""
import numpy as np
import pytest

import engine as en
from op_db.nn_layers_functional import (_np_adaptive, _np_group_norm, _np_instance_norm,
                                        _np_rms_norm)
from support.finite_diff import central_difference


def _last(fn):
    """A channels-last numpy reference applied to channels-first data."""
    return lambda x, *a, **k: np.moveaxis(fn(np.moveaxis(x, 1, -1), *a, **k), -1, 1)


def _np_pool(reduce, k, s, p, include_pad=True, divisor=None):
    """2-D pooling of NCHW data by explicit windows (pads never win a max)."""
    def ref(x):
        fill = -np.inf if reduce is np.max else 0.0
        xp = np.pad(x, [(0, 0), (0, 0), (p, p), (p, p)], constant_values=fill)
        ones = np.pad(np.ones(x.shape[2:]), p)
        oh, ow = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
        out = np.empty(x.shape[:2] + (oh, ow))
        for i in range(oh):
            for j in range(ow):
                win = xp[:, :, i * s:i * s + k, j * s:j * s + k]
                if reduce is np.max:
                    out[:, :, i, j] = win.max(axis=(2, 3))
                else:
                    n = divisor or (k * k if include_pad else
                                    ones[i * s:i * s + k, j * s:j * s + k].sum())
                    out[:, :, i, j] = win.sum(axis=(2, 3)) / n
        return out
    return ref


# (name, args, kwargs, input shape, numpy reference of (x, params) , torch-comparable)
CASES = [
    ("GroupNorm", (2, 4), {}, (2, 4, 3, 3),
     lambda x, p: _last(_np_group_norm)(x, 2, p["weight"], p["bias"]), True),
    ("GroupNorm", (3, 6), dict(eps=1e-3), (3, 6, 5),
     lambda x, p: _last(_np_group_norm)(x, 3, p["weight"], p["bias"], 1e-3), True),
    ("InstanceNorm1d", (3,), dict(affine=True), (2, 3, 5),
     lambda x, p: _last(_np_instance_norm)(x, p["weight"], p["bias"]), True),
    ("InstanceNorm2d", (2,), {}, (2, 2, 4, 3), lambda x, p: _last(_np_instance_norm)(x), True),
    ("RMSNorm", ((3, 4),), dict(eps=1e-6), (2, 3, 4),
     lambda x, p: _np_rms_norm(x, (3, 4), p["weight"], 1e-6), True),
    ("RMSNorm", (4,), dict(elementwise_affine=False), (5, 4),
     lambda x, p: _np_rms_norm(x, 4, None, np.finfo(np.float64).eps), True),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 7, 5),
     lambda x, p: _last(_np_adaptive(np.mean))(x, (3, 2)), True),
    ("AdaptiveAvgPool1d", (3,), {}, (2, 3, 7), lambda x, p: _last(_np_adaptive(np.mean))(x, 3),
     True),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (1, 2, 5, 7),
     lambda x, p: _last(_np_adaptive(np.max))(x, (2, 3)), True),
    ("AdaptiveMaxPool1d", (4,), {}, (2, 2, 6), lambda x, p: _last(_np_adaptive(np.max))(x, 4),
     True),
    ("MaxPool2d", (3,), dict(stride=2, padding=1), (2, 2, 6, 5),
     lambda x, p: _np_pool(np.max, 3, 2, 1)(x), True),
    ("AvgPool2d", (3, 2, 1), dict(count_include_pad=False), (1, 2, 6, 7),
     lambda x, p: _np_pool(np.mean, 3, 2, 1, include_pad=False)(x), True),
    ("AvgPool2d", (2,), dict(divisor_override=3), (1, 2, 4, 6),
     lambda x, p: _np_pool(np.mean, 2, 2, 0, divisor=3)(x), True),
    ("GlobalAveragePooling2D", (), {}, (2, 4, 5, 3), lambda x, p: x.mean(axis=(1, 2)), False),
    ("GlobalMaxPooling2D", (), dict(data_format="channels_first", keepdims=True), (2, 3, 4, 5),
     lambda x, p: x.max(axis=(2, 3), keepdims=True), False),
    ("GlobalAveragePooling1D", (), {}, (2, 5, 3), lambda x, p: x.mean(axis=1), False),
    ("GlobalMaxPooling1D", (), {}, (2, 5, 3), lambda x, p: x.max(axis=1), False),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]
_HAS_DTYPE = ("GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "RMSNorm")


def _make(name, args, kwargs, rng):
    extra = dict(dtype="float64") if name in _HAS_DTYPE else {}
    layer = getattr(en.nn, name)(*args, **kwargs, **extra)
    for v in layer.variables:       # away from the initial ones and zeros
        v.assign(rng.normal(size=v.shape))
    return layer


def _input(rng, shape):
    # Distinct values on a grid: no ties for the max pools' gradients.
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * 0.1 + rng.uniform(-0.02, 0.02, n)).reshape(shape)


def _grads(layer, x, c):
    with en.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = en.sum(y * c)
    return [y] + tape.gradient(loss, [x] + layer.trainable_variables)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_numpy_and_finite_differences(case, graph):
    name, args, kwargs, shape, ref, _ = case
    rng = np.random.default_rng(0)
    layer = _make(name, args, kwargs, rng)
    params = dict(layer.state_dict())
    x = _input(rng, shape)
    expected = ref(x, params)
    c = rng.normal(size=expected.shape)

    def run(x):
        return _grads(layer, x, c)
    y, gx, *gp = [t.numpy() for t in (en.function(run) if graph else run)(en.tensor(x))]
    np.testing.assert_allclose(y, expected, rtol=1e-10, atol=1e-12)
    loss = lambda x, p: float(np.sum(ref(x, p) * c))    # noqa: E731
    np.testing.assert_allclose(gx, central_difference(lambda v: loss(v, params), x), atol=1e-6)
    names = [n for n, v in layer.named_variables() if v.trainable]
    for n, g in zip(names, gp):
        fd = central_difference(lambda v, n=n: loss(x, {**params, n: v}), params[n])
        np.testing.assert_allclose(g, fd, atol=1e-6, err_msg=n)


@pytest.mark.parametrize("case", [c for c in CASES if c[5]], ids=[i for i, c in zip(IDS, CASES)
                                                                   if c[5]])
def test_matches_torch_with_the_same_parameters(case):
    torch = pytest.importorskip("torch")
    name, args, kwargs, shape, _, _ = case
    rng = np.random.default_rng(1)
    layer = _make(name, args, kwargs, rng)
    t_layer = getattr(torch.nn, name)(*args, **kwargs)
    if name in _HAS_DTYPE:
        t_layer = t_layer.double()
    t_layer.load_state_dict({k: torch.tensor(v) for k, v in layer.state_dict().items()})
    x = _input(rng, shape)
    y, gx, *gp = [t.numpy() for t in _grads(layer, en.tensor(x), 1.0)]
    tx = torch.tensor(x, requires_grad=True)
    ty = t_layer(tx)
    ty.sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (n, _), g in zip([nv for nv in layer.named_variables() if nv[1].trainable], gp):
        np.testing.assert_allclose(g, dict(t_layer.named_parameters())[n].grad.numpy(),
                                   rtol=1e-8, atol=1e-10, err_msg=n)


def _np_batch_norm_train(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean) / np.sqrt(var + eps) * w.reshape(shape) + b.reshape(shape), \
        x.mean(axis=axes), x.var(axis=axes, ddof=1)


@pytest.mark.parametrize("name, shape", [("BatchNorm2d", (4, 3, 2, 5)), ("BatchNorm1d", (6, 3)),
                                         ("BatchNorm1d", (4, 3, 5))])
def test_batch_norm_channels_first_training_and_running_stats(name, shape):
    rng = np.random.default_rng(2)
    bn = getattr(en.nn, name)(3, 1e-5, 0.2, dtype="float64")   # PyTorch's order: eps, momentum
    bn.weight.assign(rng.normal(size=3))
    bn.bias.assign(rng.normal(size=3))
    x = rng.normal(size=shape)
    expected, mean, var = _np_batch_norm_train(x, bn.weight.numpy(), bn.bias.numpy())
    np.testing.assert_allclose(bn(en.tensor(x)).numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.2 * mean, atol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.8 + 0.2 * var, atol=1e-12)
    bn.eval()
    shape_c = (1, 3) + (1,) * (x.ndim - 2)
    running = (x - bn.running_mean.numpy().reshape(shape_c)) / np.sqrt(
        bn.running_var.numpy().reshape(shape_c) + 1e-5)
    expected_eval = running * bn.weight.numpy().reshape(shape_c) + bn.bias.numpy().reshape(shape_c)
    np.testing.assert_allclose(en.function(lambda x: bn(x))(en.tensor(x)).numpy(), expected_eval,
                               atol=1e-12)


def test_batch_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    bn = en.nn.BatchNorm2d(3, momentum=0.3, dtype="float64")
    t_bn = torch.nn.BatchNorm2d(3, momentum=0.3).double()
    x = rng.normal(size=(4, 3, 3, 2))
    tx = torch.tensor(x, requires_grad=True)
    y, gx = [t.numpy() for t in _grads(bn, en.tensor(x), 1.0)[:2]]
    t_y = t_bn(tx)
    (t_y * 1.0).sum().backward()
    np.testing.assert_allclose(y, t_y.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(bn.running_mean.numpy(), t_bn.running_mean.numpy(), atol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), t_bn.running_var.numpy(), atol=1e-12)


def test_channels_last_options_match_moved_data():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 4, 5, 6))
    moved = en.tensor(np.moveaxis(x, 1, -1))
    for first, last in [
            (en.nn.GroupNorm(2, 4, dtype="float64"),
             en.nn.GroupNorm(2, 4, dtype="float64", data_format="channels_last")),
            (en.nn.AdaptiveMaxPool2d(3), en.nn.AdaptiveMaxPool2d(3, data_format="channels_last")),
            (en.nn.MaxPool2D(2, data_format="channels_first"), en.nn.MaxPool2D(2)),
            (en.nn.AvgPool2D(3, 1, data_format="channels_first"), en.nn.AvgPool2D(3, 1)),
            (en.nn.BatchNorm(4, dtype="float64", data_format="channels_first"),
             en.nn.BatchNorm(4, dtype="float64"))]:
        np.testing.assert_allclose(np.moveaxis(first(en.tensor(x)).numpy(), 1, -1),
                                   last(moved).numpy(), atol=1e-12, err_msg=repr(first))


def test_errors_name_the_layer_and_the_input():
    with pytest.raises(en.InvalidArgumentError, match="GroupNorm: num_channels .* divisible"):
        en.nn.GroupNorm(3, 4)
    with pytest.raises(en.ShapeError, match=r"(?s)GroupNorm: expected \(N, C, \*\) inputs with "
                                            r"4 channels, got float32\[2,3,5\].*test_norm_pool"):
        en.nn.GroupNorm(2, 4)(en.ones((2, 3, 5), dtype="float32"))
    with pytest.raises(en.ShapeError, match=r"InstanceNorm2d: expected NCHW inputs with 3"):
        en.nn.InstanceNorm2d(3)(en.ones((2, 3, 4), dtype="float32"))
    with pytest.raises(en.InvalidArgumentError, match="track_running_stats"):
        en.nn.InstanceNorm1d(3, track_running_stats=True)
    with pytest.raises(en.ShapeError, match=r"RMSNorm: expected inputs ending in \(4,\)"):
        en.nn.RMSNorm(4)(en.ones((2, 3), dtype="float32"))
    with pytest.raises(en.ShapeError, match="AdaptiveAvgPool2d: expected NCHW inputs"):
        en.nn.AdaptiveAvgPool2d(2)(en.ones((2, 3, 4)))
    with pytest.raises(en.ShapeError, match="adaptive_avg_pool2d: output_size"):
        en.nn.AdaptiveAvgPool2d((2, 0))(en.ones((1, 2, 3, 4)))
    with pytest.raises(en.ShapeError, match="BatchNorm2d: expected inputs of rank 4"):
        en.nn.BatchNorm2d(3)(en.ones((2, 3), dtype="float32"))
    with pytest.raises(en.ShapeError, match="BatchNorm2d: .* 3 features in axis 1"):
        en.nn.BatchNorm2d(3)(en.ones((2, 4, 4, 3), dtype="float32"))


POLYMORPHIC = [(lambda: en.nn.GroupNorm(2, 4, dtype="float64"), (3, 4, 5, 5)),
               (lambda: en.nn.InstanceNorm1d(3, dtype="float64"), (3, 3, 6)),
               (lambda: en.nn.AdaptiveAvgPool2d((2, 3)), (3, 2, 6, 6)),
               (lambda: en.nn.AdaptiveMaxPool2d((4, 3)), (3, 2, 6, 7)),
               (lambda: en.nn.ConvTranspose3d(2, 2, 2, stride=2, dtype="float64"),
                (3, 2, 2, 2, 2)),
               (lambda: en.nn.Conv1d(2, 3, 3, dtype="float64"), (3, 2, 7)),
               (lambda: en.nn.BatchNorm2d(2, dtype="float64").eval(), (3, 2, 3, 3)),
               (lambda: en.nn.GlobalAveragePooling2D(), (3, 4, 4, 2))]


@pytest.mark.parametrize("make, shape", POLYMORPHIC,
                         ids=[f"layer{i}" for i in range(len(POLYMORPHIC))])
def test_one_trace_serves_every_batch_size(make, shape):
    layer = make()
    f = en.function(lambda x: layer(x),
                    input_signature=[en.TensorSpec((None,) + shape[1:], "float64")])
    for n in (shape[0], 5):
        x = en.tensor(np.random.default_rng(n).normal(size=(n,) + shape[1:]))
        np.testing.assert_allclose(f(x).numpy(), layer(x).numpy(), atol=1e-12)
    assert f.trace_count == 1
