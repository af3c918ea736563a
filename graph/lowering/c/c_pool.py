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

Where numpy's BLAS is an OpenBLAS with ``gotoblas_pthread`` (its own thread server's
entry for "run these functions on my threads"), a split's parts go to OpenBLAS's
threads instead of the pool's workers: one set of threads for products and kernels, as
PyTorch's OpenMP threads are. Left apart, OpenBLAS's worker polls for the next product
for about 0.1 s after each one (its timeout is fixed when numpy loads it), and a pool
worker woken for the elementwise kernel that follows shares that core with it and took
no part: the transformer's GELU kernel split in two took 0.32 ms right after a product,
as on one thread, and 0.17-0.18 ms through OpenBLAS's threads, after a product or not.
The styles transformer step: 3.73-3.86 ms against 4.27-5.02 (docs/measurements.md).
The caller takes parts too, and each OpenBLAS thread takes parts until none is left.
OpenBLAS returns only when each of its threads has run its share, parts left or not, so
on a loaded machine a descheduled OpenBLAS thread holds a split up to a scheduler slice
after its parts are done; a split that waited ``cost.kernel_pool_late_microseconds`` so
sends the splits of the next ``cost.kernel_pool_own_milliseconds`` to the pool's own
workers, whose lateness costs nothing (under two other busy processes, the GELU kernel's
mean 0.61-1.04 ms so, against 0.71-1.14 without, 0.63-0.89 on the pool's workers alone).

With ``en.config.blas_on_kernel_pool`` (off by default) it is the other way round:
numpy's OpenBLAS runs its threaded products on the pool's threads (OpenBLAS 0.3.27's
``openblas_set_threads_callback_function``, found by ``blas_threads.threads_hook``),
set once when the pool's library loads. A product's parts wait for each other, so each
takes a thread of its own (workers are started for them; where the pool is busy with a
split on another Python thread, threads are made for the parts), and the threads poll
without yielding, for ``cost.kernel_pool_blas_spin_microseconds``. Installed while
OpenBLAS's own worker is still polling from a product, that worker keeps polling beside
the pool's for as long as products keep coming (a 1024^3 product took 23-25 ms for
seconds on end, against 10.7): docs/limits.md.

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
from .. import blas_threads, hot_swap
from ..parallel import native_threads

