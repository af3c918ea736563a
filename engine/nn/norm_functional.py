"""Group, instance and RMS normalization, stateless and channels-last (PyTorch's definitions).

Composites of registry ops (gradients of any order, tracing). Inputs are
``(N, *spatial, C)``; PyTorch's channels-first data goes through the layers
(``en.nn.GroupNorm`` ...), which move the channel axis.

Example:
    >>> import engine as en
    >>> F = en.nn.functional
    >>> y = F.group_norm(en.random.normal((2, 5, 4), seed=0), 2)
    >>> bool(abs(en.mean(y[0, :, :2]).numpy()) < 1e-6)
    True
"""
import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, ShapeError, describe_args
from ..ops._args import at_user_line
from ..tensor import Tensor, tensor
from ..variable import Variable


def _as_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else tensor(x)


def _float_input(name, x, min_rank):
    x = _as_tensor(x)
    if x.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected a floating-point input, got {describe_args([x])}"
                         f"{at_user_line()}")
    if x.ndim < min_rank:
        raise ShapeError(f"{name}: expected an input of rank >= {min_rank} (batch, ..., "
                         f"channels), got {describe_args([x])}{at_user_line()}")
    return x


def _check_affine(name, shape, *params):
    for label, p in zip(("weight", "bias"), params):
        if p is not None and tuple(p.shape) != tuple(shape):
            raise ShapeError(f"{name}: {label} must have shape {tuple(shape)}, got "
                             f"{describe_args([p])}{at_user_line()}")


def _affine(y, weight, bias):
    if weight is not None:
        y = ops.mul(y, weight)
    return y if bias is None else ops.add(y, bias)


def _standardize(x, axes, eps):
    mean = ops.mean(x, axis=axes, keepdims=True)
    centered = ops.sub(x, mean)
    var = ops.mean(ops.square(centered), axis=axes, keepdims=True)
    return ops.mul(centered, ops.reciprocal(ops.sqrt(ops.add(var, eps))))


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each example over groups of ``C // num_groups`` channels and every
    spatial position (Wu and He, 2018), then scale by ``weight`` and shift by ``bias``
    (one per channel). ``x`` is ``(N, *spatial, C)``; biased variance.

    Example:
        >>> import engine as en
        >>> x = en.tensor([[[1.0, 3.0, 10.0, 30.0]]])            # N=1, L=1, C=4
        >>> en.nn.functional.group_norm(x, 2, eps=0.0).numpy()
        array([[[-1.,  1., -1.,  1.]]])
    """
    name = "group_norm"
    x = _float_input(name, x, 2)
    c = x.shape[-1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) or \
            num_groups < 1 or c is None or c % num_groups:
        raise ShapeError(f"{name}: the {c} channels (last axis) must split into num_groups="
                         f"{num_groups!r} equal groups, got {describe_args([x])}"
                         f"{at_user_line()}")
    if None in x.shape[1:]:
        raise ShapeError(f"{name}: only the batch size may be unknown, got "
                         f"{describe_args([x])}{at_user_line()}")
    _check_affine(name, (c,), weight, bias)
    inner = tuple(x.shape[1:-1])
    grouped = ops.reshape(x, (-1,) + inner + (int(num_groups), c // int(num_groups)))
    axes = tuple(range(1, len(inner) + 1)) + (len(inner) + 2,)
    y = ops.reshape(_standardize(grouped, axes, eps), (-1,) + inner + (c,))
    return _affine(y, weight, bias)


def instance_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalize each channel of each example over its spatial positions (Ulyanov et al.),
    then scale and shift per channel. ``x`` is ``(N, *spatial, C)`` with at least one
    spatial axis; biased variance (PyTorch's ``instance_norm`` without running stats).

    Example:
        >>> import engine as en
        >>> x = en.tensor([[[1.0, 5.0], [3.0, 5.0]]])             # N=1, L=2, C=2
        >>> en.nn.functional.instance_norm(x, eps=0.0).numpy()[0, :, 0]
        array([-1.,  1.])
    """
    name = "instance_norm"
    x = _float_input(name, x, 3)
    _check_affine(name, (x.shape[-1],), weight, bias)
    y = _standardize(x, tuple(range(1, x.ndim - 1)), eps)
    return _affine(y, weight, bias)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape``
    (Zhang and Sennrich, 2019; PyTorch's ``rms_norm``). ``eps=None`` takes the
    machine epsilon of ``x``'s dtype, as PyTorch does.

    Example:
        >>> import engine as en
        >>> en.nn.functional.rms_norm(en.tensor([[3.0, 4.0]]), 2, eps=0.0).numpy().round(4)
        array([[0.8485, 1.1314]])
    """
    name = "rms_norm"
    x = _float_input(name, x, 1)
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != shape:
        raise ShapeError(f"{name}: normalized_shape {shape} must be the trailing shape of the "
                         f"input, got {describe_args([x])}{at_user_line()}")
    _check_affine(name, shape, weight)
    eps = float(np.finfo(x.dtype).eps) if eps is None else float(eps)
    axes = tuple(range(x.ndim - k, x.ndim))
    ms = ops.mean(ops.square(x), axis=axes, keepdims=True)
    return _affine(ops.mul(x, ops.reciprocal(ops.sqrt(ops.add(ms, eps)))), weight, None)


__all__ = ["group_norm", "instance_norm", "rms_norm"]
