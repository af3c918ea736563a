"""Normalization and lookup built from registered ops: ``layer_norm``, ``batch_norm``
and ``embedding`` (PyTorch's definitions; features on the last axis, the
engine's NHWC layout).

Composites: gradients of any order and tracing come from the ops they are
made of.

Example:
    >>> import engine as en
    >>> y = en.layer_norm(en.tensor([[1.0, 3.0]]), 2)
    >>> [round(float(v), 4) for v in y[0]]
    [-1.0, 1.0]
"""
import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, ShapeError, describe_args
from ._args import at_user_line
from . import compare, elementwise as ew, indexing, misc, reduce, shape_ops
from .losses import _check_ids
from .nn import _tensor


def _float(name, x):
    x = _tensor(x)
    if x.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected a floating-point input, got {describe_args([x])}"
                         f"{at_user_line()}")
    return x


def _affine(y, weight, bias):
    if weight is not None:
        y = ew.mul(y, weight)
    if bias is not None:
        y = ew.add(y, bias)
    return y


def _check_param(name, what, value, shape):
    if value is not None and tuple(value.shape) != tuple(shape):
        raise ShapeError(f"{name}: {what} must have shape {tuple(shape)}, got "
                         f"{describe_args([value])}{at_user_line()}")


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last
    ``len(normalized_shape)`` axes (biased variance; Ba et al. 2016).

    ``normalized_shape`` is an int or a tuple, the trailing shape of ``x``;
    ``weight`` and ``bias`` (optional) have that shape.

    Example:
        >>> import engine as en
        >>> float(en.layer_norm(en.tensor([[2.0, 2.0]]), (2,))[0, 0])
        0.0
    """
    x = _float("layer_norm", x)
    shape = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or k > x.ndim or not all(a is None or a == b
                                       for a, b in zip(x.shape[x.ndim - k:], shape)):
        raise ShapeError(f"layer_norm: normalized_shape {shape} must be the trailing shape of "
                         f"the input, got {describe_args([x])}{at_user_line()}")
    _check_param("layer_norm", "weight", weight, shape)
    _check_param("layer_norm", "bias", bias, shape)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = reduce.mean(x, axis=axes, keepdims=True)
    centered = ew.sub(x, mean)
    var = reduce.mean(ew.square(centered), axis=axes, keepdims=True)
    return _affine(ew.mul(centered, ew.reciprocal(ew.sqrt(ew.add(var, eps)))), weight, bias)


def batch_norm(x, running_mean=None, running_var=None, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalization over every axis but the last (the features or channels).

    ``training=True`` normalizes with the batch's mean and biased variance,
    and, when ``running_mean`` / ``running_var`` are variables, updates them
    (PyTorch's rule: ``running = (1 - momentum) running + momentum batch``,
    the variance unbiased); the statistics feed no gradient. ``training=False``
    normalizes with the running statistics.

    Example:
        >>> import engine as en
        >>> x = en.tensor([[0.0, 1.0], [2.0, 3.0]])
        >>> en.batch_norm(x, training=True).numpy().round(4)
        array([[-1., -1.],
               [ 1.,  1.]])
    """
    x = _float("batch_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of rank >= 2 (features on the last "
                         f"axis), got {describe_args([x])}{at_user_line()}")
    if not 0.0 <= momentum <= 1.0:
        raise DomainError(f"batch_norm: momentum must be in [0, 1], got {momentum}"
                          f"{at_user_line()}")
    features = (x.shape[-1],)
    for what, value in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
        _check_param("batch_norm", what, value, features)
    if not training:
        if running_mean is None or running_var is None:
            raise ShapeError(f"batch_norm: inference (training=False) needs running_mean and "
                             f"running_var{at_user_line()}")
        return normalize(x, running_mean, running_var, weight, bias, eps)
    axes = tuple(range(x.ndim - 1))
    known = [x.shape[a] for a in axes]
    if None not in known and int(np.prod(known)) < 2:
        raise ShapeError(f"batch_norm: training needs more than one value per feature, got "
                         f"{describe_args([x])}{at_user_line()}")
    mean = reduce.mean(x, axis=axes)
    var = reduce.mean(ew.square(ew.sub(x, mean)), axis=axes)
    if running_mean is not None and hasattr(running_mean, "assign"):
        running_mean.assign(ew.add(ew.mul(running_mean, 1.0 - momentum),
                                   ew.mul(misc.stop_gradient(mean), momentum)))
    if running_var is not None and hasattr(running_var, "assign"):
        n = shape_ops.count(x, axes=axes, dtype=x.dtype)
        unbiased = ew.mul(misc.stop_gradient(var), ew.div(n, ew.sub(n, 1.0)))
        running_var.assign(ew.add(ew.mul(running_var, 1.0 - momentum),
                                  ew.mul(unbiased, momentum)))
    return normalize(x, mean, var, weight, bias, eps)


def normalize(x, mean, var, weight, bias, eps):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` with given statistics (broadcast)."""
    return _affine(ew.mul(ew.sub(x, mean), ew.reciprocal(ew.sqrt(ew.add(var, eps)))),
                   weight, bias)


def embedding(ids, weight, padding_idx=None):
    """The rows of ``weight`` (num_embeddings, dim) picked by integer ``ids`` (any shape).

    The gradient adds each looked-up row's cotangent into that row; the row
    ``padding_idx`` (if given) gets none, as in PyTorch. An id outside
    ``[0, num_embeddings)``, a negative one too, is an error (checked where the ids
    are known: eagerly, not inside a traced function).

    Example:
        >>> import engine as en
        >>> en.embedding(en.tensor([[2, 0]]), en.reshape(en.arange(6.0), (3, 2))).numpy()
        array([[[4., 5.],
                [0., 1.]]])
    """
    ids, weight = _tensor(ids), _tensor(weight)
    if ids.dtype not in dtypes.INTS:
        raise DTypeError(f"embedding: ids must be integers, got {describe_args([ids, weight])}"
                         f"{at_user_line()}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be a (num_embeddings, dim) matrix, got "
                         f"{describe_args([ids, weight])}{at_user_line()}")
    if weight.shape[0] is not None:   # ids are rows, never counted from the end (PyTorch)
        _check_ids("embedding", ids, weight.shape[0], what="ids")
    rows = indexing.getitem(weight, ids)
    if padding_idx is None:
        return rows
    n = weight.shape[0]
    if n is not None and not -n <= padding_idx < n:
        raise ShapeError(f"embedding: padding_idx {padding_idx} is out of range for {n} "
                         f"embeddings{at_user_line()}")
    pad = padding_idx % n if n is not None else padding_idx
    frozen = indexing.getitem(misc.stop_gradient(weight), ids)
    is_pad = shape_ops.expand_dims(compare.equal(ids, pad), -1)
    return compare.where(is_pad, frozen, rows)


__all__ = ["layer_norm", "batch_norm", "embedding"]
