"""Tracing costs work linear in a function's ops under every lowering policy: the
lowerings' sources, written to decide whether compiling pays, grow with the graph and
no faster (graph/lowering/policy.py, graph/lowering/numba/numba_emitter.py).

Work is counted, not timed: every character of every source the lowerings write, and
of every elementwise expression the numba emitter builds on the way (an inlined
expression is built by wrapping its input's text, so an unbounded chain of n ops
builds n * n characters while its source holds n)."""
import importlib

import numpy as np
import pytest

import engine as en

numba_emitter = importlib.import_module("engine.graph.lowering.numba.numba_emitter")
registry = importlib.import_module("engine.graph.lowering.registry")


def _chain(ops):
    """An unrolled chain of ``ops`` elementwise ops on a small value, summed."""
    def f(x):
        for _ in range(ops // 3):
            x = en.tanh(x) * 0.5 + 0.25
        return en.sum(x)
    return f


@pytest.fixture
def written(monkeypatch):
    """``written(ops)``: the characters written tracing a chain of ``ops`` ops (nothing
    is compiled: every lowering's build is refused, so only the writing is counted)."""
    counted = [0]

    def counting(write):
        def run(*args, **kwargs):
            text = write(*args, **kwargs)
            counted[0] += len(text or "")
            return text
        return run
    monkeypatch.setattr(numba_emitter, "scalar_expression",
                        counting(numba_emitter.scalar_expression))
    for lowering in registry.registered().values():
        for name in ("region_source", "graph_source"):
            monkeypatch.setattr(lowering, name, counting(getattr(lowering, name)))
        for name in ("build_region", "build_graph", "build_in_background"):
            monkeypatch.setattr(lowering, name, lambda *args: None)
    monkeypatch.setattr(en.config, "lowering", en.config.lowering)

    def run(ops):
        counted[0] = 0
        x = en.tensor(np.full((4, 8), 0.5, np.float32))
        f = en.function(_chain(ops))
        got = f(x).numpy()
        want = np.full((4, 8), 0.5)
        for _ in range(ops // 3):
            want = np.tanh(want) * 0.5 + 0.25
        np.testing.assert_allclose(got, want.sum(), rtol=1e-5)
        return counted[0]
    return run


@pytest.mark.parametrize("policy", ["auto", "numba", "c", "numpy"])
def test_sources_written_while_tracing_grow_linearly(written, policy):
    en.config.lowering = policy
    small, large = written(600), written(1800)
    if policy == "numpy" or policy != "auto" and not registry.registered()[policy].available():
        assert small == large == 0        # nothing is written for a compiled lowering
        return
    assert small > 0
    # Three times the ops: about three times the characters (a chain of n ops written
    # as one inlined expression was 8 times: 9 for the expressions, less the rest).
    assert large <= 3.6 * small, (small, large)
