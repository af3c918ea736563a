"""The tapes a write must respect: which live tapes hold entries, whether they refer to
a tensor's memory, and how their entries follow a tensor whose value a write replaced.

A tape records entries that name tensors by identity. A write replaces a tensor's value
in place, so the entries recorded before it must keep the old value (``redirect`` gives
them a clone holding it) and the write's own entry names the tensor as its result
(``adopt``). ``engine/writes.py`` (eager writes) and ``engine/traced_writes.py``
(functional writes) both go through here.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, 2.0])
    >>> with en.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * 1.0
    ...     y[0] = 0.0          # entries before the write keep y's old value
    ...     s = en.sum(y * x)
    >>> tape.gradient(s, x).tolist()
    [0.0, 4.0]
"""
from __future__ import annotations

import weakref

import numpy as np

from .errors import TracingError, format_location, user_frame

# Tapes that hold entries (a tape adds itself on entry): a write to memory one of them
# refers to takes the careful path. Weak: a tape that is dropped leaves by itself.
LIVE_TAPES: weakref.WeakSet = weakref.WeakSet()
# Its set of weak references: testing it is one C call (the WeakSet's own truth test runs
# Python code), and a dropped tape's reference leaves it by callback.
_LIVE: set = LIVE_TAPES.data   # type: ignore[attr-defined]  # (typeshed omits WeakSet.data)
#: The same set, for generated code that inlines the tests (graph/lowering/executor.py).
LIVE_TAPE_SET = _LIVE


def tapes_with_entries():
    """The live tapes that still hold entries (a spent non-persistent tape holds none)."""
    return [t for t in list(LIVE_TAPES) if t._entries is not None]


def on_a_tape(x, v):
    """Whether a live tape watches the value written, or refers to x's memory."""
    for tape in tapes_with_entries():
        if id(v) in tape._watched or id(x) in tape._watched or _refers_to(tape, x):
            return True
    return False


def _refers_to(tape, x):
    buf = x._value
    for entry in tape._entries:
        for t in tensors_of(entry):
            if t is x or shares(t, buf):
                return True
    return False


def tensors_of(entry):
    _, inputs, out, _ = entry
    yield from inputs
    if isinstance(out, tuple):
        yield from out
    else:
        yield out


def shares(t, buf):
    value = getattr(t, "_value", None)
    return type(value) is np.ndarray and value is not buf and np.shares_memory(value, buf)


def redirect(tape, x, old):
    """Entries recorded before the write refer to x's old value: make them refer to
    ``old``, which holds it (the backward pass keys cotangents by identity)."""
    entries = tape._entries
    for i in range(len(entries) - 1, -1, -1):
        rule, inputs, out, params = entries[i]
        hit = False
        if any(t is x for t in inputs):
            inputs = tuple(old if t is x else t for t in inputs)
            hit = True
        if out is x:
            out, hit = old, True
        elif isinstance(out, tuple) and any(t is x for t in out):
            out, hit = tuple(old if t is x else t for t in out), True
        if hit:
            entries[i] = (rule, inputs, out, params)
    watched = tape._watched
    if id(x) in watched:
        del watched[id(x)]
        watched[id(old)] = old


def adopt(tape, new, x):
    """The write's entry names ``new`` as its result: make it x (x now holds those values)."""
    entries = tape._entries
    for i in range(len(entries) - 1, -1, -1):
        rule, inputs, out, params = entries[i]
        if out is new:
            entries[i] = (rule, inputs, x, params)
            watched = tape._watched
            watched.pop(id(new), None)
            watched[id(x)] = x
            return


_STATE_SKIP = frozenset({"_alias", "_version", "__weakref__"})


def _state_slots(t):
    names: list[str] = []
    for cls in type(t).__mro__:
        names.extend(n for n in getattr(cls, "__slots__", ()) if n not in _STATE_SKIP)
    return names


def take_state(x, new):
    """x stands for new's value from now on. Tapes key cotangents by identity: entries
    made before refer to x's old value, so they get a clone holding it, and the entry
    that made ``new`` names x as its result."""
    if type(new) is not type(x):
        raise TracingError(
            f"x[index] = value at {format_location(user_frame())}: {x._describe()} cannot "
            f"hold the value written into it, a {new._describe()} of a transformation "
            "(en.jvp / en.vmap) that x does not belong to (x was made without the "
            "transformed inputs, e.g. by en.zeros): write the functional form "
            "x = en.index_update(x, index, value) instead")
    tapes = tapes_with_entries()
    if tapes:
        old = object.__new__(type(x))
        old._alias = None         # (every tensor has the slot: the fast paths read it)
        for name in _state_slots(x):
            if hasattr(x, name):
                setattr(old, name, getattr(x, name))
        for tape in tapes:
            redirect(tape, x, old)
    for name in _state_slots(x):
        if hasattr(new, name):
            setattr(x, name, getattr(new, name))
    for tape in tapes:
        adopt(tape, new, x)
