"""Adam (Kingma and Ba, 2015) with bias-corrected moment estimates."""
import numpy as np

from .. import ops
from .base import Optimizer, as_dtype
from ..errors import InvalidArgumentError


class Adam(Optimizer):
    """Adam: per-coordinate steps scaled by running moments of the gradient.

    With ``t`` the variable's step number (1 on its first update; a step that gives it
    no gradient does not count, as in PyTorch)::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        w -= lr * (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)

    Example:
        >>> import engine as en
        >>> w = en.Variable([1.0, 2.0])
        >>> _ = en.optim.Adam(lr=0.1).step(en.tensor([3.0, -4.0]), w)
        >>> w.numpy().round(6)     # the first Adam step moves each coordinate by ~lr
        array([0.9, 2.1])
    """

    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, name="Adam"):
        """``lr`` is a float or a schedule of the step number (:mod:`engine.optim.schedules`)."""
        for label, b in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= b < 1.0:
                raise InvalidArgumentError(f"Adam: {label} must be in [0, 1), got {b}")
        if eps < 0:
            raise InvalidArgumentError(f"Adam: eps must be >= 0, got {eps}")
        super().__init__(name)
        self.lr = lr
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps

    def _create_state(self, var):
        # Each variable counts its own steps (PyTorch's state["step"]): one that got no
        # gradient on some steps is bias-corrected by the updates it had.
        return {"m": self._new_slot(var, "m"), "v": self._new_slot(var, "v"),
                "step": self._new_slot(var, "step", init=np.int64(0))}

    def _update(self, grads, vars):
        for g, w in zip(grads, vars):
            if g is None:
                continue
            m, v, step = self.slot(w, "m"), self.slot(w, "v"), self.slot(w, "step")
            t = step + 1          # int64 tensor: this variable's step number
            step.assign(t)
            tf = ops.cast(t, w.dtype)
            m_new = as_dtype(m * self.beta1 + g * (1.0 - self.beta1), w.dtype)
            v_new = as_dtype(v * self.beta2 + ops.square(g) * (1.0 - self.beta2), w.dtype)
            m.assign(m_new)
            v.assign(v_new)
            m_hat = m_new / (1.0 - ops.pow(self.beta1, tf))
            v_hat = v_new / (1.0 - ops.pow(self.beta2, tf))
            w.assign_sub(as_dtype(m_hat / (ops.sqrt(v_hat) + self.eps) * self.learning_rate(w.dtype),
                                  w.dtype))
