"""A whole graph's quick first build (c_compiler.quick_first, c_graph.CGraphFunction): built
at c_compiler.QUICK_LEVEL where its full build is not on disk, swapped for the full build
made on the background compile thread from its second call on, with the same results as
a float64 numpy reference before and after; the full build is what the disk cache then
serves; a graph called once, or too short to gain, is built once; a failed full build
leaves the quick one running, with a warning; the full build takes the numerics its
source was written for, whatever en.config.numerics is when it runs."""
import importlib
import types
import threading

import numpy as np
import pytest

import engine as en
from support.compilers import needs_c_compiler, record_c_builds
from support.models import numpy_tanh_rnn_grads, tanh_rnn_loss

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
c_graph = importlib.import_module("engine.graph.lowering.c.c_graph")
c_split = importlib.import_module("engine.graph.lowering.c.c_split")
hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")

pytestmark = needs_c_compiler


@pytest.fixture
def builds(monkeypatch, tmp_path):
    """The C lowering, a fresh cache folder, nothing loaded; ``builds.flags`` lists the
    flags of each library compiled, in order."""
    flags = record_c_builds(monkeypatch, tmp_path)
    monkeypatch.setattr(en.config, "lowering", "c")
    monkeypatch.setattr(c_compiler, "_STARTED", {})
    return types.SimpleNamespace(flags=flags)


def _quick(flags):
    return flags[:len(c_compiler.QUICK_LEVEL)] == c_compiler.QUICK_LEVEL


def _problem(seed=0, steps=12, batch=5, features=3, hidden=6):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.5, (features, hidden)).astype(np.float32)
    u = rng.normal(0, 0.5, (hidden, hidden)).astype(np.float32)
    b = rng.normal(0, 0.1, (hidden,)).astype(np.float32)
    xs = rng.normal(0, 1, (steps, batch, features)).astype(np.float32)
    return w, u, b, xs


def _step():
    return en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)))


def _runner(fn, args):
    """The compiled whole graph's CGraphFunction (the lowering may wrap it)."""
    graph = fn.graph_for(*args)
    runs = [n.op.impl for n in graph.nodes if n.op.name == "compiled_region"]
    assert len(runs) == 1, graph.notes
    run = runs[0]
    return getattr(run, "dispatcher", run)


def _check(got, problem):
    want = numpy_tanh_rnn_grads(*problem)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=2e-4, atol=1e-6)


def test_the_quick_build_runs_first_and_the_full_build_replaces_it(builds):
    problem = _problem()
    args = [en.tensor(a) for a in problem]
    fn = _step()
    first = fn(*args)
    run = _runner(fn, args)
    assert isinstance(run, c_graph.CGraphFunction)
    assert c_split.body_lines(run.source) >= en.config.cost.c_quick_build_min_lines
    assert run.quick and run.upgrade is None and len(builds.flags) == 1
    assert _quick(builds.flags[0])
    _check(first, problem)
    quick_fn = run.fn
    second = fn(*args)        # hands the full build to the background thread
    assert run.upgrade is not None
    _check(second, problem)
    assert run.upgrade.result(timeout=120) is not None
    hot_swap.wait_for_compiles()
    assert not run.quick and run.fn is not quick_fn
    assert len(builds.flags) == 2 and not _quick(builds.flags[1])
    assert builds.flags[1] == c_compiler.flags()
    third = fn(*args)
    _check(third, problem)
    for q, f in zip(first, third):     # the swap moves results by roundings at most
        np.testing.assert_allclose(q.numpy(), f.numpy(), rtol=1e-5, atol=1e-7)
    assert c_compiler.is_cached(run.source)


