"""The mode stack and the single entry point :func:`apply`.

Every op call in every mode goes through ``apply(op, *inputs, **params)``,
which hands the call to the current mode (eager execution, or graph tracing).
The current mode and the active gradient tapes live in context variables, so
each thread (and each asyncio task) has its own.

Example:
    >>> import engine as en
    >>> en.apply(en.ops.add_op, en.tensor(1.0), 2.0)
    tensor(3., shape=(), dtype=float64)
"""
import contextlib
import contextvars

_MODE = contextvars.ContextVar("engine_mode")
_DEFAULT_MODE = [None]   # set by eager.mode when it is imported


def current_mode():
    """The mode that ``apply`` dispatches to now."""
    return _MODE.get(_DEFAULT_MODE[0])


def set_default_mode(mode):
    _DEFAULT_MODE[0] = mode


@contextlib.contextmanager
def use_mode(mode):
    """Run a block with ``mode`` as the current mode (restored afterwards)."""
    token = _MODE.set(mode)
    try:
        yield mode
    finally:
        _MODE.reset(token)


def apply(op, *inputs, **params):
    """Run ``op`` on ``inputs`` in the current mode and return its result.

    Inputs may be tensors, variables, numpy arrays or Python scalars
    (scalars are weakly typed).
    """
    return _MODE.get(_DEFAULT_MODE[0]).apply(op, inputs, params)
