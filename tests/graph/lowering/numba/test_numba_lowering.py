"""The compiled (numba) lowering of whole small graphs and of scans agrees with eager mode
and numpy, keeps its machine code on disk, and falls back to the numpy lowering."""
import importlib
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import engine as en
from engine.graph.lowering.numba.numba_source import Unsupported
from engine.op import REGISTRY
from op_db import F32, F64, OP_DB, seeded_rng
from support.compilers import import_numba
from support.paths import REPO

numba = import_numba()

whole_graph = importlib.import_module("engine.graph.lowering.numba.whole_graph")
numba_plugin = importlib.import_module("engine.graph.lowering.numba.lowering")
ROOT = pathlib.Path(REPO)
# The numeric suite's tolerances (tests/ops/test_ops_numeric.py).
TOLS = {F64: (1e-7, 1e-12), F32: (1.3e-6, 1e-5)}


@pytest.fixture
def lowering():
    previous = en.config.lowering

    def use(mode):
        en.config.lowering = mode
    yield use
    en.config.lowering = previous


def _compiled_nodes(graph):
    return [n for n in graph.nodes if n.op.name == "compiled_region"]


def _writable(info):
    """Entries whose op the compiled lowering writes (elementwise forms, numba_form)."""
    op = REGISTRY.get(info.name)
    if op is None or info.composite:
        return False
    return (op.elementwise and op.rules.get("scalar_form") is not None) or \
        op.rules.get("numba_form") not in (None, "time_loop")


def _one_region_program(dtype):
    """``(fn, arrays, cases)``: one function computing one sample of every writable op
    (the first sample the lowering can write), its array arguments, and per case the
    entry, the sample and the slice of arguments it takes."""
    cases, arrays = [], []
    for info in OP_DB:
        if not _writable(info) or dtype not in info.dtypes:
            continue
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype, "numba")):
            n = sum(isinstance(a, np.ndarray) for a in sample.args)
            if n == 0:
                continue
            probe = en.function(_apply_case(info, sample), passes=["cleanup"])
            args = [en.tensor(a) for a in sample.args if isinstance(a, np.ndarray)]
            try:
                whole_graph.whole_graph_source(probe.graph_for(*args))
            except Unsupported:
                continue
            cases.append((info, sample, slice(len(arrays), len(arrays) + n)))
            arrays += [a for a in sample.args if isinstance(a, np.ndarray)]
            break

    def program(*tensors):
        outs = []
        for info, sample, where in cases:
            outs += list(_apply_case(info, sample)(*tensors[where]))
        return tuple(outs)
    return program, arrays, cases


def _apply_case(info, sample):
    def run(*tensors):
        it = iter(tensors)
        args = [next(it) if isinstance(a, np.ndarray) else a for a in sample.args]
        out = info.op(*args, **sample.kwargs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return run


@pytest.mark.parametrize("dtype", [F32, F64, np.dtype("int64")], ids=str)
def test_every_writable_op_matches_eager_inside_one_compiled_function(lowering, dtype):
    program, arrays, cases = _one_region_program(dtype)
    covered = {info.name for info, _, _ in cases}
    # Every op with a scalar form claiming the dtype is in the program (fmod has none).
    wanted = {info.name for info in OP_DB if _writable(info) and dtype in info.dtypes
              and REGISTRY[info.name].elementwise}
    assert wanted - covered == set(), f"not written by the compiled lowering: {wanted - covered}"
    lowering("numba")
    fn = en.function(program)
    tensors = [en.tensor(a) for a in arrays]
    graph = fn.graph_for(*tensors)
    assert len(_compiled_nodes(graph)) == 1, "the whole program should be one compiled region"
    got = fn(*tensors)
    k = 0
    for info, sample, where in cases:
        for w in _apply_case(info, sample)(*tensors[where]):   # eager: the numpy kernels
            g = got[k]
            k += 1
            assert g.dtype == w.dtype and g.shape == w.shape, f"{info.name} on {sample}"
            if w.dtype in TOLS:
                rtol, atol = TOLS[w.dtype]
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol,
                                           equal_nan=True, err_msg=f"{info.name} on {sample}")
            else:
                np.testing.assert_array_equal(g.numpy(), w.numpy(),
                                              err_msg=f"{info.name} on {sample}")


