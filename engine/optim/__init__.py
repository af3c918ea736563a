"""Optimizers: :class:`SGD` (with momentum / Nesterov), :class:`Adam`, :class:`AdamW`,
:class:`RMSprop`, :class:`Adagrad`, :class:`Adadelta`, :class:`LBFGS`; learning-rate
schedules and gradient clipping.

All of them share the API of :class:`Optimizer`: ``step(grads, vars)``,
``apply_gradients(pairs)`` and ``minimize(loss_fn, vars)``. Their state lives
in non-trainable variables and their update math is written in engine ops, so
a training step that calls them can be traced into a graph. The first-order
optimizers take ``lr`` as a float or a schedule (:class:`StepDecay`,
:class:`ExponentialDecay`, :class:`CosineDecay`, :class:`LinearWarmup`), read
from the optimizer's step counter when the step runs.

Example:
    >>> import engine as en
    >>> w = en.Variable([0.0, 0.0])
    >>> opt = en.optim.Adam(lr=0.1)
    >>> for _ in range(200):
    ...     _ = opt.minimize(lambda: en.sum((w - en.tensor([1.0, -2.0])) ** 2.0), w)
    >>> w.numpy().round(2)
    array([ 1., -2.])
"""
from .base import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .schedules import (LearningRateSchedule, Constant, StepDecay, ExponentialDecay,  # noqa: F401
                        CosineDecay, LinearWarmup)
from .clipping import global_norm, clip_by_global_norm, clip_by_value  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "LBFGS",
           "LearningRateSchedule", "Constant", "StepDecay", "ExponentialDecay", "CosineDecay",
           "LinearWarmup", "global_norm", "clip_by_global_norm", "clip_by_value"]
