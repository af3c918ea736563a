"""Adagrad (Duchi, Hazan and Singer, 2011), in PyTorch's formulation."""
import numpy as np

from .. import ops
from .base import Optimizer, as_dtype
from ..errors import InvalidArgumentError


class Adagrad(Optimizer):
    """Per-coordinate steps scaled by the root of the summed squared gradients.

    PyTorch's definition (``torch.optim.Adagrad``), with ``t`` the variable's step
    number (1 on its first update; a step that gives it no gradient does not count)::

        g = g + weight_decay * w
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g**2                              # s starts at initial_accumulator_value
        w -= clr * g / (sqrt(s) + eps)

    Example:
        >>> import engine as en
        >>> w = en.Variable([1.0, 1.0])
        >>> _ = en.optim.Adagrad(lr=0.5).step(en.tensor([2.0, -4.0]), w)
        >>> w.numpy().round(6)     # the first step moves each coordinate by ~lr
        array([0.5, 1.5])
    """

    def __init__(self, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                 eps=1e-10, name="Adagrad"):
        """``lr`` is a float or a schedule of the step number (:mod:`engine.optim.schedules`)."""
        for label, value in (("lr_decay", lr_decay), ("weight_decay", weight_decay),
                             ("initial_accumulator_value", initial_accumulator_value),
                             ("eps", eps)):
            if value < 0:
                raise InvalidArgumentError(f"Adagrad: {label} must be >= 0, got {value}")
        super().__init__(name)
        self.lr = lr
        self.lr_decay = lr_decay
        self.weight_decay = weight_decay
        self.initial_accumulator_value = initial_accumulator_value
        self.eps = eps

    def _create_state(self, var):
        init = np.full(var.shape, self.initial_accumulator_value, dtype=var.dtype)
        # Each variable counts its own updates for lr_decay (PyTorch's state["step"]).
        return {"sum": self._new_slot(var, "sum", init=init),
                "step": self._new_slot(var, "step", init=np.int64(0))}

    def _update(self, grads, vars):
        for g, w in zip(grads, vars):
            if g is None:
                continue
            lr = self.learning_rate(w.dtype)
            step = self.slot(w, "step")
            if self.lr_decay:
                lr = lr / (ops.cast(step, w.dtype) * self.lr_decay + 1.0)
            step.assign_add(1)
            if self.weight_decay:
                g = g + w * self.weight_decay
            s = self.slot(w, "sum")
            s_new = as_dtype(s + ops.square(g), w.dtype)
            s.assign(s_new)
            w.assign_sub(as_dtype(g / (ops.sqrt(s_new) + self.eps) * lr, w.dtype))
