"""Mid-sized matrix products cut into chunks on the kernel threads, OpenBLAS at one thread
(graph/lowering/chunked_products.py)."""
import importlib

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import blas_threads
from support.finite_diff import numeric_grad

# The module (the pipeline binds the pass function under the same name).
cp = importlib.import_module("engine.graph.lowering.chunked_products")

needs_openblas = pytest.mark.skipif(not blas_threads.available(),
                                    reason="numpy's BLAS is not an OpenBLAS here")


@pytest.fixture(autouse=True)
def busy_machine(monkeypatch):
    """The chunks run only on a busy machine (``machine_busy``, read at each call): these
    tests are about the chunks, whatever the load while they run."""
    monkeypatch.setattr(cp, "machine_busy", lambda: True)


def _operands(rng, x_shape, y_shape, dtype):
    return (rng.standard_normal(x_shape).astype(dtype),
            rng.standard_normal(y_shape).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, y_shape", [
    ((256, 64), (64, 96)),         # more rows than columns: chunks of rows
    ((24, 300), (300, 200)),       # fewer rows: chunks of columns
    ((8, 32, 64), (64, 48)),       # a 3-D operand: its leading axes merged
    ((7, 5), (5, 3)),              # fewer rows and columns than chunks
])
@pytest.mark.parametrize("count", [1, 2])
def test_the_kernel_gives_numpys_product(threads, dtype, x_shape, y_shape, count):
    threads(count)
    x, y = _operands(np.random.default_rng(0), x_shape, y_shape, dtype)
    want = x.astype(np.float64) @ y.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for chunks in (2, 3, 5):
        got = cp.ChunkedProduct(dtype, chunks).impl(x, y)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_a_transposed_operand_and_an_out_that_is_not_contiguous(threads):
    threads(2)
    rng = np.random.default_rng(1)
    a, y = _operands(rng, (300, 40), (300, 50), np.float64)
    x = a.T                                    # a weight gradient's x^T @ dy
    kernel = cp.ChunkedProduct(np.float64, 4)
    np.testing.assert_allclose(kernel.impl(x, y), a.T @ y, rtol=1e-12)
    wide = np.zeros((40, 100))
    out = wide[:, ::2]                         # not C-ordered: the whole product instead
    assert kernel.out_impl(x, y, out) is out
    np.testing.assert_allclose(wide[:, ::2], a.T @ y, rtol=1e-12)
    assert not wide[:, 1::2].any()


@needs_openblas
def test_chunks_run_with_openblas_at_one_thread_and_its_count_is_restored(threads, monkeypatch):
    threads(2)
    before = blas_threads.blas_threads()
    seen = []
    original = cp.run_chunks

    def spy(fn, n, count):
        seen.append((blas_threads.blas_threads(), n, count))
        return original(fn, n, count)
    monkeypatch.setattr(cp, "run_chunks", spy)
    x, y = np.ones((64, 8)), np.ones((8, 4))
    np.testing.assert_array_equal(cp.ChunkedProduct(np.float64, 4).impl(x, y),
                                  np.full((64, 4), 8.0))
    assert seen == [(1, 4, 2)]
    assert blas_threads.blas_threads() == before


def test_chunk_count_follows_the_cost_model():
    g = en.function(lambda a, b: a @ b).graph_for(en.ones((1024, 64)), en.ones((64, 256)))
    product = g.outputs[0]
    with en.config.cost.override(chunked_product_chunk_work=1 << 20):
        assert cp.chunk_count(product) == 16          # 2^24 multiply-adds
    with en.config.cost.override(chunked_product_chunk_work=1 << 20,
                                 chunked_product_min_rows=256):
        assert cp.chunk_count(product) == 4           # 1024 rows, 256 a chunk
    with en.config.cost.override(chunked_product_chunk_work=1 << 30):
        assert cp.chunk_count(product) == 2           # never fewer than two


# ---- the pass on a graph ------------------------------------------------------------------
def _block(w1, b1, w2, x, att):
    """A small attention-and-MLP step: a batched product (left whole), 3-D @ matrix
    products and the weight gradients' transposed products."""
    h = en.tanh(x @ w1 + b1)
    scores = en.softmax(h @ en.swapaxes(h, -1, -2), axis=-1)
    y = (scores @ h) @ w2 + att * x
    return en.mean(y ** 2.0)


def _numpy_loss(w1, b1, w2, x, att):
    h = np.tanh(x @ w1 + b1)
    s = h @ np.swapaxes(h, -1, -2)
    e = np.exp(s - s.max(-1, keepdims=True))
    y = (e / e.sum(-1, keepdims=True) @ h) @ w2 + att * x
    return np.mean(y ** 2)


def _block_args(rng, dtype):
    d, hid = 12, 16
    return [(rng.standard_normal((d, hid)) * 0.3).astype(dtype),
            (rng.standard_normal(hid) * 0.1).astype(dtype),
            (rng.standard_normal((hid, d)) * 0.3).astype(dtype),
            rng.standard_normal((4, 10, d)).astype(dtype), dtype(0.5)]


def _chunked_nodes(fn, args):
    return [n.name for n in fn.get_concrete_function(*args).graph.nodes
            if n.name.startswith("matmul_chunks")]


# Low enough that every product by a matrix of the small block is cut into chunks.
SMALL = dict(chunked_product_min_work=64, chunked_product_chunk_work=256,
             chunked_product_min_rows=2)


