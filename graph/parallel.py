"""Row-parallel runs of fused kernels on a small pool of worker threads.

A fused kernel over a large array walks it in row blocks; numpy releases the
GIL inside each ufunc, so two threads walking disjoint row ranges run on two
cores at once (the intra-op parallelism PyTorch gives its elementwise ops).
The calling thread takes the first range itself, so one worker is enough on a
two-core machine. A call that finds the pool busy (another thread's kernel, or
a kernel inside a kernel) runs everything on its own thread instead.

Example:
    >>> import numpy as np
    >>> x = np.arange(8.0)
    >>> parts = run_split(lambda lo, hi: x[lo:hi].sum(), [0, 4, 8])
    >>> [float(p) for p in parts]
    [6.0, 22.0]
"""
import contextvars
import os
import threading


class _Worker:
    """One daemon thread that runs the task it is handed and signals when done."""

    def __init__(self):
        self._go = threading.Lock()
        self._go.acquire()
        self._done = threading.Lock()
        self._done.acquire()
        self._task = None
        self.result = self.error = None
        threading.Thread(target=self._loop, name="engine-kernel-worker", daemon=True).start()

    def _loop(self):
        while True:
            self._go.acquire()
            context, fn, lo, hi = self._task
            try:
                self.result, self.error = context.run(fn, lo, hi), None
            except BaseException as e:   # handed back to the caller, raised there
                self.result, self.error = None, e
            self._task = None
            self._done.release()

    def start(self, context, fn, lo, hi):
        self._task = (context, fn, lo, hi)
        self._go.release()

    def join(self):
        self._done.acquire()
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.result


_workers = []
_busy = threading.Lock()


def _forget_workers():
    # A forked child has none of the parent's threads: start afresh there.
    global _busy
    _workers.clear()
    _busy = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


def row_bounds(n, rows, threads):
    """Where ``threads`` parts of ``n`` rows walked in blocks of ``rows`` begin and end:
    each part gets a run of whole blocks, as equal as the block count allows.

    Example:
        >>> row_bounds(1000, 250, 2)
        [0, 500, 1000]
        >>> row_bounds(10, 3, 8)
        [0, 3, 6, 9, 10]
    """
    blocks = -(-n // rows) if n else 0
    parts = max(1, min(threads, blocks))
    return [min(n, (t * blocks // parts) * rows) for t in range(parts + 1)]


def run_split(fn, bounds):
    """``[fn(bounds[0], bounds[1]), fn(bounds[1], bounds[2]), ...]``, the calls after
    the first on worker threads while the calling thread runs the first.

    ``fn`` must only write its own part of any shared output (rows ``lo:hi``).
    An exception in any part is raised here once every part has finished.
    """
    parts = len(bounds) - 1
    if parts == 1 or not _busy.acquire(blocking=False):
        return [fn(bounds[k], bounds[k + 1]) for k in range(parts)]
    try:
        while len(_workers) < parts - 1:
            _workers.append(_Worker())
        started = []
        try:
            for k in range(1, parts):
                # The caller's context (numpy's errstate, the engine's flags) goes
                # with each part: a worker behaves as the calling thread would.
                _workers[k - 1].start(contextvars.copy_context(), fn, bounds[k], bounds[k + 1])
                started.append(_workers[k - 1])
            first = fn(bounds[0], bounds[1])
        finally:
            # Every started part finishes before any result (or error) leaves here:
            # nothing may still write into the outputs after the kernel returns.
            results, errors = [], []
            for w in started:
                try:
                    results.append(w.join())
                except BaseException as e:
                    errors.append(e)
        if errors:
            raise errors[0]
        return [first] + results
    finally:
        _busy.release()
