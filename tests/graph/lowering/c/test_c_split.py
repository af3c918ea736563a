"""A whole graph's C source cut into translation units compiled side by side
(graph/lowering/c/c_split.py, c_compiler.py) computes what the one unit computes; the
checked cache keeps a split build's library as it keeps any other (a damaged one is
rebuilt, never run)."""
import importlib
import os

import numpy as np
import pytest

import engine as en
from bench.workloads import styles_data, styles_engine
from support.compilers import needs_c_compiler
from support.programs import flat

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
c_cache = importlib.import_module("engine.graph.lowering.c.c_cache")
c_split = importlib.import_module("engine.graph.lowering.c.c_split")
hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")

pytestmark = needs_c_compiler


def _source(body):
    return ("#include <stdint.h>\n"
            f"{c_split.HEADER}\n" + "\n".join(body) + "\n    return 0;\n}\n")


HEAD = ["    float *restrict o0 = (float *)p[0];", "    (void)ws;"]
LOOPS = [f"    for (int64_t i = 0; i < 4; i++) {{\n        o0[i] += {k};\n    }}"
         for k in range(6)]


def test_statements_are_cut_between_loops_in_order_with_the_head_in_every_part():
    cut = c_split.split(_source(HEAD + LOOPS), 3, min_lines=1)
    assert len(cut.parts) == 3
    for part in cut.parts:
        assert all(line in part for line in HEAD)
    # Each loop in exactly one part, the parts in the loops' order, called in that order.
    where = [next(j for j, p in enumerate(cut.parts) if f"o0[i] += {k};" in p)
             for k in range(6)]
    assert where == sorted(where) and set(where) == {0, 1, 2}
    calls = [line.strip() for line in cut.main.splitlines() if "_part" in line and "(p," in line]
    assert calls == [f"graph_part{j}(p, ws, sgemm_p, dgemm_p);" for j in range(3)]


def test_a_short_source_or_a_value_declared_between_statements_is_one_unit():
    assert c_split.split(_source(HEAD + LOOPS), 2, min_lines=100) is None
    assert c_split.split(_source(HEAD + LOOPS), 1, min_lines=1) is None
    declared = HEAD + LOOPS[:3] + ["    float s = o0[0];"] + LOOPS[3:]
    assert c_split.split(_source(declared), 2, min_lines=1) is None
    assert c_split.split("int fused(float *x) {\n    return 0;\n}\n", 2, min_lines=1) is None


def test_a_split_library_gives_what_one_unit_gives(monkeypatch, tmp_path):
    # Earlier tests' background builds (a compiled graph's full build) done first: they would
    # run the recording compiler.
    hot_swap.wait_for_compiles()
    monkeypatch.setattr(c_compiler, "units", lambda: en.config.cost.c_compile_units)
    # An array constant before the function, as c_graph writes them: in every unit.
    source = "static const float table[4] = {1, 2, 3, 4};\n" + _source(
        HEAD + LOOPS + ["    for (int64_t i = 0; i < 4; i++) {\n        o0[i] *= table[i];\n    }"])
    monkeypatch.setattr(en.config.cost, "c_split_min_lines", 1)
    results, real = [], c_compiler._run
    for units in (1, 2):    # each in a cache of its own (the key does not name units)
        monkeypatch.setattr(en.config.cost, "c_compile_units", units)
        monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / f"cache{units}"))
        monkeypatch.setattr(c_compiler, "_LOADED", {})
        runs: list[int] = []
        monkeypatch.setattr(c_compiler, "_run", lambda commands, where, runs=runs: (
            runs.append(len(commands)), real(commands, where)))
        lib = c_compiler.load(source)
        assert runs == ([1] if units == 1 else [2, 1])    # one compile, or two and a link
        out = np.zeros(4, np.float32)
        pointers = (c_compiler.ctypes.c_void_p * 1)(out.ctypes.data)
        assert lib.graph(pointers, None, None, None) == 0
        results.append(out)
    np.testing.assert_array_equal(results[0], 15 * np.arange(1, 5, dtype=np.float32))
    np.testing.assert_array_equal(results[1], results[0])


@pytest.fixture
def built(monkeypatch, tmp_path):
    """A fresh cache folder, split builds from 20 lines, each compiler run recorded."""
    # Earlier tests' background builds (a compiled graph's full build) done first: they would
    # run the recording compiler.
    hot_swap.wait_for_compiles()
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(c_compiler, "_LOADED", {})
    monkeypatch.setattr(en.config, "lowering", "c")
    monkeypatch.setattr(en.config.cost, "c_split_min_lines", 20)
    # As on idle cores: as many units as the cost model allows (the load here varies).
    monkeypatch.setattr(c_compiler, "units", lambda: en.config.cost.c_compile_units)
    runs = []
    real = c_compiler._run

    def recorded(commands, where):
        runs.append(commands)
        return real(commands, where)
    monkeypatch.setattr(c_compiler, "_run", recorded)
    return runs


