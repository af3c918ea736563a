"""Fused elementwise kernels compiled by numba (graph/lowering/numba/numba_fused.py), large and
small, agree with numpy, write in place where memory planning says so, split over kernel
threads, share one function among alike kernels, and follow the lowering policy."""
import importlib

import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.fused_lowering import (autoencoder_gradient_backends, check_partial_overlap_is_read_from_a_copy,
                            region_of, run_lowered, sigmoid_times_three_case)
from support.programs import flat

numba = import_numba()

numba_fused = importlib.import_module("engine.graph.lowering.numba.numba_fused")


@pytest.fixture
def config(monkeypatch):
    # The tests set both: monkeypatch puts back what they were.
    monkeypatch.setattr(en.config, "lowering", en.config.lowering)
    monkeypatch.setattr(en.config, "fusion_threads", en.config.fusion_threads)
    # Graphs without large products are compiled whole up to whole_graph_max_elements; these
    # tests are of the fused kernels that larger graphs get.
    monkeypatch.setattr(en.config.cost, "whole_graph_max_elements",
                        en.config.cost.whole_graph_small_elements)
    return en.config


_run = run_lowered


def _broadcasting(x, row, col, s):
    y = en.tanh(x * row + col) - s
    return en.exp(y) * 0.5 + x


def _broadcasting_numpy(x, row, col, s):
    y = np.tanh(x * row + col) - s
    return np.exp(y) * 0.5 + x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(400, 300), (20, 60, 70)], ids=["2d", "3d"])
def test_broadcast_inputs_match_numpy(config, dtype, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    row = rng.standard_normal(shape[-1]).astype(dtype)
    col = rng.standard_normal(shape[:-1] + (1,)).astype(dtype)
    if len(shape) == 3:
        col = col[:1]                        # (1, 60, 1): broadcast over the first axis too
    s = np.asarray(0.25, dtype)
    got, backends = _run(_broadcasting, [x, row, col, s], "numba")
    assert backends == ["numba"]
    want = _broadcasting_numpy(*(a.astype(np.float64) for a in (x, row, col, s)))
    rtol = 2e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got[0], want, rtol=rtol, atol=rtol)
    lowered, backends = _run(_broadcasting, [x, row, col, s], "numpy")
    assert backends == ["numpy"]
    np.testing.assert_allclose(got[0], lowered[0], rtol=rtol * 2, atol=rtol)


