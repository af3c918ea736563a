"""Window kernels split over their images on this thread, in order, for the tests of the
split paths (``engine/ops/batch_split.py``): the chunks then run the same way on any
machine, loaded or not.

Example:
    >>> import pytest
    >>> with pytest.MonkeyPatch.context() as mp, chunks_in_order(mp) as calls:
    ...     [sum(chunk) for chunk in batch_split.run(6, 1, lambda lo, hi: range(lo, hi))]
    [1, 5, 9]
    >>> calls
    [3]
"""
import contextlib

import engine as en
from engine.ops import batch_split


@contextlib.contextmanager
def chunks_in_order(monkeypatch, chunks=3):
    """Split every window kernel into ``chunks`` chunks of images (a runner that offers
    two threads) and run them in order on this thread; yields the list of chunk counts
    the runner was asked for."""
    calls = []

    def in_order(fn, n, count):
        calls.append(n)
        return [fn(k) for k in range(n)]
    monkeypatch.setattr(batch_split, "RUNNERS", [(lambda blas=True: 2, in_order)])
    with en.config.cost.override(window_split_min_work=0, window_split_chunks=chunks,
                                 window_split_native_chunks=chunks):
        yield calls
