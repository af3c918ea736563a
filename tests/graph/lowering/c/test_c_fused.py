"""Fused elementwise kernels compiled as C (graph/lowering/c/c_fused.py) agree with eager mode
over every op with a scalar form, keep numpy's semantics at the edges, write in place,
split over kernel threads, keep their libraries on disk, and follow the lowering policy."""
import importlib
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import engine as en
from engine.op import REGISTRY
from op_db import F32, F64, OP_DB, seeded_rng
from support.compilers import needs_c_compiler
from support.fused_lowering import (autoencoder_gradient_backends, check_partial_overlap_is_read_from_a_copy,
                            fused_backends, region_of, run_lowered, sigmoid_times_three_case)
from support.paths import REPO

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
c_fused = importlib.import_module("engine.graph.lowering.c.c_fused")
numba_plugin = importlib.import_module("engine.graph.lowering.numba.lowering")

pytestmark = needs_c_compiler
ROOT = pathlib.Path(REPO)
# The numeric suite's tolerances (tests/ops/test_ops_numeric.py), as the numba lowering's.
TOLS = {F64: (1e-7, 1e-12), F32: (1.3e-6, 1e-5)}
# Elementwise ops with a scalar form that the C lowering does not write: integer
# division and shifts (numpy's edge rules live in numba_math), complex conjugation;
# ldexp (an integer exponent, where a C kernel computes in the result's dtype), spacing
# and logaddexp2 (numpy's edge rules, not in libm).
NOT_IN_C = {"floor_divide", "remainder", "mod", "left_shift", "right_shift", "conj", "bitwise_invert",
            "bitwise_and", "bitwise_or", "bitwise_xor", "ldexp", "spacing", "logaddexp2"}
# Shape-only ops: folded into constants before fusion, so never a kernel's member here.
FOLDED = {"ones_like", "zeros_like"}


@pytest.fixture
def config(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", en.config.lowering)
    monkeypatch.setattr(en.config, "fusion_threads", en.config.fusion_threads)
    # These check the fused kernels: a small graph would be one C function instead
    # (graph/lowering/c/c_graph.py, checked in test_c_graph.py).
    monkeypatch.setattr(importlib.import_module("engine.graph.lowering.plugin").get("c"),
                        "writes_graphs", False)
    return en.config


_backends = fused_backends


def _apply(info, sample):
    """The op on the sample's arrays, then one more elementwise op, so that the two
    form a fused region (a lone op is not fused): times 2 (exact), or not for a bool."""
    def run(*tensors):
        it = iter(tensors)
        args = [next(it) if isinstance(a, np.ndarray) else a for a in sample.args]
        out = info.op(*args, **sample.kwargs)
        return en.logical_not(out) if out.dtype == en.bool_ else out * 2.0
    return run


def _writable(info, dtype):
    op = REGISTRY.get(info.name)
    return op is not None and not info.composite and op.elementwise and \
        op.rules.get("scalar_form") is not None and dtype in info.dtypes


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_every_op_with_a_scalar_form_matches_eager_in_a_c_kernel(config, dtype):
    config.lowering = "c"
    written, checked = set(), 0
    for info in OP_DB:
        if not _writable(info, dtype):
            continue
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype, "c")):
            arrays = [a for a in sample.args if isinstance(a, np.ndarray)]
            if not arrays or any(a.dtype not in (F32, F64, np.bool_) for a in arrays):
                continue
            fn = en.function(_apply(info, sample))
            tensors = [en.tensor(a) for a in arrays]
            if "c" not in _backends(fn.graph_for(*tensors)):
                continue
            written.add(info.name)
            got = fn(*tensors)
            want = _apply(info, sample)(*tensors)   # eager: the numpy kernels
            assert got.dtype == want.dtype and got.shape == want.shape, info.name
            if want.dtype in TOLS:
                rtol, atol = TOLS[want.dtype]
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol,
                                           equal_nan=True, err_msg=f"{info.name} on {sample}")
            else:
                np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=info.name)
            checked += 1
    wanted = {info.name for info in OP_DB if _writable(info, dtype)} - NOT_IN_C - FOLDED
    assert wanted - written == set(), f"not written in C: {sorted(wanted - written)}"
    assert checked >= len(wanted)


_run = run_lowered


@pytest.mark.parametrize("threads", [1, 2])
def test_autoencoder_loss_and_gradient_in_c_kernels(config, threads):
    backends = autoencoder_gradient_backends("c", threads)
    assert backends == ["c"] * len(backends) and len(backends) >= 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(400, 300), (20, 60, 70)], ids=["2d", "3d"])
