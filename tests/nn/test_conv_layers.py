"""The PyTorch-named convolution layers (Conv1d/2d/3d, ConvTranspose1d/2d/3d) and the
channels-first option of the Keras-named ones.

References: the direct numpy sums of ``op_db.conv_nd`` (values, and their
gradients by central differences), and, when torch is installed, torch's
layers holding the same weights (values and gradients). Each runs eagerly and
inside ``en.function``.
"""
import numpy as np
import pytest

import engine as en
from op_db.conv_nd import np_conv, np_conv_transpose
from support.finite_diff import central_difference

# (layer name, constructor args, constructor kwargs, input shape)
CASES = [
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 9)),
    ("Conv1d", (3, 2, 4), dict(padding="same", dilation=2), (2, 3, 7)),
    ("Conv2d", (3, 4, 3), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)), (2, 3, 7, 8)),
    ("Conv2d", (4, 2, 3), dict(padding=1, groups=2, padding_mode="reflect"), (1, 4, 5, 5)),
    ("Conv2d", (2, 3, 2), dict(padding=(1, 2), padding_mode="circular", bias=False),
     (1, 2, 4, 5)),
    ("Conv2d", (2, 2, 3), dict(padding=1, padding_mode="replicate"), (1, 2, 4, 4)),
    ("Conv3d", (2, 4, (2, 3, 2)), dict(stride=(1, 2, 1), padding=(1, 0, 1)), (1, 2, 4, 5, 4)),
    ("Conv3d", (4, 2, 2), dict(groups=2, dilation=(2, 1, 1), padding="valid"), (2, 4, 4, 3, 3)),
    ("ConvTranspose1d", (4, 2, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2),
     (1, 4, 3, 4)),
    ("ConvTranspose2d", (2, 3, (2, 3)), dict(stride=(1, 2), dilation=2, bias=False),
     (2, 2, 3, 2)),
    ("ConvTranspose3d", (2, 3, (2, 3, 2)), dict(stride=(2, 1, 2), padding=(0, 1, 1),
                                                output_padding=(1, 0, 0)), (1, 2, 2, 3, 3)),
]
IDS = [f"{name}-{i}" for i, (name, *_rest) in enumerate(CASES)]
_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _make(name, args, kwargs, **more):
    return getattr(en.nn, name)(*args, **kwargs, dtype="float64", generator=3, **more)


def _ref(name, kwargs, x, w, b):
    """The layer in numpy: channels-first in and out, PyTorch's weight layout."""
    n = x.ndim - 2
    xl = np.moveaxis(x, 1, -1)
    wl = np.transpose(w, tuple(range(2, n + 2)) + (1, 0))
    common = dict(stride=kwargs.get("stride", 1), dilation=kwargs.get("dilation", 1),
                  groups=kwargs.get("groups", 1))
    padding = kwargs.get("padding", 0)
    if "Transpose" in name:
        y = np_conv_transpose(xl, wl, padding=padding,
                              output_padding=kwargs.get("output_padding", 0), **common)
    else:
        mode = kwargs.get("padding_mode", "zeros")
        if mode != "zeros":
            pads = padding if isinstance(padding, tuple) else (padding,) * n
            xl = np.pad(xl, [(0, 0)] + [(p, p) for p in pads] + [(0, 0)], mode=_NP_MODES[mode])
            padding = 0
        y = np_conv(xl, wl, padding=padding, **common)
    if b is not None:
        y = y + b
    return np.moveaxis(y, -1, 1)


def _grads(layer, x, c):
    with en.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = en.sum(y * c)
    return [y] + tape.gradient(loss, [x] + layer.trainable_variables)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_numpy_and_finite_differences(case, graph):
    name, args, kwargs, shape = case
    layer = _make(name, args, kwargs)
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape)
    w = layer.weight.numpy()
    b = None if layer.bias is None else layer.bias.numpy()
    expected = _ref(name, kwargs, x, w, b)
    c = rng.normal(size=expected.shape)
    run = en.function(lambda x: _grads(layer, x, c)) if graph else (lambda x: _grads(layer, x, c))
    y, gx, gw, *gb = [t.numpy() for t in run(en.tensor(x))]
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)

    def loss(x, w, b):
        return float(np.sum(_ref(name, kwargs, x, w, b) * c))
    np.testing.assert_allclose(gx, central_difference(lambda v: loss(v, w, b), x), atol=1e-6)
    np.testing.assert_allclose(gw, central_difference(lambda v: loss(x, v, b), w), atol=1e-6)
    if b is not None:
        np.testing.assert_allclose(gb[0], central_difference(lambda v: loss(x, w, v), b),
                                   atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_torch_with_the_same_weights(case):
    torch = pytest.importorskip("torch")
    name, args, kwargs, shape = case
    layer = _make(name, args, kwargs)
    t_layer = getattr(torch.nn, name)(*args, **kwargs, dtype=torch.float64)
    # The same parameter names and shapes: a torch state_dict loads by name, unpermuted.
    assert {k: tuple(v.shape) for k, v in t_layer.state_dict().items()} == \
        {k: v.shape for k, v in layer.state_dict().items()}
    t_layer.load_state_dict({k: torch.tensor(v) for k, v in layer.state_dict().items()})
    rng = np.random.default_rng(1)
    x = rng.normal(size=shape)
    y, gx, gw, *gb = [t.numpy() for t in _grads(layer, en.tensor(x), 1.0)]
    tx = torch.tensor(x, requires_grad=True)
    ty = t_layer(tx)
    ty.sum().backward()
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, t_layer.weight.grad.numpy(), rtol=1e-10, atol=1e-10)
    if gb:
        np.testing.assert_allclose(gb[0], t_layer.bias.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d"])
def test_default_init_is_uniform_on_pytorchs_bound(name):
    layer = getattr(en.nn, name)(6, 4, 3, generator=0)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    bound = 1.0 / np.sqrt(w.shape[1] * np.prod(w.shape[2:]))
    assert w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / np.sqrt(3)) < 0.15 * bound    # the uniform's std


