"""numpy's OpenBLAS on the C kernel pool's threads (graph/lowering/c/c_pool.py's
``pool_blas``, with ``en.config.blas_on_kernel_pool``): products give the values of a
float64 reference, from many Python threads at once, in a forked child whose pool has
no threads yet, and nothing is hooked with the switch off (the default). The switch is
read when the pool's library loads, and a deadlock must fail a test, not hang it, so
each run is a subprocess with a timeout."""
import ctypes
import importlib
import os
import re
import subprocess
import sys
import textwrap

import pytest

from support.compilers import needs_c_compiler
from support.paths import REPO

blas_threads = importlib.import_module("engine.graph.lowering.blas_threads")

pytestmark = needs_c_compiler


def _openblas_version():
    """numpy's OpenBLAS version as a tuple, or None where it is not an OpenBLAS."""
    for path in blas_threads._numpy_first(blas_threads._openblas_paths()):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_config64_", "scipy_openblas_get_config",
                     "openblas_get_config64_", "openblas_get_config"):
            get = getattr(lib, name, None)
            if get is not None:
                get.restype = ctypes.c_char_p
                found = re.search(rb"OpenBLAS (\d+)\.(\d+)\.(\d+)", get())
                return tuple(int(g) for g in found.groups()) if found else None
    return None


@pytest.fixture
def hook_found():
    version = _openblas_version()
    if version is None or version < (0, 3, 27):
        pytest.skip(f"numpy's BLAS has no threads hook (OpenBLAS {version})")


def _run(script, timeout=180):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return done.stdout + done.stderr


_PRELUDE = """
    import os, threading, numpy as np, engine as en
    from engine.graph.lowering import hot_swap
    from engine.graph.lowering.c import c_pool
    en.config.blas_on_kernel_pool = True
    c_pool.ready()
    hot_swap.wait_for_compiles()
    assert c_pool.blas_calls() is not None
    rng = np.random.default_rng(1)
    # a long inner dimension: the product's parts wait for each other's packed panels
    a = rng.standard_normal((64, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 256)).astype(np.float32)
    want = a.astype(np.float64) @ b
    def right(c):
        return bool(np.all(np.abs(c - want) <= 2e-5 * (np.abs(a) @ np.abs(b))))
"""


def test_threaded_products_on_the_pool_match_float64(hook_found):
    out = _run(_PRELUDE + """
    before = c_pool.blas_calls()
    bad = []
    for dtype, tol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        cases = [
            (rng.standard_normal((1024, 64)), rng.standard_normal((64, 256))),
            (rng.standard_normal((256, 1024)).T, rng.standard_normal((256, 192))),  # transposed
            (rng.standard_normal((700, 900)), rng.standard_normal((900, 300))),
            (rng.standard_normal((16, 64, 128)), rng.standard_normal((16, 128, 96))),  # stacked
            (rng.standard_normal((3000, 2000)), rng.standard_normal(2000)),           # gemv
        ]
        for x, y in cases:
            x, y = x.astype(dtype), y.astype(dtype)
            got = x @ y
            want = x.astype(np.float64) @ y.astype(np.float64)
            if not np.all(np.abs(got - want) <= tol * (np.abs(x) @ np.abs(y))):
                bad.append((dtype.__name__, x.shape, y.shape))
    print("bad", bad, "handed", c_pool.blas_calls() - before)
    """)
    found = re.search(r"bad (\[.*\]) handed (\d+)", out)
    assert found, out
    assert found.group(1) == "[]" and int(found.group(2)) >= 8, out


def test_products_and_split_kernels_from_many_threads_at_once(hook_found):
    # Products from four Python threads (one holds the pool, the others' parts get threads
    # made for them) while compiled kernels split on the pool too.
    out = _run(_PRELUDE + """
    en.config.lowering = "c"
    x = en.tensor(np.linspace(-3, 3, 64 * 512).reshape(64, 512).astype(np.float32))
    with en.config.cost.override(kernel_pool_part_elements=1024, hot_swap_calls=1,
                                 compile_calls=1):
        f = en.function(lambda t: en.tanh(t) * t)
        for _ in range(3):
            f(x)
        hot_swap.wait_for_compiles()
        kernel_want = np.tanh(np.asarray(x)) * np.asarray(x)
        wrong = []
        def products():
            for _ in range(200):
                if not right(a @ b):
                    wrong.append("product")
        def kernels():
            for _ in range(200):
                if not np.allclose(np.asarray(f(x)), kernel_want, rtol=1e-5, atol=1e-6):
                    wrong.append("kernel")
        threads = [threading.Thread(target=t) for t in (products, products, products, kernels)]
        [t.start() for t in threads]
        products()
        [t.join() for t in threads]
    print("wrong", len(wrong), "calls", c_pool.blas_calls())
    """)
    found = re.search(r"wrong (\d+) calls (\d+)", out)
    assert found, out
    assert found.group(1) == "0" and int(found.group(2)) >= 800, out


def test_a_forked_child_runs_its_first_product_on_new_workers(hook_found):
    # A child has no pool threads: its first product starts a worker and hands it a part
    # at once. A worker that took the part's split for one it had already seen would
    # sleep through it and leave the caller's part waiting forever. Seen where the new
    # thread waited for a core (OpenBLAS's own threads spinning beside it); here each new
    # worker starts 20 ms late.
    out = _run(_PRELUDE + """
    import ctypes
    assert right(a @ b)
    c_pool._state["lib"].pool_delay_starts(ctypes.c_int64(20_000_000))
    codes = []
    for _ in range(10):
        pid = os.fork()
        if pid == 0:
            os._exit(0 if right(a @ b) and right(a @ b) else 3)
        _, status = os.waitpid(pid, 0)
        codes.append(os.waitstatus_to_exitcode(status))
    print("children", codes)
    """, timeout=120)
    assert "children [" + ", ".join(["0"] * 10) + "]" in out, out


def test_off_by_default_openblas_keeps_its_own_threads():
    out = _run("""
    import numpy as np, engine as en
    from engine.graph.lowering import hot_swap
    from engine.graph.lowering.c import c_pool
    c_pool.ready()
    hot_swap.wait_for_compiles()
    a = np.ones((1024, 64), np.float32)
    print("built", c_pool.ready(), "calls", c_pool.blas_calls(),
          "sum", float((a @ a.T).sum()))
    """)
    assert f"built True calls None sum {1024.0 * 1024 * 64}" in out, out
