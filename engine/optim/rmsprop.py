"""RMSprop (Hinton's lecture 6e), in PyTorch's formulation."""
from .. import ops
from .base import Optimizer, as_dtype
from ..errors import InvalidArgumentError


class RMSprop(Optimizer):
    """Steps scaled by a running root mean square of the gradient.

    PyTorch's definition (``torch.optim.RMSprop``)::

        g = g + weight_decay * w
        v = alpha * v + (1 - alpha) * g**2
        avg = sqrt(v) + eps                       # centered: sqrt(v - mean_g**2) + eps,
                                                  #   mean_g = alpha * mean_g + (1 - alpha) * g
        buf = momentum * buf + g / avg;  w -= lr * buf      # momentum > 0
        w -= lr * g / avg                                   # otherwise

    Example:
        >>> import engine as en
        >>> w = en.Variable([1.0])
        >>> _ = en.optim.RMSprop(lr=0.01, alpha=0.99).step(en.tensor([2.0]), w)
        >>> w.numpy().round(6)     # 1 - 0.01 * 2 / sqrt(0.01 * 4)
        array([0.9])
    """

    def __init__(self, lr=1e-2, alpha=0.99, eps=1e-8, momentum=0.0, centered=False,
                 weight_decay=0.0, name="RMSprop"):
        """``lr`` is a float or a schedule of the step number (:mod:`engine.optim.schedules`)."""
        if not 0.0 <= alpha < 1.0:
            raise InvalidArgumentError(f"RMSprop: alpha must be in [0, 1), got {alpha}")
        for label, value in (("eps", eps), ("momentum", momentum), ("weight_decay", weight_decay)):
            if value < 0:
                raise InvalidArgumentError(f"RMSprop: {label} must be >= 0, got {value}")
        super().__init__(name)
        self.lr = lr
        self.alpha = alpha
        self.eps = eps
        self.momentum = momentum
        self.centered = bool(centered)
        self.weight_decay = weight_decay

    def _create_state(self, var):
        state = {"square_avg": self._new_slot(var, "square_avg")}
        if self.centered:
            state["grad_avg"] = self._new_slot(var, "grad_avg")
        if self.momentum:
            state["momentum_buffer"] = self._new_slot(var, "momentum_buffer")
        return state

    def _update(self, grads, vars):
        a = self.alpha
        for g, w in zip(grads, vars):
            if g is None:
                continue
            lr = self.learning_rate(w.dtype)
            if self.weight_decay:
                g = g + w * self.weight_decay
            sq = self.slot(w, "square_avg")
            sq_new = as_dtype(sq * a + ops.square(g) * (1.0 - a), w.dtype)
            sq.assign(sq_new)
            if self.centered:
                ga = self.slot(w, "grad_avg")
                ga_new = as_dtype(ga * a + g * (1.0 - a), w.dtype)
                ga.assign(ga_new)
                avg = ops.sqrt(sq_new - ops.square(ga_new)) + self.eps
            else:
                avg = ops.sqrt(sq_new) + self.eps
            direction = g / avg
            if self.momentum:
                buf = self.slot(w, "momentum_buffer")
                direction = as_dtype(buf * self.momentum + direction, w.dtype)
                buf.assign(direction)
            w.assign_sub(as_dtype(direction * lr, w.dtype))
