"""Pooling layers under PyTorch's names (channels-first) and Keras's global pools
(channels-last): ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool1d/2d``,
``AdaptiveMaxPool1d/2d``, ``GlobalAveragePooling1D/2D``, ``GlobalMaxPooling1D/2D``.

The PyTorch-named layers take PyTorch's arguments and (N, C, L) or (N, C, H,
W) inputs; ``data_format="channels_last"`` takes the engine's NLC / NHWC.
The global pools reduce every spatial axis (``keepdims`` keeps them as 1s).

Example:
    >>> import engine as en
    >>> en.nn.AdaptiveAvgPool2d((1, 1))(en.ones((2, 8, 5, 5))).shape
    (2, 8, 1, 1)
    >>> en.nn.GlobalAveragePooling2D()(en.ones((2, 5, 5, 8))).shape
    (2, 8)
"""
from .. import ops
from ..errors import InvalidArgumentError, ShapeError
from . import pool_functional as PF
from .layout import check_format, from_channels_last, to_channels_last
from .module import Module, input_error


def _check_rank(who, x, rank, data_format):
    if x.ndim != rank + 2:
        want = {1: ("NLC", "NCL"), 2: ("NHWC", "NCHW")}[rank][data_format == "channels_first"]
        raise input_error(ShapeError, f"{who}: expected {want} inputs", x)


class _Channels(Module):
    """A pool run channels-last, with the input moved there and back as ``data_format`` says."""

    _rank = 2

    def forward(self, x):
        _check_rank(type(self).__name__, x, self._rank, self.data_format)
        y = self._pool(to_channels_last(x, self.data_format))
        return from_channels_last(y, self.data_format)


class MaxPool2d(_Channels):
    """Maximum over windows of (N, C, H, W) inputs (PyTorch's ``MaxPool2d``; ``stride``
    defaults to ``kernel_size``; see :func:`engine.max_pool2d`).

    Example:
        >>> import engine as en
        >>> en.nn.MaxPool2d(2)(en.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False, *, data_format="channels_first"):
        super().__init__()
        if return_indices:
            raise InvalidArgumentError("MaxPool2d: return_indices=True is not supported by the "
                                       "layer; call en.max_pool2d(..., return_indices=True)")
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.data_format = check_format("MaxPool2d", data_format)

    def _pool(self, x):
        return ops.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                              self.ceil_mode)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_Channels):
    """Mean over windows of (N, C, H, W) inputs (PyTorch's ``AvgPool2d``; see
    :func:`engine.avg_pool2d`). ``divisor_override`` divides every window's sum by
    that number instead of the window's size.

    Example:
        >>> import engine as en
        >>> en.nn.AvgPool2d(3, stride=2, padding=1)(en.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None, *, data_format="channels_first"):
        super().__init__()
        if divisor_override is not None and (not isinstance(divisor_override, int)
                                             or divisor_override <= 0):
            raise InvalidArgumentError(f"AvgPool2d: divisor_override must be a positive int, "
                                       f"got {divisor_override!r}")
        if divisor_override is not None and ceil_mode:
            # The clipped last windows' sums need their sizes; not worth a kernel of its own.
            raise InvalidArgumentError("AvgPool2d: divisor_override with ceil_mode=True is not "
                                       "supported")
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override
        self.data_format = check_format("AvgPool2d", data_format)

    def _pool(self, x):
        if self.divisor_override is None:
            return ops.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                  self.count_include_pad)
        # The windows' sums (the mean counting pads, times the full window), then the divisor.
        kh, kw = (self.kernel_size,) * 2 if isinstance(self.kernel_size, int) \
            else self.kernel_size
        sums = ops.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              True) * float(kh * kw)
        return sums / float(self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(_Channels):
    _fn = staticmethod(PF.adaptive_avg_pool2d)

    def __init__(self, output_size, *, data_format="channels_first"):
        super().__init__()
        self.output_size = output_size
        self.data_format = check_format(type(self).__name__, data_format)

    def _pool(self, x):
        return self._fn(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Mean over adaptive windows of (N, C, L) inputs, to ``output_size`` positions."""
    _rank = 1
    _fn = staticmethod(PF.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_Adaptive):
    """Mean over adaptive windows of (N, C, H, W) inputs (PyTorch's ``AdaptiveAvgPool2d``:
    ``output_size`` an int or an ``(h, w)`` pair, None keeps a size).

    Example:
        >>> import engine as en
        >>> x = en.reshape(en.arange(16.0), (1, 1, 4, 4))
        >>> en.nn.AdaptiveAvgPool2d(2)(x).numpy()[0, 0]
        array([[ 2.5,  4.5],
               [10.5, 12.5]])
    """
    _rank = 2
    _fn = staticmethod(PF.adaptive_avg_pool2d)


class AdaptiveMaxPool1d(_Adaptive):
    """Maximum over adaptive windows of (N, C, L) inputs."""
    _rank = 1
    _fn = staticmethod(PF.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_Adaptive):
    """Maximum over adaptive windows of (N, C, H, W) inputs (PyTorch's ``AdaptiveMaxPool2d``)."""
    _rank = 2
    _fn = staticmethod(PF.adaptive_max_pool2d)


class _Global(Module):
    _rank = 2
    _reduce = staticmethod(ops.mean)

    def __init__(self, data_format="channels_last", keepdims=False):
        super().__init__()
        self.data_format = check_format(type(self).__name__, data_format)
        self.keepdims = bool(keepdims)

    def forward(self, x):
        _check_rank(type(self).__name__, x, self._rank, self.data_format)
        first = 2 if self.data_format == "channels_first" else 1
        return self._reduce(x, axis=tuple(range(first, first + self._rank)),
                            keepdims=self.keepdims)

    def extra_repr(self):
        out = "" if self.data_format == "channels_last" else f"data_format={self.data_format!r}"
        return out + (", keepdims=True" if self.keepdims and out else
                      "keepdims=True" if self.keepdims else "")


class GlobalAveragePooling1D(_Global):
    """The mean over the steps of (N, L, C) inputs: (N, C) (Keras's layer)."""
    _rank = 1


class GlobalAveragePooling2D(_Global):
    """The mean over the pixels of (N, H, W, C) inputs: (N, C), or (N, 1, 1, C) with
    ``keepdims`` (Keras's layer; ``data_format="channels_first"`` for NCHW)."""
    _rank = 2


class GlobalMaxPooling1D(_Global):
    """The maximum over the steps of (N, L, C) inputs: (N, C)."""
    _rank = 1
    _reduce = staticmethod(ops.max)


class GlobalMaxPooling2D(_Global):
    """The maximum over the pixels of (N, H, W, C) inputs: (N, C)."""
    _rank = 2
    _reduce = staticmethod(ops.max)
