"""Roots with a subgradient of 0 at 0, for the composites that take a root of a sum
of squares or powers: ``std``, the 2-norm and Frobenius norm, the ``p``-norms.

At 0 the root's own derivative is infinite, and the chain rule multiplies it by
the derivative of the sum below it, which is 0 there: ``inf * 0 = nan`` in every
entry of the gradient. PyTorch's ``std`` and ``norm`` backward give 0 at 0 (a
subgradient: the norm is smallest there), and so do these.

The "double where" keeps NaN and warnings out of both passes: the root is taken
of 1 where the value is 0, and the result is the constant 0 there, so neither
the value nor any derivative ever sees the root's singular point. NaN and inf
values pass through unchanged (``nan == 0`` is false).

Example:
    >>> import engine as en
    >>> from engine.ops.subgradients import root_with_zero_subgradient
    >>> float(en.grad(lambda v: root_with_zero_subgradient(v))(en.tensor(0.0)))
    0.0
"""
from . import compare, elementwise


def root_with_zero_subgradient(v, p=2):
    """``v ** (1 / p)`` (``sqrt`` for ``p == 2``) whose derivatives are 0 where ``v == 0``."""
    at_zero = compare.equal(v, 0)
    safe = compare.where(at_zero, 1, v)
    root = elementwise.sqrt(safe) if p == 2 else elementwise.pow(safe, 1.0 / p)
    return compare.where(at_zero, 0, root)


__all__ = ["root_with_zero_subgradient"]
