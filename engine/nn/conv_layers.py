"""Convolution layers under PyTorch's names: ``Conv1d``, ``Conv2d``, ``Conv3d`` and
``ConvTranspose1d/2d/3d``.

They take PyTorch's arguments, in PyTorch's order, and PyTorch's layouts:
inputs channels-first (NCL, NCHW, NCDHW; ``data_format="channels_last"`` for
the engine's NLC, NHWC, NDHWC) and weights stored as PyTorch stores them,
``(out, in // groups, *kernel)`` for a convolution and ``(in, out // groups,
*kernel)`` for a transposed one, so a PyTorch ``state_dict`` loads by name
(``weight``, ``bias``) with no permutation. Weights and biases start as
PyTorch's do: uniform on ``±1 / sqrt(fan_in)``. (``en.nn.Conv2D``, the
Keras-named layer, keeps filters ``(kh, kw, in, out)`` and NHWC inputs.)

Example:
    >>> import engine as en
    >>> conv = en.nn.Conv2d(1, 16, 3, padding=1, generator=0)
    >>> conv.weight.shape
    (16, 1, 3, 3)
    >>> conv(en.ones((4, 1, 28, 28), dtype="float32")).shape
    (4, 16, 28, 28)
"""
import math

import numpy as np

from .. import default_dtype, ops
from ..errors import InvalidArgumentError
from ..variable import Variable
from . import conv_functional as CF
from .layers import _generator, _positive_int
from .layout import check_format, check_input, from_channels_last, to_channels_last
from .module import Module
from .init import _generator as _init_generator

_CONV = {1: CF.conv1d, 2: ops.conv2d, 3: CF.conv3d}
_TRANSPOSED = {1: CF.conv_transpose1d, 2: ops.conv_transpose2d, 3: CF.conv_transpose3d}
# PyTorch's padding modes that are not zeros, as numpy's pad modes.
_PAD_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _ntuple(who, value, n, what):
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n:
        raise InvalidArgumentError(f"{who}: {what} must be an int or {n} ints, got {value!r}")
    return tuple(_positive_int(who, what, v) if what != "padding" else v for v in values)


class _ConvNd(Module):
    """The shared body: weight in PyTorch's layout, a channels-last kernel underneath."""

    _rank = 2
    _transposed = False

    def _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
               bias, padding_mode, output_padding, data_format, dtype, generator):
        who = type(self).__name__
        n = self._rank
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        self.in_channels = _positive_int(who, "in_channels", in_channels)
        self.out_channels = _positive_int(who, "out_channels", out_channels)
        self.groups = _positive_int(who, "groups", groups)
        if in_channels % groups or out_channels % groups:
            raise InvalidArgumentError(f"{who}: in_channels ({in_channels}) and out_channels "
                                       f"({out_channels}) must be divisible by groups ({groups})")
        self.kernel_size = _ntuple(who, kernel_size, n, "kernel_size")
        self.stride = _ntuple(who, stride, n, "stride")
        self.dilation = _ntuple(who, dilation, n, "dilation")
        self.padding = padding if isinstance(padding, str) else _ntuple(who, padding, n,
                                                                         "padding")
        self.output_padding = output_padding
        if padding_mode != "zeros" and (padding_mode not in _PAD_MODES or self._transposed
                                        or isinstance(padding, str)):
            others = "" if self._transposed else \
                ", or 'reflect', 'replicate' or 'circular' with numeric padding"
            raise InvalidArgumentError(f"{who}: padding_mode must be 'zeros'{others}, got "
                                       f"{padding_mode!r} (padding {padding!r})")
        self.padding_mode = padding_mode
        self.data_format = check_format(who, data_format)
        pair = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        shape = pair + self.kernel_size
        # PyTorch's default: kaiming_uniform_(a=sqrt(5)), i.e. uniform on ±1/sqrt(fan_in),
        # fan_in = shape[1] * prod(kernel) (for a transposed layer too, as PyTorch).
        bound = 1.0 / math.sqrt(shape[1] * int(np.prod(self.kernel_size)))
        gen = _init_generator(_generator(generator))
        self.weight = Variable(gen.uniform(shape, -bound, bound, dtype=dtype).numpy(),
                               name=f"{who.lower()}/weight")
        self.bias = (Variable(gen.uniform((out_channels,), -bound, bound, dtype=dtype).numpy(),
                              name=f"{who.lower()}/bias") if bias else None)

    def forward(self, x):
        check_input(type(self).__name__, x, self._rank, self.in_channels, self.data_format)
        x = to_channels_last(x, self.data_format)
        n = self._rank
        # (out, in/g, *k) or (in, out/g, *k) -> the kernels' (*k, in/g, out) or (*k, out/g, in).
        w = ops.transpose(self.weight, tuple(range(2, n + 2)) + (1, 0))
        if self._transposed:
            y = _TRANSPOSED[n](x, w, stride=self.stride, padding=self.padding,
                               output_padding=self.output_padding, dilation=self.dilation,
                               groups=self.groups)
        else:
            padding = self.padding
            if self.padding_mode != "zeros":
                pads = ((0, 0),) + tuple((p, p) for p in padding) + ((0, 0),)
                x, padding = ops.pad(x, pads, mode=_PAD_MODES[self.padding_mode]), 0
            y = _CONV[n](x, w, stride=self.stride, padding=padding, dilation=self.dilation,
                         groups=self.groups)
        if self.bias is not None:
            y = y + self.bias
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        n = self._rank
        out = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
               f"stride={self.stride}")
        if self.padding != (0,) * n:
            out += f", padding={self.padding!r}"
        if self._transposed and self.output_padding not in (0, (0,) * n):
            out += f", output_padding={self.output_padding!r}"
        if self.dilation != (1,) * n:
            out += f", dilation={self.dilation}"
        if self.groups != 1:
            out += f", groups={self.groups}"
        if self.bias is None:
            out += ", bias=False"
        if self.padding_mode != "zeros":
            out += f", padding_mode={self.padding_mode!r}"
        if self.data_format != "channels_first":
            out += f", data_format={self.data_format!r}"
        return out


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", *, data_format="channels_first",
                 dtype=None, generator=None):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    bias, padding_mode, 0, data_format, dtype, generator)


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros", *,
                 data_format="channels_first", dtype=None, generator=None):
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                    bias, padding_mode, output_padding, data_format, dtype, generator)


