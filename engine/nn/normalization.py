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
    order inside traced training steps.
    """

    _torch_layout = {"num_batches_tracked": None}    # PyTorch counts batches; no variable here

    def __init__(self, num_features, momentum=0.1, eps=1e-5, affine=True, dtype=None,
                 name="batch_norm"):
        super().__init__()
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
        if x.ndim < 2 or x.shape[-1] != self.num_features:
            raise input_error(ShapeError, f"BatchNorm: expected inputs of rank >= 2 with "
                                          f"{self.num_features} features in the last axis", x)
        # Training: the batch statistics, and the running ones updated (en.batch_norm).
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training, momentum=self.momentum, eps=self.eps)

    def extra_repr(self):
        return f"{self.num_features}, momentum={self.momentum}, eps={self.eps}"
