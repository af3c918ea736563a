"""Ignoring float overflow inside a kernel for less than ``np.errstate`` costs.

``with np.errstate(over="ignore")`` costs about 2 us a use (it builds the error
state anew each time): on a (32, 64) float32 sigmoid, four ufunc calls of about
1.2 us each, that is a third of the kernel. numpy 2 keeps the error state in a
context variable; the state with overflow ignored is made once for the caller's
state and set and reset around the kernel (about 0.4 us). The caller's other
settings (``divide="raise"``, ...) hold inside, and its own state comes back after.
Where numpy keeps the state elsewhere (numpy 1.26), ``np.errstate`` does the same.

Example:
    >>> import numpy as np
    >>> token = ignore_overflow()
    >>> try:
    ...     big = np.exp(np.float32(100))       # inf, without a warning
    ... finally:
    ...     restore(token)
    >>> float(big)
    inf
"""
import numpy as np

try:
    # numpy's private error-state names: not in its type stubs.
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar, _make_extobj)
except ImportError:     # numpy 1.x: no context variable
    _extobj_contextvar = _make_extobj = None

# (the caller's error state, the same with overflow ignored): one entry, which a
# caller in another state replaces (it holds a reference, so identity is safe).
_last = (None, None)


def ignore_overflow():
    """Ignore float overflow from now on in this context; returns the token for
    :func:`restore`, which must follow (in a ``finally``)."""
    global _last
    if _extobj_contextvar is None:
        state = np.errstate(over="ignore")
        state.__enter__()
        return state
    current = _extobj_contextvar.get()
    cached = _last
    if cached[0] is not current:
        cached = _last = (current, _make_extobj(over="ignore"))
    return _extobj_contextvar.set(cached[1])


def restore(token):
    """Bring back the error state :func:`ignore_overflow` replaced."""
    if _extobj_contextvar is None:
        token.__exit__(None, None, None)
    else:
        _extobj_contextvar.reset(token)


def exp_of_negated(x, out):
    """``exp(-x)`` into ``out`` with its overflow to inf ignored: the first step of
    sigmoid and silu, whose results take the right limit from that inf."""
    token = ignore_overflow()
    try:
        np.negative(x, out=out)
        return np.exp(out, out=out)
    finally:
        restore(token)
