"""Dense, convolution, pooling, flattening and dropout layers (NHWC images).

Weights are created at construction from a seeded initializer (see
:mod:`engine.nn.init`): ``generator`` is an ``en.random.Generator``, an int
seed, or None for the default stream.

Example:
    >>> import engine as en
    >>> layer = en.nn.Linear(3, 2, generator=0)
    >>> layer(en.ones((4, 3), dtype="float32")).shape
    (4, 2)
    >>> layer
    Linear(in_features=3, out_features=2, bias=True)  # 8 parameters
"""
from ..errors import ShapeError
from ..random import Generator, default_generator
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .module import Module, input_error


def _generator(generator):
    return Generator(generator) if isinstance(generator, int) else generator


def _seeded_from_default():
    """A new generator seeded from the default stream (reproducible after en.random.set_seed)."""
    seed = default_generator().uniform((), 0.0, 2.0 ** 31, dtype="float64").numpy()
    return Generator(int(seed))


def _positive_int(who, label, value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{who}: {label} must be a positive int, got {value!r}")
    return value


class Linear(Module):
    """``y = x @ weight + bias`` with ``weight`` of shape ``(in_features, out_features)``.

    ``init`` names the weight initializer (default Glorot uniform, as in
    Keras); the bias starts at zero.
    """

    def __init__(self, in_features, out_features, bias=True, init="glorot_uniform",
                 dtype="float32", generator=None, name="linear"):
        super().__init__()
        self.in_features = _positive_int("Linear", "in_features", in_features)
        self.out_features = _positive_int("Linear", "out_features", out_features)
        gen = _generator(generator)
        self.weight = Variable(initializers.get(init)((in_features, out_features), dtype, gen),
                               name=f"{name}/weight")
        self.bias = (Variable(initializers.zeros((out_features,), dtype), name=f"{name}/bias")
                     if bias else None)

    def forward(self, x):
        if x.shape[-1:] != (self.in_features,):
            raise input_error(ShapeError, f"Linear: expected inputs with last dimension "
                                          f"{self.in_features}", x)
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Conv2D(Module):
    """2-D convolution of NHWC images with filters ``(kh, kw, in_channels, out_channels)``.

    ``padding`` is "valid" or "same"; ``stride`` an int or a pair. Default
    initializer He uniform (for ReLU networks); the bias starts at zero.
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding="valid",
                 bias=True, init="he_uniform", dtype="float32", generator=None, name="conv2d"):
        super().__init__()
        self.in_channels = _positive_int("Conv2D", "in_channels", in_channels)
        self.out_channels = _positive_int("Conv2D", "out_channels", out_channels)
        self.kernel_size = F._pair("Conv2D", kernel_size, "kernel_size")
        self.stride = F._pair("Conv2D", stride, "stride")
        if padding not in ("valid", "same"):
            raise ValueError(f"Conv2D: padding must be 'valid' or 'same', got {padding!r}")
        self.padding = padding
        shape = self.kernel_size + (in_channels, out_channels)
        self.weight = Variable(initializers.get(init)(shape, dtype, _generator(generator)),
                               name=f"{name}/weight")
        self.bias = (Variable(initializers.zeros((out_channels,), dtype), name=f"{name}/bias")
                     if bias else None)

    def forward(self, x):
        if x.ndim != 4 or x.shape[-1] != self.in_channels:
            raise input_error(ShapeError, f"Conv2D: expected NHWC inputs with "
                                          f"{self.in_channels} channels", x)
        y = F.conv2d(x, self.weight, stride=self.stride, padding=self.padding)
        return y if self.bias is None else y + self.bias

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding!r}")


class MaxPool2D(Module):
    """Maximum over windows of an NHWC input (``strides`` defaults to ``pool_size``)."""

    def __init__(self, pool_size=2, strides=None, padding="valid"):
        super().__init__()
        self.pool_size, self.strides, self.padding = pool_size, strides, padding

    def forward(self, x):
        return F.max_pool2d(x, self.pool_size, self.strides, self.padding)

    def extra_repr(self):
        return f"pool_size={self.pool_size}, strides={self.strides}, padding={self.padding!r}"


class AvgPool2D(MaxPool2D):
    """Mean over windows of an NHWC input; "same" padding leaves padded positions out."""

    def forward(self, x):
        return F.avg_pool2d(x, self.pool_size, self.strides, self.padding)


class Flatten(Module):
    """Merge every axis from ``start_axis`` (default 1, keeping the batch) into one."""

    def __init__(self, start_axis=1):
        super().__init__()
        self.start_axis = start_axis

    def forward(self, x):
        return F.flatten(x, self.start_axis)

    def extra_repr(self):
        return f"start_axis={self.start_axis}" if self.start_axis != 1 else ""


class Dropout(Module):
    """Zero entries with probability ``rate`` in training mode; the identity in eval mode.

    The mask comes from the layer's own seeded generator, so eager and traced
    runs with the same seed drop the same entries.
    """

    def __init__(self, rate=0.5, generator=None):
        super().__init__()
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate = float(rate)
        # Private: its state variable is not a parameter (not saved, not trained).
        self._generator = _generator(generator) if generator is not None else _seeded_from_default()

    def forward(self, x):
        return F.dropout(x, self.rate, self._generator, training=self.training)

    def extra_repr(self):
        return f"rate={self.rate}"
