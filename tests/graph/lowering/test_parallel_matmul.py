"""Large matrix products split by rows over the kernel threads (graph/lowering/parallel_matmul.py),
with numpy's OpenBLAS held at one thread meanwhile (graph/lowering/blas_threads.py)."""
import importlib

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import blas_threads
from engine.graph.lowering.parallel import kernel_threads
from support.paths import REPO

# The module (the pipeline binds the pass function under the same name).
pm = importlib.import_module("engine.graph.lowering.parallel_matmul")
c_pool = importlib.import_module("engine.graph.lowering.c.c_pool")


@pytest.fixture(autouse=True)
def kernels_on_own_threads(monkeypatch):
    """Products split among the kernel threads where kernels run on the engine's own
    threads; where they run on numpy's OpenBLAS's (c_pool.py) products stay whole on
    OpenBLAS's threads (the last test). These tests take the first path everywhere."""
    monkeypatch.setattr(c_pool, "kernels_on_blas_threads", lambda: False)


def _autoencoder(w, b1, b2, x):
    h = en.sigmoid(x @ w + b1)
    y = en.sigmoid(h @ en.transpose(w) + b2)
    return en.mean((y - x) ** 2.0)


def _numpy_gradient(w, b1, b2, x):
    h = 1.0 / (1.0 + np.exp(-(x @ w + b1)))
    y = 1.0 / (1.0 + np.exp(-(h @ w.T + b2)))
    r = y - x
    dz2 = 2.0 / r.size * r * y * (1.0 - y)
    dz1 = (dz2 @ w) * h * (1.0 - h)
    return np.mean(r * r), x.T @ dz1 + dz2.T @ h


def test_split_products_give_numpys_answer_and_one_threads_to_rounding(threads):
    rng = np.random.default_rng(0)
    n, f, k = 2000, 300, 120      # products of 7.2e7 multiply-adds: split
    x = rng.random((n, f)).astype(np.float32)
    w = (rng.standard_normal((f, k)) * 0.1).astype(np.float32)
    b1, b2 = rng.standard_normal(k).astype(np.float32), rng.standard_normal(f).astype(np.float32)
    args = [en.tensor(a) for a in (w, b1, b2, x)]
    want_loss, want_dw = _numpy_gradient(*(a.astype(np.float64) for a in (w, b1, b2, x)))
    answers = []
    for count in (1, 2):
        threads(count)
        fn = en.function(en.value_and_grad(_autoencoder))
        loss, dw = fn(*args)
        split = [n_.name for n_ in fn.get_concrete_function(*args).graph.nodes
                 if n_.op.name == "matmul" and n_.op is not en.ops.matmul_op]
        if count == 1 or not blas_threads.available():
            assert split == []
        else:
            assert len(split) == 5            # the forward's two and the gradient's three
        np.testing.assert_allclose(float(loss), want_loss, rtol=1e-5)
        # float32 sums over 2000 rows: within 1e-5 of the gradient's largest entry
        np.testing.assert_allclose(dw.numpy(), want_dw, rtol=0,
                                   atol=1e-5 * np.abs(want_dw).max())
        answers.append((float(loss), dw.numpy().copy()))
    # OpenBLAS blocks a product's sums by its shape (a part has fewer rows), so the
    # split agrees with the whole product to float32 rounding, not bit for bit.
    np.testing.assert_allclose(answers[1][0], answers[0][0], rtol=1e-6)
    np.testing.assert_allclose(answers[1][1], answers[0][1], rtol=0,
                               atol=1e-6 * np.abs(answers[0][1]).max())


def test_a_small_product_stays_whole(threads):
    threads(2)
    fn = en.function(lambda a, b: a @ b)
    a, b = en.tensor(np.ones((100, 64))), en.tensor(np.ones((64, 64)))   # 4e5 multiply-adds
    np.testing.assert_array_equal(fn(a, b).numpy(), np.full((100, 64), 64.0))
    assert [n.op for n in fn.get_concrete_function(a, b).graph.nodes
            if n.op.name == "matmul"] == [en.ops.matmul_op]


@pytest.mark.skipif(not blas_threads.available(), reason="numpy's BLAS is not OpenBLAS here")
def test_blas_is_held_at_one_thread_inside_a_split_product_and_restored_after():
    before = blas_threads.blas_threads()
    seen = []
    kernel = pm.RowSplitProduct(np.float64)
    x, y = np.ones((64, 8)), np.ones((8, 4))
    original = pm.run_split

    def spy(fn, bounds):
        seen.append((blas_threads.blas_threads(), len(bounds) - 1))
        return original(fn, bounds)
    pm.run_split = spy
    try:
        before_threads = en.config.fusion_threads
        en.config.fusion_threads = 2
        try:
            out = kernel.impl(x, y)
        finally:
            en.config.fusion_threads = before_threads
    finally:
        pm.run_split = original
    np.testing.assert_array_equal(out, np.full((64, 4), 8.0))
    assert seen == [(1, 2)]
    assert blas_threads.blas_threads() == before
    with blas_threads.one_blas_thread():
        with blas_threads.one_blas_thread():
            assert blas_threads.blas_threads() == 1
        assert blas_threads.blas_threads() == 1
    assert blas_threads.blas_threads() == before


