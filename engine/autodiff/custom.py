"""``custom_gradient``: give a function a hand-written backward rule."""
import functools

from .. import ops
from ..conversion import user_function
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
        mode = current_mode()
        in_transform = getattr(mode, "call_custom_gradient", None)   # vmap's
        run = user_function(f)   # converted inside a converting trace
        if in_transform is not None:
            out = in_transform(run, args)
            if out is not None:
                return out
        inputs = mode.lift(list(args))
        tapes = active_tapes()
        with paused(tapes):
            y, grad_fn = run(*inputs)
            multiple = isinstance(y, (tuple, list))
            # Fresh output tensors, so an output that is an input keeps its own identity.
            out = tuple(ops.identity(v) for v in y) if multiple else ops.identity(y)
        if tapes:
            record(_custom_rule(name, grad_fn, multiple), inputs, out, {})
        elif getattr(mode, "graph", None) is not None:   # tracing a graph
            _keep_in_graph(wrapped, inputs, out, multiple)
        return list(out) if isinstance(y, list) else out
    return wrapped


CUSTOM_GRADIENT = "custom_gradient"   # the node meta key of a traced call


class TracedCall:
    """A custom-gradient call traced with no tape to record its rule (a function traced
    for ``en.function``, a ``cond`` branch or ``scan`` body). It sits in the meta of
    its output nodes: a backward pass that replays the graph under a tape
    (``graph/control/interpret.py``) calls the function again there, so the rule is recorded
    and the gradient is the hand-written one, not the forward ops' own."""

    __slots__ = ("function", "inputs", "outputs")

    def __init__(self, function, inputs, outputs):
        self.function, self.inputs, self.outputs = function, inputs, outputs

    def rerun(self, args):
        """The output values of the call on ``args`` (one per input node), in order."""
        out = self.function(*args)
        return list(out) if isinstance(out, (tuple, list)) else [out]


def _keep_in_graph(function, inputs, out, multiple):
    call = TracedCall(function, [t._node for t in inputs],
                      [t._node for t in (out if multiple else (out,))])
    for node in call.outputs:
        node.meta[CUSTOM_GRADIENT] = call
