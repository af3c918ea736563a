"""The C kernel pool (graph/lowering/c/c_pool.py): compiled fused kernels split into row
parts on its threads give numpy's values, every part's partial sums, errors handed back,
and the Python pool's path where the C pool cannot run."""
import ctypes
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import special

import engine as en
from support.compilers import needs_c_compiler
from support.paths import REPO

c_pool = importlib.import_module("engine.graph.lowering.c.c_pool")
hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")
blas_threads = importlib.import_module("engine.graph.lowering.blas_threads")

pytestmark = needs_c_compiler


@pytest.fixture
def pool_ready(monkeypatch):
    """The pool's library built (its first look starts a background build), and fused
    kernels lowered alone (a small graph would be one C function: test_c_graph.py)."""
    monkeypatch.setattr(importlib.import_module("engine.graph.lowering.plugin").get("c"),
                        "writes_graphs", False)
    c_pool.ready()
    hot_swap.wait_for_compiles()
    if not c_pool.ready():
        pytest.fail("the C pool's library was not built")


def _fused_kernel(fn, *args):
    """The compiled function ``fn`` traced on ``args``, with its C fused kernel built now."""
    f = en.function(fn)
    with en.config.cost.override(hot_swap_calls=1, compile_calls=1):
        for _ in range(3):
            f(*args)
    hot_swap.wait_for_compiles()
    return f


def test_gelu_split_in_parts_matches_the_closed_form(pool_ready, monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 16, 64)).astype(np.float32) * 3
    monkeypatch.setattr(en.config, "lowering", "c")
    calls = []
    real = c_pool.run_parts

    def counted(entry, pointers, bounds, *threads):
        calls.append(len(bounds) - 1)
        return real(entry, pointers, bounds, *threads)
    monkeypatch.setattr(c_pool, "run_parts", counted)
    with en.config.cost.override(kernel_pool_part_elements=1024):
        f = _fused_kernel(lambda t: en.gelu(t) * 2.0, en.tensor(x))
        got = np.asarray(f(en.tensor(x)))
    want = x * (1 + special.erf(x / np.sqrt(2.0))) * np.float32(1.0)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    assert calls and max(calls) >= 2, "the kernel never ran in parts on the C pool"


def test_parts_keep_their_own_partial_sums(pool_ready, monkeypatch):
    # A region with a sum over every element: each part adds into its own accumulators.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 300))
    monkeypatch.setattr(en.config, "lowering", "c")
    with en.config.cost.override(kernel_pool_part_elements=512):
        f = _fused_kernel(lambda t: en.sum(en.exp(t) * t), en.tensor(x))
        got = float(f(en.tensor(x)))
    want = float(np.sum(np.exp(x) * x))
    assert abs(got - want) <= 1e-12 * np.sum(np.abs(np.exp(x) * x))


