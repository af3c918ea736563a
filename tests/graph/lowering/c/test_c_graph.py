"""Whole graphs and scans written as one C function (graph/lowering/c/c_graph.py) agree with
eager mode: every op the writer takes (op database samples) forward and gradient, random
programs, and recurrent cells written in several styles (their scans' time loops in C,
forward and backward), in float32 and float64."""
import importlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import engine as en
from bench.workloads import styles_data, styles_engine
from engine.graph.lowering.plugin import Unsupported
from engine.op import REGISTRY
from op_db import F32, F64, OP_DB, seeded_rng
from support.compilers import needs_c_compiler
from support.programs import flat, program_case, programs, run_program

c_compiler = importlib.import_module("engine.graph.lowering.c.c_compiler")
c_graph = importlib.import_module("engine.graph.lowering.c.c_graph")
scipy_blas = importlib.import_module("engine.graph.lowering.scipy_blas")
graph_part = importlib.import_module("engine.graph.lowering.graph_part")

pytestmark = needs_c_compiler
# The numeric suite's tolerances (tests/ops/test_ops_numeric.py).
TOLS = {F64: (1e-7, 1e-12), F32: (1.3e-6, 1e-5)}
# The ops with a pattern the C writer takes besides the elementwise ones.
PATTERN_OPS = {"matmul", "transpose", "sum", "mean", "getitem", "reshape", "broadcast_to",
               "concat", "split", "stack"}
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@pytest.fixture
def c_lowering(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "c")


def _compiled(graph):
    return [n for n in graph.nodes if n.op.name == "compiled_region"]


def _writes(fn, args):
    """Whether the C writer takes the whole graph of ``fn`` on ``args``."""
    part = graph_part.GraphPart.whole(en.function(fn, passes=["cleanup"]).graph_for(*args))
    if part is None:
        return False
    try:
        c_graph.emit(part.members, part.inputs, part.outputs)
    except Unsupported:
        return False
    return True


def _arrays(sample):
    """The sample's array arguments, those in a list (concat's, stack's) included."""
    found = []
    for a in sample.args:
        if isinstance(a, np.ndarray):
            found.append(a)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
            found += list(a)
    return found


def _apply_case(info, sample):
    def run(*tensors):
        it = iter(tensors)
        args = []
        for a in sample.args:
            if isinstance(a, np.ndarray):
                args.append(next(it))
            elif isinstance(a, (list, tuple)) and a and \
                    all(isinstance(x, np.ndarray) for x in a):
                args.append([next(it) for _ in a])
            else:
                args.append(a)
        out = info.op(*args, **sample.kwargs)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return run


def _gradient_case(info, sample):
    """The gradients of a weighted sum of the case's float results (fixed weights, so
    each result's cotangent differs)."""
    run = _apply_case(info, sample)

    def loss(*tensors):
        total = 0.0
        for k, out in enumerate(run(*tensors)):
            if np.dtype(out.dtype).kind == "f":
                total = total + en.sum(out * (0.5 + 0.25 * k) * out)
        return total

    def grads(*tensors):
        return tuple(en.grad(loss, argnums=tuple(range(len(tensors))))(*tensors))
    return grads


def _writable(info):
    op = REGISTRY.get(info.name)
    if op is None or info.composite:
        return False
    return (op.elementwise and op.rules.get("scalar_form") is not None) or \
        op.rules.get("numba_form") not in (None, "time_loop")


def _cases(dtype, gradient):
    """One sample of each op the C writer takes whole (its gradient too, with
    ``gradient``), with the arguments it reads."""
    cases, arrays = [], []
    for info in OP_DB:
        if not _writable(info) or dtype not in info.dtypes or \
                (gradient and not getattr(info, "differentiable", True)):
            continue
        for sample in info.sample_inputs(dtype, seeded_rng(info.name, dtype, "c_graph")):
            args = _arrays(sample)
            if not args or (gradient and any(a.dtype.kind != "f" for a in args)):
                continue
            fn = (_gradient_case if gradient else _apply_case)(info, sample)
            try:
                ok = _writes(fn, [en.tensor(a) for a in args])
            except Exception:    # a sample whose gradient the engine refuses
                ok = False
            if ok:
                cases.append((info, sample, slice(len(arrays), len(arrays) + len(args))))
                arrays += args
                break
    return cases, arrays


