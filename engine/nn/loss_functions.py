"""Regression and divergence losses with PyTorch's definitions and ``reduction``:
``l1_loss``, ``mse_loss``, ``huber_loss``, ``smooth_l1_loss`` and ``kl_div``.

Composites of registry ops. ``reduction`` is "mean" (the default), "sum" or
"none" (``kl_div`` also takes "batchmean", the sum over the batch's size,
which is the true KL divergence). Input and target must have the same shape:
PyTorch only warns when they broadcast, which is nearly always a bug.

Example:
    >>> import engine as en
    >>> F = en.nn.functional
    >>> float(F.huber_loss(en.tensor([0.0, 3.0]), en.tensor([0.5, 0.0])))
    1.3125
"""
from .. import dtypes, ops
from ..errors import DomainError, DTypeError, ShapeError, describe_args
from ..ops._args import at_user_line
from ..tensor import Tensor, tensor
from ..variable import Variable

_REDUCTIONS = ("mean", "sum", "none")


def _as_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else tensor(x)


def _pair(name, x, target, reduction, allowed=_REDUCTIONS):
    """Checked ``(x, target, reduction)``: floats of one shape, a known reduction."""
    if reduction not in allowed:
        raise DomainError(f"{name}: reduction must be one of {', '.join(map(repr, allowed))}, "
                          f"got {reduction!r}{at_user_line()}")
    x, target = _as_tensor(x), _as_tensor(target)
    if x.dtype not in dtypes.FLOATS or target.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected floating-point inputs and targets, got "
                         f"{describe_args([x, target])}{at_user_line()}")
    same = x.ndim == target.ndim and all(a is None or b is None or a == b
                                         for a, b in zip(x.shape, target.shape))
    if not same:
        raise ShapeError(f"{name}: target must have the input's shape, got "
                         f"{describe_args([x, target])}{at_user_line()}")
    return x, target, reduction


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return ops.sum(loss) if reduction == "sum" else ops.mean(loss)


def l1_loss(input, target, reduction="mean"):
    """``|input - target|``, reduced.

    Example:
        >>> import engine as en
        >>> float(en.nn.functional.l1_loss(en.tensor([1.0, -1.0]), en.tensor([0.0, 0.0])))
        1.0
    """
    x, y, reduction = _pair("l1_loss", input, target, reduction)
    return _reduce(ops.abs(ops.sub(x, y)), reduction)


def mse_loss(input, target, reduction="mean"):
    """``(input - target) ** 2``, reduced (``en.mse`` is the mean without the checks).

    Example:
        >>> import engine as en
        >>> float(en.nn.functional.mse_loss(en.tensor([1.0, 3.0]), en.tensor([0.0, 0.0]),
        ...                                 reduction="sum"))
        10.0
    """
    x, y, reduction = _pair("mse_loss", input, target, reduction)
    return _reduce(ops.square(ops.sub(x, y)), reduction)


def _check_positive(name, label, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise DomainError(f"{name}: {label} must be a non-negative number, got {value!r}"
                          f"{at_user_line()}")
    return float(value)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 delta)``, for
    ``d = input - target`` (PyTorch's ``huber_loss``)."""
    name = "huber_loss"
    delta = _check_positive(name, "delta", delta)
    if delta == 0.0:
        raise DomainError(f"{name}: delta must be positive, got 0{at_user_line()}")
    x, y, reduction = _pair(name, input, target, reduction)
    d = ops.abs(ops.sub(x, y))
    quadratic = ops.mul(ops.square(d), 0.5)
    linear = ops.mul(ops.sub(d, 0.5 * delta), delta)
    return _reduce(ops.where(ops.less(d, delta), quadratic, linear), reduction)


def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (PyTorch's
    ``smooth_l1_loss``; ``beta=0`` is the L1 loss).

    Example:
        >>> import engine as en
        >>> en.nn.functional.smooth_l1_loss(en.tensor([0.5, 3.0]), en.tensor([0.0, 0.0]),
        ...                                 reduction="none").numpy()
        array([0.125, 2.5  ])
    """
    name = "smooth_l1_loss"
    beta = _check_positive(name, "beta", beta)
    x, y, reduction = _pair(name, input, target, reduction)
    d = ops.abs(ops.sub(x, y))
    if beta == 0.0:
        return _reduce(d, reduction)
    quadratic = ops.mul(ops.square(d), 0.5 / beta)
    return _reduce(ops.where(ops.less(d, beta), quadratic, ops.sub(d, 0.5 * beta)), reduction)


def kl_div(input, target, reduction="mean", log_target=False):
    """``target * (log(target) - input)`` summed as ``reduction`` says, ``input`` being
    log-probabilities (PyTorch's ``kl_div``); ``log_target`` when ``target`` holds
    log-probabilities too. A zero target contributes 0. "batchmean" divides the sum
    by the batch size (``input.shape[0]``): the KL divergence per example.

    Example:
        >>> import engine as en
        >>> p = en.tensor([[0.5, 0.5]])
        >>> q = en.log(en.tensor([[0.25, 0.75]]))
        >>> round(float(en.nn.functional.kl_div(q, p, reduction="batchmean")), 4)
        0.1438
    """
    name = "kl_div"
    x, t, reduction = _pair(name, input, target, reduction, _REDUCTIONS + ("batchmean",))
    if log_target:
        loss = ops.mul(ops.exp(t), ops.sub(t, x))
    else:
        positive = ops.greater(t, 0.0)
        # t log t is 0 at t = 0; the inner where keeps log (and its gradient) away from 0.
        log_t = ops.log(ops.where(positive, t, 1.0))
        loss = ops.where(positive, ops.mul(t, ops.sub(log_t, x)), ops.mul(t, ops.neg(x)))
    if reduction == "batchmean":
        batch = x.shape[0] if x.ndim else 1
        if batch is None:
            raise ShapeError(f"{name}: 'batchmean' needs a known batch size, got "
                             f"{describe_args([x])}{at_user_line()}")
        return ops.div(ops.sum(loss), float(batch))
    return _reduce(loss, reduction)


__all__ = ["l1_loss", "mse_loss", "huber_loss", "smooth_l1_loss", "kl_div"]