def test_integer_region_is_exact(config):
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-1000, 1000, (300, 300)) for _ in range(2))
    fn = lambda a, b: (a * b + 3) - a // 7   # noqa: E731
    got, backends = _run(fn, [a, b], "numba")
    assert backends == ["numba"]
    np.testing.assert_array_equal(got[0], (a * b + 3) - a // 7)


@pytest.mark.parametrize("threads", [1, 2])
def test_full_reductions_and_several_results(config, threads):
    rng = np.random.default_rng(2)
    z = rng.standard_normal((1000, 784)).astype(np.float32)
    b = rng.standard_normal(784).astype(np.float32)
    x = rng.random((1000, 784)).astype(np.float32)

    def tail(z, b, x):
        y = en.sigmoid(z + b)
        d = y - x
        return en.mean(d * d), en.sum(y), d * (y * (1.0 - y))
    got, backends = _run(tail, [z, b, x], "numba", threads)
    assert "numba" in backends
    z64, b64, x64 = (a.astype(np.float64) for a in (z, b, x))
    y = 1.0 / (1.0 + np.exp(-(z64 + b64)))
    d = y - x64
    np.testing.assert_allclose(got[0], np.mean(d * d), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.sum(y), rtol=1e-5)
    np.testing.assert_allclose(got[2], d * y * (1 - y), rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("threads", [1, 2])
def test_autoencoder_gradient_with_kernels_written_in_place(config, threads):
    assert autoencoder_gradient_backends("numba", threads).count("numba") >= 2


def _kernel(members_fn, arrays):
    """The first fused region of ``members_fn`` traced on ``arrays``, as a compiled kernel."""
    members, inputs = region_of(members_fn, arrays)
    assert [n.op.name for n in inputs] == ["placeholder", "placeholder", "constant"]
    return numba_fused.CompiledFusedKernel("k_test", members, inputs, [(members[-1], None)])


def test_output_written_over_an_input_and_partial_overlap(config):
    fn, a, b, three, want = sigmoid_times_three_case()
    kernel = _kernel(fn, [a, b])
    in_place = a.copy()
    out = kernel.out_impl(in_place, b, three, in_place)        # the result over its own input
    assert out is in_place
    np.testing.assert_allclose(out, want, rtol=2e-6)
    assert len(kernel._variants) == 2                    # the aliased loop is its own
    check_partial_overlap_is_read_from_a_copy(kernel, a, b, three)


def test_policy(config):
    rng = np.random.default_rng(5)
    small = rng.standard_normal((100, 100)).astype(np.float32)
    big = rng.standard_normal((400, 400)).astype(np.float32)
    fn = lambda x: en.tanh(x) * 2.0 + 1.0   # noqa: E731
    # A small region stays with the numpy kernel under "auto" (too little to save), and
    # under "numba" the whole small graph is one compiled region instead.
    assert _run(fn, [small], "auto")[1] == ["numpy"]
    assert _run(fn, [small], "numba")[1] == []
    assert _run(fn, [big], "numpy")[1] == ["numpy"]
    # "auto": what a region saves over compile_calls calls against importing and compiling.
    source = "def k():\n    return 0\n"
    per_call = 3 * en.config.cost.numba_saved_seconds_per_element_op
    assert not numba_fused.pays("auto", source, 10, 3, 100, 2.0)
    assert numba_fused.pays("auto", source, int(3.0 / (per_call * 100)) * 2, 3, 100, 2.0)
    assert numba_fused.pays("numba", source, 1, 1, 100, 1e9)


def test_view_of_the_result_is_read_in_place(config):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    kernel = _kernel(lambda a, b: en.tanh(a + b) * 3.0, [a, b])
    want = 3.0 * np.tanh(a.astype(np.float64) + b)
    buf = a.copy()
    # Two views of one buffer, as a memory plan hands out: not one object, one address.
    out = kernel.out_impl(buf.view(), b, np.float32(3.0), buf.view())
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(buf, want, rtol=2e-6, atol=1e-6)
    assert len(kernel._variants) == 2                    # read through the aliased loop
    fresh = kernel.out_impl(a, b, np.float32(3.0), None)
    np.testing.assert_allclose(fresh, want, rtol=2e-6, atol=1e-6)


def _unrolled_tanh_rnn(w, u, b, xs, targets):
    h = en.zeros((xs.shape[1], u.shape[0]), dtype="float32")
    outs = []
    for t in range(xs.shape[0]):
        h = en.tanh(xs[t] @ w + h @ u + b)
        outs.append(h)
    return en.mean((en.stack(outs) - targets) ** 2.0)


def test_the_steps_of_an_unrolled_loop_share_one_compiled_kernel(config):
    from bench.workloads.rnn import numpy_tanh_loss_and_grad
    from engine.graph.lowering.pipeline import DEFAULT_PIPELINE
    rng = np.random.default_rng(7)
    steps, batch, hidden = 12, 16, 32
    w, u = (rng.uniform(-0.3, 0.3, (hidden, hidden)).astype(np.float32) for _ in range(2))
    b = rng.uniform(-0.1, 0.1, hidden).astype(np.float32)
    xs, targets = (rng.standard_normal((steps, batch, hidden)).astype(np.float32)
                   for _ in range(2))
    arrays = [en.tensor(a) for a in (w, u, b, xs, targets)]
    # Without the whole-graph pass: each fused kernel is lowered on its own, as in an
    # unrolled graph too large to be written whole.
    passes = [p for p in DEFAULT_PIPELINE if p != "compile_numba"]
    results = {}
    for mode in ("numba", "numpy"):
        en.config.lowering = mode
        f = en.function(en.value_and_grad(_unrolled_tanh_rnn, argnums=(0, 1, 2)), passes=passes)
        results[mode] = [o.numpy() for o in flat(f(*arrays))]
        graph = f.graph_for(*arrays)
    en.config.lowering = "numba"
    f = en.function(en.value_and_grad(_unrolled_tanh_rnn, argnums=(0, 1, 2)), passes=passes)
    f(*arrays)
    kernels = [n.op.impl.__self__.out_impl.__self__ for n in f.graph_for(*arrays).nodes
               if n.op.name.startswith("fused") and n.meta.get("backend") == "numba"]
    assert len(kernels) >= 2 * steps - 2                 # each step's forward and backward
    sources = {k.source for k in kernels}
    assert len({id(k.fn) for k in kernels}) == len(sources) < len(kernels) // 4
    assert all(n.meta.get("backend") != "numba" for n in graph.nodes)   # the numpy run
    want = numpy_tanh_loss_and_grad(tuple(a.astype(np.float64) for a in (w, u, b)),
                                    xs.astype(np.float64), targets.astype(np.float64))
    for got, lowered, ref in zip(results["numba"], results["numpy"], want):
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6 * np.abs(ref).max())
        np.testing.assert_allclose(got, lowered, rtol=2e-5, atol=1e-6 * np.abs(ref).max())


def test_small_regions_pay_for_the_numpy_calls_they_save(config):
    source = "def k():\n    return 0\n"
    # One op on a few elements: the compiled call costs more than numpy's.
    assert not numba_fused.pays("auto", source, 64, 1, 10 ** 9, 0.0)
    # Four ops on a (32, 64) step: the calls saved pay back compiling after enough calls.
    saved = 4 * en.config.cost.numpy_call_seconds - en.config.cost.numba_call_seconds
    calls = int((2.0 + en.config.cost.numba_import_seconds) / saved) * 2
    assert numba_fused.pays("auto", source, 2048, 4, calls, 2.0)
    assert not numba_fused.pays("auto", source, 2048, 4, 100, 2.0)
