"""Two mistakes a module refuses, each with an error that says what to do instead:

* a tensor held in a public attribute (``self.scale = en.tensor(2.0)``): it would be
  left out of the module's variables, so not trained, not saved, and baked into
  traced graphs as a constant. Hold an ``en.Variable`` (``trainable=False`` for
  state that is not trained), or use a private name (``self._cache``).
* a layer with variables created inside a traced function (``en.function``): each
  trace would make new variables, never trained. Create it once, outside.

Example:
    >>> import engine as en
    >>> class Scale(en.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.factor = en.tensor(2.0)
    >>> try:
    ...     Scale()
    ... except en.ArgumentTypeError as err:
    ...     print(str(err).splitlines()[0][:60])
    Scale.factor holds a Tensor: a module's tensors must be Vari
"""
import functools

from ..errors import ArgumentTypeError, TracingError, format_location, user_frame
from ..modes import current_mode
from ..tensor import Tensor
from ..variable import Variable


class LayerInTraceError(TracingError):
    """A module holding variables was created while a function was being traced."""


def check_attribute(module, name, value):
    """Refuse a public attribute holding a plain tensor (directly or in a list/tuple/dict)."""
    if _holds_tensor(value):
        raise ArgumentTypeError(
            f"{type(module).__name__}.{name} holds a Tensor: a module's tensors must be "
            "Variables, or they are left out of its variables (not trained, not saved, and "
            f"constant in traced graphs). Use en.Variable(value) (trainable=False for state "
            f"that is not trained), or a private name (self._{name}) for a cached value"
            f"\n  at {format_location(user_frame())}")


def _holds_tensor(value, depth=0):
    if isinstance(value, Tensor) and not isinstance(value, Variable):
        return True
    if depth < 4 and isinstance(value, (list, tuple)):
        return any(_holds_tensor(v, depth + 1) for v in value)
    if depth < 4 and isinstance(value, dict):
        return any(_holds_tensor(v, depth + 1) for v in value.values())
    return False


def _tracing():
    return not current_mode().is_concrete


def _layer_in_trace(cls):
    return LayerInTraceError(
        f"{cls.__name__} was created inside a traced function (en.function): its variables "
        "would be made anew at each trace and never trained. Create the layer once, outside "
        "the function (in your model's __init__, or before en.function), and call it inside"
        f"\n  at {format_location(user_frame())}")


def refuse_in_traces(cls):
    """Make ``cls.__init__`` (if ``cls`` defines one) refuse to run while a trace is made
    (see :func:`refused_in_traces`); for ``Module.__init_subclass__``."""
    if "__init__" in cls.__dict__:
        cls.__init__ = refused_in_traces(cls, cls.__dict__["__init__"])


def refused_in_traces(cls, init):
    """``init`` (``cls.__init__``) refusing, while a trace is made, to build a module that
    holds variables (variables a layer makes later, in its first call, are its business)."""
    @functools.wraps(init)
    def call(self, *args, **kwargs):
        if not _tracing():
            return init(self, *args, **kwargs)
        try:
            init(self, *args, **kwargs)
        except LayerInTraceError:
            raise
        except TracingError as err:      # an initializer's draw read while tracing
            raise _layer_in_trace(cls) from err
        if type(self) is cls and self.variables:
            raise _layer_in_trace(cls)
    return call
