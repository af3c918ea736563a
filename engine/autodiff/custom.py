"""``custom_gradient``: give a function a hand-written backward rule."""
import functools

from .. import ops
from ..errors import EngineError, expect_callable
from ..modes import current_mode
from ..recording import TapeRule, active_tapes, paused, record


def _custom_rule(name, grad_fn, multiple_results):
    """The tape rule of one call of a custom-gradient function: its VJP is ``grad_fn``."""
    def vjp(g, out, *inputs):
        grads = grad_fn(g)
        if not isinstance(grads, (tuple, list)):
            grads = (grads,)
        if len(grads) != len(inputs):
            raise EngineError(f"custom_gradient {name}: grad_fn returned {len(grads)} "
                              f"gradients for {len(inputs)} inputs")
        return tuple(grads)
    return TapeRule(name, vjp, multiple_results)


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
    expect_callable("custom_gradient", "f", f)
    name = getattr(f, "__name__", "custom_gradient")

    @functools.wraps(f)
    def wrapped(*args):
        inputs = current_mode().lift(list(args))
        tapes = active_tapes()
        with paused(tapes):
            y, grad_fn = f(*inputs)
            multiple = isinstance(y, (tuple, list))
            # Fresh output tensors, so an output that is an input keeps its own identity.
            out = tuple(ops.identity(v) for v in y) if multiple else ops.identity(y)
        if tapes:
            record(_custom_rule(name, grad_fn, multiple), inputs, out, {})
        return list(out) if isinstance(y, list) else out
    return wrapped
