"""Learning-rate schedules: the learning rate as a function of the step number.

A schedule is a callable ``schedule(step) -> learning rate``. Passed as an
optimizer's ``lr``, it is called with the optimizer's ``iterations``
variable (the number of steps taken so far, 0 on the first step), and its
value is written in engine ops on that variable's value. Inside an
``en.function`` training step it therefore becomes graph nodes that read the
counter when the graph runs: the step traces once, not once per step.

Called on a Python int, a schedule returns a 0-d tensor (handy for plotting
it or checking it by hand).

Example:
    >>> import engine as en
    >>> sched = en.optim.StepDecay(0.1, step_size=10, gamma=0.5)
    >>> [round(float(sched(t)), 4) for t in (0, 9, 10, 25)]
    [0.1, 0.1, 0.05, 0.025]
    >>> opt = en.optim.SGD(lr=sched)          # the optimizer reads its own step counter
"""
import math

import numpy as np

from .. import ops
from ..tensor import Tensor, tensor
from ..variable import Variable
from ..errors import InvalidArgumentError, UnimplementedError


class LearningRateSchedule:
    """Base class: subclasses implement ``_value(t)`` with ``t`` a float64 0-d tensor."""

    def __call__(self, step):
        if isinstance(step, Variable):
            step = step.read()
        elif not isinstance(step, Tensor):
            step = tensor(np.float64(step))
        return self._value(ops.cast(step, "float64"))

    def _value(self, t):
        raise UnimplementedError

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _positive(who, label, value):
    if not value > 0:
        raise InvalidArgumentError(f"{who}: {label} must be > 0, got {value}")
    return value


def _as_schedule(lr):
    """A schedule for ``lr`` (a schedule, or a float meaning a constant rate)."""
    return lr if callable(lr) else Constant(lr)


class Constant(LearningRateSchedule):
    """The same learning rate at every step."""

    def __init__(self, lr):
        self.lr = float(lr)

    def _value(self, t):
        return ops.add(ops.zeros_like(t), self.lr)


class StepDecay(LearningRateSchedule):
    """``lr * gamma ** floor(step / step_size)`` (PyTorch's ``StepLR``, counted in steps).

    Example:
        >>> import engine as en
        >>> round(float(en.optim.StepDecay(1.0, step_size=3, gamma=0.1)(7)), 6)
        0.01
    """

    def __init__(self, lr, step_size, gamma=0.1):
        self.lr = float(lr)
        self.step_size = int(_positive("StepDecay", "step_size", step_size))
        self.gamma = float(gamma)

    def _value(self, t):
        # floor(t / step_size) for t >= 0: casting to an integer truncates toward zero.
        k = ops.cast(ops.cast(ops.div(t, float(self.step_size)), "int64"), "float64")
        return ops.mul(ops.pow(self.gamma, k), self.lr)


class ExponentialDecay(LearningRateSchedule):
    """``lr * decay_rate ** (step / decay_steps)``; with ``staircase`` the exponent is floored.

    Example:
        >>> import engine as en
        >>> round(float(en.optim.ExponentialDecay(1.0, decay_steps=10, decay_rate=0.5)(5)), 6)
        0.707107
    """

    def __init__(self, lr, decay_steps, decay_rate, staircase=False):
        self.lr = float(lr)
        self.decay_steps = int(_positive("ExponentialDecay", "decay_steps", decay_steps))
        self.decay_rate = float(_positive("ExponentialDecay", "decay_rate", decay_rate))
        self.staircase = bool(staircase)

    def _value(self, t):
        p = ops.div(t, float(self.decay_steps))
        if self.staircase:
            p = ops.cast(ops.cast(p, "int64"), "float64")
        return ops.mul(ops.pow(self.decay_rate, p), self.lr)


class CosineDecay(LearningRateSchedule):
    """Cosine from ``lr`` down to ``alpha * lr`` over ``decay_steps``, then flat.

    ``lr * (alpha + (1 - alpha) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2)``
    (Loshchilov and Hutter's annealing without restarts; PyTorch's
    ``CosineAnnealingLR`` with ``eta_min = alpha * lr``).

    Example:
        >>> import engine as en
        >>> sched = en.optim.CosineDecay(1.0, decay_steps=100)
        >>> [round(float(sched(t)), 4) for t in (0, 50, 100, 150)]
        [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, lr, decay_steps, alpha=0.0):
        self.lr = float(lr)
        self.decay_steps = int(_positive("CosineDecay", "decay_steps", decay_steps))
        if not 0.0 <= alpha <= 1.0:
            raise InvalidArgumentError(f"CosineDecay: alpha must be in [0, 1], got {alpha}")
        self.alpha = float(alpha)

    def _value(self, t):
        frac = ops.div(ops.minimum(t, float(self.decay_steps)), float(self.decay_steps))
        cosine = ops.mul(ops.add(ops.cos(ops.mul(frac, math.pi)), 1.0), 0.5)
        return ops.mul(ops.add(ops.mul(cosine, 1.0 - self.alpha), self.alpha), self.lr)


class LinearWarmup(LearningRateSchedule):
    """Rise linearly from ``start_factor * target`` to ``target`` over ``warmup_steps``, then
    follow ``after`` (a float or a schedule, started at its own step 0 when warm-up ends).

    ``target`` is ``after``'s value at its step 0.

    Example:
        >>> import engine as en
        >>> sched = en.optim.LinearWarmup(en.optim.CosineDecay(1.0, 10), warmup_steps=4)
        >>> [round(float(sched(t)), 4) for t in (0, 2, 4, 9)]
        [0.0, 0.5, 1.0, 0.5]
    """

    def __init__(self, after, warmup_steps, start_factor=0.0):
        self.after = _as_schedule(after)
        self.warmup_steps = int(_positive("LinearWarmup", "warmup_steps", warmup_steps))
        if not 0.0 <= start_factor <= 1.0:
            raise InvalidArgumentError(f"LinearWarmup: start_factor must be in [0, 1], got {start_factor}")
        self.start_factor = float(start_factor)

    def _value(self, t):
        w = float(self.warmup_steps)
        target = self.after(ops.zeros_like(t))
        factor = ops.add(ops.mul(ops.div(t, w), 1.0 - self.start_factor), self.start_factor)
        warm = ops.mul(target, factor)
        later = self.after(ops.maximum(ops.sub(t, w), 0.0))
        return ops.where(ops.less(t, w), warm, later)


__all__ = ["LearningRateSchedule", "Constant", "StepDecay", "ExponentialDecay", "CosineDecay",
           "LinearWarmup"]
