"""Variable state inside a scan body under ``vmap(grad(...))`` in a graph.

The tape entry of a vmapped scan (batching_loops.py) differentiates by running the
body again in its backward pass. A body that writes a variable (an ``en.Variable``
assign, or a stateful draw: ``en.random.uniform(shape)`` reads the generator's key
and adds one to its counter) would then see the state as it is after the forward
pass, draw other numbers, and write again. So the forward pass logs, step by step,
the values it reads from the variables it writes (:class:`StateLog`; the scan stacks
them as extra results), and the backward pass serves those values back and skips the
writes (:func:`replaying`). Draws from an explicit key need nothing: the same key
gives the same numbers.

The rule under ``vmap`` is eager mode's: the variables are not batched, so a write
of an unbatched value happens once per step for the whole batch, and a stateful draw
is one draw that every example sees (a batched value cannot be written: vmap refuses
it). For numbers of their own per example, pass a key per example
(``en.random.uniform_from_key(keys[b], shape)`` under ``vmap`` over ``keys``).

Example:
    >>> import engine as en
    >>> log = StateLog()
    >>> v = en.Variable(1.0, name="v")
    >>> log.write(v); log.read(v, en.tensor(1.0)); [var.name for var, _ in log.kept()]
    ['v']
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Any

from ..errors import EngineError


class StateLog:
    """The variable reads of one trace of a scan body, in order, and what it writes.

    ``nested`` holds the variables read or written inside a construct nested in the
    body (a ``cond``, a loop): their values live in that construct's own trace, which
    the scan cannot return, so a body that writes one of them is refused."""

    __slots__ = ("reads", "written", "nested")

    def __init__(self):
        self.reads: list[tuple[Any, Any]] = []
        self.written: dict[int, Any] = {}
        self.nested: dict[int, Any] = {}

    def read(self, var, value):
        self.reads.append((var, value))

    def write(self, var):
        self.written[id(var)] = var

    def kept(self):
        """``(variable, value)`` for each read of a variable the body writes, in order:
        what the backward pass must see again."""
        return [(var, value) for var, value in self.reads if id(var) in self.written]

    def nested_write(self):
        """A variable the body writes and a nested construct reads or writes, or None."""
        return next((var for i, var in self.nested.items() if i in self.written), None)


class Replay:
    """The logged reads of one step, served in the order the forward pass made them."""

    __slots__ = ("variables", "values", "ids", "next")

    def __init__(self, written, variables, values):
        self.ids = {id(v) for v in written}
        self.variables = list(variables)   # the variable of each logged read
        self.values = list(values)
        self.next = 0

    def serves(self, var):
        """Whether ``var`` is one the forward pass wrote (its reads and writes replay)."""
        return id(var) in self.ids

    def read(self, var):
        k = self.next
        if k >= len(self.variables) or self.variables[k] is not var:
            raise EngineError(
                f"vmap(grad) of a scan: the body read variable {var.name!r} in another order "
                f"in its backward pass than in its forward pass (a Python branch on state "
                f"outside the engine?); compute the gradient with grad(vmap(f)) instead")
        self.next = k + 1
        return self.values[k]


_REPLAY: contextvars.ContextVar[Replay | None] = contextvars.ContextVar(
    "vmap_scan_state_replay", default=None)


def current_replay():
    """The :class:`Replay` of the body step being differentiated now, or None."""
    return _REPLAY.get()


@contextlib.contextmanager
def replaying(written, variables, values):
    """Run a scan body's step again with the reads of the ``written`` variables giving
    ``values`` (the forward pass's reads of ``variables``, in order) and their writes
    skipped (the forward pass made them)."""
    if not written:   # nothing to serve: an enclosing step's replay stays
        yield
        return
    token = _REPLAY.set(Replay(written, variables, values))
    try:
        yield
    finally:
        _REPLAY.reset(token)
