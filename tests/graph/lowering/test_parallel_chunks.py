"""parallel.run_chunks: chunks handed out in turn to the caller and the pool's workers,
in order, errors raised in the caller, and a worker that has not started never waited for."""
import contextvars
import threading
import time

import pytest

from engine.graph.lowering import parallel


def test_results_come_back_in_chunk_order_from_both_threads():
    seen = set()

    def chunk(k):
        seen.add(threading.get_ident())
        time.sleep(0.002)            # long enough for the worker to take some chunks
        return k * k
    assert parallel.run_chunks(chunk, 9, 2) == [k * k for k in range(9)]
    assert parallel.run_chunks(chunk, 1, 2) == [0]
    assert parallel.run_chunks(chunk, 0, 2) == []
    assert len(seen) == 2


def test_an_error_in_a_chunk_is_raised_in_the_caller_after_running_chunks_finish():
    done = []

    def chunk(k):
        if k == 3:
            raise ValueError("chunk 3")
        time.sleep(0.001)
        done.append(k)
    with pytest.raises(ValueError, match="chunk 3"):
        parallel.run_chunks(chunk, 8, 2)
    settled = list(done)
    time.sleep(0.01)
    assert done == settled           # nothing still writes after the call returned


def test_the_caller_takes_every_chunk_when_the_worker_has_not_started():
    # Hold the pool's worker inside another part: run_chunks must not wait for it.
    parallel.run_chunks(lambda k: k, 2, 2)           # the worker exists
    release = threading.Event()
    parallel._workers[0].start(parallel._Part(contextvars.copy_context(),
                                              lambda lo, hi: release.wait(5), 0, 0))
    caller = threading.get_ident()
    try:
        who = parallel.run_chunks(lambda k: threading.get_ident(), 6, 2)
    finally:
        release.set()
    assert who == [caller] * 6
