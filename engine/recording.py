"""The active gradient tapes, and the one place where computations are recorded on them.

A tape entry is a tuple ``(rule, inputs, out, params)``: ``rule`` says how the
entry differentiates. Registry ops (:class:`engine.op.Op`) are their own
rules; computations that are not registry ops (a variable read, a call of a
compiled function, a custom-gradient function) record a :class:`TapeRule`.
Both have the fields ``name``, ``multiple_results``, ``vjp``, ``vjp_needs`` and ``rules``.

Modes never record: :func:`engine.modes.apply` (and every op function) records
each op call, and :func:`engine.modes.read_variable` each variable read, so a
new mode gets tapes for free. The tape stack lives in a context variable, so
each thread (and each asyncio task) has its own.

Example:
    >>> import engine as en
    >>> from engine.recording import active_tapes
    >>> with en.GradientTape() as tape:
    ...     active_tapes() == (tape,)
    True
"""
import contextlib
import contextvars
import types
from typing import Any

from . import dtypes
from .errors import NotDifferentiableError

# The active tapes, innermost last: engine.autodiff.tape.GradientTape objects. Any: this
# module appends to their private entry lists, which a tape drops (None) only after its
# gradient, when it is no longer active.
_TAPES: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("engine_tapes",
                                                                          default=())
_FLOATS = dtypes.FLOATS
_COMPLEX = dtypes.COMPLEX

#: ``active_tapes()``: the tapes recording now, innermost last (``()`` when none).
#: The bound ``ContextVar.get`` itself, since hot paths call it once per op.
active_tapes = _TAPES.get


class TapeRule:
    """How a recorded computation that is not a registry op differentiates.

    ``vjp(g, out, *inputs, **params)`` returns one cotangent (or ``None``) per
    input, as an op's VJP does; ``g`` and ``out`` are tuples when
    ``multiple_results``. With ``vjp_needs`` it also takes ``needs=`` (one bool
    per input) and may skip inputs that need no gradient.

    Example:
        >>> rule = TapeRule("double", lambda g, out, x: (g * 2.0,))
        >>> rule.name, rule.multiple_results
        ('double', False)
    """

    __slots__ = ("name", "vjp", "multiple_results", "vjp_needs")
    # An op's rules that the tape reads (engine/op.py): a tape rule declares none.
    rules: types.MappingProxyType[str, Any] = types.MappingProxyType({})

    def __init__(self, name, vjp, multiple_results=False, vjp_needs=False):
        self.name = name
        self.vjp = vjp
        self.multiple_results = multiple_results
        self.vjp_needs = vjp_needs

    def __repr__(self):
        return f"<tape rule {self.name}>"


#: The rule of a variable read: the cotangent of the value goes to the variable.
READ_VARIABLE = TapeRule("read_variable", lambda g, out, var: (g,))


def push_tape(tape):
    """Make ``tape`` the innermost active tape; returns the token for :func:`pop_tape`."""
    return _TAPES.set(_TAPES.get() + (tape,))


def pop_tape(token):
    """Undo the :func:`push_tape` that returned ``token``."""
    _TAPES.reset(token)


@contextlib.contextmanager
def no_tapes():
    """Run a block with no active tape (a trace: outer tapes must not see traced tensors)."""
    token = _TAPES.set(())
    try:
        yield
    finally:
        _TAPES.reset(token)


@contextlib.contextmanager
def paused(tapes):
    """Stop ``tapes`` recording within the block (each as it was afterwards)."""
    saved = [t._recording for t in tapes]
    for t in tapes:
        t._recording = False
    try:
        yield
    finally:
        for t, was in zip(tapes, saved):
            t._recording = was


def record(rule, inputs, out, params, tapes=None):
    """Record a computation on every active tape that watches one of its inputs.

    ``rule`` is an ``Op`` or a :class:`TapeRule`; ``inputs`` are the tensors it
    was given (as the mode lifted them), ``out`` its result (a tuple when
    ``rule.multiple_results``). Results that are not floating point carry no
    gradient: a computation with no floating-point result is not recorded.
    ``tapes`` are the active tapes, when the caller has them at hand.
    """
    for tape in tapes or _TAPES.get():
        if not tape._recording:
            continue
        watched = tape._watched
        for x in inputs:
            if id(x) in watched:
                break
        else:
            continue
        if not rule.multiple_results:
            if out.dtype in _FLOATS:        # the common case, kept cheap
                tape._entries.append((rule, inputs, out, params))
                watched[id(out)] = out
            elif out.dtype in _COMPLEX:
                _record_complex(tape, rule, inputs, out, params)
            continue
        floats = [o for o in out if o.dtype in _FLOATS]
        if not floats:
            continue
        tape._entries.append((rule, inputs, out, params))
        for o in floats:
            watched[id(o)] = o


def has_complex_vjp(rule):
    """Whether ``rule``'s VJP holds for complex values (JAX's convention; the
    ``complex_vjp`` rule kind of :data:`engine.op.RULE_KINDS`)."""
    rules = getattr(rule, "rules", None)
    return bool(rules and rules.get("complex_vjp"))


def complex_refusal(name):
    """The error for a gradient asked through complex values of an op without a complex VJP."""
    return NotDifferentiableError(
        f"{name}: a gradient was requested through complex values, and this op has no "
        f"complex gradient (gradients flow through complex values along the FFT ops, real, "
        f"imag, conj and the arithmetic that declares complex_vjp)")


class _NoComplexGradient(TapeRule):
    """The rule of an op without a complex VJP that made a complex value from a watched
    one: a gradient that reaches it raises, naming the op where the values first became
    complex without one (dropping the path would give a silently wrong derivative)."""

    __slots__ = ("origin",)

    def __init__(self, rule, origin):
        def vjp(g, out, *inputs, **params):
            if origin is None:
                raise complex_refusal(rule.name)
            via = "" if origin == rule.name else f", reached through {rule.name}"
            raise NotDifferentiableError(
                f"{origin}: a gradient was requested through the complex values it made "
                f"from a real input{via}; gradients flow through real floating dtypes and "
                f"through complex values along ops that declare complex_vjp only")
        super().__init__(rule.name, vjp)
        self.origin = origin


def _record_complex(tape, rule, inputs, out, params):
    if has_complex_vjp(rule):     # fft, real, imag, conj, arithmetic: carry complex cotangents
        tape._entries.append((rule, inputs, out, params))
        tape._watched[id(out)] = out
        return
    origin = rule.name
    for x in inputs:   # a complex input: name the op that made it complex
        if id(x) in tape._watched and x.dtype in _COMPLEX:
            origin = None          # made by an op with a complex VJP: refuse this op itself
            for entry in reversed(tape._entries):
                if entry[2] is x and isinstance(entry[0], _NoComplexGradient):
                    origin = entry[0].origin
                    break
            break
    tape._entries.append((_NoComplexGradient(rule, origin), inputs, out, params))
    tape._watched[id(out)] = out


def watch_variable_read(var, value):
    """Record that ``var`` was read as ``value``; tapes watch trainable variables by themselves."""
    for tape in _TAPES.get():
        if not tape._recording:
            continue
        watched = tape._watched
        if id(var) not in watched:
            if not (var.trainable and tape._watch_accessed_variables
                    and value.dtype in _FLOATS):
                continue
            watched[id(var)] = var
            tape._variables.append(var)
        tape._entries.append((READ_VARIABLE, (var,), value, {}))
        watched[id(value)] = value
