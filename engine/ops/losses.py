"""Classification losses built from registered ops (PyTorch's definitions):
``nll_loss``, ``binary_cross_entropy`` and ``binary_cross_entropy_with_logits``,
and the label helper ``one_hot``.

Composites: they differentiate (any order) and trace through the ops they are
made of. ``reduction`` is ``"mean"`` (the default), ``"sum"`` or ``"none"``;
a weighted ``nll_loss`` mean divides by the sum of the weights of the
counted examples, as PyTorch does. Class axes default to the last axis, the
engine's layout (``en.cross_entropy`` too); pass ``axis=1`` for NCHW data.

Example:
    >>> import engine as en
    >>> logp = en.log_softmax(en.tensor([[2.0, 0.0], [0.0, 2.0]]))
    >>> round(float(en.nll_loss(logp, en.tensor([0, 1]))), 4)
    0.1269
"""
import numpy as np

from .. import dtypes
from ..backend import use as use_backend
from ..errors import DomainError, DTypeError, ShapeError, TracingError, describe_args
from ..lifting import TensorLike
from ..modes import current_mode
from ._args import at_user_line
from . import activations, compare, creation, elementwise as ew, indexing, reduce, shape_ops

_REDUCTIONS = ("mean", "sum", "none")


def _tensor(x):
    """``x`` as an engine value: a tensor or variable as it is, anything else lifted by the
    current mode. (Its own copy, not ``nn._tensor``: ``nn.cross_entropy`` builds on this
    module.)"""
    return x if isinstance(x, TensorLike) else current_mode().lift([x])[0]


def _reduction(name, reduction):
    if reduction not in _REDUCTIONS:
        raise DomainError(f"{name}: reduction must be 'mean', 'sum' or 'none', got "
                          f"{reduction!r}{at_user_line()}")
    return reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return reduce.sum(loss) if reduction == "sum" else reduce.mean(loss)


def _concrete(x):
    """``x``'s values as a numpy array, or None while tracing."""
    try:
        return np.asarray(x)
    except TracingError:
        return None


def _shape_matches(got, expected):
    return len(got) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(got, expected))


def _class_hits(labels, n_classes, axis, ndim):
    """A bool tensor, True where the class index along ``axis`` equals ``labels``."""
    with use_backend(getattr(labels, "backend", "numpy")):   # class ids live where labels do
        classes = creation.arange(n_classes)
    classes = shape_ops.reshape(classes, (n_classes,) + (1,) * (ndim - 1 - axis))
    return compare.equal(shape_ops.expand_dims(labels, axis), classes)


def _check_ids(name, ids, n_classes, ignore_index=None, what="class ids"):
    value = _concrete(ids)
    if value is None or value.size == 0:
        return      # traced ids cannot be checked; an out-of-range id then picks nothing
    if ignore_index is not None:
        value = value[value != ignore_index]
        if value.size == 0:
            return
    lo, hi = int(value.min()), int(value.max())
    if lo < 0 or hi >= n_classes:
        raise ShapeError(f"{name}: {what} must be in [0, {n_classes}), got values from {lo} "
                         f"to {hi}{at_user_line()}")


# ---- one_hot ----------------------------------------------------------------------------------
def one_hot(labels, num_classes=-1, dtype="int64"):
    """``labels`` (integers, any shape) as one-hot vectors along a new last axis.

    ``num_classes=-1`` takes ``max(labels) + 1`` (eager only: a traced
    function must say how many classes there are). ``dtype`` is the result's
    (PyTorch gives int64).

    Example:
        >>> import engine as en
        >>> en.one_hot(en.tensor([0, 2]), 3).numpy()
        array([[1, 0, 0],
               [0, 0, 1]])
    """
    labels = _tensor(labels)
    if labels.dtype not in dtypes.INTS:
        raise DTypeError(f"one_hot: labels must be integers, got {describe_args([labels])}"
                         f"{at_user_line()}")
    if num_classes == -1:
        value = _concrete(labels)
        if value is None:
            raise TracingError(f"one_hot: num_classes must be given while tracing (the labels' "
                               f"values are not known){at_user_line()}")
        num_classes = int(value.max()) + 1 if value.size else 0
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes < 0:
        raise DomainError(f"one_hot: num_classes must be a non-negative int or -1, got "
                          f"{num_classes!r}{at_user_line()}")
    _check_ids("one_hot", labels, int(num_classes))
    hits = _class_hits(labels, int(num_classes), labels.ndim, labels.ndim + 1)
    return creation.cast(hits, dtype)


