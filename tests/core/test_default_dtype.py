"""numpy's float64 no longer takes over float32 models (issue #45 item 4).

A layer computes in its parameters' dtype: a floating input of another float dtype is
cast (Keras's autocast), differentiably, with one warning per layer. And one setting,
``en.set_default_dtype`` (PyTorch's), decides the dtype of floats made without one:
``en.tensor`` of Python numbers, ``zeros``, ``ones``, ``full``, ``eye``, ``arange``,
``linspace``, random draws and layer parameters; numpy arrays keep theirs."""
import warnings

import numpy as np
import pytest

import engine as en

RNG = np.random.default_rng(4)
X64 = RNG.random((5, 4))                        # numpy's float64


@pytest.fixture
def default_dtype():
    """Set the default dtype for one test, and unset it after, whatever happens."""
    yield en.set_default_dtype
    en.set_default_dtype(None)


def np_linear32(x, layer):
    return x.astype(np.float32) @ layer.weight.numpy() + layer.bias.numpy()


def test_float64_data_into_a_float32_model_computes_in_float32():
    first, second = en.nn.Linear(4, 3, generator=0), en.nn.Linear(3, 2, generator=1)
    model = en.nn.Sequential(first, en.nn.ReLU(), second)
    with pytest.warns(UserWarning, match=r"Linear\(in_features=4.*float64\[5,4\] cast to "
                                         r"float32") as seen:
        out = model(en.tensor(X64))
    assert [w.filename for w in seen] == [__file__]      # the user's line, once
    assert out.dtype == np.float32
    want = np_linear32(np.maximum(np_linear32(X64, first), 0), second)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # said once per layer: now silent
        assert model(X64).dtype == np.float32            # a numpy array is cast too


def test_the_cast_is_differentiable_and_traced():
    layer = en.nn.Linear(4, 3, generator=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = en.grad(lambda x: en.sum(layer(x)))(en.tensor(X64))
        traced = en.function(lambda x: layer(x))(en.tensor(X64))
    # d/dx sum(x W + b) = the row sums of W, for every row of x, back in x's dtype
    assert g.dtype == np.float64
    np.testing.assert_allclose(g.numpy(), np.broadcast_to(layer.weight.numpy().sum(1), X64.shape),
                               rtol=1e-6)
    assert traced.dtype == np.float32
    np.testing.assert_allclose(traced.numpy(), np_linear32(X64, layer), rtol=1e-5, atol=1e-6)


def test_recurrent_and_float64_layers_cast_to_their_own_dtype():
    rnn = en.nn.RNN(en.nn.GRUCell(4, 3, generator=3))
    wide = en.nn.Linear(4, 2, dtype="float64", generator=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outputs, last = rnn(en.tensor(RNG.random((2, 6, 4))))
        up = wide(en.tensor(X64.astype(np.float32)))
    assert outputs.dtype == last.dtype == np.float32
    assert up.dtype == np.float64
    np.testing.assert_allclose(up.numpy(), X64.astype(np.float32).astype(np.float64)
                               @ wide.weight.numpy() + wide.bias.numpy(), rtol=1e-12)


def test_unset_default_keeps_numpys_float64_for_data_and_float32_for_models():
    assert en.get_default_dtype() is None
    assert en.tensor(1.0).dtype == en.tensor([1.0]).dtype == en.zeros(2).dtype == np.float64
    assert en.ones(2).dtype == en.eye(2).dtype == en.linspace(0, 1, 3).dtype == np.float64
    assert en.random.normal((2,), seed=0).dtype == np.float32
    assert en.nn.Linear(2, 2).weight.dtype == np.float32


@pytest.mark.parametrize("name, complex_name", [("float32", "complex64"),
                                                ("float64", "complex128")])
def test_everything_made_without_a_dtype_follows_the_setting(default_dtype, name, complex_name):
    default_dtype(name)
    assert en.get_default_dtype() == np.dtype(name)
    made = {"tensor(float)": en.tensor(1.5), "tensor(list)": en.tensor([[1.0, 2.0]]),
            "zeros": en.zeros((2,)), "ones": en.ones((2,)), "full": en.full((2,), 0.5),
            "eye": en.eye(2), "arange": en.arange(0.0, 1.0, 0.5), "linspace": en.linspace(0, 1, 3),
            "normal": en.random.normal((2,), seed=0), "uniform": en.random.uniform((2,), seed=0),
            "Generator": en.random.Generator(1).normal((2,)),
            "Linear": en.nn.Linear(2, 2).weight, "Conv2D": en.nn.Conv2D(1, 1, 3).weight,
            "BatchNorm": en.nn.BatchNorm(2).running_var, "LayerNorm": en.nn.LayerNorm(2).weight,
            "LSTMCell": en.nn.LSTMCell(2, 2).weight_hh, "Embedding": en.nn.Embedding(3, 2).weight,
            "init": en.nn.init.glorot_uniform((2, 2))}
    wrong = {k: str(v.dtype) for k, v in made.items() if v.dtype != np.dtype(name)}
    assert not wrong
    assert en.tensor(1j).dtype == en.tensor([1j]).dtype == np.dtype(complex_name)
    # numpy data, ints, bools and explicit dtypes keep theirs
    assert en.tensor(np.ones(2)).dtype == np.float64
    assert en.tensor(np.ones(2, np.float32)).dtype == np.float32
    assert en.tensor([1, 2]).dtype == np.int64 and en.tensor(True).dtype == np.bool_
    assert en.zeros(2, dtype="float16").dtype == np.float16 and en.arange(3).dtype == np.int64
    # a model built under the setting takes data of that dtype without a cast or a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert en.nn.Linear(2, 2)(en.tensor([[1.0, 2.0]])).dtype == np.dtype(name)


def test_bad_default_dtypes_are_refused_before_anything_changes(default_dtype):
    default_dtype("float32")
    for bad in ("int32", "complex64", "bool", "nonsense", object()):
        with pytest.raises(en.DTypeError, match=r"en.set_default_dtype: expected a floating-point "
                                                r"dtype .* or None, got") as info:
            default_dtype(bad)
        assert __file__ in str(info.value)
    assert en.get_default_dtype() == np.float32


def test_a_model_of_ones_own_casts_too_when_compiled():
    # A user's module holding its own float32 variable, compiled whole (AutoGraph runs
    # its converted forward, as calling it would).
    class Scale(en.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = en.Variable(np.float32([1.5, -2.0, 0.5, 4.0]))

        def forward(self, x):
            return x * self.w

    m = Scale()
    with pytest.warns(UserWarning, match=r"Scale\(\): input float64\[5,4\] cast to float32"):
        out = en.function(m)(en.tensor(X64))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), X64.astype(np.float32) * m.w.numpy(), rtol=1e-6)