def _loss_and_gradient(units, monkeypatch, tmp_path):
    """The tanh-LN cell's loss and gradient in C, built with at most ``units`` units (in
    a cache of its own: the key does not name the units)."""
    monkeypatch.setattr(en.config.cost, "c_compile_units", units)
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / f"cache{units}"))
    monkeypatch.setattr(c_compiler, "_LOADED", {})
    params, inputs = styles_data.make("tanh_ln", quick=True)
    fn = en.function(en.value_and_grad(styles_engine._recurrent_loss("tanh_ln")))
    args = (tuple(en.tensor(p) for p in params), *[en.tensor(a) for a in inputs])
    got = [g.numpy() for g in flat(fn(*args))]
    sources = [n.meta["kernel_source"] for n in fn.graph_for(*args).nodes
               if n.op.name == "compiled_region"]
    return got, sources, (params, inputs)


def test_a_recurrent_cells_gradient_built_in_parallel_units_matches_one_unit_and_eager(
        built, monkeypatch, tmp_path):
    one, sources, (params, inputs) = _loss_and_gradient(1, monkeypatch, tmp_path)
    assert sources and all(len(commands) == 1 for commands in built)
    built.clear()
    two, _, _ = _loss_and_gradient(2, monkeypatch, tmp_path)
    # Each cut source ran two compilers at once, then the link.
    assert any(len(commands) == 2 for commands in built), built
    for a, b in zip(one, two):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    want = [w.numpy() for w in flat(styles_engine.make_step("tanh_ln", "eager", params,
                                                            inputs)())]
    for g, w in zip(two, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=1e-6)


def test_a_damaged_split_library_is_rebuilt_not_run(built, monkeypatch, tmp_path):
    source = _source(HEAD + LOOPS)
    monkeypatch.setattr(en.config.cost, "c_split_min_lines", 1)
    monkeypatch.setattr(en.config.cost, "c_compile_units", 2)
    key = c_compiler.key_of(source)
    c_compiler.load(source)
    assert [len(commands) for commands in built] == [2, 1]
    library = c_cache.library_path(tmp_path / "cache" / "c", key)
    data = library.read_bytes()
    # Cut short, as another process would leave it: a new file put in its place (writing
    # into the file this process has mapped would break the mapping: SIGBUS at exit).
    damaged = library.with_name(library.name + ".damaged")
    damaged.write_bytes(data[:len(data) // 2])
    os.replace(damaged, library)                     # must never be mapped
    monkeypatch.setattr(c_compiler, "_LOADED", {})     # as a new process
    lib = c_compiler.load(source)
    assert len(built) == 4      # built again (two units and the link)
    out = np.zeros(4, np.float32)
    lib.graph((c_compiler.ctypes.c_void_p * 1)(out.ctypes.data), None, None, None)
    np.testing.assert_array_equal(out, np.full(4, 15, np.float32))
    assert library.read_bytes() != data[:len(data) // 2]


def test_a_unit_the_compiler_refuses_fails_the_build_and_leaves_nothing(built, monkeypatch,
                                                                          tmp_path):
    broken = LOOPS[:3] + ["    for (int64_t i = 0; i < 4; i++) {\n        o0[i] += nope;\n    }"]
    monkeypatch.setattr(en.config.cost, "c_split_min_lines", 1)
    monkeypatch.setattr(en.config.cost, "c_compile_units", 2)
    with pytest.raises(c_compiler.CompileError, match="nope"):
        c_compiler.load(_source(HEAD + broken))
    assert [p.name for p in (tmp_path / "cache" / "c").iterdir()] == []


def test_units_never_exceed_the_idle_cores(monkeypatch):
    monkeypatch.setattr(en.config.cost, "c_compile_units", 4)
    monkeypatch.setattr(c_compiler.os, "sched_getaffinity", lambda pid: {0, 1, 2},
                        raising=False)
    monkeypatch.setattr(c_compiler.os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert c_compiler.units() == 3
    monkeypatch.setattr(c_compiler.os, "getloadavg", lambda: (1.8, 0.0, 0.0))
    assert c_compiler.units() == 1
    monkeypatch.setattr(c_compiler.os, "getloadavg", lambda: (7.0, 0.0, 0.0))
    assert c_compiler.units() == 1
    monkeypatch.setattr(c_compiler.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(c_compiler.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert c_compiler.units() == 1


def test_a_library_built_in_units_is_loaded_where_one_unit_would_be_built(built,
                                                                        monkeypatch):
    # The key does not name the units: a busier process loads the cut build's library.
    source = _source(HEAD + LOOPS)
    monkeypatch.setattr(en.config.cost, "c_split_min_lines", 1)
    monkeypatch.setattr(c_compiler, "units", lambda: 2)
    c_compiler.load(source)
    assert [len(commands) for commands in built] == [2, 1]
    monkeypatch.setattr(c_compiler, "_LOADED", {})     # as a new process
    monkeypatch.setattr(c_compiler, "units", lambda: 1)
    out = np.zeros(4, np.float32)
    c_compiler.load(source).graph((c_compiler.ctypes.c_void_p * 1)(out.ctypes.data),
                                  None, None, None)
    assert len(built) == 2
    np.testing.assert_array_equal(out, np.full(4, 15, np.float32))
