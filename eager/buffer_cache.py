"""A cache of large freed arrays for eager mode.

Each eager op returns a fresh array. For large arrays that costs more than
the arithmetic: the allocator maps new pages from the OS and the kernel faults
and zeroes each of them. Graph mode avoids it with planned buffers; eager mode
cannot plan, so instead it recycles: when a tensor holding a large array dies
and nothing else refers to that array (no view, no other tensor, no user
reference), the array goes into this cache, and the next op of a size that
matches (same shape and dtype) writes into it through its ``out_impl``.

Only arrays of at least ``en.config.cost.recycle_min_bytes`` take part, so small ops
pay nothing. That
is 128 KiB, glibc's default threshold for mapping memory straight from the OS:
arrays of a few hundred KiB churn too, and the allocator returns and re-faults
their pages. An eager autoencoder loss and gradient at batch 100 (arrays of
300-600 KiB) took 3.7 ms with 917 page faults per call when only arrays of
1 MiB and up were recycled, 2.15 ms with none at 128 KiB.

What it may hold: arrays of the ``en.config.eager_cache_shapes`` (8) shapes and
dtypes that eager ops asked for most recently, and at most
``en.config.eager_cache_bytes`` (2 GiB; 0 turns recycling off). A shape that
falls out of those 8 has its arrays dropped at once, so when shapes stop
recurring the memory goes back within 8 new shapes, and no shape nobody asks for
is kept. A loop needs few: every benchmark asks again for a shape before it has
asked for 3 others (a training step's batch activations, hidden activations and
weight gradients), so 8 is a margin of more than 2x. What stays in a steady loop
is one step's working set, memory the step needs at its peak anyway (1.6 GiB for
the autoencoder's loss and gradient at batch 60000, whose step spends 1.5 s more
in page faults without it).

Example:
    >>> import engine as en
    >>> en.config.eager_cache_bytes = 0          # no recycling
    >>> en.config.eager_cache_bytes = 2 << 30    # the default, 2 GiB
"""
import collections
import sys
import threading
import weakref
from typing import Any

import numpy as np

from engine.config import config
from engine.cost_model import cost
from engine.tensor import wrap

_lock = threading.Lock()
_free: dict[tuple[Any, ...], list[np.ndarray]] = {}   # (shape, dtype) -> [arrays]
_total = [0]
# The (shape, dtype)s eager ops asked for, least recently first: only these keep
# arrays (at most config.eager_cache_shapes of them).
_wanted: collections.OrderedDict[tuple[Any, ...], None] = collections.OrderedDict()


def take(shape, dtype):
    """A recycled array of this shape and dtype, or None.

    The pool keeps the arrays themselves, not byte views of them: the array
    handed out owns its memory, so when its tensor dies it is offered back
    again (a view would never be, and every buffer would serve once).
    Asking makes the shape the most recently wanted; the least recently wanted
    past ``en.config.eager_cache_shapes`` is dropped with its arrays.
    """
    key = (shape, dtype)
    with _lock:
        if key in _wanted:
            _wanted.move_to_end(key)
        else:
            _wanted[key] = None
            while len(_wanted) > max(0, config.eager_cache_shapes):
                _drop(_wanted.popitem(last=False)[0])
        pool = _free.get(key)
        if not pool:
            return None
        arr = pool.pop()
        _total[0] -= arr.nbytes
    return arr


def _drop(key):
    # Under _lock, so nothing here may allocate a container (a collection could run
    # the death callbacks, which take _lock). The arrays are freed with the list.
    pool = _free.pop(key, None)
    if pool:
        for a in pool:
            _total[0] -= a.nbytes


def _give(arr):
    # Only the death callback's own references may remain (counted once at
    # import by _calibrate). Any more means a view, another tensor or the user
    # still holds the array: then it must not be reused.
    if sys.getrefcount(arr) > _BASELINE:
        return
    # A variable's array is read-only (Variable._set), and a tensor assigned to a
    # variable shares it: a result cannot be written there.
    if not arr.flags.writeable:
        return
    nbytes = arr.nbytes
    limit = config.eager_cache_bytes
    key = (arr.shape, arr.dtype)
    new_pool: list[np.ndarray] = []     # made outside the lock: see _drop
    with _lock:
        if _total[0] + nbytes > limit or key not in _wanted:
            return
        _free.setdefault(key, new_pool).append(arr)
        _total[0] += nbytes


# Tensors whose array is offered back when they die: id(weakref) -> (weakref,
# array). A weak reference with a callback costs less than half of weakref.finalize,
# which matters at one per result of 128 KiB or more.
_pending: dict[int, tuple[Any, np.ndarray]] = {}


def _on_death(release):
    """A weakref callback that hands the dead tensor's array to ``release``."""
    def died(ref):
        entry = _pending.pop(id(ref), None)
        if entry is not None:
            release(entry[1])
    return died


_died = _on_death(_give)


def adopt(tensor, arr):
    """Offer ``arr`` to the cache when ``tensor`` dies (large, owning arrays only)."""
    if arr.nbytes >= cost.recycle_min_bytes and arr.flags.owndata and arr.flags.c_contiguous:
        ref = weakref.ref(tensor, _died)
        _pending[id(ref)] = (ref, arr)


def _calibrate():
    """The reference count an otherwise unreferenced array has inside ``_give``:
    measured through the same callback path, with a probe in its place."""
    seen = []

    def probe(arr):
        seen.append(sys.getrefcount(arr))

    # A real tensor: its slot may still hold the array while callbacks run.
    t = wrap(np.empty(1))
    ref = weakref.ref(t, _on_death(probe))
    _pending[id(ref)] = (ref, t._value)
    del t, ref
    return seen[0] if seen else 0     # 0: never recycle (unknown interpreter behaviour)


_BASELINE = _calibrate()


def clear():
    """Drop every cached array (returns their memory) and forget the wanted shapes."""
    with _lock:
        _free.clear()
        _wanted.clear()
        _total[0] = 0


def cached_bytes():
    return _total[0]
