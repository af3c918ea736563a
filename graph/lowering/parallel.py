"""Row-parallel runs of fused kernels on a small pool of worker threads.

A fused kernel over a large array walks it in row blocks; numpy releases the
GIL inside each ufunc, so two threads walking disjoint row ranges run on two
cores at once (the intra-op parallelism PyTorch gives its elementwise ops).
The calling thread takes the first range itself, so one worker is enough on a
two-core machine. A call that finds the pool busy (another thread's kernel, or
a kernel inside a kernel) runs everything on its own thread instead.

Interrupts: a worker's part cannot be stopped half-way, and it writes into the
kernel's outputs, so a split call never returns or raises while a part still
runs. On the main thread Ctrl-C (SIGINT) is held back for the length of the
split and raised once every part has finished (a split lasts one kernel, a few
milliseconds to a few hundred): the pool is then idle and the next call starts
clean. Each part is its own ``_Part`` object, so a result can only reach the
call that handed its part out.

Example:
    >>> import numpy as np
    >>> x = np.arange(8.0)
    >>> parts = run_split(lambda lo, hi: x[lo:hi].sum(), [0, 4, 8])
    >>> [float(p) for p in parts]
    [6.0, 22.0]
"""
import contextvars
import os
import queue
import signal
import threading

import numpy as np

from engine import ops
from engine.config import config
from engine.cost_model import cost
from engine.shapes import size_of

from . import blas_threads


class _Part:
    """One row range handed to a worker, with its own result and finish flag."""

    __slots__ = ("context", "fn", "lo", "hi", "result", "error", "finished", "_done")

    def __init__(self, context, fn, lo, hi):
        self.context, self.fn, self.lo, self.hi = context, fn, lo, hi
        self.result = self.error = None
        self.finished = False
        self._done = threading.Lock()
        self._done.acquire()

    def run(self):
        try:
            self.result = self.context.run(self.fn, self.lo, self.hi)
        except BaseException as e:   # handed back to the caller, raised there
            self.error = e
        self.finished = True          # before the release: a waiter may test it first
        self._done.release()

    def wait(self):
        """Blocks until the part has run. ``finished`` is tested before every wait,
        so an exception raised inside the wait (a signal handler's) cannot make a
        second wait block on a lock already taken."""
        while not self.finished:
            self._done.acquire()


class _Worker:
    """One daemon thread that runs the parts put on its queue, in order."""

    def __init__(self):
        self._parts: queue.SimpleQueue[_Part] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="engine-kernel-worker", daemon=True).start()

    def _loop(self):
        while True:
            self._parts.get().run()

    def start(self, part):
        self._parts.put(part)


class _InterruptsHeld:
    """Holds back SIGINT on the main thread while the block runs, then raises it.

    Elsewhere (another thread, a SIGINT handler not set from Python) it does
    nothing: only the main thread runs Python signal handlers.
    """

    __slots__ = ("_old", "_caught")

    def __enter__(self):
        self._old = None
        self._caught = None
        if threading.current_thread() is threading.main_thread():
            old = signal.getsignal(signal.SIGINT)
            if callable(old):
                signal.signal(signal.SIGINT, self._hold)
                self._old = old
        return self

    def _hold(self, signum, frame):
        if self._caught is None:
            self._caught = (signum, frame)

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            if self._caught is not None:
                self._old(*self._caught)   # default handler: raises KeyboardInterrupt
        return False


_workers: list = []
_busy = threading.Lock()
_auto: list = []


