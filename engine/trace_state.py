"""Python state a trace depends on besides its arguments: the guards of ``en.function``.

A traced function bakes in Python values its arguments do not carry: a module's
``training`` flag, a Dropout's ``rate``, a GELU's ``approximate``. A trace is only
right while they keep the values they had when it was made. An object holding such
state calls :func:`depend_on` when it is used; ``en.function`` collects the objects a
trace used (:func:`collecting`), keys the trace on their :func:`state_of` as well as
on its arguments, and looks again only after :func:`version` moved (an object calls
:func:`changed` when its state is set), so a call costs one integer compare when
nothing changed. This is torch.compile's guards on module attributes, in small.

An object takes part by defining ``_trace_state()`` (a hashable snapshot of the values
that can change what it computes) and ``_trace_label()`` (how a retrace log names it).

Example:
    >>> from engine import trace_state
    >>> class Flag:
    ...     def __init__(self): self.on = True
    ...     def _trace_state(self): return (("on", self.on),)
    ...     def _trace_label(self): return "Flag"
    >>> flag = Flag()
    >>> with trace_state.collecting() as used:
    ...     trace_state.depend_on(flag)
    >>> before = trace_state.state_of(used)
    >>> flag.on = False
    >>> trace_state.describe_change(used, before, trace_state.state_of(used))
    'Flag: on changed from True to False'
"""
import contextlib
import contextvars

# The objects the innermost trace has used so far ({id: object}), or None outside traces.
_used: contextvars.ContextVar[dict[int, object] | None] = contextvars.ContextVar(
    "engine_trace_state_used", default=None)
# Bumped whenever a guarded object's state is set: a cached trace is checked again
# only when this moved since its function last looked.
_version = [0]


def depend_on(obj):
    """Note that the trace being made (if any) computes with ``obj``'s current state."""
    used = _used.get()
    if used is not None:
        used.setdefault(id(obj), obj)


def changed():
    """Say that some guarded object's state was set (it may differ from what a trace saw)."""
    _version[0] += 1


def version():
    """A number that moves whenever a guarded object's state is set."""
    return _version[0]


@contextlib.contextmanager
def collecting():
    """Collect the objects used while the block runs, in first-use order (a list,
    filled when the block ends). An enclosing collection sees them too: an inner trace
    made while an outer one runs is part of the outer graph."""
    outer = _used.get()
    used: dict[int, object] = {}
    token = _used.set(used)
    found: list[object] = []
    try:
        yield found
    finally:
        _used.reset(token)
        found.extend(used.values())
        if outer is not None:
            for key, obj in used.items():
                outer.setdefault(key, obj)


def state_of(objects):
    """The current state of ``objects``: a hashable tuple, one entry per object."""
    return tuple(obj._trace_state() for obj in objects)


def describe_change(objects, old, new):
    """Which object's state differs between two :func:`state_of` results, for a retrace log."""
    for obj, a, b in zip(objects, old, new):
        if a != b:
            before, after = dict(a), dict(b)
            for name in sorted(set(before) | set(after), key=str):
                if before.get(name, _MISSING) != after.get(name, _MISSING):
                    return (f"{obj._trace_label()}: {name} changed from "
                            f"{_show(before.get(name, _MISSING))} to {_show(after.get(name, _MISSING))}")
            return f"{obj._trace_label()}: its state changed"
    return "the modules it uses changed"


_MISSING = object()


def _show(value):
    return "(unset)" if value is _MISSING else repr(value)
