"""Optimizers: :class:`SGD` (with momentum / Nesterov), :class:`Adam`, :class:`LBFGS`.

All of them share the API of :class:`Optimizer`: ``step(grads, vars)``,
``apply_gradients(pairs)`` and ``minimize(loss_fn, vars)``. Their state lives
in non-trainable variables and their update math is written in engine ops, so
a training step that calls them can be traced into a graph.

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
from .lbfgs import LBFGS  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "LBFGS"]
