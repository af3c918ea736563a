"""Gradient clipping: by global norm and by value. ``None`` gradients pass through.

Both are written in engine ops, so they work eagerly, under tapes and inside
traced training steps.

Example:
    >>> import engine as en
    >>> grads, norm = en.optim.clip_by_global_norm([en.tensor([3.0]), en.tensor([4.0])], 1.0)
    >>> float(norm), [round(float(g[0]), 3) for g in grads]
    (5.0, [0.6, 0.8])
"""
from .. import ops
from ..errors import EngineError, InvalidArgumentError
from ..tensor import Tensor, tensor
from ..variable import Variable


def _as_list(grads, who):
    if isinstance(grads, (Tensor, Variable)):
        raise EngineError(f"{who}: expected a list of gradients, got one {type(grads).__name__}; "
                          "wrap it in a list")
    out = []
    for g in grads:
        out.append(g if g is None or isinstance(g, (Tensor, Variable)) else tensor(g))
    return out


def global_norm(grads):
    """``sqrt(sum of every squared entry)`` over the gradients (``None`` skipped), float64.

    Example:
        >>> import engine as en
        >>> float(en.optim.global_norm([en.tensor([3.0]), None, en.tensor([[4.0]])]))
        5.0
    """
    squares = [ops.sum(ops.square(ops.cast(g, "float64"))) for g in _as_list(grads, "global_norm")
               if g is not None]
    if not squares:
        return tensor(0.0)
    total = squares[0]
    for s in squares[1:]:
        total = ops.add(total, s)
    return ops.sqrt(total)


def clip_by_global_norm(grads, max_norm):
    """Scale every gradient by ``min(1, max_norm / global_norm)``; return ``(grads, norm)``.

    The direction of the whole gradient is kept (unlike clipping each tensor on
    its own). ``norm`` is the norm before clipping; the result keeps each
    gradient's dtype. Same rule as ``torch.nn.utils.clip_grad_norm_`` (which
    adds 1e-6 to the norm) and TensorFlow's ``clip_by_global_norm``.
    """
    if not max_norm > 0:
        raise InvalidArgumentError(f"clip_by_global_norm: max_norm must be > 0, got {max_norm}")
    grads = _as_list(grads, "clip_by_global_norm")
    norm = global_norm(grads)
    # max(norm, max_norm) keeps the factor at exactly 1 below the limit, and 0/0 away.
    scale = ops.div(float(max_norm), ops.maximum(norm, float(max_norm)))
    clipped = [None if g is None else ops.mul(g, ops.cast(scale, g.dtype)) for g in grads]
    return clipped, norm


def clip_by_value(grads, min_value, max_value):
    """Every entry of every gradient clamped to ``[min_value, max_value]``.

    Example:
        >>> import engine as en
        >>> en.optim.clip_by_value([en.tensor([-5.0, 0.5, 5.0])], -1.0, 1.0)[0].numpy()
        array([-1. ,  0.5,  1. ])
    """
    if not min_value <= max_value:
        raise InvalidArgumentError(f"clip_by_value: min_value ({min_value}) must be <= max_value "
                         f"({max_value})")
    return [None if g is None else ops.minimum(ops.maximum(g, min_value), max_value)
            for g in _as_list(grads, "clip_by_value")]


__all__ = ["global_norm", "clip_by_global_norm", "clip_by_value"]
