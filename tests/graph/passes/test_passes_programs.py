"""Whole programs through the optimizer: optimized graphs against unoptimized graphs.

Every op-database entry (its float64 samples, or its own dtypes where it has
no float64) and hundreds of random programs are traced twice, with the
default pipeline and with ``optimize=False``, and must give the same dtypes
and shapes, floats within ``rtol=1e-6`` and everything else exactly, for the
values and for gradients taken inside the traced function. The comparison
is graph against graph (not against eager), so it isolates the passes.
Larger random programs (200x300 arrays, with fusion's block size lowered to
2^15 elements) make fusion use several blocks and give memory planning
buffers to reuse; other pass lists check each pass on its
own; and random programs also check that optimizing is idempotent.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine as en
from engine.graph.lowering.pipeline import CLEANUP, PASSES, optimize
from op_db import ALL_ENTRIES, F32, F64, seeded_rng, to_engine
from support.pass_helpers import assert_matches, fused_nodes, isomorphic
from support.programs import BIG_SHAPES, big_reshapes, flat, program_case, programs, run_program


def _pair(fn, passes=None):
    return en.function(fn, passes=passes), en.function(fn, optimize=False)


def _float64_or_own(info):
    return [F64] if F64 in info.dtypes else list(info.dtypes)


# ---- the op database ------------------------------------------------------------------------
@pytest.mark.parametrize("info", ALL_ENTRIES, ids=[i.name for i in ALL_ENTRIES])
def test_op_optimized_equals_unoptimized(info):
    n = 0
    for dtype in _float64_or_own(info):
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype, "passes")):
            args = [to_engine(a) for a in sample.args]
            kwargs = sample.kwargs
            opt, unopt = _pair(lambda *a: info.op(*a, **kwargs))
            assert_matches(opt(*args), unopt(*args), f"{info.name} {sample!r}")
            n += 1
    assert n, f"{info.name}: the op database gives no samples"


GRAD_ENTRIES = [i for i in ALL_ENTRIES if i.supports_grad]


def _float64_leaves(args):
    """Where the float64 arrays are: ``(i, None)`` for an argument, ``(i, j)`` inside a list."""
    where = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype == F64:
            where.append((i, None))
        elif isinstance(a, (list, tuple)):
            where += [(i, j) for j, b in enumerate(a) if isinstance(b, np.ndarray) and b.dtype == F64]
    return where


def _substitute(tensors, where, xs):
    args = [list(t) if isinstance(t, (list, tuple)) else t for t in tensors]
    for (i, j), x in zip(where, xs):
        if j is None:
            args[i] = x
        else:
            args[i][j] = x
    return args


@pytest.mark.parametrize("info", GRAD_ENTRIES, ids=[i.name for i in GRAD_ENTRIES])
def test_op_gradient_optimized_equals_unoptimized(info):
    """``grad(sum_k sum(out_k * c_k))`` with respect to every float64 array (also inside list
    arguments), taken inside the traced function, optimized against unoptimized."""
    rng = seeded_rng(info.name, "passes grad")
    n = 0
    for sample in info.samples_for_grad(rng):
        tensors = [to_engine(a) for a in sample.args]
        where = _float64_leaves(sample.args)
        outs = flat(info.op(*tensors, **sample.kwargs))
        # A complex result (an fft) enters through the real part of its product with a
        # complex cotangent, as in test_ops_grad.
        cots = [en.tensor(rng.standard_normal(o.shape)) if o.dtype in (F32, F64)
                else en.tensor(rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape))
                if o.dtype.kind == "c" else None for o in outs]
        if not where or all(c is None for c in cots):
            continue

        def loss(*xs, tensors=tensors, where=where, cots=cots, kwargs=sample.kwargs):
            total = 0.0
            for o, c in zip(flat(info.op(*_substitute(tensors, where, xs), **kwargs)), cots):
                if c is not None:
                    term = en.sum(o * en.cast(c, o.dtype))
                    total = total + (en.real(term) if o.dtype.kind == "c" else term)
            return total

        grad = en.grad(loss, argnums=tuple(range(len(where))))
        opt, unopt = _pair(grad)
        xs = [tensors[i] if j is None else tensors[i][j] for i, j in where]
        assert_matches(opt(*xs), unopt(*xs), f"{info.name} {sample!r} gradient")
        n += 1
    assert n, f"{info.name}: the op database gives no gradient samples"


# ---- random programs ---------------------------------------------------------------------------
def check_program(prog, passes=None):
    """Forward and gradient of a program: optimized graph against unoptimized graph."""
    inputs, grad_fn = program_case(prog)
    opt, unopt = _pair(lambda *xs: run_program(prog, *xs), passes)
    assert_matches(opt(*inputs), unopt(*inputs), f"program {prog} forward")
    gopt, gunopt = _pair(grad_fn, passes)
    assert_matches(gopt(*inputs), gunopt(*inputs), f"program {prog} gradient")
    # A second call runs on buffers the first one left behind.
    assert_matches(gopt(*inputs), gunopt(*inputs), f"program {prog} gradient, second call")
    return opt.get_concrete_function(*inputs), gopt.get_concrete_function(*inputs)


SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=200, **SETTINGS)
@given(programs())
def test_random_programs_optimized_equal_unoptimized(prog):
    check_program(prog)


# Passes alone and in unusual orders: each must be correct on its own, not only after the others.
PIPELINES = [["simplify"], ["constant_folding"], ["cse"], ["dce"], ["fusion"], ["memory_planning"],
             ["fusion", "memory_planning"], ["cse", "fusion", "memory_planning"],
             ["dce", "simplify", "cse", "constant_folding"], ["cleanup", "memory_planning"]]


@settings(max_examples=100, **SETTINGS)
@given(programs(), st.sampled_from(PIPELINES))
def test_random_programs_with_other_pass_lists(prog, passes):
    check_program(prog, passes)


def big_programs():
    """Like ``support.programs.programs`` with 200x300 arrays and mostly elementwise steps, so
    fused regions span several blocks and matmuls leave buffers for the planner to reuse."""
    return programs(shape_choices=BIG_SHAPES, steps=(4, 14), reshapes=big_reshapes,
                    kinds=["unary", "unary", "binary", "binary", "binary", "scalar", "scalar",
                           "reduce", "matmul", "matmul", "matmul", "reshape", "transpose"])


SMALL_BLOCK = 1 << 15


def test_big_random_programs_optimized_equal_unoptimized(monkeypatch):
    """40 programs on 200x300 arrays; the strategy must really make multi-block fused kernels
    and reused buffers (guards against a silent narrowing). The block size is read when a
    kernel is generated: lowered here (and the one-pass size with it), so that arrays of
    this size span several blocks."""
    monkeypatch.setattr(en.config.cost, "fused_block_elements", SMALL_BLOCK)
    monkeypatch.setattr(en.config.cost, "fused_whole_array_elements", SMALL_BLOCK)
    seen = {"fused_big": 0, "reused": 0}

    @settings(max_examples=40, **SETTINGS)
    @given(big_programs())
    def check(prog):
        _, g = check_program(prog)
        graph = g.graph
        if any(n.shape is not None and np.prod(n.shape) > SMALL_BLOCK
               for n in fused_nodes(graph)):
            seen["fused_big"] += 1
        if graph.memory_plan.bytes_reused > 0:
            seen["reused"] += 1

    check()
    assert seen["fused_big"] >= 10 and seen["reused"] >= 5, seen


@settings(max_examples=60, **SETTINGS)
@given(programs())
def test_random_programs_optimize_idempotently(prog):
    """Optimizing from scratch twice gives isomorphic graphs, and the cleanup passes find
    nothing left to do on an optimized graph (forward and gradient graphs)."""
    inputs, grad_fn = program_case(prog)
    for fn in (lambda *xs: run_program(prog, *xs), grad_fn):
        concrete = en.function(fn).get_concrete_function(*inputs)
        first, _ = optimize(concrete.unoptimized_graph)
        second, _ = optimize(concrete.unoptimized_graph)
        assert isomorphic(first, second), f"program {prog}:\n{first}\n---\n{second}"
        for name in CLEANUP:
            g = concrete.graph.copy()
            g.notes = []
            assert not PASSES[name](g), f"program {prog}: {name} changed an optimized graph " \
                                        f"({g.notes})\n{concrete.graph}"