_HOLDS_NUMPYS_BLAS = """
import scipy.linalg.cython_blas  # SciPy's own OpenBLAS, loaded before the engine looks
import numpy as np
from threadpoolctl import threadpool_info
from engine.graph.lowering import blas_threads

def numpy_threads():
    return [i["num_threads"] for i in threadpool_info()
            if i["internal_api"] == "openblas" and "numpy" in i["filepath"]]
before = numpy_threads()
with blas_threads.one_blas_thread():
    inside = numpy_threads()
print(before, inside, numpy_threads())
"""


def test_one_blas_thread_holds_numpys_openblas_when_scipys_is_loaded_too():
    # With SciPy's OpenBLAS loaded first, holding that one at one thread left numpy's
    # threaded: both halves of a split product then ran OpenBLAS's threaded path, one
    # after the other. threadpoolctl reads numpy's count independently.
    pytest.importorskip("scipy")
    pytest.importorskip("threadpoolctl")
    if not blas_threads.available():
        pytest.skip("numpy's BLAS here is not an OpenBLAS")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _HOLDS_NUMPYS_BLAS], capture_output=True,
                         text=True, check=True, env=_env()).stdout.split("] [")
    before, inside, after = (o.strip("[]\n ") for o in out)
    assert inside == "1", out
    assert before == after


def _env():
    import os
    import pathlib
    root = str(pathlib.Path(REPO))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def test_kernel_threads_default_follows_the_machine(threads):
    threads(None)
    assert kernel_threads() in (1, 2)
    threads(3)
    assert kernel_threads() == 3


def test_auto_threads_split_a_graph_with_a_large_product_and_hold_its_small_ones(
        threads, monkeypatch):
    parallel = importlib.import_module("engine.graph.lowering.parallel")
    threads(None)
    # A test-sized product counts as large (the real bound is 2^29 multiply-adds), and
    # so does a test-sized elementwise op (the real bound is 2^18 elements).
    monkeypatch.setattr(en.config.cost, "two_threads_min_product_work",
                        en.config.cost.parallel_matmul_min_work)
    monkeypatch.setattr(en.config.cost, "two_threads_min_elements", 1 << 10)
    held = []
    real = pm.one_blas_thread

    class Recording:
        def __enter__(self):
            real().__enter__()
            held.append(blas_threads.blas_threads())

        def __exit__(self, *exc):
            return real().__exit__(*exc)
    monkeypatch.setattr(pm, "one_blas_thread", Recording)
    rng = np.random.default_rng(1)
    a, b = rng.random((512, 512)), rng.random((512, 128))    # 2^25 multiply-adds: split
    c = rng.random((128, 8))                                   # 5e5: stays whole

    def two_products(a, b, c):
        return en.tanh(a @ b) @ c
    fn = en.function(two_products)
    args = [en.tensor(v) for v in (a, b, c)]
    np.testing.assert_allclose(fn(*args).numpy(), np.tanh(a @ b) @ c, rtol=1e-12)
    graph = fn.get_concrete_function(*args).graph
    names = sorted(n.name.rstrip("_0123456789") for n in graph.nodes if n.op.name == "matmul")
    small_only = en.function(lambda a, c: a @ c)
    small_args = [en.tensor(v) for v in (b, c)]
    np.testing.assert_allclose(small_only(*small_args).numpy(), b @ c, rtol=1e-12)
    small_graph = small_only.get_concrete_function(*small_args).graph
    traced = small_only.get_concrete_function(*small_args)
    assert parallel.threads_for(traced.unoptimized_graph) == 1
    assert [n.op for n in small_graph.nodes if n.op.name == "matmul"] == [en.ops.matmul_op]
    if parallel.machine_threads() < 2 or not blas_threads.available():
        assert names == ["matmul", "matmul"] and held == []
        return
    assert parallel.threads_for(fn.get_concrete_function(*args).unoptimized_graph) == 2
    assert names == ["matmul_one_thread", "matmul_rows"]
    assert held and set(held) == {1}      # both products ran with OpenBLAS at one thread