_SOURCE = r"""
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
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
static _Atomic int64_t parts_done_ns;      /* when the last part of a split finished */
/* The part to claim next, under the split's number: split << 32 | part. A part is claimed
   by compare-and-swap on the whole word, so a thread still looping from the last split
   (having finished its part just as the caller started the next) cannot claim a part of
   the next split with the last one's count, nor one while the next is being written. */
static _Atomic uint64_t ticket;
#define NO_PART 0xffffffffu
static int started;
static int64_t spin_ns = 200000;
static atomic_flag busy = ATOMIC_FLAG_INIT;   /* one split at a time, whoever calls */
static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;

/* How a thread waits for another. Kernel parts need no partner (a thread that comes late
   finds them taken), so a poll yields the core to any thread that wants it (OpenBLAS's,
   another process's). A product's parts on these threads (pool_blas) wait for each
   other, and a thread that yields to another process's busy thread gets its core back
   only at that thread's next preemption, a scheduler tick (4 ms here) later: under a
   busy loop in another process, 64x1024 @ 1024x256 on the pool took 2.9 ms (median; 4.0
   at the 90th percentile) polling with sched_yield, 0.27 with pauses (OpenBLAS's own
   threads: 0.19). So once products run here, polls pause instead. */
static int blas_here;

static inline void relax(void) {
    if (!blas_here) {
        sched_yield();
        return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

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
        if (atomic_fetch_add(&done_parts, 1) + 1 == atomic_load(&job_parts))
            atomic_store(&parts_done_ns, now_ns());
    }
}

/* A worker starts from the split count read by the thread that made it, before that
   thread's next split: reading it itself, a late-starting worker could take that split
   for one already seen and sleep through it (fatal for OpenBLAS's jobs, which wait for
   each other). */
static int64_t start_delay_ns;   /* tests: a new worker's first step comes this late */

static void *worker(void *first) {
    long seen = (long)(intptr_t)first;
    if (start_delay_ns) {
        struct timespec d = {start_delay_ns / 1000000000, start_delay_ns % 1000000000};
        nanosleep(&d, 0);
    }
    for (;;) {
        long g;
        int64_t since = now_ns();
        while ((g = atomic_load(&generation)) == seen) {
            if (now_ns() - since < spin_ns) {
                relax();
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
    atomic_flag_clear(&busy);
    pthread_mutex_init(&mu, 0);
    pthread_cond_init(&cv, 0);
    pthread_mutex_init(&start_mu, 0);
}

int pool_start(int workers, int64_t spin) {
    static int registered;
    int failed = 0;
    pthread_mutex_lock(&start_mu);
    if (!registered) { pthread_atfork(0, 0, forget_threads); registered = 1; }
    if (spin >= 0) spin_ns = spin;
    for (; started < workers && !failed; started++) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        failed = pthread_create(&t, &a, worker, (void *)(intptr_t)atomic_load(&generation));
        pthread_attr_destroy(&a);
    }
    pthread_mutex_unlock(&start_mu);
    return failed ? -1 : 0;
}

/* numpy's OpenBLAS's gotoblas_pthread(n, fn, args, stride): runs fn(args + k * stride)
   for k < n, the first on the calling thread and the others on OpenBLAS's own threads,
   and returns when all have. Set (pool_via_openblas), a split's parts are taken by the
   caller and OpenBLAS's threads, which poll for work after each product: the kernel that
   follows a product starts on both cores at once, where a pool worker would share the
   second core with OpenBLAS's polling thread. */
typedef int (*openblas_run_fn)(int n, void *fn, void *args, int stride);
static openblas_run_fn via_openblas;
static int via_threads;
/* gotoblas_pthread returns when every OpenBLAS thread handed a share has run it, found
   no part left or not: on a loaded machine a descheduled OpenBLAS thread holds the split
   up to a scheduler slice after its parts are done (the pool's own workers cost nothing
   when late). A split that waited over late_ns so sends the splits of the next
   avoid_ns to the pool's own workers. */
static int64_t late_ns = 200000, avoid_ns = 100000000;
static _Atomic int64_t own_until_ns;
static atomic_long late_splits;

void pool_via_openblas(void *run, int threads, int64_t late, int64_t avoid) {
    via_openblas = (openblas_run_fn)run;
    via_threads = threads;
    late_ns = late;
    avoid_ns = avoid;
}

long pool_late_splits(void) { return atomic_load(&late_splits); }

static void openblas_entry(void *unused) {
    (void)unused;
    run_parts();
}

static int run_split(part_fn fn, void **args, int64_t stride, const int64_t *bounds,
                     int parts, int threads) {
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
    if (threads > 0 && via_openblas && now_ns() >= atomic_load(&own_until_ns)) {
        static char no_args;
        int n = via_threads < threads ? via_threads : threads;
        via_openblas(n < parts ? n : parts, (void *)openblas_entry, &no_args, 0);
        int64_t end = now_ns();
        if (end - atomic_load(&parts_done_ns) > late_ns) {
            atomic_fetch_add(&late_splits, 1);
            atomic_store(&own_until_ns, end + avoid_ns);
        }
        return atomic_load(&job_error);
    }
    pthread_mutex_lock(&mu);
    atomic_fetch_add(&generation, 1);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    run_parts();
    /* Every part has finished before the kernel returns: nothing writes afterwards. */
    while (atomic_load(&done_parts) < parts) relax();
    return atomic_load(&job_error);
}

/* -2: another split holds the pool (the caller runs its parts itself). `threads`: at
   most that many threads take parts (the caller and started workers, or OpenBLAS's). */
int pool_run(part_fn fn, void **args, int64_t stride, const int64_t *bounds, int parts,
             int threads) {
    if (atomic_flag_test_and_set(&busy)) return -2;
    int r = run_split(fn, args, stride, bounds, parts, threads);
    atomic_flag_clear(&busy);
    return r;
}

/* numpy's OpenBLAS hands its threaded calls here (openblas_set_threads_callback_function):
   a product's parts run on the pool's threads, which then poll for the next compiled
   kernel, where OpenBLAS's own threads would poll beside them for the next product.
   The parts of a product wait for each other (they share packed panels), so all must run
   at once, each on its own thread, never two in turn on one: a thread claims one and
   holds it to its end, and there are parts - 1 workers. Where the pool is busy (a
   kernel split on another Python thread) the parts get threads made for them. */
typedef void (*blas_part_fn)(int thread, void *part, int data);
static blas_part_fn blas_fn;
static char *blas_parts;
static size_t blas_part_size;
static int blas_data;
static atomic_long blas_calls;
#define BLAS_MAX_PARTS 64
static int64_t blas_bounds[BLAS_MAX_PARTS + 1];

static int blas_part(void **args, int64_t lo, int64_t hi) {
    (void)args;
    for (int64_t k = lo; k < hi; k++) blas_fn((int)k, blas_parts + k * blas_part_size, blas_data);
    return 0;
}

struct own_part { blas_part_fn fn; char *part; int thread, data; };

static void *own_thread(void *p) {
    struct own_part *j = p;
    j->fn(j->thread, j->part, j->data);
    return 0;
}

void pool_blas(int sync, blas_part_fn fn, int parts, size_t size, void *data, int extra) {
    (void)sync;   /* OpenBLAS asks for synchronous runs only: this returns when all end */
    atomic_fetch_add(&blas_calls, 1);
    if (parts <= BLAS_MAX_PARTS && (parts - 1 <= started || pool_start(parts - 1, -1) == 0)
            && !atomic_flag_test_and_set(&busy)) {
        blas_fn = fn;
        blas_parts = data;
        blas_part_size = size;
        blas_data = extra;
        run_split(blas_part, 0, 0, blas_bounds, parts, 0);   /* never via OpenBLAS */
        atomic_flag_clear(&busy);
        return;
    }
    pthread_t *t = malloc(parts * sizeof *t);
    struct own_part *own = malloc(parts * sizeof *own);
    int made = 1;
    for (; t && own && made < parts; made++) {
        own[made] = (struct own_part){fn, (char *)data + made * size, made, extra};
        if (pthread_create(&t[made], 0, own_thread, &own[made])) break;
    }
    fn(0, data, extra);
    /* Only where no thread can be made at all: the parts left run here, in turn. */
    for (int k = made; k < parts; k++) fn(k, (char *)data + k * size, extra);
    for (int k = 1; k < made; k++) pthread_join(t[k], 0);
    free(t);
    free(own);
}

long pool_blas_calls(void) { return atomic_load(&blas_calls); }

void pool_delay_starts(int64_t ns) { start_delay_ns = ns; }

/* Before numpy's OpenBLAS is handed pool_blas: polls pause from now on, for `spin`. */
void pool_init_blas(int64_t spin) {
    blas_here = 1;
    spin_ns = spin;
    for (int k = 0; k <= BLAS_MAX_PARTS; k++) blas_bounds[k] = k;
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


def blas_calls():
    """How many threaded calls numpy's OpenBLAS has handed the pool (None where it hands
    none: the pool not built, no hook in that OpenBLAS, or
    ``en.config.blas_on_kernel_pool`` False when the pool loaded).

    Example:
        >>> calls = blas_calls()
        >>> calls is None or calls >= 0
        True
    """
    lib = _library()
    return lib.pool_blas_calls() if lib is not None and _state.get("blas") else None


def late_splits():
    """How many splits on OpenBLAS's threads waited more than
    ``cost.kernel_pool_late_microseconds`` for one of them after their parts were done
    (each sends the next ``cost.kernel_pool_own_milliseconds`` of splits to the pool's own
    workers); None where splits do not go to OpenBLAS's threads."""
    lib = _state.get("lib")
    return lib.pool_late_splits() if lib is not None and _state.get("via_openblas") else None