def _check_program(cases, arrays, gradient, dtype):
    make = _gradient_case if gradient else _apply_case

    def program(*tensors):
        outs = []
        for info, sample, where in cases:
            outs += list(make(info, sample)(*tensors[where]))
        return tuple(outs)
    tensors = [en.tensor(a) for a in arrays]
    fn = en.function(program)
    assert len(_compiled(fn.graph_for(*tensors))) == 1, "one C function for the program"
    got = fn(*tensors)
    k = 0
    for info, sample, where in cases:
        for w in make(info, sample)(*tensors[where]):     # eager: the numpy kernels
            g = got[k]
            k += 1
            assert g.dtype == w.dtype and g.shape == w.shape, f"{info.name} on {sample}"
            rtol, atol = TOLS[dtype]
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=f"{info.name} on {sample}")


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_every_op_the_writer_takes_matches_eager_in_one_c_function(c_lowering, dtype):
    cases, arrays = _cases(dtype, gradient=False)
    covered = {info.name for info, _, _ in cases}
    assert PATTERN_OPS <= covered, f"not written in C: {PATTERN_OPS - covered}"
    assert len(covered) > 60, sorted(covered)
    _check_program(cases, arrays, False, dtype)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_every_op_gradient_the_writer_takes_matches_eager_in_one_c_function(c_lowering, dtype):
    cases, arrays = _cases(dtype, gradient=True)
    covered = {info.name for info, _, _ in cases}
    assert {"matmul", "transpose", "sum", "mean", "reshape", "concat", "split",
            "stack"} <= covered, sorted(covered)
    assert len(covered) > 30, sorted(covered)
    _check_program(cases, arrays, True, dtype)


def _assert_close(got, want, what, rtol=1e-7, atol=1e-12):
    got, want = flat(got), flat(want)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, what
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=atol, err_msg=what)


def test_random_programs_forward_and_gradient_match_eager(c_lowering):
    seen = {"graphs": 0, "compiled": 0}

    @settings(max_examples=15, **SETTINGS)
    @given(programs(kinds=["unary", "binary", "binary", "scalar", "reduce", "matmul",
                           "transpose"], steps=(2, 6)))
    def check(prog):
        inputs, grad_fn = program_case(prog)
        forward = en.function(lambda *xs: run_program(prog, *xs))
        gradient = en.function(grad_fn)
        _assert_close(forward(*inputs), run_program(prog, *inputs), f"{prog} forward")
        want = grad_fn(*inputs)
        _assert_close(gradient(*inputs), want, f"{prog} gradient")
        _assert_close(gradient(*inputs), want, f"{prog} gradient, second call")
        for f in (forward, gradient):
            seen["graphs"] += 1
            seen["compiled"] += bool(_compiled(f.graph_for(*inputs)))

    check()
    assert seen["compiled"] >= seen["graphs"] // 2, seen


# ---- scans: recurrent cells in several styles -----------------------------------------------
CELLS = ["gru_gates", "lstm_concat", "lstm_eight", "tanh_ln", "tanh_unrolled"]


