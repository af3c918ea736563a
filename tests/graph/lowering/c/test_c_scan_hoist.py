"""Scans the C lowering writes loop by loop (graph/lowering/c/lowering.py, policy.py):
their carry-independent products are hoisted before the loop and written in the same C
function (one gemm over every step's rows), and the sums over the steps of their
stacked results are added up there; the results agree with eager mode and with finite
differences."""

import numpy as np
import pytest

import engine as en
from support.compilers import needs_c_compiler
from support.finite_diff import numeric_grad
from support.models import concat_lstm_states

pytestmark = needs_c_compiler
T, B, NX, NH = 5, 3, 4, 3


@pytest.fixture
def loops_in_c(monkeypatch):
    """The C lowering, with whole graphs declined (as a graph of large values is), so
    each scan is written alone, and these small products hoisted."""
    monkeypatch.setattr(en.config, "lowering", "c")
    with en.config.cost.override(whole_graph_small_elements=8, whole_graph_max_elements=8,
                                 c_scan_hoist_min_work=0):
        yield


def _concat_lstm_loss(w, b, xs, target):
    """An LSTM written as ``concat([x, h]) @ w + b`` split into its four gates."""
    return en.mean((concat_lstm_states(w, b, xs) - target) ** 2.0)


def _args(dtype):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s, scale in
            (((NX + NH, 4 * NH), 0.5), ((4 * NH,), 0.1), ((T, B, NX), 1.0), ((T, B, NH), 0.5))]


def _gemms(source):
    """``(inside the time loop, before or after it)``: the source's BLAS calls, each with
    the rows it multiplies (``n_``). A call in the loop sits deeper (12 spaces and more)."""
    inside, outside = [], []
    for line in source.splitlines():
        if "const int m_ = " in line:
            rows = int(line.split("n_ = ")[1].split(",")[0])
            (inside if line.startswith(" " * 12) else outside).append(rows)
    return inside, outside


def _compiled(graph):
    return [n for n in graph.nodes if n.op.name == "compiled_region"]


def test_the_input_projection_is_one_gemm_before_the_loop_in_the_scans_c_function(loops_in_c):
    w, b, xs, target = (en.tensor(a) for a in _args(np.float64))
    fn = en.function(_concat_lstm_loss)
    graph = fn.graph_for(w, b, xs, target)
    compiled = _compiled(graph)
    assert [n.meta["backend"] for n in compiled] == ["c"], graph.notes
    # Nothing but the compiled scan computes a product: the hoisted one is inside it.
    assert not [n for n in graph.nodes if n.op.name in ("scan", "matmul")], graph.notes
    inside, outside = _gemms(compiled[0].meta["kernel_source"])
    # x_t @ w[:NX] for all steps at once (T * B rows); h @ w[NX:] once a step (B rows).
    assert outside == [T * B] and inside == [B], (inside, outside)
    got = fn(w, b, xs, target)
    want = _concat_lstm_loss(w, b, xs, target)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_a_product_under_the_cost_models_work_a_step_stays_in_the_loop(loops_in_c):
    w, b, xs, target = (en.tensor(a) for a in _args(np.float64))
    step_work = B * NX * 4 * NH           # x_t @ w[:NX]
    for bound, hoisted in ((step_work, True), (step_work + 1, False)):
        with en.config.cost.override(c_scan_hoist_min_work=bound):
            fn = en.function(_concat_lstm_loss)
            (compiled,) = _compiled(fn.graph_for(w, b, xs, target))
        inside, outside = _gemms(compiled.meta["kernel_source"])
        assert (outside, inside) == (([T * B], [B]) if hoisted else ([], [B])), bound
        np.testing.assert_allclose(fn(w, b, xs, target).numpy(),
                                   _concat_lstm_loss(w, b, xs, target).numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_hoisted_loss_and_gradient_match_eager_and_finite_differences(loops_in_c, dtype):
    args = _args(dtype)
    tensors = [en.tensor(a) for a in args]
    fn = en.function(en.value_and_grad(_concat_lstm_loss, argnums=(0, 1)))
    graph = fn.graph_for(*tensors)
    assert _compiled(graph) and not [n for n in graph.nodes if n.op.name == "scan"], graph.notes
    # The forward's product of the steps' own inputs (x_t's) left its loop; the backward
    # reads the forward step's values from the forward's stacks (scan_residuals.py) and
    # recomputes no product of it, before its loop or in it.
    outside = [rows for n in _compiled(graph) for rows in _gemms(n.meta["kernel_source"])[1]]
    assert outside.count(T * B) == 1, outside
    # The weight gradient (a sum over the steps) is computed in the backward's function:
    # no stack of every step's gradient is written for numpy to add up.
    assert not [n for n in graph.nodes if n.op.name == "sum" and len(n.inputs[0].shape) == 3]
    loss, (gw, gb) = fn(*tensors)
    want_loss, (want_w, want_b) = en.value_and_grad(_concat_lstm_loss, argnums=(0, 1))(*tensors)
    rtol, atol = (1e-10, 1e-12) if dtype == np.float64 else (2e-4, 1e-6)
    np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gw.numpy(), want_w.numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gb.numpy(), want_b.numpy(), rtol=rtol, atol=atol)
    if dtype == np.float64:
        args64 = [a.astype(np.float64) for a in args]
        for i, got in enumerate((gw, gb)):
            np.testing.assert_allclose(got.numpy(), numeric_grad(_concat_lstm_loss, args64, i),
                                       rtol=1e-6, atol=1e-8)


