"""graph/lowering/window_threads.py: how many threads split convolutions get (the
configured kernel threads, else the machine's but at most OpenBLAS's own count), and a
graph with split convolutions keeping its products on one BLAS thread."""
import importlib

import numpy as np

import engine as en
from engine.graph.lowering import blas_threads, parallel, window_threads
from engine.ops import batch_split


def test_threads_follow_the_config_then_openblas_count(monkeypatch):
    monkeypatch.setattr(en.config, "fusion_threads", 3)
    assert window_threads.threads() == 3
    monkeypatch.setattr(en.config, "fusion_threads", None)
    monkeypatch.setattr(window_threads, "machine_busy", lambda: False)
    assert window_threads.threads() == 1       # idle: OpenBLAS's threads take the product
    if blas_threads.available():               # a native loop has no other threads
        assert window_threads.threads(blas=False) == min(parallel.machine_threads(),
                                                         blas_threads.blas_threads())
    monkeypatch.setattr(window_threads, "machine_busy", lambda: True)
    if not blas_threads.available():
        return
    with blas_threads.one_blas_thread():       # as OPENBLAS_NUM_THREADS=1 would
        assert window_threads.threads() == 1
        assert window_threads.threads(blas=False) == 1
    assert window_threads.threads() == min(parallel.machine_threads(),
                                           blas_threads.blas_threads())


def test_a_graph_with_split_convolutions_keeps_its_products_on_one_blas_thread(monkeypatch):
    # (where kernels run on the engine's own threads; on numpy's OpenBLAS's, products
    # stay on OpenBLAS's threads: test_parallel_matmul.py)
    monkeypatch.setattr(importlib.import_module("engine.graph.lowering.c.c_pool"),
                        "kernels_on_blas_threads", lambda: False)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    m = rng.standard_normal((8 * 8 * 5, 2)).astype(np.float32)

    def head(x, w, m):
        return en.reshape(en.conv2d(x, w, padding="same"), (4, -1)) @ m
    args = [en.tensor(a) for a in (x, w, m)]
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = sum(np.einsum("nhwc,co->nhwo", xp[:, a:a + 8, b:b + 8], w[a, b])
               for a in range(3) for b in range(3))
    want = conv.reshape(4, -1) @ m
    monkeypatch.setattr(en.config, "fusion_threads", 2)
    with en.config.cost.override(window_split_min_work=0):
        split = en.function(head)
        got = split(*args).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        names = [n.name.rstrip("_0123456789") for n in split.graph_for(*args).nodes
                 if n.op.name == "matmul"]
    with en.config.cost.override(window_split_min_work=1 << 60):
        whole = en.function(head)
        np.testing.assert_allclose(whole(*args).numpy(), want, rtol=1e-4, atol=1e-4)
        whole_names = [n.name.rstrip("_0123456789") for n in whole.graph_for(*args).nodes
                       if n.op.name == "matmul"]
    assert whole_names == ["matmul"]
    if blas_threads.available() and batch_split.RUNNERS:
        assert names == ["matmul_one_thread"]
    else:
        assert names == ["matmul"]