# ---- nll_loss ---------------------------------------------------------------------------------
def nll_loss(log_probs, target, weight=None, ignore_index=None, reduction="mean", axis=-1):
    """Negative log-likelihood of integer ``target`` classes under ``log_probs``.

    ``log_probs`` has a class axis (``axis``, default last); ``target`` has its
    shape without that axis. ``weight`` (one per class) scales each example's
    loss; examples whose target is ``ignore_index`` count for nothing (nor in
    the mean's denominator). ``ignore_index`` is None by default: every target
    counts, and an unweighted mean divides by the static number of targets, so
    chunked (Dask) data needs one pass; PyTorch's ``NLLLoss`` module passes -100.

    Example:
        >>> import engine as en
        >>> logp = en.log(en.tensor([[0.5, 0.5], [0.9, 0.1]]))
        >>> round(float(en.nll_loss(logp, en.tensor([1, 0]), reduction="sum")), 4)
        0.7985
    """
    reduction = _reduction("nll_loss", reduction)
    logp, target = _tensor(log_probs), _tensor(target)
    if logp.dtype not in dtypes.FLOATS:
        raise DTypeError(f"nll_loss: log_probs must be floating-point, got "
                         f"{describe_args([logp, target])}{at_user_line()}")
    if target.dtype not in dtypes.INTS:
        raise DTypeError(f"nll_loss: target must hold integer class ids, got "
                         f"{describe_args([logp, target])}{at_user_line()}")
    if logp.ndim == 0:
        raise ShapeError(f"nll_loss: log_probs must have a class axis, got a scalar"
                         f"{at_user_line()}")
    ax = axis % logp.ndim if -logp.ndim <= axis < logp.ndim else None
    if ax is None:
        raise ShapeError(f"nll_loss: axis {axis} is out of range for log_probs of rank "
                         f"{logp.ndim}{at_user_line()}")
    expected = logp.shape[:ax] + logp.shape[ax + 1:]
    n_classes = logp.shape[ax]
    if not _shape_matches(target.shape, expected) or n_classes is None:
        raise ShapeError(f"nll_loss: target must have shape {tuple(expected)} (log_probs "
                         f"without the class axis {ax}, whose size must be known), got "
                         f"{describe_args([logp, target])}{at_user_line()}")
    if weight is not None:
        weight = _tensor(weight)
        if weight.dtype not in dtypes.FLOATS or tuple(weight.shape) != (n_classes,):
            raise ShapeError(f"nll_loss: weight must be a float vector of {n_classes} class "
                             f"weights, got {describe_args([weight])}{at_user_line()}")
    _check_ids("nll_loss", target, n_classes, ignore_index)
    if ignore_index is None and weight is None:
        # Every example counts alike: a plain mean, whose gradient needs no count of
        # the data (chunked data runs in one pass).
        hits = _class_hits(target, n_classes, ax, logp.ndim)
        loss = ew.neg(reduce.sum(compare.where(hits, logp, 0.0), axis=ax))
        return reduce.mean(loss) if reduction == "mean" else _reduce(loss, reduction)
    valid = (creation.ones_like(target, dtype=dtypes.bool_) if ignore_index is None
             else compare.not_equal(target, ignore_index))
    safe = compare.where(valid, target, creation.zeros_like(target))
    # Picked, not multiplied by a one-hot: a masked class's -inf times 0 is nan.
    hits = _class_hits(safe, n_classes, ax, logp.ndim)
    picked = reduce.sum(compare.where(hits, logp, 0.0), axis=ax)
    w = creation.cast(valid, logp.dtype)
    if weight is not None:
        w = ew.mul(indexing.getitem(creation.cast(weight, logp.dtype), safe), w)
    loss = ew.neg(ew.mul(picked, w))
    if reduction == "mean":
        return ew.div(reduce.sum(loss), reduce.sum(w))
    return _reduce(loss, reduction)