class Conv1d(_Conv):
    """1-D convolution of (N, C, L) inputs (PyTorch's ``Conv1d``); weight
    ``(out, in // groups, k)``.

    Example:
        >>> import engine as en
        >>> en.nn.Conv1d(3, 8, 5, stride=2, generator=0)(en.ones((2, 3, 20), dtype="float32")).shape
        (2, 8, 8)
    """
    _rank = 1


class Conv2d(_Conv):
    """2-D convolution of (N, C, H, W) inputs (PyTorch's ``Conv2d``); weight
    ``(out, in // groups, kh, kw)``. ``padding`` is an int, a pair, "valid" or
    "same"; ``padding_mode`` "zeros", "reflect", "replicate" or "circular".

    Example:
        >>> import engine as en
        >>> en.nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect",
        ...              generator=0)(en.ones((1, 3, 6, 6), dtype="float32")).shape
        (1, 8, 6, 6)
    """
    _rank = 2


class Conv3d(_Conv):
    """3-D convolution of (N, C, D, H, W) inputs (PyTorch's ``Conv3d``); weight
    ``(out, in // groups, kd, kh, kw)``.

    Example:
        >>> import engine as en
        >>> en.nn.Conv3d(2, 4, 3, padding=1, generator=0)(en.ones((1, 2, 4, 4, 4),
        ...                                                       dtype="float32")).shape
        (1, 4, 4, 4, 4)
    """
    _rank = 3


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution of (N, C, L) inputs (PyTorch's ``ConvTranspose1d``);
    weight ``(in, out // groups, k)``.

    Example:
        >>> import engine as en
        >>> en.nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1,
        ...                       generator=0)(en.ones((1, 4, 5), dtype="float32")).shape
        (1, 2, 10)
    """
    _rank = 1


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution of (N, C, H, W) inputs (PyTorch's ``ConvTranspose2d``);
    weight ``(in, out // groups, kh, kw)``.

    Example:
        >>> import engine as en
        >>> en.nn.ConvTranspose2d(4, 2, 2, stride=2, generator=0)(en.ones((1, 4, 3, 3),
        ...                                                               dtype="float32")).shape
        (1, 2, 6, 6)
    """
    _rank = 2


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution of (N, C, D, H, W) inputs (PyTorch's ``ConvTranspose3d``);
    weight ``(in, out // groups, kd, kh, kw)``.

    Example:
        >>> import engine as en
        >>> en.nn.ConvTranspose3d(2, 3, 2, stride=2, generator=0)(en.ones((1, 2, 2, 2, 2),
        ...                                                               dtype="float32")).shape
        (1, 3, 4, 4, 4)
    """
    _rank = 3