def _rnn_loss(params, xs, targets, h0):
    w, u, b = params

    def step(h, x):
        h = en.tanh(x @ w + h @ u + b)
        return h, h
    _, hs = en.scan(step, h0, xs)
    return en.mean((hs - targets) ** 2.0)


def _rnn_numpy(w, u, b, xs, targets, h0):
    """Loss and gradients of the tanh RNN by backpropagation through time (float64)."""
    h, hs = h0, []
    for x in xs:
        h = np.tanh(x @ w + h @ u + b)
        hs.append(h)
    hs = np.stack(hs)
    diff = hs - targets
    loss = np.mean(diff ** 2)
    dh_out = 2.0 * diff / diff.size
    gw, gu, gb = np.zeros_like(w), np.zeros_like(u), np.zeros_like(b)
    dh = np.zeros_like(h0)
    for t in range(len(xs) - 1, -1, -1):
        dh = dh + dh_out[t]
        da = dh * (1.0 - hs[t] ** 2)
        prev = hs[t - 1] if t else h0
        gw += xs[t].T @ da
        gu += prev.T @ da
        gb += da.sum(axis=0)
        dh = da @ u.T
    return loss, gw, gu, gb


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scan_forward_and_backward_compiled_match_numpy_bptt(lowering, dtype):
    rng = np.random.default_rng(3)
    w, u = (rng.standard_normal((5, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.5)
    b = rng.standard_normal(4) * 0.1
    xs, targets = rng.standard_normal((7, 3, 5)), rng.standard_normal((7, 3, 4)) * 0.5
    h0 = rng.standard_normal((3, 4)) * 0.1
    want = _rnn_numpy(w, u, b, xs, targets, h0)

    def loss_and_grads(p, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch(list(p))
            loss = _rnn_loss(p, xs, targets, h0)
        return (loss,) + tuple(tape.gradient(loss, list(p)))

    lowering("numba")
    fn = en.function(loss_and_grads)
    args = (tuple(en.tensor(a, dtype=dtype) for a in (w, u, b)),) + tuple(
        en.tensor(a, dtype=dtype) for a in (xs, targets, h0))
    graph = fn.graph_for(*args)
    compiled = _compiled_nodes(graph)
    assert compiled and not [n for n in graph.nodes if n.op.name == "scan"], \
        "both scans (forward and backward) should run compiled"
    got = fn(*args)
    rtol = 2e-5 if dtype == "float32" else 1e-10
    for g, w_ in zip(got, want):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g.numpy(), w_, rtol=rtol, atol=rtol * 0.1)
    # The numpy lowering of the same function gives the same values.
    lowering("numpy")
    plain = en.function(loss_and_grads)
    assert not _compiled_nodes(plain.graph_for(*args))
    for g, p in zip(got, plain(*args)):
        np.testing.assert_allclose(g.numpy(), p.numpy(), rtol=rtol, atol=rtol * 0.1)


def test_a_scan_compiles_alone_when_the_rest_of_the_graph_cannot(lowering):
    lowering("numba")

    def f(xs, c0):
        total, ys = en.scan(lambda c, x: (c * 0.5 + x, en.sin(c)), c0, xs)
        return en.sort(ys, axis=0), total     # sort has no numba form: stays numpy
    xs = np.random.default_rng(0).standard_normal((6, 3))
    fn = en.function(f)
    args = (en.tensor(xs), en.zeros(3))
    graph = fn.graph_for(*args)
    assert len(_compiled_nodes(graph)) == 1 and any(n.op.name == "sort" for n in graph.nodes)
    c, ys = np.zeros(3), []
    for x in xs:
        ys.append(np.sin(c))
        c = c * 0.5 + x
    got_sorted, got_total = fn(*args)
    np.testing.assert_allclose(got_total.numpy(), c, rtol=1e-12)
    np.testing.assert_allclose(got_sorted.numpy(), np.sort(np.stack(ys), axis=0), rtol=1e-12)


def _thirty_ops(x, y, h):
    for _ in range(10):
        h = en.tanh(h * x + y)
    return h


def test_auto_declines_a_cold_compile_that_cannot_pay_and_numpy_never_compiles(
        lowering, monkeypatch, tmp_path):
    # A folder of its own: another test in this process may have compiled the same region
    # into the session's cache, and a cached region pays under auto.
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path))
    x = en.tensor(np.linspace(0.5, 1.5, 8, dtype=np.float32))
    lowering("auto")    # an empty cache folder: it would have to compile
    assert not _compiled_nodes(en.function(_thirty_ops).graph_for(x, x, x))
    lowering("numpy")
    assert not _compiled_nodes(en.function(_thirty_ops).graph_for(x, x, x))
    lowering("numba")
    big = en.tensor(np.ones(2 * en.config.cost.whole_graph_max_elements, np.float32))
    # Values this large are not written whole (each would be a fresh array): the fused
    # kernel is compiled instead (graph/lowering/numba/numba_fused.py).
    graph = en.function(_thirty_ops).graph_for(big, big, big)
    assert not _compiled_nodes(graph)
    assert [n.meta["backend"] for n in graph.nodes if n.op.name.startswith("fused")] == ["numba"]
    lowering("auto")    # too big to be written whole under auto too, even if it were cached
    assert not _compiled_nodes(en.function(_thirty_ops).graph_for(big, big, big))
    lowering("fast")
    with pytest.raises(en.InvalidArgumentError, match="lowering"):
        en.function(_thirty_ops)(x, x, x)