def test_broadcast_and_strided_inputs_full_and_row_sums(config, dtype, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    row = rng.standard_normal(shape[-1]).astype(dtype)
    col = rng.standard_normal(shape[:-1] + (1,)).astype(dtype)
    wide = rng.standard_normal(shape[::-1]).astype(dtype)   # read through a transpose

    def fn(x, row, col, wide):
        y = en.tanh(x * row + col) - en.transpose(wide)
        return en.exp(y) * 0.5 + x, en.sum(y), en.mean(y * y)
    got, backends = _run(fn, [x, row, col, wide], "c")
    assert "c" in backends
    x64, row64, col64, wide64 = (a.astype(np.float64) for a in (x, row, col, wide))
    y = np.tanh(x64 * row64 + col64) - wide64.T
    rtol = 2e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got[0], np.exp(y) * 0.5 + x64, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(got[1], y.sum(), rtol=rtol, atol=rtol * np.abs(y).sum())
    np.testing.assert_allclose(got[2], (y * y).mean(), rtol=rtol)


def test_nan_inf_and_signed_zero_keep_numpy_semantics(config):
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.0, 89.0, -104.0, -110.0,
                        1e-30, -1e-30, 3.0, -3.0, 20.0, -20.0], np.float32)
    x = np.tile(special, (600, 1))
    y = np.roll(x, 3, axis=1)

    def fn(x, y):
        return (en.exp(x) + 0.0, en.tanh(x) * 1.0, en.sigmoid(x) * 1.0,
                en.maximum(x, y) * 1.0, en.minimum(x, y) * 1.0, en.logaddexp(x, y) * 1.0,
                en.abs(x) * 1.0, en.sqrt(x) * 1.0)
    with np.errstate(all="ignore"):
        got, backends = _run(fn, [x, y], "c")
        assert set(backends) == {"c"}
        want, _ = _run(fn, [x, y], "numpy")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=0, equal_nan=True)
        assert (np.signbit(g) == np.signbit(w))[~np.isnan(w)].all()


def _kernel(fn, arrays):
    """The first fused region of ``fn`` traced on ``arrays``, as a C kernel."""
    members, inputs = region_of(fn, arrays)
    return c_fused.CFusedKernel("k_test", members, inputs, [(members[-1], None)])


def test_result_over_its_input_partial_overlap_and_strided_result(config):
    fn, a, b, three, want = sigmoid_times_three_case()
    kernel = _kernel(fn, [a, b])
    in_place = a.copy()
    kernel.out_impl(in_place.view(), b, three, in_place)         # one address, two views
    np.testing.assert_allclose(in_place, want, rtol=2e-6)
    assert len(kernel._variants) == 2                            # the aliased loop is its own
    check_partial_overlap_is_read_from_a_copy(kernel, a, b, three)
    # A result buffer that is a strided view is written through, not past.
    wide = np.zeros((600, 400), np.float32)
    kernel.out_impl(a, b, three, wide[:, ::2])
    np.testing.assert_allclose(wide[:, ::2], want, rtol=2e-6)
    assert not wide[:, 1::2].any()


def test_policy(config, monkeypatch):
    rng = np.random.default_rng(5)
    small = rng.standard_normal((100, 100)).astype(np.float32)
    big = rng.standard_normal((600, 600)).astype(np.float32)
    fn = lambda x: en.tanh(x) * 2.0 + 1.0   # noqa: E731
    # Without numba in the choice, "auto" takes C where it pays: not for a small region.
    monkeypatch.setattr(numba_plugin, "numba_available", lambda: False)
    assert _run(fn, [small], "auto")[1] == ["numpy"]
    assert _run(fn, [big], "numpy")[1] == ["numpy"]
    assert _run(fn, [small], "c")[1] == ["c"]
    source = "int fused(void) { return 0; }\n"
    per_call = 3 * en.config.cost.c_saved_seconds_per_element_op
    assert not c_fused.pays(source, 10, 3, 100)
    needed = (en.config.cost.c_compile_seconds / 100 + en.config.cost.c_call_seconds) / per_call
    assert not c_fused.pays(source, int(needed * 0.9), 3, 100)
    assert c_fused.pays(source, int(needed * 1.1), 3, 100)
    # On disk already: nothing to compile, so a region that saves anything pays.
    c_compiler.load(source)
    assert c_fused.pays(source, int(2 * en.config.cost.c_call_seconds / per_call), 3, 100)
    # Under "auto" the same big region is C once its library is on disk.
    _run(fn, [big], "c")
    assert _run(fn, [big], "auto")[1] == ["c"]


