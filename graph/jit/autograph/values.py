"""Values converted code handles specially: undefined names and ranges with tensor bounds."""
from engine.errors import EngineError, TracingError


class UnboundVariableError(EngineError, UnboundLocalError):
    """A converted function used a local before assigning it: the ``UnboundLocalError``
    the plain program raises, and an engine error."""


class Undefined:
    """The value of a local that has not been assigned yet (``y = ag__.Undefined('y')``).

    Control flow converted to functions needs every name it may assign to
    exist before it; this stands in until the user's code assigns it, and
    any use of it raises ``UnboundLocalError`` as the plain program would.
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined {self.name}>"

    def _unbound(self, *args, **kwargs):
        raise UnboundVariableError(
            f"cannot access local variable '{self.name}' where it is not associated with a value")

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __index__ = _unbound
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _unbound
    __rtruediv__ = __matmul__ = __rmatmul__ = __pow__ = __neg__ = __float__ = __int__ = _unbound
    __lt__ = __le__ = __gt__ = __ge__ = _unbound

    def __getattr__(self, attr):
        self._unbound()


class UndefinedReturnValue(Undefined):
    """The return value before a ``return`` has run (see ``lowering``)."""

    __slots__ = ()

    def __init__(self):
        super().__init__(RETVAL_NAME)


def ld(value):
    """A load of a name that may still be undefined: its value, or the plain program's error."""
    if type(value) is Undefined:
        value._unbound()
    return value


class TensorRange:
    """``range(start, stop, step)`` where some bound is a traced tensor (``for`` makes a loop)."""

    __slots__ = ("start", "stop", "step")

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

    def __iter__(self):
        raise TracingError("a range with a traced bound can only be looped over by a converted "
                           "`for` statement")

    def __repr__(self):
        return f"range({self.start!r}, {self.stop!r}, {self.step!r})"


RETVAL_NAME = "_ag_retval"
