"""Normalization layers under PyTorch's names: :class:`GroupNorm`, :class:`InstanceNorm1d`,
:class:`InstanceNorm2d` (channels-first by default, ``data_format="channels_last"`` for
the engine's layout) and :class:`RMSNorm` (over the trailing axes).

Parameters are named and shaped as PyTorch's (``weight``, ``bias``, one per
channel), so a PyTorch ``state_dict`` loads by name.

Example:
    >>> import engine as en
    >>> gn = en.nn.GroupNorm(2, 4)
    >>> y = gn(en.random.normal((3, 4, 5, 5), seed=0))       # NCHW
    >>> bool(abs(en.mean(y[:, :2]).numpy()) < 1e-6)
    True
"""
from .. import default_dtype
from ..errors import InvalidArgumentError, ShapeError
from ..variable import Variable
from . import init as initializers
from . import norm_functional as NF
from .layers import _positive_int
from .layout import check_format, from_channels_last, to_channels_last
from .module import Module, input_error


def _affine_params(module, shape, affine, dtype, name, bias=True):
    dtype = default_dtype.model_float(dtype)   # float32 unless set
    if affine:
        module.weight = Variable(initializers.ones(shape, dtype), name=f"{name}/weight")
        module.bias = (Variable(initializers.zeros(shape, dtype), name=f"{name}/bias")
                       if bias else None)
    else:
        module.weight = module.bias = None


class GroupNorm(Module):
    """Normalize each example over groups of channels and all positions, then scale and
    shift per channel (PyTorch's ``GroupNorm``). Inputs ``(N, C, *)``.

    Example:
        >>> import engine as en
        >>> en.nn.GroupNorm(2, 6)(en.ones((1, 6, 3), dtype="float32")).shape
        (1, 6, 3)
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, *,
                 data_format="channels_first", dtype=None, name="group_norm"):
        super().__init__()
        self.num_groups = _positive_int("GroupNorm", "num_groups", num_groups)
        self.num_channels = _positive_int("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise InvalidArgumentError(f"GroupNorm: num_channels ({num_channels}) must be "
                                       f"divisible by num_groups ({num_groups})")
        self.eps = float(eps)
        self.data_format = check_format("GroupNorm", data_format)
        self.weight: Variable | None
        self.bias: Variable | None
        _affine_params(self, (num_channels,), affine, dtype, name)

    def forward(self, x):
        axis = 1 if self.data_format == "channels_first" else -1
        if x.ndim < 2 or x.shape[axis] != self.num_channels:
            where = "(N, C, *)" if axis == 1 else "(N, *, C)"
            raise input_error(ShapeError, f"GroupNorm: expected {where} inputs with "
                                          f"{self.num_channels} channels", x)
        y = NF.group_norm(to_channels_last(x, self.data_format), self.num_groups, self.weight,
                          self.bias, self.eps)
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}"


class _InstanceNorm(Module):
    _rank = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, *, data_format="channels_first", dtype=None,
                 name="instance_norm"):
        super().__init__()
        who = type(self).__name__
        if track_running_stats:
            raise InvalidArgumentError(f"{who}: track_running_stats=True is not supported "
                                       f"(every call normalizes with its own statistics)")
        self.num_features = _positive_int(who, "num_features", num_features)
        self.eps = float(eps)
        self.momentum = momentum
        self.data_format = check_format(who, data_format)
        self.weight: Variable | None
        self.bias: Variable | None
        _affine_params(self, (num_features,), affine, dtype, name)

    def forward(self, x):
        axis = 1 if self.data_format == "channels_first" else -1
        if x.ndim != self._rank + 2 or x.shape[axis] != self.num_features:
            want = {1: ("NLC", "NCL"), 2: ("NHWC", "NCHW")}[self._rank][axis == 1]
            raise input_error(ShapeError, f"{type(self).__name__}: expected {want} inputs with "
                                          f"{self.num_features} channels", x)
        y = NF.instance_norm(to_channels_last(x, self.data_format), self.weight, self.bias,
                             self.eps)
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, affine={self.weight is not None}"


class InstanceNorm1d(_InstanceNorm):
    """Normalize each channel of each (N, C, L) example over its steps (PyTorch's
    ``InstanceNorm1d``; ``affine=False`` by default, as there)."""
    _rank = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalize each channel of each (N, C, H, W) example over its pixels (PyTorch's
    ``InstanceNorm2d``).

    Example:
        >>> import engine as en
        >>> y = en.nn.InstanceNorm2d(3)(en.random.normal((2, 3, 4, 4), seed=1))
        >>> bool(abs(en.mean(y, axis=(2, 3)).numpy()).max() < 1e-6)
        True
    """
    _rank = 2


class RMSNorm(Module):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape``
    (PyTorch's ``RMSNorm``; ``eps=None``: the dtype's machine epsilon).

    Example:
        >>> import engine as en
        >>> en.nn.RMSNorm(4)(en.ones((2, 4), dtype="float32")).numpy().round(4)
        array([[1., 1., 1., 1.],
               [1., 1., 1., 1.]], dtype=float32)
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, *, dtype=None,
                 name="rms_norm"):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        for d in shape:
            _positive_int("RMSNorm", "normalized_shape", d)
        self.normalized_shape = shape
        self.eps = None if eps is None else float(eps)
        self.weight: Variable | None
        self.bias: Variable | None
        _affine_params(self, shape, elementwise_affine, dtype, name, bias=False)

    def forward(self, x):
        k = len(self.normalized_shape)
        if tuple(x.shape[-k:]) != self.normalized_shape:
            raise input_error(ShapeError, f"RMSNorm: expected inputs ending in "
                                          f"{self.normalized_shape}", x)
        return NF.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"
