"""Measuring the memory a call allocates, for tests that bound what a loader may use."""
import tracemalloc


def peak_bytes(fn):
    """The peak of Python-traced allocations while ``fn()`` runs, above what was live before.

    Example:
        >>> peak_bytes(lambda: bytearray(1 << 20)) >= 1 << 20
        True
    """
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
