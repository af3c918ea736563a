"""Dense, convolution, pooling, flattening and dropout layers (NHWC images; the
convolution and pooling layers take ``data_format="channels_first"`` for NCHW).

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
from .. import default_dtype
from ..errors import InvalidArgumentError, ShapeError
from ..ops.conv_geometry import pair, padding_param
from ..random import Generator, default_generator
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .layout import check_format, check_input, from_channels_last, to_channels_last
from .module import Module, input_error


def _generator(generator):
    return Generator(generator) if isinstance(generator, int) else generator


def _seeded_from_default():
    """A new generator seeded from the default stream (reproducible after en.random.set_seed)."""
    seed = default_generator().uniform((), 0.0, 2.0 ** 31, dtype="float64").numpy()
    return Generator(int(seed))


def _positive_int(who, label, value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InvalidArgumentError(f"{who}: {label} must be a positive int, got {value!r}")
    return value


class Linear(Module):
    """``y = x @ weight + bias`` with ``weight`` of shape ``(in_features, out_features)``.

    ``init`` names the weight initializer (default Glorot uniform, as in
    Keras); the bias starts at zero.
    """

    _torch_layout = {"weight": (1, 0)}     # PyTorch's weight is (out, in)

    def __init__(self, in_features, out_features, bias=True, init="glorot_uniform",
                 dtype=None, generator=None, name="linear"):
        super().__init__()
        dtype = default_dtype.model_float(dtype)   # float32 unless set
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
    """2-D convolution of NHWC images with filters ``(kh, kw, in_channels // groups,
    out_channels)``.

    ``padding`` is "valid", "same", an int, a pair or ``((top, bottom), (left,
    right))``; ``stride`` and ``dilation`` ints or pairs; ``groups`` splits the
    channels (see :func:`engine.conv2d`). Default initializer He uniform (for
    ReLU networks); the bias starts at zero.

    ``data_format="channels_first"`` takes NCHW inputs (and gives NCHW
    outputs); the filters keep their layout. An NCHW batch given to a
    channels-last layer is refused when its last axis is not the channel count
    (the error says so), but an NCHW batch whose width happens to equal the
    channel count cannot be told from NHWC: say the layout, or use
    :class:`engine.nn.Conv2d` (PyTorch's layer, channels-first).
    """

    _torch_layout = {"weight": (2, 3, 1, 0)}     # PyTorch's is (out, in // groups, kh, kw)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding="valid",
                 bias=True, init="he_uniform", dtype=None, generator=None, name="conv2d",
                 dilation=1, groups=1, data_format="channels_last"):
        super().__init__()
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        self.in_channels = _positive_int("Conv2D", "in_channels", in_channels)
        self.out_channels = _positive_int("Conv2D", "out_channels", out_channels)
        self.groups = _positive_int("Conv2D", "groups", groups)
        if in_channels % groups or out_channels % groups:
            raise InvalidArgumentError(f"Conv2D: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        self.kernel_size = pair("Conv2D", kernel_size, "kernel_size")
        self.stride = pair("Conv2D", stride, "stride")
        self.dilation = pair("Conv2D", dilation, "dilation")
        self.padding = padding_param("Conv2D", padding)
        self.data_format = check_format("Conv2D", data_format)
        shape = self.kernel_size + (in_channels // groups, out_channels)
        self.weight = Variable(initializers.get(init)(shape, dtype, _generator(generator)),
                               name=f"{name}/weight")
        self.bias = (Variable(initializers.zeros((out_channels,), dtype), name=f"{name}/bias")
                     if bias else None)

    def forward(self, x):
        check_input("Conv2D", x, 2, self.in_channels, self.data_format)
        y = F.conv2d(to_channels_last(x, self.data_format), self.weight, stride=self.stride,
                     padding=self.padding, dilation=self.dilation, groups=self.groups)
        y = y if self.bias is None else y + self.bias
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        more = "" if self.dilation == (1, 1) else f", dilation={self.dilation}"
        more += "" if self.groups == 1 else f", groups={self.groups}"
        more += "" if self.data_format == "channels_last" else f", data_format={self.data_format!r}"
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding!r}{more}")


class ConvTranspose2D(Module):
    """Transposed 2-D convolution of NHWC images (see :func:`engine.conv_transpose2d`),
    filters ``(kh, kw, out_channels // groups, in_channels)``; the bias starts at zero.
    ``data_format="channels_first"`` takes and gives NCHW.

    Example:
        >>> import engine as en
        >>> up = en.nn.ConvTranspose2D(4, 2, 3, stride=2, padding=1, output_padding=1, generator=0)
        >>> up(en.ones((1, 5, 5, 4), dtype="float32")).shape
        (1, 10, 10, 2)
    """

    _torch_layout = {"weight": (2, 3, 1, 0)}     # PyTorch's is (in, out // groups, kh, kw)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, dilation=1, groups=1, bias=True, init="he_uniform",
                 dtype=None, generator=None, name="conv_transpose2d",
                 data_format="channels_last"):
        super().__init__()
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        self.in_channels = _positive_int("ConvTranspose2D", "in_channels", in_channels)
        self.out_channels = _positive_int("ConvTranspose2D", "out_channels", out_channels)
        self.groups = _positive_int("ConvTranspose2D", "groups", groups)
        if in_channels % groups or out_channels % groups:
            raise InvalidArgumentError(f"ConvTranspose2D: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        self.kernel_size = pair("ConvTranspose2D", kernel_size, "kernel_size")
        self.stride = pair("ConvTranspose2D", stride, "stride")
        self.dilation = pair("ConvTranspose2D", dilation, "dilation")
        self.padding = padding_param("ConvTranspose2D", padding)
        self.output_padding = output_padding
        self.data_format = check_format("ConvTranspose2D", data_format)
        shape = self.kernel_size + (out_channels // groups, in_channels)
        self.weight = Variable(initializers.get(init)(shape, dtype, _generator(generator)),
                               name=f"{name}/weight")
        self.bias = (Variable(initializers.zeros((out_channels,), dtype), name=f"{name}/bias")
                     if bias else None)

    def forward(self, x):
        check_input("ConvTranspose2D", x, 2, self.in_channels, self.data_format)
        y = F.conv_transpose2d(to_channels_last(x, self.data_format), self.weight, self.stride,
                               self.padding, self.output_padding, self.dilation, self.groups)
        y = y if self.bias is None else y + self.bias
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding!r}")


class MaxPool2D(Module):
    """Maximum over windows of an NHWC input (``strides`` defaults to ``pool_size``;
    see :func:`engine.max_pool2d` for padding, dilation and ``ceil_mode``);
    ``data_format="channels_first"`` for NCHW."""

    def __init__(self, pool_size=2, strides=None, padding="valid", dilation=1, ceil_mode=False,
                 data_format="channels_last"):
        super().__init__()
        self.pool_size, self.strides, self.padding = pool_size, strides, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.data_format = check_format("MaxPool2D", data_format)

    def forward(self, x):
        y = F.max_pool2d(to_channels_last(x, self.data_format), self.pool_size, self.strides,
                         self.padding, self.dilation, self.ceil_mode)
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        return f"pool_size={self.pool_size}, strides={self.strides}, padding={self.padding!r}"


class AvgPool2D(Module):
    """Mean over windows of an NHWC input (see :func:`engine.avg_pool2d`): explicit pads
    count when ``count_include_pad``; "same" padding leaves padded positions out.
    ``data_format="channels_first"`` for NCHW."""

    def __init__(self, pool_size=2, strides=None, padding="valid", ceil_mode=False,
                 count_include_pad=True, data_format="channels_last"):
        super().__init__()
        self.pool_size, self.strides, self.padding = pool_size, strides, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.data_format = check_format("AvgPool2D", data_format)

    def forward(self, x):
        y = F.avg_pool2d(to_channels_last(x, self.data_format), self.pool_size, self.strides,
                         self.padding, self.ceil_mode, self.count_include_pad)
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        return f"pool_size={self.pool_size}, strides={self.strides}, padding={self.padding!r}"


class Upsample(Module):
    """Resize NHWC images to ``size`` or by ``scale_factor`` (see :func:`engine.interpolate`).

    Example:
        >>> import engine as en
        >>> en.nn.Upsample(scale_factor=2, mode="bilinear")(en.ones((1, 3, 3, 2))).shape
        (1, 6, 6, 2)
    """

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


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
            raise InvalidArgumentError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate = float(rate)
        # Private: its state variable is not a parameter (not saved, not trained).
        self._generator = _generator(generator) if generator is not None else _seeded_from_default()

    def forward(self, x):
        return F.dropout(x, self.rate, self._generator, training=self.training)

    def extra_repr(self):
        return f"rate={self.rate}"
