"""Row parts of compiled kernels run on C threads that spin briefly between kernels.

The engine's Python pool (``graph/lowering/parallel.py``) wakes a sleeping worker
through a lock and hands it the GIL before the part's ``ctypes`` call: on the 2-core
AMD EPYC VM the worker starts 0.08-0.13 ms after the caller, so a C kernel of 0.3 ms
(the transformer's exact GELU over 32x32x256 float32) took 0.24-0.28 ms split in two
rather than 0.16. PyTorch's OpenMP threads spin for a while after each parallel region
for the same reason. Here a C kernel's parts are handed to threads of a small C
library, called once through ``ctypes`` (the GIL released for the whole split): the
calling thread runs parts too, and each worker, having finished, waits for the next
kernel by polling for ``cost.kernel_pool_spin_microseconds`` (yielding its core at
each poll, so OpenBLAS's threads or another process take it when they need it), then
sleeps on a condition variable. Measured: the GELU kernel 0.312 ms on one thread, 0.157
split in two.

The fused kernels (``c_fused.py``) split their rows here; the window kernels' direct
convolution loops and max pooling (``c_window.py``) their images, as many parts as
``cost.window_split_native_chunks`` (a part not yet started is taken by whichever thread
is free, so a descheduled worker costs little on a loaded machine).

A kernel offers this entry point: ``int NAME_parts(void **args, int64_t lo, int64_t hi)``
(:func:`parts_entry` writes it), where part ``k`` reads its arguments from
``args + k * stride``, so parts may have their own accumulators. Only one split runs at
a time (a kernel inside a kernel, or two Python threads, run the other serially);
after a fork the child starts its own threads. Where the library cannot be built (no C
compiler) or is still compiling, :func:`run_parts` says so and the caller splits on
the Python pool.

Example:
    >>> parts_entry("fused", 3).splitlines()[1]
    'int fused_parts(void **a, int64_t lo, int64_t hi) {'
"""
import ctypes
import os
import threading
import warnings
from typing import Any

import numpy as np

from engine.config import config
from engine.cost_model import cost

from . import c_compiler
from .. import hot_swap
from ..parallel import native_threads

_SOURCE = r"""
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef int (*part_fn)(void **args, int64_t lo, int64_t hi);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_long generation;            /* bumped once per split */
static part_fn job_fn;
static void **job_args;
static int64_t job_stride;
static const int64_t *job_bounds;
static atomic_int job_parts, done_parts, job_error;
/* The part to claim next, under the split's number: split << 32 | part. A part is claimed
   by compare-and-swap on the whole word, so a thread still looping from the last split
   (having finished its part just as the caller started the next) cannot claim a part of
   the next split with the last one's count, nor one while the next is being written. */
static _Atomic uint64_t ticket;
#define NO_PART 0xffffffffu
static int started;
static int64_t spin_ns = 200000;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Take parts until none is left; the caller and every worker run this. */
static void run_parts(void) {
    for (;;) {
        uint64_t t = atomic_load(&ticket);
        uint32_t k = (uint32_t)t;
        if (k == NO_PART || k >= (uint32_t)atomic_load(&job_parts)) return;
        if (!atomic_compare_exchange_weak(&ticket, &t, t + 1)) continue;
        int r = job_fn(job_args + (int64_t)k * job_stride, job_bounds[k], job_bounds[k + 1]);
        if (r) atomic_store(&job_error, r);
        atomic_fetch_add(&done_parts, 1);
    }
}

static void *worker(void *unused) {
    (void)unused;
    long seen = atomic_load(&generation);
    for (;;) {
        long g;
        int64_t since = now_ns();
        while ((g = atomic_load(&generation)) == seen) {
            if (now_ns() - since < spin_ns) {
                sched_yield();   /* polls, giving the core to any thread that wants it */
                continue;
            }
            pthread_mutex_lock(&mu);
            while (atomic_load(&generation) == seen) pthread_cond_wait(&cv, &mu);
            pthread_mutex_unlock(&mu);
        }
        seen = g;
        run_parts();
    }
    return 0;
}

/* A forked child has none of the parent's threads. */
static void forget_threads(void) {
    started = 0;
    pthread_mutex_init(&mu, 0);
    pthread_cond_init(&cv, 0);
}

int pool_start(int workers, int64_t spin) {
    static int registered;
    if (!registered) { pthread_atfork(0, 0, forget_threads); registered = 1; }
    spin_ns = spin;
    for (; started < workers; started++) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &a, worker, 0);
        pthread_attr_destroy(&a);
        if (failed) return -1;
    }
    return 0;
}

int pool_run(part_fn fn, void **args, int64_t stride, const int64_t *bounds, int parts) {
    uint64_t split = (atomic_load(&ticket) >> 32) + 1;
    atomic_store(&ticket, split << 32 | NO_PART);   /* nothing to claim while it is written */
    job_fn = fn;
    job_args = args;
    job_stride = stride;
    job_bounds = bounds;
    atomic_store(&job_error, 0);
    atomic_store(&done_parts, 0);
    atomic_store(&job_parts, parts);
    atomic_store(&ticket, split << 32);            /* last: its parts may be claimed */
    pthread_mutex_lock(&mu);
    atomic_fetch_add(&generation, 1);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    run_parts();
    /* Every part has finished before the kernel returns: nothing writes afterwards. */
    while (atomic_load(&done_parts) < parts) sched_yield();
    return atomic_load(&job_error);
}
"""

