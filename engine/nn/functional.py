"""Stateless forms of the layers (PyTorch's ``torch.nn.functional``), built from engine ops.

Everything here is a composite of registry ops, so it gets gradients (of any
order) and graph tracing from the ops it is made of. ``softmax``,
``log_softmax``, ``logsumexp``, ``mse`` and ``cross_entropy`` are the same
functions as ``en.softmax`` and friends. Images are NHWC, as in ``en.conv2d``.

Example:
    >>> import engine as en
    >>> F = en.nn.functional
    >>> F.relu(en.tensor([-1.0, 2.0])).numpy()
    array([0., 2.])
    >>> F.avg_pool2d(en.ones((1, 4, 4, 1)), 2).shape
    (1, 2, 2, 1)
"""
import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..ops.conv import conv2d, conv_transpose2d  # noqa: F401  (re-exported)
from ..ops.pooling import avg_pool2d, max_pool2d  # noqa: F401
from ..ops.nn import cross_entropy, log_softmax, logsumexp, mse, softmax  # noqa: F401
from .conv_functional import conv1d, conv3d, conv_transpose1d, conv_transpose3d  # noqa: F401
from .norm_functional import group_norm, instance_norm, rms_norm  # noqa: F401
from .pool_functional import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: F401
                              adaptive_max_pool1d, adaptive_max_pool2d)
from .loss_functions import huber_loss, kl_div, l1_loss, mse_loss, smooth_l1_loss  # noqa: F401
from ..random import default_generator
from ..tensor import Tensor, tensor
from ..variable import Variable
from .module import input_error


def _as_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else tensor(x)


# ---- activations ------------------------------------------------------------------------
def relu(x):
    """``max(x, 0)``."""
    return ops.relu(x)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return ops.sigmoid(x)


def tanh(x):
    """Hyperbolic tangent."""
    return ops.tanh(x)


def leaky_relu(x, negative_slope=0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    return ops.leaky_relu(x, negative_slope)


def gelu(x, approximate="none"):
    """Gaussian error linear unit (see :func:`engine.gelu`): the exact erf form by default,
    as PyTorch's ``gelu``; ``approximate="tanh"`` is the tanh form, within 5e-4 of it.

    Example:
        >>> import engine as en
        >>> round(float(en.nn.functional.gelu(en.tensor(1.0))), 6)
        0.841345
    """
    return ops.gelu(x, approximate)


def silu(x):
    """``x * sigmoid(x)`` (swish)."""
    return ops.silu(x)


def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    return ops.elu(x, alpha)


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta`` (``x`` above ``threshold / beta``)."""
    return ops.softplus(x, beta, threshold)


# ---- dense and convolution --------------------------------------------------------------
def linear(x, weight, bias=None):
    """``x @ weight + bias`` with ``weight`` shaped ``(in, out)`` (any leading dims of ``x``)."""
    y = ops.matmul(x, weight)
    return y if bias is None else ops.add(y, bias)


def flatten(x, start_axis=1):
    """``x`` with the axes from ``start_axis`` on merged into one."""
    x = _as_tensor(x)
    tail = x.shape[start_axis:]
    if None in tail:
        raise input_error(ShapeError, "flatten: the axes to merge must be known", x)
    head = x.shape[:start_axis]
    if None in head:
        if head.count(None) > 1:
            raise input_error(ShapeError, "flatten: at most one unknown leading axis", x)
        head = tuple(-1 if d is None else d for d in head)
    return ops.reshape(x, tuple(head) + (int(np.prod(tail)),))


# ---- regularization and normalization -------------------------------------------------
def dropout(x, rate=0.5, generator=None, training=True):
    """Zero each entry with probability ``rate`` and scale the rest by ``1 / (1 - rate)``.

    The mask is drawn from ``generator`` (an ``en.random.Generator``; None: the
    default stream, reproducible after ``en.random.set_seed``), whose state is a
    variable: the same seed drops the same entries in eager mode and in graphs,
    and each call draws the next mask, also in a graph traced with an unknown
    batch size. With ``training=False`` (or ``rate == 0``) returns
    ``x`` unchanged.

    Example:
        >>> import engine as en
        >>> y = en.nn.functional.dropout(en.ones((2, 4)), 0.5, en.random.Generator(0))
        >>> sorted(set(y.numpy().ravel().tolist())) in ([0.0, 2.0], [0.0], [2.0])
        True
    """
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate < 1.0:
        raise InvalidArgumentError(f"dropout: rate must be in [0, 1), got {rate!r}")
    x = _as_tensor(x)
    if x.dtype not in dtypes.FLOATS:
        raise input_error(DTypeError, "dropout: expected a floating-point input", x)
    if not training or rate == 0.0:
        return x
    generator = default_generator() if generator is None else generator
    # uniform_like: the mask takes x's shape when the graph runs (an unknown batch size)
    keep = ops.greater_equal(generator.uniform_like(x, dtype=x.dtype), rate)
    return ops.mul(ops.where(keep, x, ops.zeros_like(x)), 1.0 / (1.0 - rate))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing
    ``normalized_shape`` (see :func:`engine.layer_norm`)."""
    return ops.layer_norm(x, normalized_shape, weight, bias, eps)


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalization over every axis but the last (see :func:`engine.batch_norm`)."""
    return ops.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm_apply(x, mean, var, weight, bias, eps):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` with given statistics (broadcast)."""
    return ops.normalization.normalize(x, mean, var, weight, bias, eps)


def embedding(ids, weight, padding_idx=None):
    """The rows of ``weight`` picked by the integer ``ids`` (any shape): ``weight[ids]``;
    the row ``padding_idx`` gets no gradient (see :func:`engine.embedding`)."""
    ids = _as_tensor(ids)
    if ids.dtype not in dtypes.INTS:
        raise input_error(DTypeError, "embedding: ids must be integers", ids)
    return ops.embedding(ids, weight, padding_idx)


interpolate = ops.interpolate
one_hot = ops.one_hot
nll_loss = ops.nll_loss
binary_cross_entropy = ops.binary_cross_entropy
binary_cross_entropy_with_logits = ops.binary_cross_entropy_with_logits


__all__ = ["softmax", "log_softmax", "logsumexp", "mse", "cross_entropy", "relu", "sigmoid",
           "tanh", "leaky_relu", "gelu", "silu", "elu", "softplus", "linear", "conv2d",
           "conv_transpose2d", "conv1d", "conv3d", "conv_transpose1d", "conv_transpose3d",
           "group_norm", "instance_norm", "rms_norm", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "huber_loss",
           "kl_div", "l1_loss", "mse_loss", "smooth_l1_loss", "max_pool2d", "avg_pool2d",
           "flatten", "dropout", "layer_norm",
           "batch_norm", "batch_norm_apply", "embedding", "interpolate", "one_hot", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits"]

from .sdpa import scaled_dot_product_attention  # noqa: E402,F401  (re-exported)

__all__ += ["scaled_dot_product_attention"]