# "auto" kernel threads (``en.config.fusion_threads = None``, the default) use the
# machine's cores in a graph whose largest matrix product has at least this many
# multiply-adds, one thread elsewhere. Measured on the idle 2-core machine (README,
# "Kernel threads"): two threads won for the autoencoder at batch 10000 and 60000
# (1.5e9 and 9.2e9 multiply-adds a product) and for the traced L-BFGS iteration at
# 10000, and lost or tied at batch 1000 (1.5e8), where a split product costs more
# than OpenBLAS's own threads and waking a worker is a larger share of each kernel
# (cost.two_threads_min_product_work).
# ... and only where the graph also has elementwise work the pool can split: an
# elementwise op or reduction (or the fused kernel made of them) over more than this
# many elements, the size above which a fused kernel walks row blocks (fusion's
# fused_whole_array_elements; cost.two_threads_min_elements).
# A graph of products alone gains nothing from splitting them (a 1024^3 float32
# product took 11.97 ms split, 11.71 ms on OpenBLAS's threads, idle 2-core machine),
# and loses half its speed whenever OpenBLAS's workers still spin from an eager
# product before it (23.9 ms), since they take the second core from the split.


def kernel_threads(graph_choice=None):
    """The kernel threads in use: ``en.config.fusion_threads`` when set; where that is
    None (the default), ``graph_choice`` (what :func:`threads_for` chose for the graph
    the kernel belongs to), else the machine's: 2 if this process may run on two cores
    or more and numpy's OpenBLAS can be held at one thread
    (``blas_threads.available()``), else 1.

    Example:
        >>> kernel_threads() in (1, 2)
        True
    """
    chosen = config.fusion_threads
    if chosen is not None:
        return chosen
    if graph_choice is not None:
        return graph_choice
    return machine_threads()


def machine_threads():
    """2 if this process may run on two cores or more and numpy's OpenBLAS can be held
    at one thread, else 1."""
    if not _auto:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):     # not on Linux
            cores = os.cpu_count() or 1
        _auto.append(2 if cores >= 2 and blas_threads.available() else 1)
    return _auto[0]


def native_threads():
    """Threads a native loop that splits itself (the C pool's kernels) may use: the
    machine's (:func:`machine_threads`), but no more than OpenBLAS's own count, so that
    ``OPENBLAS_NUM_THREADS=1`` (``python -m bench --threads 1``) keeps every kernel on
    one thread.

    Example:
        >>> native_threads() in (1, 2)
        True
    """
    return min(machine_threads(), blas_threads.blas_threads() or 1)


def threads_for(graph):
    """The kernel threads "auto" gives ``graph``: the machine's where its largest matrix
    product has at least ``cost.two_threads_min_product_work`` multiply-adds and some
    elementwise work is over ``cost.two_threads_min_elements`` elements, else 1 (see the
    comment above).

    Example:
        >>> import engine as en
        >>> g = en.function(lambda a, b: a @ b).graph_for(en.ones((4, 4)), en.ones((4, 4)))
        >>> threads_for(g)
        1
    """
    largest = max((product_work(n) for n in graph.nodes), default=0)
    if largest < cost.two_threads_min_product_work or \
            not any(_large_elementwise(n) for n in graph.nodes):
        return 1
    return machine_threads()


def _large_elementwise(node):
    """Whether ``node`` is elementwise work over more than ``cost.two_threads_min_elements``
    elements: an elementwise op or a reduction, before fusion or fused (the fusion
    pass marks its kernels with ``meta["fused_ops"]``, also those of several results)."""
    op = node.op
    if not (op.elementwise or op.reduction or "fused_ops" in node.meta):
        return False
    return any(n.shape is not None and (size_of(n.shape) or 0) > cost.two_threads_min_elements
               for n in (node, *node.inputs))


def product_work(node):
    """The multiply-adds of ``node`` if it is a matrix product of static shapes, else 0.

    Example:
        >>> import engine as en
        >>> g = en.function(lambda a, b: a @ b).graph_for(en.ones((4, 3)), en.ones((3, 2)))
        >>> product_work(g.outputs[0])
        24
    """
    if node.op is not ops.matmul_op or len(node.inputs) != 2:
        return 0
    x, y = node.inputs
    if any(s is None or len(s) == 0 or None in s for s in (x.shape, y.shape, node.shape)):
        return 0
    return int(np.prod(node.shape)) * int(x.shape[-1])


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


