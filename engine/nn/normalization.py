"""Normalization layers: :class:`LayerNorm` and :class:`BatchNorm` (with running statistics).

Example:
    >>> import engine as en
    >>> bn = en.nn.BatchNorm(3)
    >>> y = bn(en.random.normal((8, 3), seed=0))         # training: batch statistics
    >>> bool(abs(en.mean(y, axis=0).numpy()).max() < 1e-6)
    True
    >>> _ = bn.eval()                                    # eval: the running statistics
"""
from .. import default_dtype
from ..errors import InvalidArgumentError, ShapeError
from ..variable import Variable
from . import functional as F
from . import init as initializers
from .layers import _positive_int
from .layout import channel_axis, check_format, from_channels_last, to_channels_last
from .module import Module, input_error


def _normalized_shape(who, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for d in shape:
        _positive_int(who, "normalized_shape", d)
    return shape


class LayerNorm(Module):
    """Normalize over the last ``len(normalized_shape)`` axes, then scale and shift.

    ``y = (x - mean) / sqrt(var + eps) * weight + bias`` with the biased
    variance, per example (PyTorch's ``LayerNorm``, Ba et al. 2016).
    """

    def __init__(self, normalized_shape, eps=1e-5, affine=True, dtype=None, name="layer_norm"):
        super().__init__()
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps = float(eps)
        self.weight: Variable | None
        self.bias: Variable | None
        if affine:
            self.weight = Variable(initializers.ones(self.normalized_shape, dtype), name=f"{name}/weight")
            self.bias = Variable(initializers.zeros(self.normalized_shape, dtype), name=f"{name}/bias")
        else:
            self.weight = self.bias = None

    def forward(self, x):
        k = len(self.normalized_shape)
        if tuple(x.shape[-k:]) != self.normalized_shape:
            raise input_error(ShapeError, f"LayerNorm: expected inputs ending in "
                                          f"{self.normalized_shape}", x)
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class BatchNorm(Module):
    """Batch normalization over every axis but the last (features, or NHWC channels).

    Training mode normalizes with the batch's mean and biased variance and
    updates the running statistics (PyTorch's rule, ``momentum`` the weight of
    the new batch, the running variance from the unbiased batch variance)::

        running_mean = (1 - momentum) * running_mean + momentum * mean
        running_var  = (1 - momentum) * running_var  + momentum * var * n / (n - 1)

    Eval mode normalizes with the running statistics. The running statistics
    are non-trainable variables: saved with the module, updated in program
    order inside traced training steps. ``data_format="channels_first"`` takes
    the features on axis 1 (NCHW; see ``BatchNorm1d/2d/3d``, PyTorch's names).
    """

    _torch_layout = {"num_batches_tracked": None}    # PyTorch counts batches; no variable here

    def __init__(self, num_features, momentum=0.1, eps=1e-5, affine=True, dtype=None,
                 name="batch_norm", data_format="channels_last"):
        super().__init__()
        self.data_format = check_format(type(self).__name__, data_format)
        dtype = default_dtype.model_float(dtype)   # float32 unless set
        self.num_features = _positive_int("BatchNorm", "num_features", num_features)
        if not 0.0 <= momentum <= 1.0:
            raise InvalidArgumentError(f"BatchNorm: momentum must be in [0, 1], got {momentum}")
        self.momentum = float(momentum)
        self.eps = float(eps)
        n = (num_features,)
        self.weight: Variable | None
        self.bias: Variable | None
        if affine:
            self.weight = Variable(initializers.ones(n, dtype), name=f"{name}/weight")
            self.bias = Variable(initializers.zeros(n, dtype), name=f"{name}/bias")
        else:
            self.weight = self.bias = None
        self.running_mean = Variable(initializers.zeros(n, dtype), name=f"{name}/running_mean",
                                     trainable=False)
        self.running_var = Variable(initializers.ones(n, dtype), name=f"{name}/running_var",
                                    trainable=False)

    def forward(self, x):
        axis = channel_axis(self.data_format)
        if x.ndim < 2 or x.shape[axis] != self.num_features:
            where = "the last axis" if axis == -1 else "axis 1"
            raise input_error(ShapeError, f"{type(self).__name__}: expected inputs of rank >= 2 "
                                          f"with {self.num_features} features in {where}", x)
        # Training: the batch statistics, and the running ones updated (en.batch_norm).
        y = F.batch_norm(to_channels_last(x, self.data_format), self.running_mean,
                         self.running_var, self.weight, self.bias, training=self.training,
                         momentum=self.momentum, eps=self.eps)
        return from_channels_last(y, self.data_format)

    def extra_repr(self):
        return f"{self.num_features}, momentum={self.momentum}, eps={self.eps}"


class _TorchBatchNorm(BatchNorm):
    """PyTorch's argument order (eps before momentum) and channels-first inputs."""

    _ranks: tuple[int, ...] = (2, 3)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, *, data_format="channels_first", dtype=None,
                 name="batch_norm"):
        if not track_running_stats:
            raise InvalidArgumentError(f"{type(self).__name__}: track_running_stats=False is "
                                       f"not supported (use en.nn.functional.batch_norm with "
                                       f"training=True)")
        super().__init__(num_features, momentum, eps, affine, dtype, name, data_format)

    def forward(self, x):
        if x.ndim not in self._ranks:
            raise input_error(ShapeError, f"{type(self).__name__}: expected inputs of rank "
                                          f"{' or '.join(map(str, self._ranks))}", x)
        return super().forward(x)


class BatchNorm1d(_TorchBatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs (PyTorch's ``BatchNorm1d``).

    Example:
        >>> import engine as en
        >>> en.nn.BatchNorm1d(4)(en.ones((8, 4, 10), dtype="float32")).shape
        (8, 4, 10)
    """
    _ranks = (2, 3)


class BatchNorm2d(_TorchBatchNorm):
    """Batch normalization of (N, C, H, W) inputs (PyTorch's ``BatchNorm2d``)."""
    _ranks = (4,)


class BatchNorm3d(_TorchBatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs (PyTorch's ``BatchNorm3d``)."""
    _ranks = (5,)