def test_auto_threads_leave_a_graph_of_products_alone_to_openblas(threads, monkeypatch):
    # Splitting gains nothing where the pool has no elementwise work, and OpenBLAS's
    # workers, still spinning from an eager product, would take the second core from it.
    parallel = importlib.import_module("engine.graph.lowering.parallel")
    threads(None)
    monkeypatch.setattr(en.config.cost, "two_threads_min_product_work",
                        en.config.cost.parallel_matmul_min_work)
    monkeypatch.setattr(en.config.cost, "two_threads_min_elements", 1 << 10)
    rng = np.random.default_rng(2)
    a, b, c = rng.random((512, 512)), rng.random((512, 128)), rng.random((128, 8))
    args = [en.tensor(v) for v in (a, b, c)]
    products = en.function(lambda a, b, c: (a @ b) @ c)
    np.testing.assert_allclose(products(*args).numpy(), (a @ b) @ c, rtol=1e-12)
    traced = products.get_concrete_function(*args)
    assert parallel.threads_for(traced.unoptimized_graph) == 1
    assert [n.op for n in traced.graph.nodes if n.op.name == "matmul"] == [en.ops.matmul_op] * 2
    # A small elementwise op (64 elements, under the bound) does not change that ...
    small_tail = en.function(lambda a, b, c: en.tanh(((a @ b) @ c)[:8]))
    assert parallel.threads_for(small_tail.get_concrete_function(*args).unoptimized_graph) == 1
    # ... and a large one, once fused, still counts (the graph is read as
    # parallel_matmul reads it: after fusion, before the products are split).
    fused = en.function(lambda a, b: en.sum((en.tanh(a @ b) - 1.0) ** 2),
                        passes=("cleanup", "fusion"))
    graph = fused.get_concrete_function(*args[:2]).graph
    assert [n.op.name for n in graph.nodes if "fused_ops" in n.meta]
    assert not any(n.op.elementwise or n.op.reduction for n in graph.nodes
                   if "fused_ops" not in n.meta)
    expected = parallel.machine_threads() if blas_threads.available() else 1
    assert parallel.threads_for(graph) == expected


def test_products_in_branch_bodies_run_on_one_blas_thread_beside_split_ones(threads):
    # A product inside a cond branch that woke OpenBLAS's threads would leave its worker
    # polling through the split products that follow (the traced L-BFGS iteration at
    # history 100 took 140 ms against 93 with its history products held).
    threads(2)
    rng = np.random.default_rng(4)
    a, b = rng.random((512, 512)), rng.random((512, 128))
    h = rng.random((40, 128))

    def step(a, b, h, flag):
        big = en.tanh(a @ b)                                    # split (rows)
        side = en.cond(flag, lambda: h @ big[0], lambda: en.zeros(40, dtype=h.dtype))
        return big, side
    fn = en.function(step)
    args = [en.tensor(v) for v in (a, b, h)] + [en.tensor(True)]
    with en.config.cost.override(parallel_matmul_min_work=1 << 20):
        big, side = fn(*args)
        graph = fn.get_concrete_function(*args).graph
    want = np.tanh(a @ b)
    np.testing.assert_allclose(big.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(side.numpy(), h @ want[0], rtol=1e-12)
    cond = next(n for n in graph.nodes if n.op.name == "cond")
    inner = [n.name for n in cond.params["true"].graph.nodes if n.op.name == "matmul"]
    top = [n.name for n in graph.nodes if n.op.name == "matmul"]
    if not blas_threads.available():
        assert not any(name.startswith("matmul_rows") for name in top)
        return
    assert any(name.startswith("matmul_rows") for name in top)
    assert inner and all(name.startswith("matmul_one_thread") for name in inner)
    # The unoptimized graph keeps its own body: the pass changed a copy.
    raw = fn.get_concrete_function(*args).unoptimized_graph
    raw_cond = next(n for n in raw.nodes if n.op.name == "cond")
    assert all(n.op is en.ops.matmul_op for n in raw_cond.params["true"].graph.nodes
               if n.op.name == "matmul")


def test_products_stay_whole_where_kernels_run_on_openblas_threads(monkeypatch):
    # Kernels and products then share OpenBLAS's threads: a product split on the
    # Python pool would share a core with OpenBLAS's worker polling after a kernel.
    monkeypatch.setattr(c_pool, "kernels_on_blas_threads", lambda: True)
    monkeypatch.setattr(en.config, "fusion_threads", 2)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in ((784, 196), (196,), (784,), (1000, 784))]
    g = en.function(en.grad(_autoencoder)).graph_for(*[en.tensor(a) for a in args])
    names = {n.name.rstrip("_0123456789") for n in g.nodes}
    assert "matmul_rows" not in names and "matmul_one_thread" not in names
    got = np.asarray(en.function(en.grad(_autoencoder))(*[en.tensor(a) for a in args]))
    want = _numpy_gradient(*[a.astype(np.float64) for a in args])[1]
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * np.abs(want).max())