# ---- binary cross-entropy -----------------------------------------------------------------------
def _binary_inputs(name, x, target, weight):
    x, target = _tensor(x), _tensor(target)
    if x.dtype not in dtypes.FLOATS or target.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected floating-point inputs and targets, got "
                         f"{describe_args([x, target])}{at_user_line()}")
    if not _shape_matches(target.shape, x.shape):
        raise ShapeError(f"{name}: target must have the input's shape, got "
                         f"{describe_args([x, target])}{at_user_line()}")
    if weight is not None:
        weight = creation.cast(_tensor(weight), x.dtype)
    return x, target, weight


def _log_where_positive(q, floor):
    """``log(q)``, and ``floor`` where ``q`` is 0: the log never sees a 0, so its
    gradient there is 0, not 0 * inf = nan (the double ``where``)."""
    positive = compare.greater(q, 0.0)
    return compare.where(positive, ew.log(compare.where(positive, q, 1.0)), floor)


def binary_cross_entropy(probs, target, weight=None, reduction="mean"):
    """``-(target log(p) + (1 - target) log(1 - p))``, each log clamped at -100 as in
    PyTorch (so p = 0 or 1 gives a finite loss); ``weight`` broadcasts against it.
    Where a log is clamped its gradient is 0 (PyTorch's is ``(p - target) / 1e-12``
    there); it is never nan.

    Example:
        >>> import engine as en
        >>> round(float(en.binary_cross_entropy(en.tensor([0.8]), en.tensor([1.0]))), 4)
        0.2231
    """
    reduction = _reduction("binary_cross_entropy", reduction)
    p, y, weight = _binary_inputs("binary_cross_entropy", probs, target, weight)
    floor = -100.0
    log_p = ew.maximum(_log_where_positive(p, floor), floor)
    log_q = ew.maximum(_log_where_positive(ew.sub(1.0, p), floor), floor)
    loss = ew.neg(ew.add(ew.mul(y, log_p), ew.mul(ew.sub(1.0, y), log_q)))
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(logits, target, weight=None, pos_weight=None,
                                     reduction="mean"):
    """``binary_cross_entropy(sigmoid(logits), target)``, computed stably from the logits:
    ``(1 - y) z + (1 + (pos_weight - 1) y) softplus(-z)``. ``pos_weight`` (broadcast
    against the last axis, one per class) weighs the positive examples.

    Example:
        >>> import engine as en
        >>> round(float(en.binary_cross_entropy_with_logits(en.tensor([0.0]), en.tensor([1.0]))), 4)
        0.6931
    """
    name = "binary_cross_entropy_with_logits"
    reduction = _reduction(name, reduction)
    z, y, weight = _binary_inputs(name, logits, target, weight)
    # softplus(-z) = log(1 + exp(-z)), exact for every z (no linear cut-off).
    soft = activations.softplus(ew.neg(z), 1.0, float("inf"))
    scale = soft if pos_weight is None else ew.mul(
        ew.add(ew.mul(ew.sub(creation.cast(_tensor(pos_weight), z.dtype), 1.0), y), 1.0), soft)
    loss = ew.add(ew.mul(ew.sub(1.0, y), z), scale)
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce(loss, reduction)


__all__ = ["one_hot", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]