def test_the_disk_cache_serves_the_full_build_to_a_new_process(builds, monkeypatch):
    problem = _problem(seed=1)
    args = [en.tensor(a) for a in problem]
    fn = _step()
    fn(*args)
    fn(*args)
    _runner(fn, args).upgrade.result(timeout=120)
    assert len(builds.flags) == 2
    monkeypatch.setattr(c_compiler, "_LOADED", {})      # as a new process
    again = _step()
    got = again(*args)
    run = _runner(again, args)
    assert not run.quick and len(builds.flags) == 2     # loaded, nothing compiled
    _check(got, problem)
    again(*args)
    assert run.upgrade is None


def test_a_graph_called_once_is_built_once(builds):
    problem = _problem(seed=2)
    args = [en.tensor(a) for a in problem]
    fn = _step()
    _check(fn(*args), problem)
    hot_swap.wait_for_compiles()
    assert len(builds.flags) == 1 and _quick(builds.flags[0])


def test_a_short_graph_is_built_fully_at_once(builds):
    problem = _problem(seed=3)
    args = [en.tensor(a) for a in problem]
    fn = _step()
    with en.config.cost.override(c_quick_build_min_lines=10 ** 6):
        got = fn(*args)
        run = _runner(fn, args)
    assert not run.quick and builds.flags == [c_compiler.flags()]
    fn(*args)
    assert run.upgrade is None
    _check(got, problem)


def test_a_failed_full_build_leaves_the_quick_build_running(builds, monkeypatch):
    problem = _problem(seed=4)
    args = [en.tensor(a) for a in problem]
    real = c_compiler._compile

    def refuse_full(command, settings, c_name, so_name, where):
        if not _quick(settings[0]):
            raise c_compiler.CompileError("the C compiler refused it (test)")
        return real(command, settings, c_name, so_name, where)
    monkeypatch.setattr(c_compiler, "_compile", refuse_full)
    fn = _step()
    fn(*args)
    run = _runner(fn, args)
    quick_fn = run.fn
    with pytest.warns(RuntimeWarning, match="optimized build failed.*refused it"):
        fn(*args)       # starts the full build, which fails on the background thread
        assert run.upgrade.result(timeout=120) is None
    assert run.quick and run.fn is quick_fn
    _check(fn(*args), problem)


def test_started_builds_are_the_quick_builds_loaded(builds):
    source = ("int graph(char *const *p, char *ws, void *sgemm_p, void *dgemm_p) {\n" +
              "".join(f"    (void)p; /* {k} */\n" for k in range(60)) + "    return 0;\n}\n")
    assert c_compiler.quick_first(source)
    c_compiler.start([source], quick=True)
    lib = c_compiler.load(source, quick=True)
    assert lib.graph(None, None, None, None) == 0
    assert len(builds.flags) == 1 and _quick(builds.flags[0]) and not c_compiler._STARTED
    assert c_compiler.quick_first(source)          # the full build is still to be made
    c_compiler.load(source)
    assert not c_compiler.quick_first(source) and len(builds.flags) == 2


def test_the_full_build_takes_the_numerics_its_source_was_written_for(builds, monkeypatch):
    # Bitwise numerics when traced and first called; the default again before the full
    # build runs on the background thread: it is still built without fused multiply-adds.
    problem = _problem(seed=5)
    args = [en.tensor(a) for a in problem]
    monkeypatch.setattr(en.config, "numerics", "bitwise")
    fn = _step()
    first = fn(*args)
    run = _runner(fn, args)
    assert run.quick and builds.flags == [c_compiler.quick_flags(exact=True)]
    assert "-ffp-contract=off" in builds.flags[0]
    gate = threading.Event()
    hot_swap.submit(gate.wait, 120)     # holds the background thread
    fn(*args)      # the full build, queued behind the gate
    en.config.numerics = "fast"
    gate.set()
    assert run.upgrade.result(timeout=120) is not None
    assert builds.flags[1] == c_compiler.BITWISE_FLAGS
    en.config.numerics = "bitwise"
    again = fn(*args)
    _check(again, problem)
    for q, f in zip(first, again):    # both builds give eager's bits
        np.testing.assert_array_equal(q.numpy(), f.numpy())