def test_one_thread_when_fusion_threads_says_so(pool_ready, monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    monkeypatch.setattr(en.config, "lowering", "c")
    monkeypatch.setattr(en.config, "fusion_threads", 1)
    calls = []
    monkeypatch.setattr(c_pool, "run_parts", lambda *a: calls.append(a))
    with en.config.cost.override(kernel_pool_part_elements=256):
        f = _fused_kernel(lambda t: en.tanh(t) * t, en.tensor(x))
        got = np.asarray(f(en.tensor(x)))
    np.testing.assert_allclose(got, np.tanh(x) * x, rtol=2e-6, atol=1e-7)
    assert calls == []


def test_a_busy_pool_hands_the_parts_back(pool_ready, monkeypatch):
    # Another split holds the pool: run_parts says so, and the Python pool runs the parts.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 256)).astype(np.float32)
    monkeypatch.setattr(en.config, "lowering", "c")
    with en.config.cost.override(kernel_pool_part_elements=256):
        f = _fused_kernel(lambda t: en.sigmoid(t) * t, en.tensor(x))
        assert c_pool._busy.acquire(blocking=False)
        try:
            assert c_pool.run_parts(0, [[0], [0]], [0, 1, 2]) is None
            got = np.asarray(f(en.tensor(x)))
        finally:
            c_pool._busy.release()
    np.testing.assert_allclose(got, x / (1 + np.exp(-x)), rtol=2e-6, atol=1e-7)


def test_parts_entry_calls_the_kernel_with_each_address():
    src = c_pool.parts_entry("k", 2)
    assert "int k_parts(void **a, int64_t lo, int64_t hi)" in src
    assert "return k(a[0], a[1], lo, hi);" in src


def test_a_forked_child_starts_its_own_threads(tmp_path):
    # After a fork the child has none of the parent's pool threads: it must start its
    # own rather than wait forever for threads that do not exist.
    script = textwrap.dedent("""
        import os, numpy as np, engine as en
        from engine.graph.lowering import hot_swap, plugin
        from engine.graph.lowering.c import c_pool
        en.config.lowering = "c"
        plugin.get("c").writes_graphs = False
        real, codes = c_pool.run_parts, []
        c_pool.run_parts = lambda *a: codes.append(real(*a)) or codes[-1]
        x = en.tensor(np.linspace(-3, 3, 64 * 512).reshape(64, 512).astype(np.float32))
        with en.config.cost.override(kernel_pool_part_elements=1024, hot_swap_calls=1,
                                     compile_calls=1):
            f = en.function(lambda t: en.tanh(t) * t)
            for _ in range(3):
                f(x)
            hot_swap.wait_for_compiles()
            f(x)
            pid = os.fork()
            if pid == 0:
                codes.clear()
                want = np.tanh(np.asarray(x)) * np.asarray(x)
                ok = np.allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-6)
                ok = ok and codes == [0]     # split on the child's own threads
                os._exit(0 if ok else 3)
            _, status = os.waitpid(pid, 0)
            print("child", os.waitstatus_to_exitcode(status))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert "child 0" in done.stdout, done.stdout + done.stderr


_COUNTING = """
#include <stdint.h>
/* a = {counts}: each row of the part counted once more */
int count_rows(void **a, int64_t lo, int64_t hi) {
    int64_t *counts = a[0];
    for (int64_t i = lo; i < hi; i++) __atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED);
    return 0;
}
"""


def test_back_to_back_splits_run_each_part_exactly_once(pool_ready):
    # Splits of different part counts one after another: a thread still looping from
    # the last split must not claim a part of the next (each row counted once a split).
    c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
    lib = c_compiler.load(_COUNTING)
    entry = ctypes.cast(lib.count_rows, ctypes.c_void_p).value
    rows = 64
    counts = np.zeros(rows, np.int64)
    runs = 3000
    for i in range(runs):
        parts = (2, 8, 3, 16)[i % 4]
        bounds = [rows * k // parts for k in range(parts + 1)]
        assert c_pool.run_parts(entry, [[counts.ctypes.data]] * parts, bounds) == 0
    np.testing.assert_array_equal(counts, np.full(rows, runs))


@pytest.fixture
def own_workers(pool_ready):
    """The pool's own worker threads take the parts (not numpy's OpenBLAS's threads,
    where the library hands them there), for the length of the test."""
    via = c_pool._state.get("via_openblas")
    _via_openblas(None)
    c_pool._state["via_openblas"] = False
    yield
    if via:
        _via_openblas(blas_threads.openblas_runner())
        c_pool._state["via_openblas"] = True


def _via_openblas(run, late_us=None, own_ms=None):
    """Hand splits to OpenBLAS's threads through ``run`` (None: never), a split late after
    ``late_us`` sending the next ``own_ms`` to the pool's own workers (the cost model's
    figures by default)."""
    c_pool._via_openblas(c_pool._state["lib"], run, late_us, own_ms)


def test_back_to_back_splits_on_own_workers_run_each_part_exactly_once(own_workers):
    test_back_to_back_splits_run_each_part_exactly_once(None)


def test_more_parts_than_threads_start_no_more_workers(own_workers, monkeypatch):
    # A window kernel cuts a batch into more chunks than threads: the chunks are shared
    # among threads - 1 workers and the caller, never one thread per chunk.
    c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
    entry = ctypes.cast(c_compiler.load(_COUNTING).count_rows, ctypes.c_void_p).value
    started = []
    monkeypatch.setattr(c_pool, "_started", [])
    lib = c_pool._state["lib"]
    real_start = lib.pool_start

    class Recording:
        def __getattr__(self, name):
            return getattr(lib, name)

        def pool_start(self, workers, spin):
            started.append(workers)
            return real_start(workers, spin)
    monkeypatch.setitem(c_pool._state, "lib", Recording())
    counts = np.zeros(32, np.int64)
    bounds = [32 * k // 8 for k in range(9)]
    assert c_pool.run_parts(entry, [[counts.ctypes.data]] * 8, bounds, 2) == 0
    np.testing.assert_array_equal(counts, np.ones(32))
    assert started == [1]


_THREAD_OF_PART = """
#define _GNU_SOURCE
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>
/* a = {counts, tids}: each row of the part counted once more; the part's thread noted */
int note_thread(void **a, int64_t lo, int64_t hi) {
    int64_t *counts = a[0], *tids = a[1];
    for (int64_t i = lo; i < hi; i++) {
        __atomic_fetch_add(&counts[i], 1, __ATOMIC_RELAXED);
        tids[i] = (int64_t)syscall(SYS_gettid);
    }
    return 0;
}
"""


def test_parts_run_on_openblas_threads_after_a_product(pool_ready):
    # Where numpy's OpenBLAS can run them, a split's parts go to its threads: the kernel
    # right after a product starts on both cores (OpenBLAS's worker polls for work then),
    # and the pool starts no thread of its own.
    if not c_pool._state.get("via_openblas"):
        pytest.skip("numpy's BLAS has no gotoblas_pthread, or one thread")
    entry = _note_thread_entry()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    rows, parts, runs = 256, 8, 200
    counts, tids = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    a @ a                         # OpenBLAS's threads started
    threads_before = {int(t) for t in os.listdir("/proc/self/task")}
    seen = set()
    bounds = [rows * k // parts for k in range(parts + 1)]
    _via_openblas(blas_threads.openblas_runner(), late_us=1e9)   # never late: a loaded
    try:                                                         # machine must not fail it
        for _ in range(runs):
            a @ a                     # OpenBLAS's threads awake and polling
            assert c_pool.run_parts(entry, [[counts.ctypes.data, tids.ctypes.data]] * parts,
                                    bounds) == 0
            seen |= set(tids.tolist())
    finally:
        _via_openblas(blas_threads.openblas_runner())
    np.testing.assert_array_equal(counts, np.full(rows, runs))
    assert seen <= threads_before       # threads OpenBLAS had, none of the pool's own
    assert os.getpid() in seen          # the caller takes parts
    assert len(seen) == 2               # and one OpenBLAS thread (2 threads here)


def _note_thread_entry():
    c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
    return ctypes.cast(c_compiler.load(_THREAD_OF_PART).note_thread, ctypes.c_void_p).value


def test_a_late_openblas_thread_sends_the_next_splits_to_the_pools_workers(pool_ready):
    # Every split counts as late (0 us): the first goes to OpenBLAS's threads and sends
    # the splits of the next second to the pool's own workers, which take parts too.
    if not c_pool._state.get("via_openblas"):
        pytest.skip("numpy's BLAS has no gotoblas_pthread, or one thread")
    entry = _note_thread_entry()
    rows, parts = 256, 8
    counts, tids = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
    bounds = [rows * k // parts for k in range(parts + 1)]
    pointers = [[counts.ctypes.data, tids.ctypes.data]] * parts
    a = np.ones((512, 512), np.float32)

    def threads_of(splits, product=False):
        seen = set()
        for _ in range(splits):
            if product:
                a @ a
            assert c_pool.run_parts(entry, pointers, bounds) == 0
            seen |= set(tids.tolist())
        return seen - {os.getpid()}
    try:
        _via_openblas(blas_threads.openblas_runner(), late_us=1e9)
        openblas = threads_of(100, product=True)      # OpenBLAS's thread
        before = c_pool.late_splits()
        _via_openblas(blas_threads.openblas_runner(), late_us=0, own_ms=1000)
        threads_of(1)
        own = threads_of(300)
        late = c_pool.late_splits() - before
    finally:
        _via_openblas(blas_threads.openblas_runner())
    np.testing.assert_array_equal(counts, np.full(rows, 401))
    assert openblas and late == 1        # 300 splits well within the second
    assert own - openblas                # a pool worker took parts
