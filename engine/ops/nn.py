"""Neural-network helpers built from existing ops (no registry entries of their own):
``softmax``, ``log_softmax``, ``logsumexp``, ``mse`` and ``cross_entropy``.

Being composites, they get gradients (of any order) and graph tracing from
the ops they are made of. Each subtracts a ``stop_gradient`` of the maximum
before exponentiating, so large inputs never overflow.
"""
import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, ShapeError
from ..lifting import TensorLike
from ..modes import current_mode
from ..shapes import normalize_axes, normalize_axis
from . import compare, creation, elementwise, misc, reduce, shape_ops
from .losses import _check_ids, _reduce, _reduction, nll_loss


def _tensor(x):
    """``x`` as an engine value: a tensor or variable as it is, anything else (an
    array, a number) lifted to a tensor by the current mode."""
    return x if isinstance(x, TensorLike) else current_mode().lift([x])[0]


def _float_input(name, x):
    x = _tensor(x)
    if x.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected a floating-point input, got dtype {x.dtype}")
    return x


def _shifted(x, axis):
    """``x - max(x)`` along ``axis`` (kept dims), with the max a constant for autodiff.

    A max of +-inf (a row of -inf, or an inf) is replaced by 0 so the
    subtraction never makes NaN where the true result is defined.
    """
    m = misc.stop_gradient(reduce.max(x, axis=axis, keepdims=True))
    m = compare.where(compare.equal(elementwise.abs(m), np.inf), creation.zeros_like(m), m)
    return elementwise.sub(x, m), m


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably.

    Example:
        >>> import engine as en
        >>> en.softmax(en.tensor([0.0, 0.0])).numpy()
        array([0.5, 0.5])
    """
    x = _float_input("softmax", x)
    z, _ = _shifted(x, axis)
    e = elementwise.exp(z)
    return elementwise.div(e, reduce.sum(e, axis=axis, keepdims=True))


def log_softmax(x, axis=-1):
    """``log(softmax(x))`` along ``axis``, computed stably.

    Example:
        >>> import engine as en
        >>> round(float(en.log_softmax(en.tensor([0.0, 0.0]))[0]), 4)
        -0.6931
    """
    x = _float_input("log_softmax", x)
    z, _ = _shifted(x, axis)
    total = reduce.sum(elementwise.exp(z), axis=axis, keepdims=True)
    return elementwise.sub(z, elementwise.log(total))


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis`` (all axes when None), computed stably.

    Example:
        >>> import engine as en
        >>> round(float(en.logsumexp(en.tensor([1000.0, 1000.0]))) - 1000.0, 6)
        0.693147
    """
    x = _float_input("logsumexp", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    z, m = _shifted(x, axis)
    total = reduce.sum(elementwise.exp(z), axis=axis, keepdims=True)
    out = elementwise.add(elementwise.log(total), m)
    if keepdims:
        return out
    return shape_ops.squeeze(out, axis=normalize_axes(axis, x.ndim, "logsumexp"))


def mse(pred, target):
    """Mean squared error ``mean((pred - target) ** 2)``, a scalar.

    Example:
        >>> import engine as en
        >>> float(en.mse(en.tensor([1.0, 2.0]), en.tensor([1.0, 4.0])))
        2.0
    """
    return reduce.mean(elementwise.square(elementwise.sub(pred, target)))


def cross_entropy(logits, labels, axis=-1, weight=None, ignore_index=None, reduction="mean",
                  label_smoothing=0.0):
    """Softmax cross-entropy, averaged over the batch (every dim but ``axis``).

    ``labels`` are either integer class ids shaped like ``logits`` without
    ``axis``, or class probabilities (e.g. one-hot) shaped like ``logits``.
    PyTorch's options: ``weight`` (one per class) scales each class's terms;
    integer labels equal to ``ignore_index`` count for nothing; ``reduction``
    is "mean", "sum" or "none"; ``label_smoothing`` mixes the target with the
    uniform distribution. A weighted mean over integer labels divides by the
    summed weights of the counted labels, as PyTorch's does. ``ignore_index`` is
    None by default (every label counts, the mean's count is static, so chunked
    data needs one pass); ``en.nn.CrossEntropyLoss`` passes PyTorch's -100.

    Example:
        >>> import engine as en
        >>> logits = en.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> round(float(en.cross_entropy(logits, en.tensor([0, 1]))), 4)
        0.1269
        >>> round(float(en.cross_entropy(logits, en.tensor([0, -100]), reduction="sum",
        ...                              label_smoothing=0.2, ignore_index=-100)), 4)
        0.3269
    """
    reduction = _reduction("cross_entropy", reduction)
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) or \
            not 0.0 <= label_smoothing <= 1.0:
        raise DomainError(f"cross_entropy: label_smoothing must be a float in [0, 1], got "
                          f"{label_smoothing!r}")
    logits = _float_input("cross_entropy", logits)
    labels = _tensor(labels)
    nd = logits.ndim
    if nd == 0:
        raise ShapeError("cross_entropy: logits must have a class axis, got a scalar")
    ax = normalize_axis(axis, nd, "cross_entropy")
    n_classes = logits.shape[ax]
    if weight is not None:
        weight = _tensor(weight)
        if weight.dtype not in dtypes.FLOATS or tuple(weight.shape) != (n_classes,):
            raise ShapeError(f"cross_entropy: weight must be a float vector of {n_classes} "
                             f"class weights, got dtype {weight.dtype} and shape "
                             f"{tuple(weight.shape)}")
        weight = creation.cast(weight, logits.dtype)
    logp = log_softmax(logits, axis=ax)
    # Class weights along the class axis, for the sums over classes.
    w_axis = None if weight is None else shape_ops.reshape(weight,
                                                           (n_classes,) + (1,) * (nd - 1 - ax))
    if labels.dtype in dtypes.INTS:
        expected = logits.shape[:ax] + logits.shape[ax + 1:]
        _check_same_shape("integer labels", labels.shape, expected, logits.shape)
        if n_classes is None:
            raise ShapeError("cross_entropy: the number of classes must be known for integer "
                             "labels (the class axis of the logits is unknown)")
        _check_ids("cross_entropy", labels, n_classes, ignore_index, what="label ids")
        loss = nll_loss(logp, labels, weight, ignore_index, reduction, ax)
        if not label_smoothing:
            return loss
        # PyTorch's smoothing: (1 - e) * nll + e / C * (the weighted sum of -log p over classes).
        valid = (creation.ones_like(labels, dtype=dtypes.bool_) if ignore_index is None
                 else compare.not_equal(labels, ignore_index))
        spread = logp if w_axis is None else elementwise.mul(logp, w_axis)
        smooth = compare.where(valid, elementwise.neg(reduce.sum(spread, axis=ax)), 0.0)
        if reduction == "mean":
            counted = creation.cast(valid, logp.dtype)
            if weight is not None:
                safe = compare.where(valid, labels, creation.zeros_like(labels))
                counted = elementwise.mul(counted, weight[safe])
            smooth = elementwise.div(reduce.sum(smooth), reduce.sum(counted))
        else:
            smooth = _reduce(smooth, reduction)
        return elementwise.add(elementwise.mul(loss, 1.0 - label_smoothing),
                               elementwise.mul(smooth, label_smoothing / n_classes))
    if labels.dtype in dtypes.FLOATS:
        _check_same_shape("probability labels", labels.shape, logits.shape, logits.shape)
        if label_smoothing:
            labels = elementwise.add(elementwise.mul(labels, 1.0 - label_smoothing),
                                     label_smoothing / n_classes)
        picked = elementwise.mul(labels, logp)
        if w_axis is not None:
            picked = elementwise.mul(picked, w_axis)
        return _reduce(elementwise.neg(reduce.sum(picked, axis=ax)), reduction)
    raise DTypeError(f"cross_entropy: labels must be integer class ids or float "
                     f"probabilities, got dtype {labels.dtype}")


def _check_same_shape(what, got, expected, logits_shape):
    ok = len(got) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(got, expected))
    if not ok:
        raise ShapeError(f"cross_entropy: {what} must have shape {tuple(expected)} for logits "
                         f"of shape {tuple(logits_shape)}, got {tuple(got)}")


__all__ = ["softmax", "log_softmax", "logsumexp", "mse", "cross_entropy"]