def test_without_numba_the_numpy_lowering_runs(lowering, monkeypatch):
    monkeypatch.setattr(numba_plugin, "numba_available", lambda: False)
    lowering("numba")
    x = en.tensor(np.linspace(0.5, 1.5, 8))
    fn = en.function(_thirty_ops)
    assert not _compiled_nodes(fn.graph_for(x, x, x))
    want = np.linspace(0.5, 1.5, 8)
    h = want
    for _ in range(10):
        h = np.tanh(h * want + want)
    np.testing.assert_allclose(fn(x, x, x).numpy(), h, rtol=1e-14)


_CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import engine as en
    en.config.lowering = sys.argv[1]
    def f(x, y, h):
        for _ in range(10):
            h = en.tanh(h * x + y)
        return h
    x = en.tensor(np.linspace(0.5, 1.5, 8, dtype=np.float32))
    start = time.perf_counter()
    fn = en.function(f)
    out = fn(x, x, x).numpy()
    seconds = time.perf_counter() - start
    nodes = [n for n in fn.graph_for(x, x, x).nodes if n.op.name == "compiled_region"]
    ref = np.linspace(0.5, 1.5, 8)
    h = ref
    for _ in range(10):
        h = np.tanh(h * ref + ref)
    assert np.allclose(out, h, rtol=2e-6), (out, h)
    print(len(nodes), nodes[0].meta["from_cache"] if nodes else None, round(seconds, 3))
