"""Stochastic gradient descent, optionally with (Nesterov) momentum."""
from .base import Optimizer, as_dtype
from ..errors import InvalidArgumentError


class SGD(Optimizer):
    """Gradient descent: ``w -= lr * g``; with momentum the PyTorch formulation.

    With ``momentum > 0`` a velocity ``v`` is kept per variable::

        v = momentum * v + g
        w -= lr * v                      # classical momentum
        w -= lr * (g + momentum * v)     # nesterov=True

    (This equals the ``v = momentum * v - lr * g; w += v`` form for a fixed
    learning rate.) Full-batch, mini-batch or stochastic gradient descent is
    only a matter of which gradients are passed: see :func:`engine.data.batches`.

    Example:
        >>> import engine as en
        >>> w = en.Variable([1.0, -1.0])
        >>> opt = en.optim.SGD(lr=0.1, momentum=0.9)
        >>> _ = opt.step(en.tensor([1.0, 1.0]), w)
        >>> _ = opt.step(en.tensor([1.0, 1.0]), w)   # v = 1.9 now
        >>> w.numpy().round(6)
        array([ 0.71, -1.29])
    """

    def __init__(self, lr=0.01, momentum=0.0, nesterov=False, name="SGD"):
        """``lr`` is a float or a schedule of the step number (:mod:`engine.optim.schedules`)."""
        if momentum < 0:
            raise InvalidArgumentError(f"SGD: momentum must be >= 0, got {momentum}")
        if nesterov and momentum == 0:
            raise InvalidArgumentError("SGD: nesterov=True needs momentum > 0")
        super().__init__(name)
        self.lr = lr
        self.momentum = momentum
        self.nesterov = bool(nesterov)

    def _create_state(self, var):
        return {"velocity": self._new_slot(var, "velocity")} if self.momentum else {}

    def _update(self, grads, vars):
        for g, w in zip(grads, vars):
            if g is None:
                continue
            lr = self.learning_rate(w.dtype)
            if not self.momentum:
                w.assign_sub(as_dtype(g * lr, w.dtype))
                continue
            v = self.slot(w, "velocity")
            v_new = as_dtype(v * self.momentum + g, w.dtype)
            v.assign(v_new)
            direction = g + v_new * self.momentum if self.nesterov else v_new
            w.assign_sub(as_dtype(direction * lr, w.dtype))
