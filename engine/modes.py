"""The mode protocol, the mode stack and the single entry point :func:`apply`.

Every op call in every mode goes through ``apply(op, *inputs, **params)``
(the op functions ``en.add``, ``en.matmul``, ... are made by
:func:`op_function` and do the same), which hands the call to the current
mode and records it on the active gradient tapes. A mode is an object
following :class:`Mode`: eager execution (``eager.EagerMode``) and graph
tracing (``graph.jit.tracer.TraceMode``) are the two. The core never imports
them: the public facade (``engine/__init__.py``) registers the eager mode as
the default with :func:`set_default_mode`, and a tracer pushes its mode with
:func:`use_mode`. The current mode lives in a context variable, so each thread
(and each asyncio task) has its own.

Code outside a mode asks the mode, never which mode it is:
``current_mode().is_concrete`` (do values exist now?), ``current_mode().cond``
(branch on a tensor), ``current_mode().lift`` (tensors of this mode).

Example:
    >>> import engine as en
    >>> en.apply(en.ops.add_op, en.tensor(1.0), 2.0)
    tensor(3., shape=(), dtype=float64)
    >>> current_mode().is_concrete
    True
"""
from __future__ import annotations

import abc
import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .errors import ArgumentTypeError, DTypeError
from .lifting import lift_error
from .recording import active_tapes, record, watch_variable_read

if TYPE_CHECKING:
    from .op import Op


class Mode(abc.ABC):
    """What a mode provides. :func:`apply` and the op functions dispatch to it.

    Attributes:
        name: a short label for messages ("eager", "trace"); never test it.
        is_concrete: ``True`` when the tensors this mode makes hold values now
            (eager), ``False`` when they stand for values computed later (a
            graph being traced, a transformation). Code that needs a value (a
            Python ``if``, a numpy shortcut) asks this instead of the mode's type.
        value_type: a class whose instances ``lift`` always keeps as they are
            (or rejects), so a recorded call need not lift them first; ``None``
            when there is none. A speed hint for the op functions under a tape.

    A mode never touches gradient tapes: :func:`apply` records each op call
    on them (with the tensors ``lift`` made) and :func:`read_variable` each
    variable read.
    """

    name: str | None = None
    is_concrete: bool | None = None
    value_type: type | None = None
    #: True for a mode that transforms the computation it runs (forward mode, vmap):
    #: ``while_loop`` and ``scan`` then run as Python loops of its ops, and compiled
    #: functions run inline, so every op passes through the transformation.
    transforms: bool = False

    def stage_while_loop(self, cond_fn: Callable[..., Any], body_fn: Callable[..., Any],
                         loop_vars: Any, stage: Callable[..., Any]) -> Any:
        """A transformation's ``while_loop`` whose condition is known only at run time
        (inside a trace): the loop staged through ``stage`` (``en.while_loop``) in the
        parent mode. ``NotImplemented`` where the mode cannot; the loop then runs as a
        Python loop, which needs a concrete condition."""
        return NotImplemented

    def stage_scan(self, fn: Callable[..., Any], init: Any, xs: Any, length: Any,
                   reverse: bool, stage: Callable[..., Any]) -> Any:
        """A transformation's ``scan`` inside a trace: one loop staged through ``stage``
        (``en.scan``) in the parent mode, its body the transformed ``fn`` (so no
        transformation unrolls a scan). ``NotImplemented`` where the mode cannot; the
        scan then runs as a Python loop of the mode's ops."""
        return NotImplemented

    def call_custom_jvp(self, fun: Callable[..., Any], rule: Any, args: Sequence[Any]) -> Any:
        """Call ``fun(*args)``, a function with the forward rule ``rule`` (``en.custom_jvp``);
        forward mode overrides this to apply ``rule`` to the tangents instead."""
        return fun(*args)

    @abc.abstractmethod
    def lift(self, args: Sequence[Any]) -> list[Any]:
        """The op arguments ``args`` (tensors, variables, arrays, Python scalars) as a
        list of tensors of this mode; tensors already of this mode are kept as they are.
        Python scalars are weakly typed against the other arguments; variables are
        read with :func:`read_variable` (so tapes see the read)."""

    @abc.abstractmethod
    def apply(self, op: Op, args: Sequence[Any], params: dict[str, Any]) -> Any:
        """Run (or stage) ``op`` on ``args`` (lifted here when needed) with keyword
        ``params``; return the result tensor (a tuple for ``op.multiple_results``).
        Bad input raises the op's shape or dtype error naming the user's line."""

    @abc.abstractmethod
    def read_variable(self, var: Any) -> Any:
        """The current value of ``var`` as a tensor of this mode (no tape bookkeeping:
        call :func:`read_variable` to read a variable)."""

    @abc.abstractmethod
    def assign_variable(self, var: Any, value: Any, kind: str, indices: Any = None) -> Any:
        """Validate, then write ``var``: ``kind`` is ``"assign"``, ``"assign_add"``,
        ``"assign_sub"`` or ``"scatter_update"`` (rows ``indices``). Returns ``var``."""

    @abc.abstractmethod
    def cond(self, pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any],
             *operands: Any) -> Any:
        """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``: a Python
        ``if`` where values are concrete, both branches staged where they are not."""