def test_under_bitwise_numerics_nothing_is_hoisted(loops_in_c, monkeypatch):
    # One product of every step's rows may round differently from eager's per-step ones.
    monkeypatch.setattr(en.config, "numerics", "bitwise")
    w, b, xs, target = (en.tensor(a) for a in _args(np.float32))
    fn = en.function(_concat_lstm_loss)
    graph = fn.graph_for(w, b, xs, target)
    # Bitwise sources call numpy's cblas products (c_bitwise.py): each in the time loop.
    calls = [line for n in _compiled(graph) for line in n.meta["kernel_source"].splitlines()
             if "cblas_s_(" in line]
    assert calls and all(line.startswith(" " * 8) for line in calls), calls
    assert fn(w, b, xs, target).numpy().tobytes() == \
        _concat_lstm_loss(w, b, xs, target).numpy().tobytes()


def test_a_scan_c_does_not_write_keeps_its_hoisted_product_in_row_blocks(loops_in_c):
    # cumsum has no C form: the scan stays with numpy, and its hoisted x_t @ u, over
    # OpenBLAS's threading bound here, runs as products of row blocks (scan_hoist's).
    rng = np.random.default_rng(1)
    u, w = rng.standard_normal((NX, NH)), rng.standard_normal((NH, NH)) * 0.5
    xs = rng.standard_normal((T, B, NX))

    def loss(u, w, xs):
        def step(h, x):
            h = en.tanh(x @ u + h @ w)
            return h, en.cumsum(h, axis=1)
        return en.sum(en.scan(step, en.zeros((B, NH)), xs)[1] ** 2.0)
    fn = en.function(en.value_and_grad(loss, argnums=(0, 1)))
    with en.config.cost.override(openblas_threaded_work=B * NX * NH):
        graph = fn.graph_for(*map(en.tensor, (u, w, xs)))
    assert [n for n in graph.nodes if n.op.name == "scan"], graph.notes
    products = [n for n in graph.nodes if n.op.name == "matmul"]
    assert products and all(len(n.shape) == 3 for n in products), [n.shape for n in products]
    got_loss, got = fn(*map(en.tensor, (u, w, xs)))
    want_loss, want = en.value_and_grad(loss, argnums=(0, 1))(*map(en.tensor, (u, w, xs)))
    np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-10)
    for g, r, i in zip(got, want, range(2)):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g.numpy(), numeric_grad(loss, [u, w, xs], i), rtol=1e-6,
                                   atol=1e-8)
