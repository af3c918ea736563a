"""Several scans' C sources compiled at once (policy._start_builds, c_compiler.start): each
started source is the one later built, each is compiled once, a failed start raises where
it is loaded as a build would, and the results agree with eager."""
import importlib

import numpy as np
import pytest

import engine as en
from bench.workloads import styles_data, styles_engine
from support.compilers import needs_c_compiler
from support.programs import flat

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")

pytestmark = needs_c_compiler


@pytest.fixture
def builds(monkeypatch, tmp_path):
    """A fresh cache folder, nothing loaded; ``builds.compiled`` lists the sources each
    compile built, ``builds.started`` the lists handed to ``start``."""
    # Earlier tests' background builds (a compiled graph's full build) done first: they would
    # run the recording compiler.
    hot_swap.wait_for_compiles()
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(c_compiler, "_LOADED", {})
    monkeypatch.setattr(c_compiler, "_STARTED", {})

    class Builds:
        compiled, started = [], []
    real_compile, real_start = c_compiler._compile, c_compiler.start

    def compile_(command, settings, c_name, so_name, where):
        Builds.compiled.append((where / c_name).read_text())
        return real_compile(command, settings, c_name, so_name, where)

    def start(sources, quick=False):
        Builds.started.append(list(sources))
        return real_start(sources, quick)
    monkeypatch.setattr(c_compiler, "_compile", compile_)
    monkeypatch.setattr(c_compiler, "start", start)
    return Builds


def test_a_started_build_is_loaded_once_not_compiled_again(builds):
    source = "int seven(void) { return 7; }\n"
    c_compiler.start([source, source])
    lib = c_compiler.load(source)
    assert lib.seven() == 7 and c_compiler.load(source) is lib
    assert len(builds.compiled) == 1 and not c_compiler._STARTED


def test_a_started_build_the_compiler_refuses_raises_where_it_is_loaded(builds):
    source = "int broken(void) { return nope; }\n"
    c_compiler.start([source])
    with pytest.raises(c_compiler.CompileError, match="nope"):
        c_compiler.load(source)


def test_two_scans_are_started_together_and_built_from_the_started_sources(builds,
                                                                          monkeypatch):
    # The concat LSTM's loss and gradient: a forward scan and a backward scan, the
    # backward reading the forward's results.
    monkeypatch.setattr(en.config, "lowering", "c")
    params, inputs = styles_data.make("lstm_concat")
    fn = en.function(en.value_and_grad(styles_engine._recurrent_loss("lstm_concat")))
    args = (tuple(en.tensor(p) for p in params), *[en.tensor(a) for a in inputs])
    got = flat(fn(*args))
    kernels = [n.meta["kernel_source"] for n in fn.graph_for(*args).nodes
               if n.op.name == "compiled_region"]
    assert len(kernels) == 2
    assert len(builds.started) == 1 and sorted(builds.started[0]) == sorted(kernels)
    # Each compiled once (its stamped text begins with the source; fused kernels aside; the
    # full builds replacing the quick ones start at a second call, test_c_quick_build.py).
    assert all(sum(c.startswith(k) for c in builds.compiled) == 1 for k in kernels)
    want = flat(styles_engine.make_step("lstm_concat", "eager", params, inputs)())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=2e-4, atol=1e-6)
