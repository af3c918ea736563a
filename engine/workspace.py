"""Scratch memory for kernels that need a large temporary (im2col patches).

A convolution lowered to one matrix product first copies its input windows
into a (pixels, KH*KW*C) matrix that lives only for the duration of the
kernel. Allocating it afresh each call costs more than the copy itself: a
buffer of this size comes straight from the OS, and the kernel faults and
zeroes every page (about 21 ms against 10 ms for the copy, for a 150 MB patch
matrix on the benchmark machine). So each thread keeps one scratch buffer,
grown to the largest size asked for, and kernels borrow it.

The scratch never escapes a kernel: it is for values that die before the
kernel returns. A kernel that borrows it while it is already borrowed (on
the same thread) gets a fresh array instead, and so does a request larger
than ``en.config.workspace_bytes`` (0 turns the scratch off).
``release()`` gives the memory back.

Example:
    >>> import numpy as np
    >>> from engine import workspace
    >>> with workspace.borrow((2, 3), np.float32) as tmp:
    ...     tmp[...] = 1.0
    ...     float(tmp.sum())
    6.0
"""
import contextlib
import threading

import numpy as np

from .config import config

_local = threading.local()


@contextlib.contextmanager
def borrow(shape, dtype):
    """An uninitialised array of ``shape`` and ``dtype``, valid inside the ``with``."""
    dtype = np.dtype(dtype)
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if getattr(_local, "busy", False) or need > config.workspace_bytes:
        yield np.empty(shape, dtype)
        return
    raw = getattr(_local, "raw", None)
    if raw is None or raw.nbytes < need:
        _local.raw = None              # drop the old buffer before growing
        raw = _local.raw = np.empty(need, np.uint8)
    _local.busy = True
    try:
        yield raw[:need].view(dtype).reshape(shape)
    finally:
        _local.busy = False


def held_bytes():
    """Bytes of scratch this thread holds."""
    raw = getattr(_local, "raw", None)
    return 0 if raw is None else raw.nbytes


def release():
    """Give this thread's scratch memory back."""
    _local.raw = None
