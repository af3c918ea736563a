"""Random programs through the compiled lowering, forward and gradient, against eager.

The generated programs of ``test_graph_mode`` (elementwise ops, broadcasting, scalars,
reductions, matrix products, transposes) are traced with
``en.config.lowering = "numba"``, so small graphs become one numba function
each (``graph/lowering/numba/whole_graph.py``); bigger ones, with the bound between small and
large values lowered, keep their products and get their fused regions as numba loop nests
(``graph/lowering/numba/numba_fused.py``). Both must agree with eager mode to the numeric
suite's float64 tolerances, and enough programs must really be compiled that the
comparison means something (a guard against the strategy drifting to programs nothing
compiles).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import engine as en
from support.compilers import import_numba
from support.programs import BIG_SHAPES, big_reshapes, flat, program_case, programs, run_program

numba = import_numba()


# The numeric suite's float64 tolerances (tests/ops/test_ops_numeric.py); the compiled code
# sums in another order than numpy's pairwise sums.
RTOL, ATOL = 1e-7, 1e-12
# Every kind of step the compiled lowering writes (a reshape has no numba form).
WRITABLE_KINDS = ["unary", "binary", "binary", "scalar", "reduce", "matmul", "transpose"]
# Mostly elementwise steps on 200x300 arrays (test_passes_programs' shapes): fused regions.
BIG_ELEMENTWISE_KINDS = ["unary", "unary", "unary", "binary", "binary", "binary", "scalar",
                         "scalar", "reduce", "matmul", "transpose"]
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.fixture
def numba_lowering(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numba")


def _assert_close(got, want, what):
    got, want = flat(got), flat(want)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{what}: {g.shape} {g.dtype} " \
                                                          f"against {w.shape} {w.dtype}"
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=RTOL, atol=ATOL, err_msg=what)


def _largest(node):
    """The most elements of a fused node's inputs and result (several results: a tuple)."""
    shapes = [i.shape for i in node.inputs] + ([node.shape] if node.shape is not None else [])
    return max(int(np.prod(s)) for s in shapes)


def _check(prog):
    """Forward and gradient traced against eager; which of the two graphs compiled."""
    inputs, grad_fn = program_case(prog)
    forward = en.function(lambda *xs: run_program(prog, *xs))
    gradient = en.function(grad_fn)
    _assert_close(forward(*inputs), run_program(prog, *inputs), f"program {prog} forward")
    want = grad_fn(*inputs)
    _assert_close(gradient(*inputs), want, f"program {prog} gradient")
    # A second call runs on the buffers the first one left.
    _assert_close(gradient(*inputs), want, f"program {prog} gradient, second call")
    return [f.graph_for(*inputs) for f in (forward, gradient)]


def test_small_random_programs_compiled_whole_match_eager(numba_lowering):
    seen = {"graphs": 0, "compiled": 0}

    @settings(max_examples=25, **SETTINGS)
    @given(programs(kinds=WRITABLE_KINDS, steps=(2, 6)))
    def check(prog):
        for graph in _check(prog):
            seen["graphs"] += 1
            seen["compiled"] += any(n.op.name == "compiled_region" for n in graph.nodes)

    check()
    assert seen["compiled"] >= seen["graphs"] // 2, seen


def test_big_random_programs_with_compiled_fused_kernels_match_eager(numba_lowering,
                                                                      monkeypatch):
    # 200x300 values count as large here (the real bound is 2^16 elements), so graphs are
    # not compiled whole and their fused regions become numba loop nests.
    monkeypatch.setattr(en.config.cost, "whole_graph_small_elements", 1 << 12)
    monkeypatch.setattr(en.config.cost, "whole_graph_max_elements", 1 << 12)
    seen = {"large_fused": 0, "numba": 0}

    @settings(max_examples=20, **SETTINGS)
    @given(programs(shape_choices=BIG_SHAPES, kinds=BIG_ELEMENTWISE_KINDS, steps=(4, 12),
                    reshapes=big_reshapes))
    def check(prog):
        for graph in _check(prog):
            for n in graph.nodes:
                if n.op.name.startswith("fused") and \
                        _largest(n) > en.config.cost.whole_graph_small_elements:
                    seen["large_fused"] += 1
                    seen["numba"] += n.meta.get("backend") == "numba"

    check()
    # Most large regions are written (an op without a numba form keeps a region numpy).
    assert seen["numba"] >= 5 and seen["numba"] >= 0.6 * seen["large_fused"], seen