def kernels_on_blas_threads():
    """Whether a split's parts go to numpy's OpenBLAS's threads (see the module
    docstring); before the library loads, whether they will once it has.

    Example:
        >>> isinstance(kernels_on_blas_threads(), bool)
        True
    """
    if "lib" in _state:
        return bool(_state.get("via_openblas"))
    return c_compiler.available() and _openblas_runner(_blas_hook()) is not None


def _blas_hook():
    """OpenBLAS's threads hook where ``en.config.blas_on_kernel_pool`` asks for it and
    numpy's OpenBLAS has one, else None."""
    return blas_threads.threads_hook() if config.blas_on_kernel_pool else None


def _openblas_runner(hook):
    """The address of ``gotoblas_pthread`` where splits go to OpenBLAS's threads: no
    hook set (it hands products the other way), two threads or more, such an OpenBLAS."""
    if hook is not None or native_threads() < 2:
        return None
    return blas_threads.openblas_runner()


def _via_openblas(lib, run, late_us=None, own_ms=None):
    """Hand ``lib``'s splits to OpenBLAS's threads through ``run`` (None: never); a
    split held over ``late_us`` sends the next ``own_ms`` to the pool's own workers (the
    cost model's figures by default)."""
    late_us = cost.kernel_pool_late_microseconds if late_us is None else late_us
    own_ms = cost.kernel_pool_own_milliseconds if own_ms is None else own_ms
    lib.pool_via_openblas(ctypes.c_void_p(run), ctypes.c_int(native_threads() if run else 0),
                          ctypes.c_int64(int(late_us * 1000)), ctypes.c_int64(int(own_ms * 1e6)))


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
                             ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.pool_run.restype = ctypes.c_int
    lib.pool_start(0, int(cost.kernel_pool_spin_microseconds * 1000))
    lib.pool_blas_calls.restype = ctypes.c_long
    hook = _blas_hook()
    run = _openblas_runner(hook)
    if run is not None:
        _via_openblas(lib, run)
        lib.pool_late_splits.restype = ctypes.c_long
        _state["via_openblas"] = True
    if hook is not None:     # polls pause before the first product arrives
        lib.pool_init_blas(ctypes.c_int64(int(cost.kernel_pool_blas_spin_microseconds * 1000)))
        hook(ctypes.cast(lib.pool_blas, ctypes.c_void_p).value)
        _state["blas"] = True
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
        # (started where parts go to OpenBLAS's threads too: they take the splits while
        # OpenBLAS's threads come late, c_pool's pool_via_openblas)
        if not _started or _started[0] < workers:
            spin = cost.kernel_pool_blas_spin_microseconds if _state.get("blas") else \
                cost.kernel_pool_spin_microseconds
            if lib.pool_start(workers, int(spin * 1000)) != 0:
                return None
            _started[:] = [workers]
        stride = len(pointers[0])
        flat = (ctypes.c_void_p * (stride * parts))(*[p for part in pointers for p in part])
        edges = np.asarray(bounds, dtype=np.int64)
        code = lib.pool_run(entry, flat, stride, edges.ctypes.data, parts, workers + 1)
        return None if code == -2 else code
    finally:
        _busy.release()


def _forget_workers():
    # The child has none of the parent's threads (the library's own fork handler resets
    # its count) and no split in progress.
    global _busy
    _started.clear()
    _busy = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)