@needs_openblas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_chunked_step_agrees_with_numpy_and_its_gradient_with_finite_differences(
        threads, dtype):
    threads(2)
    arrays = _block_args(np.random.default_rng(2), dtype)
    args = [en.tensor(a) for a in arrays]
    with en.config.cost.override(**SMALL):
        fn = en.function(en.value_and_grad(_block, argnums=(0, 1, 2)))
        fn.get_concrete_function(*args)
    # Forward: x @ w1, (scores @ h) @ w2; backward: their input and weight gradients.
    assert len(_chunked_nodes(fn, args)) >= 4
    loss, grads = fn(*args)
    wide = [a.astype(np.float64) if isinstance(a, np.ndarray) else float(a) for a in arrays]
    tol = 2e-5 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(float(loss), _numpy_loss(*wide), rtol=tol)
    for i, g in enumerate(grads):
        want = numeric_grad(lambda *a: _numpy_loss(*[np.asarray(v) for v in a]), wide, i)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-3 if dtype == np.float32 else 1e-6,
                                   atol=1e-4 if dtype == np.float32 else 1e-8)
    eager_loss, eager_grads = en.value_and_grad(_block, argnums=(0, 1, 2))(*args)
    np.testing.assert_allclose(float(loss), float(eager_loss), rtol=tol)
    for g, e in zip(grads, eager_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=tol, atol=tol)


@needs_openblas
def test_the_graphs_other_threaded_products_run_on_one_blas_thread(threads):
    threads(2)
    rng = np.random.default_rng(3)
    big, small = en.tensor(rng.standard_normal((512, 64))), en.tensor(rng.standard_normal((64, 64)))
    stack = en.tensor(rng.standard_normal((4, 128, 128)))
    with en.config.cost.override(chunked_product_min_work=1 << 21):
        fn = en.function(lambda a, w, s: (en.tanh(a @ w), s @ s))   # 2.1M; 4 of 2.1M
        graph = fn.get_concrete_function(big, small, stack).graph
    names = sorted(n.name for n in graph.nodes if n.op.name == "matmul")
    assert names == ["matmul_chunks", "matmul_one_thread"]
    first, second = fn(big, small, stack)
    np.testing.assert_allclose(first.numpy(), np.tanh(big.numpy() @ small.numpy()), rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), stack.numpy() @ stack.numpy(), rtol=1e-12)


@needs_openblas
def test_cases_left_alone(threads):
    args = [en.tensor(a) for a in _block_args(np.random.default_rng(4), np.float64)]
    step = en.value_and_grad(_block, argnums=(0, 1, 2))

    def chunked():
        with en.config.cost.override(**SMALL):
            fn = en.function(step)
            return _chunked_nodes(fn, args)
    threads(1)                       # one kernel thread: nothing to share the chunks with
    assert chunked() == []
    threads(2)
    assert chunked() != []
    before = en.config.numerics
    en.config.numerics = "bitwise"   # a chunk may round differently from the whole
    try:
        assert chunked() == []
    finally:
        en.config.numerics = before
    # A product for the kernel threads' own rules: the graph is theirs.
    with en.config.cost.override(parallel_matmul_min_work=100):
        assert chunked() == []
    # Products below the threshold, and a vector on the right, stay as they were.
    fn = en.function(lambda a, v: a @ v)
    a, v = en.tensor(np.ones((64, 64))), en.tensor(np.ones(64))
    with en.config.cost.override(chunked_product_min_work=1):
        assert _chunked_nodes(fn, (a, v)) == []
    np.testing.assert_array_equal(fn(a, v).numpy(), np.full(64, 64.0))
    fn = en.function(lambda a, b: a @ b)
    assert _chunked_nodes(fn, (a, a)) == []          # 2.6e5 multiply-adds by default


@needs_openblas
def test_an_idle_machine_keeps_its_products_whole_on_openblas_threads(threads, monkeypatch):
    threads(2)
    monkeypatch.setattr(cp, "machine_busy", lambda: False)

    def refuse(*args):
        raise AssertionError("chunks or one BLAS thread on an idle machine")
    monkeypatch.setattr(cp, "run_chunks", refuse)
    monkeypatch.setattr(cp, "one_blas_thread", refuse)
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 40, 16)), rng.standard_normal((16, 24))
    np.testing.assert_allclose(cp.ChunkedProduct(np.float64, 4).impl(x, y), x @ y, rtol=1e-12)
    big, small = en.tensor(rng.standard_normal((512, 64))), en.tensor(rng.standard_normal((64, 64)))
    stack = en.tensor(rng.standard_normal((4, 128, 128)))
    with en.config.cost.override(chunked_product_min_work=1 << 21):
        fn = en.function(lambda a, w, s: (en.tanh(a @ w), s @ s))
        graph = fn.get_concrete_function(big, small, stack).graph
        first, second = fn(big, small, stack)
    assert [n.op for n in graph.nodes if n.op.name == "matmul"] == [en.ops.matmul_op] * 2
    np.testing.assert_allclose(first.numpy(), np.tanh(big.numpy() @ small.numpy()), rtol=1e-12)
    np.testing.assert_allclose(second.numpy(), stack.numpy() @ stack.numpy(), rtol=1e-12)


def test_busy_means_fewer_idle_cores_than_the_cost_model_says(monkeypatch):
    machine_load = importlib.import_module("engine.graph.lowering.machine_load")
    monkeypatch.undo()                              # the real machine_busy
    monkeypatch.setattr(machine_load.os, "sched_getaffinity", lambda pid: {0, 1},
                        raising=False)
    for load, idle, busy in [(0.5, 1.5, False), (1.7, 0.3, False), (1.9, 0.1, True),
                             (6.0, 0.0, True)]:
        monkeypatch.setattr(machine_load.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert machine_load.idle_cores(fresh=True) == pytest.approx(idle)
        assert cp.machine_busy() is busy            # (the reading just made, reused)