def test_channels_last_option_is_the_same_layer_on_transposed_data():
    rng = np.random.default_rng(2)
    first = en.nn.Conv2d(3, 5, 3, stride=2, padding=1, dtype="float64", generator=1)
    last = en.nn.Conv2d(3, 5, 3, stride=2, padding=1, dtype="float64", generator=1,
                        data_format="channels_last")
    x = rng.normal(size=(2, 3, 6, 7))
    np.testing.assert_allclose(last(en.tensor(x.transpose(0, 2, 3, 1))).numpy(),
                               first(en.tensor(x)).numpy().transpose(0, 2, 3, 1), atol=1e-12)


@pytest.mark.parametrize("name, args", [("Conv2D", (3, 4, 3)), ("ConvTranspose2D", (3, 4, 3))])
def test_keras_named_layers_take_channels_first(name, args):
    rng = np.random.default_rng(3)
    nhwc = getattr(en.nn, name)(*args, dtype="float64", generator=4)
    nchw = getattr(en.nn, name)(*args, dtype="float64", generator=4, data_format="channels_first")
    x = rng.normal(size=(2, 3, 5, 6))
    expected = nhwc(en.tensor(x.transpose(0, 2, 3, 1))).numpy().transpose(0, 3, 1, 2)
    np.testing.assert_allclose(nchw(en.tensor(x)).numpy(), expected, atol=1e-12)
    traced = en.function(lambda x: nchw(x))(en.tensor(x)).numpy()
    np.testing.assert_allclose(traced, expected, atol=1e-12)


def test_nchw_input_to_a_channels_last_layer_says_so():
    conv = en.nn.Conv2D(3, 8, 3)
    with pytest.raises(en.ShapeError, match=r"(?s)Conv2D: expected NHWC inputs with 3 channels "
                                            r"\(this looks like NCHW: pass data_format="
                                            r"'channels_first'\).*test_conv_layers.py"):
        conv(en.ones((2, 3, 16, 16), dtype="float32"))
    with pytest.raises(en.ShapeError, match=r"Conv2d: expected NCHW inputs with 3 channels "
                                            r"\(this looks like NHWC"):
        en.nn.Conv2d(3, 8, 3)(en.ones((2, 16, 16, 3), dtype="float32"))


def test_constructor_errors():
    with pytest.raises(en.InvalidArgumentError, match="Conv2d: in_channels .* divisible"):
        en.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(en.InvalidArgumentError, match="ConvTranspose2d: padding_mode must be "
                                                      "'zeros', got 'reflect'"):
        en.nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
    with pytest.raises(en.InvalidArgumentError, match="Conv1d: kernel_size must be an int or 1"):
        en.nn.Conv1d(3, 4, (3, 3))
    with pytest.raises(en.InvalidArgumentError, match="data_format"):
        en.nn.Conv3d(3, 4, 3, data_format="NCDHW")
    with pytest.raises(en.ShapeError, match="Conv3d: expected NCDHW inputs with 2 channels"):
        en.nn.Conv3d(2, 4, 3)(en.ones((1, 2, 4, 4), dtype="float32"))


def test_unknown_batch_size_in_a_graph():
    conv = en.nn.Conv3d(2, 3, 2, dtype="float64", generator=5)
    f = en.function(lambda x: conv(x), input_signature=[en.TensorSpec((None, 2, 3, 3, 3),
                                                                      "float64")])
    x = np.random.default_rng(4).normal(size=(3, 2, 3, 3, 3))
    np.testing.assert_allclose(f(en.tensor(x)).numpy(), conv(en.tensor(x)).numpy(), atol=1e-12)
