"""The C fast paths of ``x[index] = v`` and ``x op= y`` on eager tensors, when built.

engine/writes.py describes the writes and holds their fast paths in Python. A Python
``__setitem__`` costs a frame per write, already 1.8x numpy's own ``a[i] = v`` on a small
array, so the package builds the same fast paths as a C extension
(``engine/_fast_writes.c``, compiled by ``pip install`` when a C compiler is present,
optional otherwise): its class ``Writable`` is the first base of ``Tensor``, whose
``x[index] = v`` and ``x += y`` (``-=``, ``*=``, ``/=``, ``&=``, ``|=``, ``^=``, ``<<=``,
``>>=``) are then its type slots. They take the cases the Python fast paths take, in
numpy's own statement, and call the Python functions for everything else, so the results
and errors are the same with or without the extension (tests/core/test_write_fast_paths.py
runs every case both ways).

Example:
    >>> import engine as en
    >>> from engine import fast_writes
    >>> x = en.zeros(3)
    >>> x[1] = 2.0           # the C slot when built, engine/writes.py's setitem otherwise
    >>> x.tolist()
    [0.0, 2.0, 0.0]
    >>> fast_writes.BUILT in (True, False)
    True
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

try:
    from . import _fast_writes as _native
except ImportError:        # built without a C compiler: the Python fast paths serve
    _native = None

#: Whether the C extension was built and is in use.
BUILT: bool = _native is not None

#: The bases ``Tensor`` puts before its Python ones: the C class when built.
BASES: tuple[Any, ...] = (_native.Writable,) if _native is not None else ()

#: The in-place operators the C class implements (the others stay Python methods).
C_IN_PLACE: frozenset[str] = frozenset({"add", "sub", "mul", "truediv", "and", "or", "xor",
                                        "lshift", "rshift"}) if BUILT else frozenset()


def arm(tensor_class, *, live_tapes, mode_var, basic_types, refused, setitem,
        checked_setitem, refuse_delete, bump, in_place_methods, checked_in_place):
    """Hand the C slots what they read; called once by engine/writes.py when ``Tensor``
    is bound. ``live_tapes`` is the set that is empty when no tape holds entries,
    ``mode_var`` the context variable of the pushed mode, ``basic_types`` the index item
    types numpy checks in full, ``refused`` numpy's exceptions for a write it refuses
    before writing; the functions are engine/writes.py's paths the slots fall back to:
    ``in_place_methods`` maps an operator's name ("add") to its Python ``x op= y`` (used
    while :func:`python_writes` is on), ``checked_in_place(x, name, other)`` is the
    checked path of a write the slot does not take."""
    if _native is None:
        return
    slots = tensor_class.__dict__
    _native.bind(tensor_class, slots["_value"], slots["_dtype"], slots["_shape"],
                 slots["_alias"], live_tapes, mode_var, np.dtype(bool), tuple(basic_types),
                 tuple(refused), setitem, checked_setitem, refuse_delete, bump,
                 dict(in_place_methods), checked_in_place)


@contextlib.contextmanager
def python_writes():
    """Within the block every write takes engine/writes.py's Python functions, as
    without the extension (tests compare the two paths).

    Example:
        >>> import engine as en
        >>> from engine.fast_writes import python_writes
        >>> x = en.zeros(2)
        >>> with python_writes():
        ...     x[0] = 1.0
        >>> x.tolist()
        [1.0, 0.0]
    """
    if _native is None:
        yield
        return
    was = _native.set_enabled(False)
    try:
        yield
    finally:
        _native.set_enabled(was)
