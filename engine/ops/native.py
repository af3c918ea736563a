"""Native kernels that window ops (convolution, pooling) use where a lowering supplies them.

The op kernels in ``conv.py`` and ``pooling.py`` are numpy; a few of their loops
(max pooling's window search, col2im's adds) run their inner
loops only C channels long in numpy, where compiled code does one pass over
memory. The core cannot import the lowerings (they sit above it), so a lowering
that can build such kernels fills :data:`KERNELS` when it is imported
(``graph/lowering/c/c_window.py``; the facade makes the first look-up import it),
and an op asks :func:`kernel` for one at run
time: None where none is registered, where ``en.config.lowering`` rules compiled
code out ("numpy"), under ``en.config.numerics = "bitwise"`` (the numpy kernels'
order of sums is the one eager mode promises there), or for a dtype the kernel
lacks. A kernel that fails to build says so once and is dropped: the numpy
kernel runs.

Example:
    >>> import numpy as np
    >>> kernel("no_such_kernel", np.float32) is None
    True
"""
from collections.abc import Callable
from typing import Any

import numpy as np

from ..config import config
from ..numerics import bitwise

# name -> {dtype: callable}; filled by a lowering (graph/lowering/c/c_window.py).
KERNELS: dict[str, dict[np.dtype, Callable[..., Any]]] = {}
# Lowerings under which native kernels run ("numpy" keeps every kernel numpy's).
_NATIVE_LOWERINGS = ("auto", "c")
# What imports the lowering that fills KERNELS, set by the facade (engine/__init__.py):
# graph mode is imported on first use, so eager code meets it at its first window op.
_LOADER: list[Callable[[], Any]] = []


def set_loader(load):
    """Call ``load()`` (once) before the first kernel is looked up."""
    _LOADER[:] = [load]


def kernel(name, dtype):
    """The native kernel ``name`` for arrays of ``dtype``, or None (the numpy kernel runs).

    Example:
        >>> kernel("max_pool2d", np.int8) is None      # integers: numpy's kernel
        True
    """
    if kernel_lowering_off():
        return None
    load()
    return KERNELS.get(name, {}).get(np.dtype(dtype))


def kernel_lowering_off():
    """Whether native kernels (and threads split by them, ``batch_split``) are ruled out:
    ``en.config.lowering`` is "numpy", or numerics are bitwise."""
    return config.lowering not in _NATIVE_LOWERINGS or bitwise()


def load():
    """Import the lowering that registers native kernels (once)."""
    while _LOADER:
        _LOADER.pop()()


def register(name, dtype, fn):
    """Make ``fn`` the native kernel ``name`` for ``dtype``."""
    KERNELS.setdefault(name, {})[np.dtype(dtype)] = fn


def drop(name):
    """Forget every kernel ``name`` (it failed to build: the numpy kernel runs)."""
    KERNELS.pop(name, None)
