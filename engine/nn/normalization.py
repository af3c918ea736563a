"""Normalization layers: :class:`LayerNorm` and :class:`BatchNorm` (with running statistics).

Example:
    >>> import engine as en
    >>> bn = en.nn.BatchNorm(3)
    >>> y = bn(en.random.normal((8, 3), seed=0))         # training: batch statistics
    >>> bool(abs(en.mean(y, axis=0).numpy()).max() < 1e-6)
    True
    >>> _ = bn.eval()                                    # eval: the running statistics
"""
import numpy as np

from .. import ops
from ..errors import ShapeError
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

    def __init__(self, normalized_shape, eps=1e-5, affine=True, dtype="float32", name="layer_norm"):
        super().__init__()
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps = float(eps)
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
        return F.layer_norm(x, self.weight, self.bias, axes=tuple(range(-k, 0)), eps=self.eps)

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

    def __init__(self, num_features, momentum=0.1, eps=1e-5, affine=True, dtype="float32",
                 name="batch_norm"):
        super().__init__()
        self.num_features = _positive_int("BatchNorm", "num_features", num_features)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"BatchNorm: momentum must be in [0, 1], got {momentum}")
        self.momentum = float(momentum)
        self.eps = float(eps)
        n = (num_features,)
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
        if not self.training:
            return F.batch_norm_apply(x, self.running_mean, self.running_var, self.weight,
                                      self.bias, self.eps)
        axes = tuple(range(x.ndim - 1))
        known = [x.shape[a] for a in axes]
        if None not in known and int(np.prod(known)) < 2:
            raise input_error(ShapeError, "BatchNorm: training needs more than one value per "
                                          "feature", x)
        mean = ops.mean(x, axis=axes)
        var = ops.mean(ops.square(ops.sub(x, mean)), axis=axes)
        n = ops.count(x, axes=axes, dtype=x.dtype)
        m = self.momentum
        # The running statistics are not differentiated: they only feed later eval calls.
        mean_c, var_c = ops.stop_gradient(mean), ops.stop_gradient(var)
        self.running_mean.assign(ops.add(ops.mul(self.running_mean, 1.0 - m), ops.mul(mean_c, m)))
        unbiased = ops.mul(var_c, ops.div(n, ops.sub(n, 1.0)))
        self.running_var.assign(ops.add(ops.mul(self.running_var, 1.0 - m), ops.mul(unbiased, m)))
        return F.batch_norm_apply(x, mean, var, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, momentum={self.momentum}, eps={self.eps}"
