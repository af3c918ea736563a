"""AdamW (Loshchilov and Hutter, 2019): Adam with decoupled weight decay."""
from .adam import Adam
from .base import as_dtype
from ..errors import InvalidArgumentError


class AdamW(Adam):
    """Adam whose weight decay shrinks the weights directly, not through the gradient.

    PyTorch's definition: each step first ``w *= 1 - lr * weight_decay``,
    then takes the Adam step (see :class:`Adam`) with the gradient unchanged.

    Example:
        >>> import engine as en
        >>> w = en.Variable([1.0, -1.0])
        >>> _ = en.optim.AdamW(lr=0.1, weight_decay=0.5).step(en.tensor([0.0, 0.0]), w)
        >>> w.numpy().round(6)     # a zero gradient: only the decay acts
        array([ 0.95, -0.95])
    """

    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2,
                 name="AdamW"):
        """``lr`` is a float or a schedule of the step number (:mod:`engine.optim.schedules`)."""
        if weight_decay < 0:
            raise InvalidArgumentError(f"AdamW: weight_decay must be >= 0, got {weight_decay}")
        super().__init__(lr, beta1, beta2, eps, name=name)
        self.weight_decay = weight_decay

    def _update(self, grads, vars):
        if self.weight_decay:
            for g, w in zip(grads, vars):
                if g is not None:   # a variable without a gradient is left alone entirely
                    shrink = 1.0 - self.learning_rate(w.dtype) * self.weight_decay
                    w.assign(as_dtype(w * shrink, w.dtype))
        super()._update(grads, vars)
