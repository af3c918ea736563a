"""Loss modules under PyTorch's names and arguments: ``CrossEntropyLoss``, ``NLLLoss``,
``BCELoss``, ``BCEWithLogitsLoss``, ``MSELoss``, ``L1Loss``, ``HuberLoss``,
``SmoothL1Loss`` and ``KLDivLoss``. Call one as ``loss_fn(input, target)``.

The class axis of ``CrossEntropyLoss`` and ``NLLLoss`` is PyTorch's: axis 1
of a batch (N, C) or (N, C, d1, ...), axis 0 of one unbatched example (C,);
``axis=-1`` takes the engine's channels-last layout (N, d1, ..., C). Class
weights are held as constants (not trained, not saved).

Example:
    >>> import engine as en
    >>> loss_fn = en.nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> logits = en.tensor([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    >>> round(float(loss_fn(logits, en.tensor([0, 1]))), 4)
    0.3729
"""
from .. import ops
from ..errors import DomainError
from ..tensor import Tensor, tensor
from . import loss_functions as LF
from .module import Module


def _constant(value):
    return None if value is None else (value if isinstance(value, Tensor) else tensor(value))


def _class_axis(axis, x):
    """PyTorch's class axis (1, or 0 for an unbatched input) unless ``axis`` is given."""
    if axis is not None:
        return axis
    return 1 if getattr(x, "ndim", 1) >= 2 else 0


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in self._reductions:
            raise DomainError(f"{type(self).__name__}: reduction must be one of "
                              f"{', '.join(map(repr, self._reductions))}, got {reduction!r}")
        self.reduction = reduction

    _reductions: tuple[str, ...] = ("mean", "sum", "none")

    def extra_repr(self):
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """Softmax cross-entropy of logits against class ids or class probabilities
    (PyTorch's ``CrossEntropyLoss``; see :func:`engine.cross_entropy`)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                 *, axis=None):
        super().__init__(reduction)
        self._weight = _constant(weight)     # private: a constant, not a parameter
        self.ignore_index = ignore_index
        self.label_smoothing = float(label_smoothing)
        self.axis = axis

    def forward(self, input, target):
        return ops.cross_entropy(input, target, _class_axis(self.axis, input), self._weight,
                                 self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of class ids under log-probabilities (PyTorch's ``NLLLoss``;
    see :func:`engine.nll_loss`)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", *, axis=None):
        super().__init__(reduction)
        self._weight = _constant(weight)
        self.ignore_index = ignore_index
        self.axis = axis

    def forward(self, input, target):
        return ops.nll_loss(input, target, self._weight, self.ignore_index, self.reduction,
                            _class_axis(self.axis, input))


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (PyTorch's ``BCELoss``)."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self._weight = _constant(weight)

    def forward(self, input, target):
        return ops.binary_cross_entropy(input, target, self._weight, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, computed stably (PyTorch's ``BCEWithLogitsLoss``);
    ``pos_weight`` (one per class, along the last axis) weighs the positive examples.

    Example:
        >>> import engine as en
        >>> loss_fn = en.nn.BCEWithLogitsLoss(pos_weight=en.tensor([3.0]))
        >>> round(float(loss_fn(en.tensor([0.0]), en.tensor([1.0]))), 4)
        2.0794
    """

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self._weight = _constant(weight)
        self._pos_weight = _constant(pos_weight)

    def forward(self, input, target):
        return ops.binary_cross_entropy_with_logits(input, target, self._weight,
                                                    self._pos_weight, self.reduction)


class MSELoss(_Loss):
    """Mean squared error (PyTorch's ``MSELoss``)."""

    def forward(self, input, target):
        return LF.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error (PyTorch's ``L1Loss``)."""

    def forward(self, input, target):
        return LF.l1_loss(input, target, self.reduction)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above (PyTorch's ``HuberLoss``)."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        return LF.huber_loss(input, target, self.reduction, self.delta)


class SmoothL1Loss(_Loss):
    """The Huber loss divided by ``beta`` (PyTorch's ``SmoothL1Loss``)."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):
        return LF.smooth_l1_loss(input, target, self.reduction, self.beta)


class KLDivLoss(_Loss):
    """KL divergence of ``target`` from the log-probabilities ``input`` (PyTorch's
    ``KLDivLoss``; use ``reduction="batchmean"`` for the true divergence)."""

    _reductions = ("mean", "sum", "none", "batchmean")

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = bool(log_target)

    def forward(self, input, target):
        return LF.kl_div(input, target, self.reduction, self.log_target)