def _serial(fn, bounds):
    return [fn(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]


def run_split(fn, bounds):
    """``[fn(bounds[0], bounds[1]), fn(bounds[1], bounds[2]), ...]``, the calls after
    the first on worker threads while the calling thread runs the first.

    ``fn`` must only write its own part of any shared output (rows ``lo:hi``).
    An exception in any part is raised here once every part has finished; so is
    a Ctrl-C that arrives meanwhile.
    """
    if len(bounds) <= 2:
        return _serial(fn, bounds)
    with _InterruptsHeld():
        if _busy.acquire(blocking=False):
            try:
                return _split(fn, bounds)
            finally:
                _busy.release()
    # The pool is busy: outside the held block, so a kernel inside a kernel
    # stays interruptible.
    return _serial(fn, bounds)


def _split(fn, bounds):
    parts = len(bounds) - 1
    while len(_workers) < parts - 1:
        _workers.append(_Worker())
    started = []
    try:
        for k in range(1, parts):
            # The caller's context (numpy's errstate, the engine's flags) goes
            # with each part: a worker behaves as the calling thread would.
            part = _Part(contextvars.copy_context(), fn, bounds[k], bounds[k + 1])
            started.append(part)
            _workers[k - 1].start(part)
        first = fn(bounds[0], bounds[1])
    finally:
        # Every started part finishes before any result (or error) leaves here:
        # nothing may still write into the outputs after the kernel returns.
        for part in started:
            part.wait()
    for part in started:
        if part.error is not None:
            raise part.error
    return [first] + [part.result for part in started]


class _Chunks:
    """Chunks ``0 .. n-1`` handed out in turn to whichever thread asks first."""

    __slots__ = ("fn", "n", "results", "next", "running", "error", "lock", "idle")

    def __init__(self, fn, n):
        self.fn, self.n = fn, n
        self.results = [None] * n
        self.next = self.running = 0
        self.error = None
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)

    def work(self, _lo=0, _hi=0):
        """Run chunks until none is left (or one has failed)."""
        while True:
            with self.lock:
                if self.next >= self.n or self.error is not None:
                    return
                k = self.next
                self.next += 1
                self.running += 1
            try:
                self.results[k] = self.fn(k)
            except BaseException as e:   # handed back to the caller, raised there
                with self.lock:
                    self.error = self.error or e
            finally:
                with self.lock:
                    self.running -= 1
                    self.idle.notify_all()


def run_chunks(fn, n, threads):
    """``[fn(0), fn(1), ..., fn(n - 1)]``, the chunks taken in turn by the calling thread
    and up to ``threads - 1`` workers.

    Unlike :func:`run_split`'s fixed parts, the caller never waits for a worker that has
    not started: on a loaded machine a woken worker may wait a whole scheduler slice
    (several milliseconds) before it runs, and the caller then takes its chunks too;
    a worker that starts after the last chunk was taken finds nothing to do. The caller
    waits only for chunks already running. ``fn`` must write only its own chunk's part
    of any shared output.

    Example:
        >>> run_chunks(lambda k: k * k, 4, 2)
        [0, 1, 4, 9]
    """
    chunks = _Chunks(fn, n)
    helpers = min(threads, n) - 1
    if helpers < 1 or not _busy.acquire(blocking=False):
        chunks.work()     # one thread, or the pool is busy (a kernel inside a kernel)
    else:
        with _InterruptsHeld():
            try:
                while len(_workers) < helpers:
                    _workers.append(_Worker())
                for k in range(helpers):
                    _workers[k].start(_Part(contextvars.copy_context(), chunks.work, 0, 0))
                chunks.work()
            finally:
                # Chunks a worker is running still write into the outputs: wait for
                # them (never for a worker that has not started).
                with chunks.idle:
                    while chunks.running:
                        chunks.idle.wait()
                _busy.release()
    if chunks.error is not None:
        raise chunks.error
    return chunks.results