@pytest.mark.parametrize("model", CELLS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_recurrent_cells_loss_and_gradient_in_c_match_eager(c_lowering, model, dtype):
    params, inputs = styles_data.make(model, quick=True)
    params = [p.astype(dtype) for p in params]
    inputs = [a.astype(dtype) for a in inputs]
    want = styles_engine.make_step(model, "eager", params, inputs)()
    loss = styles_engine._recurrent_loss(model)
    fn = en.function(en.value_and_grad(loss))
    args = (tuple(en.tensor(p) for p in params), *[en.tensor(a) for a in inputs])
    graph = fn.graph_for(*args)
    compiled = _compiled(graph)
    assert compiled and all(n.meta["backend"] == "c" for n in compiled)
    assert not [n for n in graph.nodes if n.op.name == "scan"], graph.notes
    rtol, atol = (1e-9, 1e-12) if dtype == np.float64 else (2e-4, 1e-6)
    for _ in range(2):    # the second call reuses the workspace
        got = fn(*args)
        _assert_close(got, want, model, rtol=rtol, atol=atol)


def test_reverse_scan_stacked_carries_and_second_order_match_eager(c_lowering):
    rng = np.random.default_rng(3)
    w = en.tensor(rng.normal(size=(4, 4)) * 0.5)
    xs = en.tensor(rng.normal(size=(6, 3, 4)))

    def loss(w, xs):
        def body(h, x):
            h = en.tanh(x @ w + h[::-1])     # a reversed copy of the carry: a strided slice
            return h, en.sum(h * h, axis=1)
        h, ys = en.scan(body, en.zeros((3, 4), dtype=xs.dtype), xs, reverse=True)
        return en.mean(ys) + en.sum(h[1])

    def second(w, xs):
        return en.grad(lambda w: en.sum(en.grad(loss)(w, xs) ** 2.0))(w)
    for fn in (loss, en.grad(loss), second):
        compiled = en.function(fn)
        _assert_close(compiled(w, xs), fn(w, xs), fn.__name__ if hasattr(fn, "__name__")
                      else "grad", rtol=1e-9, atol=1e-12)
    assert _compiled(en.function(en.grad(loss)).graph_for(w, xs))


def test_without_blas_a_product_stays_with_numpy_and_the_results_agree(c_lowering,
                                                                       monkeypatch):
    monkeypatch.setattr(scipy_blas, "gemm_pointers", lambda: None)
    x = en.tensor(np.arange(6.0).reshape(2, 3))
    y = en.tensor(np.ones((3, 2)))
    fn = en.function(lambda x, y: en.tanh(x @ y) * 2.0)
    assert not _compiled(fn.graph_for(x, y))
    np.testing.assert_allclose(fn(x, y).numpy(), np.tanh(x.numpy() @ y.numpy()) * 2.0)
    fn = en.function(lambda x: en.tanh(x) * 2.0)      # no product: still C
    assert _compiled(fn.graph_for(x))
    np.testing.assert_allclose(fn(x).numpy(), np.tanh(x.numpy()) * 2.0, rtol=1e-12)


def _gemm_lines(source):
    """``(inside a time loop, outside)``: the BLAS calls of a C graph function (a product
    outside loops sits two levels in: the function, its block; inside a loop, deeper)."""
    calls = [line for line in source.splitlines() if "gemm_(" in line and "typedef" not in line]
    inside = [c for c in calls if c.startswith(" " * 12)]
    return len(inside), len(calls) - len(inside)


def test_weight_gradients_summed_over_the_steps_are_one_product_after_the_loop(c_lowering):
    # tanh(x @ w + h @ u + b): per step the forward's two products and the backward's
    # dh @ u.T (the backward reads the forward step's values from the forward's stacks,
    # scan_residuals.py, where it recomputed the two); dw and du (sums over the steps of
    # x_t.T @ dz_t and h_t.T @ dz_t) are each one product of the stacked factors after
    # the loop.
    params, inputs = styles_data.make("tanh_ln", quick=True)
    loss = styles_engine._recurrent_loss("tanh_ln")
    fn = en.function(en.value_and_grad(loss))
    args = (tuple(en.tensor(p) for p in params), *[en.tensor(a) for a in inputs])
    sources = [n.meta["kernel_source"] for n in _compiled(fn.graph_for(*args))]
    inside, outside = zip(*map(_gemm_lines, sources))
    assert sum(outside) >= 2 and sum(inside) == 3, (inside, outside)
    want = styles_engine.make_step("tanh_ln", "eager", params, inputs)()
    _assert_close(fn(*args), want, "tanh_ln", rtol=2e-4, atol=1e-6)


def test_auto_compiles_a_scan_whose_numpy_calls_repay_the_compile_and_no_small_one(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "auto")
    # The concat LSTM's loss and gradient, 50 steps: about 2,500 numpy calls a call, whose
    # 1.5 us each over 1,000 calls outweigh compiling both scans; its backward's
    # per-step weight gradients (a stack of 1.6 million elements if written) are summed in
    # the loop, so the scan is judged by its step's values.
    params, inputs = styles_data.make("lstm_concat")
    fn = en.function(en.value_and_grad(styles_engine._recurrent_loss("lstm_concat")))
    args = (tuple(en.tensor(p) for p in params), *[en.tensor(a) for a in inputs])
    graph = fn.graph_for(*args)
    assert [n.meta["backend"] for n in _compiled(graph)] == ["c", "c"], graph.notes
    assert not [n for n in graph.nodes if n.op.name == "scan"]
    # Three steps of one op: the compile would never pay; numpy runs it.
    xs = en.tensor(np.arange(6.0).reshape(3, 2))
    small = en.function(lambda xs: en.scan(lambda c, x: (c + x, c * x), en.zeros(2), xs))
    assert not _compiled(small.graph_for(xs))
    total, ys = small(xs)
    np.testing.assert_allclose(total.numpy(), xs.numpy().sum(0))
    np.testing.assert_allclose(ys.numpy(), np.cumsum(np.vstack([np.zeros(2), xs.numpy()[:-1]]),
                                                     axis=0) * xs.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis", [((3, 16), 1), ((2, 3, 17), (1, 2)), ((2049,), None),
                                         ((5, 7), 1), ((4, 2, 40), -1), ((6, 33), 0)])
def test_sums_and_means_over_trailing_axes_match_numpy_in_double(c_lowering, dtype, shape, axis):
    # A sum over contiguous rows is written with eight partial sums (their tail too);
    # other axes keep one running sum per result. Both add in double: within a float64
    # sum's rounding of numpy's float64 result, whatever the dtype.
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(dtype) + 0.25

    def fn(x):
        return en.sum(en.exp(x) * x, axis=axis), en.mean(x * x, axis=axis, keepdims=True)
    f = en.function(fn)
    assert _compiled(f.graph_for(en.tensor(x)))
    want = [np.sum(np.exp(x.astype(np.float64)) * x, axis=axis),
            np.mean(x.astype(np.float64) ** 2, axis=axis, keepdims=True)]
    for got, w in zip(f(en.tensor(x)), want):
        assert got.dtype == dtype and got.shape == w.shape
        rtol = 1e-13 if dtype == np.float64 else 2e-7
        np.testing.assert_allclose(got.numpy(), w.astype(dtype), rtol=rtol)