_state: dict[str, Any] = {}          # "lib": the loaded library, or None (cannot be built)
_pending: list[Any] = []             # the background build's future
_busy = threading.Lock()
_started: list[int] = []             # workers started in this process


def parts_entry(name, pointers):
    """C source of ``int NAME_parts(void **a, int64_t lo, int64_t hi)``, calling ``NAME``
    with the ``pointers`` addresses ``a[0..]`` and the rows ``lo:hi``: the entry
    :func:`run_parts` calls. Appended to a kernel's source."""
    args = ", ".join(f"a[{k}]" for k in range(pointers))
    return (f"\nint {name}_parts(void **a, int64_t lo, int64_t hi) {{\n"
            f"    return {name}({args}, lo, hi);\n}}\n")


def threads():
    """The threads a kernel split on the pool takes: ``en.config.fusion_threads`` where
    set, else the machine's (``parallel.native_threads``: capped by OpenBLAS's count, so
    ``OPENBLAS_NUM_THREADS=1`` keeps every kernel on one thread).

    Example:
        >>> threads() >= 1
        True
    """
    chosen = config.fusion_threads
    return native_threads() if chosen is None else chosen


def ready():
    """Whether the pool's library is loaded (the first look starts its build)."""
    return _library() is not None


def _library():
    """The pool's library, or None: where it cannot be built, or while it compiles on
    the background compile thread (the Python pool splits meanwhile)."""
    if "lib" in _state:
        return _state["lib"]
    if not c_compiler.available():
        _state["lib"] = None
        return None
    if not _pending:
        if c_compiler.is_cached(_SOURCE):
            return _load()
        _pending.append(hot_swap.submit(_load))
    return None


def _load():
    try:
        lib = c_compiler.load(_SOURCE)
    except (c_compiler.CompileError, OSError) as err:
        warnings.warn(f"the C kernel pool was not built ({err}); kernels split on the "
                      "Python pool", RuntimeWarning, stacklevel=2)
        _state["lib"] = None
        return None
    lib.pool_start.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.pool_start.restype = ctypes.c_int
    lib.pool_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_void_p, ctypes.c_int]
    lib.pool_run.restype = ctypes.c_int
    _state["lib"] = lib
    return lib


def run_parts(entry, pointers, bounds, threads=None):
    """Run ``entry`` (the address of a ``NAME_parts`` function) over the row parts
    ``bounds[k]:bounds[k + 1]``, part ``k`` with the addresses ``pointers[k]`` (a list per
    part, all of one length), on the calling thread and the pool's workers (``threads``
    in all at most; one per part by default). The kernel's return code (0: done) or None
    where the pool cannot run it now (not built, or busy with another split): the caller
    runs the parts itself."""
    lib = _library()
    if lib is None or not _busy.acquire(blocking=False):
        return None
    try:
        parts = len(bounds) - 1
        workers = min(parts, threads or parts) - 1
        if not _started or _started[0] < workers:
            if lib.pool_start(workers, int(cost.kernel_pool_spin_microseconds * 1000)) != 0:
                return None
            _started[:] = [workers]
        stride = len(pointers[0])
        flat = (ctypes.c_void_p * (stride * parts))(*[p for part in pointers for p in part])
        edges = np.asarray(bounds, dtype=np.int64)
        return lib.pool_run(entry, flat, stride, edges.ctypes.data, parts)
    finally:
        _busy.release()


def _forget_workers():
    # The child has none of the parent's threads (the library's own fork handler resets
    # its count) and no split in progress.
    global _busy
    _started.clear()
    _busy = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)