_MODE: contextvars.ContextVar[Mode] = contextvars.ContextVar("engine_mode")
# The mode used where none is pushed: registered by the facade (engine/__init__.py) when
# ``engine`` is imported, so it is a Mode wherever a mode is asked for.
_default: Mode = None  # type: ignore[assignment]

#: ``pushed_mode(default)``: the mode pushed by :func:`use_mode` in this context, or
#: ``default`` when none is (the bound ``ContextVar.get``, for hot paths:
#: ``pushed_mode(None) is None`` means "the default mode").
pushed_mode = _MODE.get


def set_default_mode(mode: Mode) -> None:
    """Make ``mode`` the mode used wherever none is pushed (the facade registers eager)."""
    global _default
    if not isinstance(mode, Mode):
        raise ArgumentTypeError(f"set_default_mode: {mode!r} does not implement engine.modes.Mode")
    _default = mode


def default_mode() -> Mode:
    """The mode used wherever none is pushed (eager execution)."""
    return _default


def current_mode() -> Mode:
    """The mode that ``apply`` dispatches to now."""
    return _MODE.get(_default)


@contextlib.contextmanager
def use_mode(mode: Mode) -> Iterator[Mode]:
    """Run a block with ``mode`` as the current mode (restored afterwards)."""
    token = _MODE.set(mode)
    try:
        yield mode
    finally:
        _MODE.reset(token)


def apply(op: Op, *inputs: Any, **params: Any) -> Any:
    """Run ``op`` on ``inputs`` in the current mode and return its result.

    Inputs may be tensors, variables, numpy arrays or Python scalars
    (scalars are weakly typed). Under active tapes the call is recorded.
    """
    if active_tapes():
        return _apply_recorded(op, inputs, params)
    return _MODE.get(_default).apply(op, inputs, params)


def op_function(op: Op) -> Callable[..., Any]:
    """The public function ``f(*inputs, **params)`` for ``op``: :func:`apply`, inlined
    (this wrapper runs for every op call, in every mode)."""
    get_mode = _MODE.get

    def f(*inputs, **params):
        mode = get_mode(_default)
        tapes = active_tapes()
        if tapes:   # _apply_recorded, inlined
            kept = mode.value_type
            args: Sequence[Any] = inputs
            for a in inputs:
                if type(a) is not kept:
                    args = mode.lift(inputs)
                    break
            out = mode.apply(op, args, params)
            record(op, args, out, params, tapes)
            return out
        return mode.apply(op, inputs, params)
    f.__name__ = op.name
    f.__qualname__ = op.name
    f.__doc__ = op.doc
    return f


def _apply_recorded(op, inputs, params):
    """``apply`` under active tapes: the entry holds the tensors the mode lifted."""
    mode = _MODE.get(_default)
    kept = mode.value_type
    for a in inputs:
        if type(a) is not kept:
            try:
                inputs = mode.lift(inputs)
            except (DTypeError, OverflowError) as err:   # named as the modes' own apply names it
                raise lift_error(op, inputs, err) from None
            break
    out = mode.apply(op, inputs, params)
    record(op, inputs, out, params)
    return out


def read_variable(var: Any, mode: Mode | None = None) -> Any:
    """``var``'s current value as a tensor of ``mode`` (the current one by default),
    recorded on the active tapes; what ``var.read()`` does."""
    t = (mode or _MODE.get(_default)).read_variable(var)
    if active_tapes():
        watch_variable_read(var, t)
    return t