def test_without_a_compiler_the_numpy_lowering_runs(config, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(c_compiler.sysconfig, "get_config_var", lambda name: None)
    monkeypatch.setattr(c_compiler.shutil, "which",
                        lambda name: None if name in ("cc", "gcc") else name)
    c_compiler.compiler.cache_clear()
    try:
        assert not c_compiler.available()
        x = np.random.default_rng(6).standard_normal((600, 600)).astype(np.float32)
        got, backends = _run(lambda x: en.tanh(x) * 2.0, [x], "c")
        assert backends == ["numpy"]
        np.testing.assert_allclose(got[0], np.tanh(x) * 2.0, rtol=1e-6)
    finally:
        c_compiler.compiler.cache_clear()


def test_a_source_the_compiler_refuses_warns_and_runs_numpy(config, monkeypatch):
    c_source = importlib.import_module("engine.graph.lowering.c.c_source")
    monkeypatch.setattr(c_source, "kernel_source", lambda *a, **k: "int fused( {\n")
    x = np.random.default_rng(7).standard_normal((600, 600)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match="was not compiled"):
        got, backends = _run(lambda x: en.sin(x) * 2.0, [x], "c")
    assert backends == ["numpy"]
    np.testing.assert_allclose(got[0], np.sin(x) * 2.0, rtol=1e-6)


def test_a_second_process_loads_the_library_from_disk(tmp_path):
    script = textwrap.dedent("""
        import importlib, numpy as np, engine as en
        c_fused = importlib.import_module("engine.graph.lowering.c.c_fused")
        en.config.lowering = "c"
        # The fused kernel's library, not the whole graph's (test_c_graph.py):
        importlib.import_module("engine.graph.lowering.plugin").get("c").writes_graphs = False
        f = en.function(lambda x: en.sigmoid(x) * 3.0)
        x = en.tensor(np.linspace(-5, 5, 400 * 400, dtype=np.float32).reshape(400, 400))
        y = f(x)
        kernels = [n.op.impl.__self__.out_impl.__self__ for n in f.graph_for(x).nodes
                   if n.meta.get("backend") == "c"]
        print(len(kernels), kernels[0].from_cache, float(y.numpy().sum()))
    """)
    env = dict(os.environ, ENGINE_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs[0][:2] == ["1", "False"] and runs[1][:2] == ["1", "True"]
    assert runs[0][2] == runs[1][2]
    assert list(tmp_path.glob("c/k*.so"))
    assert not list(tmp_path.glob("c/.k*"))           # no temporary file left behind


def test_a_hot_kernel_moves_to_c_in_the_background(config, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path))       # nothing on disk yet
    monkeypatch.setattr(numba_plugin, "numba_available", lambda: False)
    rng = np.random.default_rng(8)
    z = rng.standard_normal((1000, 784)).astype(np.float32)
    b = rng.standard_normal(784).astype(np.float32)
    x = rng.random((1000, 784)).astype(np.float32)

    def tail(z, b, x):
        y = en.sigmoid(z + b)
        d = y - x
        return en.mean(d * d), d * (y * (1.0 - y))
    en.config.lowering = "auto"
    f = en.function(tail)
    args = [en.tensor(a) for a in (z, b, x)]
    first = [o.numpy() for o in f(*args)]
    node, = [n for n in f.graph_for(*args).nodes if n.op.name.startswith("fused")]
    swap = node.meta["hot_swap"]
    assert node.meta["backend"] == "numpy" and swap.compiled is None
    for _ in range(en.config.cost.hot_swap_calls):
        f(*args)
    assert swap.wait(timeout=120) is swap.compiled is not None     # compiled, swapped in
    calls = swap.calls
    last = [o.numpy() for o in f(*args)]
    assert swap.calls == calls                                     # the C kernel ran
    y = 1.0 / (1.0 + np.exp(-(z.astype(np.float64) + b)))
    d = y - x
    for got in (first, last):
        np.testing.assert_allclose(got[0], np.mean(d * d), rtol=1e-5)
        np.testing.assert_allclose(got[1], d * y * (1 - y), rtol=2e-5, atol=1e-7)
    assert list(tmp_path.glob("c/k*.so"))          # the next process starts compiled


def test_a_hot_kernel_whose_compile_fails_stays_numpy_with_a_warning():
    hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")

    def build():
        raise c_compiler.CompileError("refused")
    swap = hot_swap.HotSwap(lambda *a, **k: ("numpy", a, k), build, hot_calls=2)
    assert swap.out_impl(1, out=2) == ("numpy", (1,), {"out": 2})
    with pytest.warns(RuntimeWarning, match="not compiled"):
        swap.out_impl(1, out=2)
        assert swap.wait(timeout=60) is None
    assert swap.out_impl(3) == ("numpy", (3,), {}) and swap.compiled is None


def test_an_unwritable_cache_folder_builds_for_this_process_only(config, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(blocker))
    x = np.random.default_rng(9).standard_normal((500, 500)).astype(np.float32)
    got, backends = _run(lambda x: en.cos(x) * 2.0 + x, [x], "c")
    assert backends == ["c"]
    np.testing.assert_allclose(got[0], np.cos(x) * 2.0 + x, rtol=2e-6, atol=1e-6)
    assert blocker.read_text().startswith("a file")
