"""Steady memory allocation for the benchmark process (glibc only).

glibc's ``malloc`` adapts as a program runs: blocks above a moving threshold
are ``mmap``-ed and unmapped when freed, and free memory at the top of the
heap is handed back to the system once it passes a second threshold. A loop
that makes and frees arrays of a few megabytes each iteration (the numpy
L-BFGS loop at batch 1000 makes ~13 MB of temporaries per iteration) can then
take its memory back from the system every iteration: each fresh page is a
page fault. Whether that happens depends on what ran earlier in the process,
so the same loop measured 11.3 ms per iteration in one process and 19.0 ms in
another (3300 page faults per iteration).

:func:`steady_malloc` fixes both thresholds (``mallopt``): blocks up to 32 MiB
come from the heap and the heap is never trimmed, so after warm-up no mode
pays page faults for memory it frees and makes again, whatever ran before it.
Arrays above 32 MiB are still mapped fresh each time (glibc's limit), which is
part of what a loop making such temporaries costs. The runner calls it before
any workload unless ``--default-malloc`` is given; the result files record
which was used.

Example:
    >>> steady_malloc()     # doctest: +SKIP
    'glibc: mmap threshold 32 MiB, no trimming'
"""
import ctypes
import ctypes.util
import gc
import platform

# mallopt parameters, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20      # glibc's largest allowed value on 64-bit systems
_NO_TRIM = (1 << 31) - 1        # mallopt takes an int


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def steady_malloc():
    """Fix glibc's mmap and trim thresholds; returns a line saying what was done."""
    if platform.libc_ver()[0] != "glibc":
        return "unchanged (not glibc)"
    try:
        libc = _libc()
        ok = (libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and
              libc.mallopt(_M_TRIM_THRESHOLD, _NO_TRIM) == 1)
    except (OSError, AttributeError) as err:
        return f"unchanged (mallopt unavailable: {err})"
    if not ok:
        return "unchanged (mallopt refused)"
    return f"glibc: mmap threshold {MMAP_THRESHOLD >> 20} MiB, no trimming"


def release_memory():
    """Hand back what the last configuration left: the eager buffer cache's arrays,
    unreachable objects (a mode's compiled function and its buffers), and the free
    part of the heap, which the fixed thresholds never trim by themselves. The
    runner calls it between configurations (never inside one, where it would cost
    the next call page faults), so the run's peak memory is its largest
    configuration's, not the sum of what every workload left cached."""
    from engine.eager import buffer_cache
    buffer_cache.clear()
    gc.collect()
    if platform.libc_ver()[0] == "glibc":
        try:
            _libc().malloc_trim(0)
        except (OSError, AttributeError):
            pass

