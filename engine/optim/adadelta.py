"""Adadelta (Zeiler, 2012), in PyTorch's formulation."""
from .. import ops
from .base import Optimizer, as_dtype
from ..errors import InvalidArgumentError


class Adadelta(Optimizer):
    """Steps whose size is the ratio of two running root mean squares: of the past
    updates and of the gradients (so the units of the update match the weight's).

    PyTorch's definition (``torch.optim.Adadelta``) and defaults::

        g = g + weight_decay * w
        v = rho * v + (1 - rho) * g**2
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta**2
        w -= lr * delta

    ``lr`` (1.0, as in PyTorch) scales ``delta``; Zeiler's method has none.

    Example:
        >>> import engine as en
        >>> w = en.Variable([1.0])
        >>> _ = en.optim.Adadelta(rho=0.5, eps=1e-2).step(en.tensor([1.0]), w)
        >>> w.numpy().round(6)     # 1 - sqrt(0.01) / sqrt(0.5 + 0.01) * 1
        array([0.859972])
    """

    def __init__(self, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, name="Adadelta"):
        """``lr`` is a float or a schedule of the step number (:mod:`engine.optim.schedules`)."""
        if not 0.0 <= rho <= 1.0:
            raise InvalidArgumentError(f"Adadelta: rho must be in [0, 1], got {rho}")
        for label, value in (("lr", lr if not callable(lr) else 0.0), ("eps", eps),
                             ("weight_decay", weight_decay)):
            if value < 0:
                raise InvalidArgumentError(f"Adadelta: {label} must be >= 0, got {value}")
        super().__init__(name)
        self.lr = lr
        self.rho = rho
        self.eps = eps
        self.weight_decay = weight_decay

    def _create_state(self, var):
        return {"square_avg": self._new_slot(var, "square_avg"),
                "acc_delta": self._new_slot(var, "acc_delta")}

    def _update(self, grads, vars):
        rho = self.rho
        for g, w in zip(grads, vars):
            if g is None:
                continue
            lr = self.learning_rate(w.dtype)
            if self.weight_decay:
                g = g + w * self.weight_decay
            v, u = self.slot(w, "square_avg"), self.slot(w, "acc_delta")
            v_new = as_dtype(v * rho + ops.square(g) * (1.0 - rho), w.dtype)
            v.assign(v_new)
            delta = ops.sqrt(u + self.eps) / ops.sqrt(v_new + self.eps) * g
            u.assign(as_dtype(u * rho + ops.square(delta) * (1.0 - rho), w.dtype))
            w.assign_sub(as_dtype(delta * lr, w.dtype))
