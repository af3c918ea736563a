"""``custom_gradient``: give a function a hand-written backward rule."""
import functools

from ..errors import EngineError
from .tape import _TAPES, record


class _CustomGradientOp:
    """Tape entry for one call of a custom-gradient function (not a registry op)."""

    __slots__ = ("name", "grad_fn", "multiple_results")

    def __init__(self, name, grad_fn, multiple_results):
        self.name = name
        self.grad_fn = grad_fn
        self.multiple_results = multiple_results

    def vjp(self, g, out, *inputs):
        grads = self.grad_fn(g)
        if not isinstance(grads, (tuple, list)):
            grads = (grads,)
        if len(grads) != len(inputs):
            raise EngineError(f"custom_gradient {self.name}: grad_fn returned {len(grads)} "
                              f"gradients for {len(inputs)} inputs")
        return tuple(grads)


def custom_gradient(f):
    """Decorate ``f(*xs) -> (y, grad_fn)``; ``grad_fn(dy)`` returns one gradient per x.

    The forward computation inside ``f`` is not recorded; the backward pass
    calls ``grad_fn``, whose engine ops are recorded on outer tapes, so higher
    order gradients work when ``grad_fn`` is itself differentiable.

    Example:
        >>> import engine as en
        >>> @en.custom_gradient
        ... def clip_grad(x):
        ...     return x, lambda dy: en.minimum(dy, 1.0)
        >>> float(en.grad(lambda x: clip_grad(x) * 5.0)(2.0))
        1.0
    """
    name = getattr(f, "__name__", "custom_gradient")

    @functools.wraps(f)
    def wrapped(*args):
        from ..modes import current_mode
        inputs = current_mode().lift(list(args))
        from .. import ops
        tapes = _TAPES.get()
        saved = [t._recording for t in tapes]
        for t in tapes:
            t._recording = False
        try:
            y, grad_fn = f(*inputs)
            multiple = isinstance(y, (tuple, list))
            # Fresh output tensors, so an output that is an input keeps its own identity.
            out = tuple(ops.identity(v) for v in y) if multiple else ops.identity(y)
        finally:
            for t, was in zip(tapes, saved):
                t._recording = was
        if tapes:
            record(_CustomGradientOp(name, grad_fn, multiple), inputs, out, {})
        return list(out) if isinstance(y, list) else out
    return wrapped