""")


def _child(mode, cache):
    path = os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    env = dict(os.environ, ENGINE_CACHE_DIR=str(cache), PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], env=env, capture_output=True,
                         text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_a_second_process_loads_the_machine_code_from_the_disk_cache(tmp_path):
    first = _child("numba", tmp_path)
    assert first[:2] == ["1", "False"], first     # compiled, and written to the cache
    assert list((tmp_path / "numba").glob("r*.py")) and \
        list((tmp_path / "numba" / "__pycache__").glob("*.nbi"))
    second = _child("numba", tmp_path)
    assert second[:2] == ["1", "True"], second    # loaded, not compiled
    # "auto" finds it on disk, so it pays at once.
    assert _child("auto", tmp_path)[:2] == ["1", "True"]


def test_an_unwritable_cache_folder_compiles_in_memory(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    out = _child("numba", blocker)   # cache_dir() is below a file: mkdir fails
    assert out[:2] == ["1", "False"], out


def test_fast_float32_exp_and_tanh_are_within_a_few_ulp():
    from engine.graph.lowering.numba import numba_math

    @numba.njit(error_model="numpy")
    def run(a, e, t):
        for i in range(a.size):
            e[i] = numba_math.exp32(a[i])
            t[i] = numba_math.tanh32(a[i])
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.standard_normal(20000) * 5, np.linspace(-110, 100, 50001),
                        np.linspace(-1, 1, 20001), [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5,
                                                    np.inf, -np.inf, np.nan]]).astype(F32)
    e, t = np.empty_like(a), np.empty_like(a)
    run(a, e, t)
    with np.errstate(all="ignore"):
        want_e = np.exp(a.astype(F64))
        want_t = np.tanh(a.astype(F64))
        numpy_e = np.exp(a)
    normal = (want_e > 1.2e-38) & (want_e < 3.4e38)
    assert np.max(np.abs(e[normal] - want_e[normal]) / want_e[normal]) < 1.5e-7
    assert np.all(np.isinf(e) == np.isinf(numpy_e)) and np.all(np.isnan(e) == np.isnan(a))
    assert np.max(np.abs(e[~normal & np.isfinite(e)] - numpy_e[~normal & np.isfinite(e)])) < 1e-44
    finite = np.isfinite(want_t)
    rel = np.abs(t[finite] - want_t[finite]) / np.maximum(np.abs(want_t[finite]), 1e-38)
    assert np.max(rel) < 4e-7
    assert np.isnan(t[-1]) and t[-3] == 1.0 and t[-2] == -1.0
    assert np.signbit(t[a == 0]).tolist() == np.signbit(a[a == 0]).tolist()


def test_an_inlined_value_is_computed_once_even_where_its_user_reads_it_twice():
    graph = en.function(lambda x: en.square(en.tanh(x)) + 1.0,
                        passes=["cleanup"]).graph_for(en.ones((2, 3), dtype="float32"))
    source = whole_graph.whole_graph_source(graph)
    assert source.count("tanh32(") == 1, source   # square is {0} * {0}: tanh is an array


def test_a_compiled_function_takes_a_transposed_view(lowering):
    lowering("numba")
    fn = en.function(lambda x, w: en.tanh(x @ w) * 2.0)
    a = np.arange(12.0).reshape(3, 4) / 10.0
    w = np.linspace(-1, 1, 8).reshape(4, 2)
    x = en.tensor(a)
    assert _compiled_nodes(fn.graph_for(x, en.tensor(w)))
    fn(x, en.tensor(w))
    view = en.transpose(en.tensor(a.T.copy()))          # the same values, not C-contiguous
    assert not view.numpy().flags.c_contiguous
    np.testing.assert_allclose(fn(view, en.tensor(w)).numpy(), np.tanh(a @ w) * 2.0, rtol=1e-12)


def test_fused_multiply_adds_keep_numpys_special_values(lowering, monkeypatch):
    # numba compiles with fastmath={"contract"} only (graph/lowering/numba/numba_cache.py): a
    # multiply and an add may become one FMA, rounded once. Special inputs and signed
    # zeros stay numpy's; the product is not rounded before the add, so the only cases
    # that differ are a product that overflows meeting the opposite infinity (numpy:
    # inf - inf = nan; the FMA: that infinity) and a subnormal product.
    from engine.graph.lowering.numba import numba_cache
    key = numba_cache.key_of("def f():\n    return 0\n")
    monkeypatch.setattr(numba_cache, "FASTMATH", frozenset())
    assert numba_cache.key_of("def f():\n    return 0\n") != key, "the flags must key the cache"
    monkeypatch.undo()
    lowering("numba")
    s = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3e38, -3e38, 1e-45, 2.5], F32)
    x, y, z = (a.ravel() for a in np.meshgrid(s, s, s, indexing="ij"))
    fn = en.function(lambda x, y, z: x * y + z)
    args = [en.tensor(a) for a in (x, y, z)]
    assert _compiled_nodes(fn.graph_for(*args))
    got = fn(*args).numpy()
    with np.errstate(all="ignore"):
        want = x * y + z
        exact = x.astype(F64) * y.astype(F64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    overflow = np.isfinite(x) & np.isfinite(y) & (np.abs(exact) > np.finfo(F32).max) & \
        np.isinf(z) & (np.sign(exact) != np.sign(z))
    subnormal = (exact != 0) & (np.abs(exact) < np.finfo(F32).tiny)
    assert np.all(same | overflow | subnormal), list(zip(x[~same], y[~same], z[~same]))
    assert np.all(np.isinf(got[overflow]) & (np.sign(got[overflow]) == np.sign(z[overflow])))
    zero = want == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(want[zero]))
    # exp32 passes NaN through with a select on x == x, which a no-NaNs flag would fold.
    exp = en.function(lambda x: en.exp(x) * 2.0)
    assert _compiled_nodes(exp.graph_for(en.tensor(s)))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(exp(en.tensor(s)).numpy()[:3], np.exp(s[:3]) * 2.0)
