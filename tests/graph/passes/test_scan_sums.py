"""Scan results summed in the loop (graph/passes/scan_sums.py): a per-step result read
only by its sum over the steps is added up step by step instead of stacked.

Checked against numpy and the unoptimized graph: the weight gradients of a scanned
RNN (the backward scan's per-step gradients of its captures), a forward scan's sum
(the same bits, the steps added in the same order), the cases the pass must leave
alone, and the gradient of a scan whose results are summed.
"""
import tracemalloc

import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op
from engine.modes import apply
from engine.ops.reduce import LeadingSum
from support.models import numpy_tanh_rnn_grads, tanh_rnn_loss
from support.pass_helpers import assert_same_bits, count, numpy_lowering  # noqa: F401 (a fixture)

F32 = np.float32


# The pass is for the numpy lowering's scans; the compiled one sums in its own loop.
pytestmark = pytest.mark.usefixtures("numpy_lowering")


def _scans(graph):
    return [n for n in graph.nodes if n.op is scan_op]


def _rnn_problem(steps=12, batch=4, hidden=5, seed=0):
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((3, hidden)) * 0.5).astype(F32)
    u = (rng.standard_normal((hidden, hidden)) * 0.5).astype(F32)
    b = (rng.standard_normal(hidden) * 0.1).astype(F32)
    xs = rng.standard_normal((steps, batch, 3)).astype(F32)
    return w, u, b, xs


def _check_rnn_grads(grad, w, u, b, xs, rtol):
    """``grad``'s RNN weight gradients against float64 BPTT (to ``rtol``) and against the
    unoptimized graph's, which stacks the steps (to ``rtol / 10``)."""
    args = [en.tensor(a) for a in (w, u, b, xs)]
    got = [g.numpy() for g in grad(*args)]
    for g, want in zip(got, numpy_tanh_rnn_grads(w, u, b, xs)):
        np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-7)
    unoptimized = en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)), optimize=False)
    for g, want in zip(got, unoptimized(*args)):
        np.testing.assert_allclose(g, want.numpy(), rtol=rtol / 10, atol=1e-8)


def test_the_weight_gradients_of_a_scanned_rnn_are_summed_in_the_loop():
    w, u, b, xs = _rnn_problem()
    grad = en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)))
    args = [en.tensor(a) for a in (w, u, b, xs)]
    graph = grad.graph_for(*args)
    backward = [n for n in _scans(graph) if n.params.get("summed")]
    # The sequence's gradient, unread, left the loop (scan_dead_results): the weights'
    # are its results 0, 1, 2.
    assert len(backward) == 1 and backward[0].params["summed"] == (0, 1, 2)
    # The summed results are one step's shape, not a stack of the steps.
    n_carry = backward[0].params["n_carry"]
    assert [backward[0].avals[n_carry + k][0] for k in (0, 1, 2)] == [(3, 5), (5, 5), (5,)]
    _check_rnn_grads(grad, w, u, b, xs, rtol=2e-5)


# 40 steps are added one after another; from 1024 the engine's sum goes by blocks of
# 256 rows, with 1300 a remainder of 20 that joins the first block.
@pytest.mark.parametrize("steps", [40, 1024, 1300])
def test_a_forward_scans_sum_gives_the_stacked_sums_bits(steps):
    rng = np.random.default_rng(1)
    spread = 10.0 ** rng.uniform(-3, 3, (steps, 6, 7))
    xs = en.tensor((rng.standard_normal((steps, 6, 7)) * spread).astype(F32))
    w = en.tensor(rng.standard_normal(7).astype(F32))

    def fn(w, xs):
        _, ys = en.scan(lambda c, x: (c, x * w + c), en.zeros(7, dtype="float32"), xs)
        return en.sum(ys, axis=0)
    optimized = en.function(fn)
    assert [n.params.get("summed") for n in _scans(optimized.graph_for(w, xs))] == [(0,)]
    assert count(optimized.graph_for(w, xs), "sum") == 0
    assert_same_bits(optimized(w, xs), en.function(fn, optimize=False)(w, xs), "summed scan")


@pytest.mark.parametrize("reads", [
    lambda ys: (en.sum(ys, axis=0), ys[0]),            # the stack is read elsewhere too
    lambda ys: en.sum(ys, axis=1),                     # a sum over another axis
    lambda ys: en.sum(ys, axis=0, keepdims=True),      # the steps' axis kept
    lambda ys: en.sum(ys),                             # every element
], ids=["read-elsewhere", "other-axis", "keepdims", "full-sum"])
def test_a_stack_read_otherwise_stays_a_stack(reads):
    xs = en.tensor(np.arange(24.0, dtype=F32).reshape(4, 2, 3))

    def fn(xs):
        _, ys = en.scan(lambda c, x: (c, x * 2.0), en.zeros(3, dtype="float32"), xs)
        return reads(ys)
    f = en.function(fn)
    assert [n.params.get("summed") for n in _scans(f.graph_for(xs))] == [None]
    want = fn(xs)
    for g, w_ in zip(*(v if isinstance(v, tuple) else (v,) for v in (f(xs), want))):
        np.testing.assert_array_equal(g.numpy(), w_.numpy())


def test_long_scalar_and_integer_scans_keep_the_stack():
    # A 1-d stack is summed pairwise by numpy: a long one of 0-d steps stays a stack.
    long_scalars = en.tensor(np.full(1024, 0.1, F32))
    short_scalars = en.tensor(np.full(1023, 0.1, F32))
    ints = en.tensor(np.ones((5, 2), np.int64))
    summed_over = en.function(lambda xs: en.sum(en.scan(lambda c, x: (c, x + x), xs[0], xs)[1],
                                                axis=0))
    assert [n.params.get("summed") for n in _scans(summed_over.graph_for(long_scalars))] == [None]
    assert [n.params.get("summed") for n in _scans(summed_over.graph_for(short_scalars))] == [(0,)]
    assert [n.params.get("summed") for n in _scans(summed_over.graph_for(ints))] == [None]
    np.testing.assert_array_equal(summed_over(long_scalars).numpy(),
                                  np.sum(np.full(1024, 0.2, F32)))
    np.testing.assert_allclose(summed_over(short_scalars).numpy(), 1023 * 0.2, rtol=1e-5)
    np.testing.assert_array_equal(summed_over(ints).numpy(), np.full(2, 10))


def test_a_long_scanned_rnns_weight_gradients_are_summed_in_blocks():
    # 1100 steps: the per-step weight gradients are added into 4 blocks and a remainder,
    # never stacked; against float64 BPTT and the unoptimized (stacking) graph.
    w, u, b, xs = _rnn_problem(steps=1100, batch=2, hidden=3, seed=3)
    grad = en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)))
    args = [en.tensor(a) for a in (w, u, b, xs)]
    assert [n.params["summed"] for n in _scans(grad.graph_for(*args))
            if n.params.get("summed")] == [(0, 1, 2)]   # (the sequence's gradient is gone)
    _check_rnn_grads(grad, w, u, b, xs, rtol=1e-4)


@pytest.mark.parametrize("steps", [300, 3000])
def test_a_summed_result_allocates_no_stack(steps):
    # Each step gives a (64, 64) float32 value (16 KiB); stacked, 3000 steps take 47 MiB.
    rng = np.random.default_rng(4)
    xs = en.tensor(rng.standard_normal((steps, 64)).astype(F32))
    w = en.tensor(rng.standard_normal(64).astype(F32))
    f = en.function(lambda w, xs: en.sum(
        en.scan(lambda c, x: (c, en.reshape(x, (64, 1)) * w), w, xs)[1], axis=0))
    want = (xs.numpy().astype(np.float64).sum(axis=0)[:, None] * w.numpy())
    f(w, xs)
    tracemalloc.start()
    try:
        got = f(w, xs).numpy()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    stack = steps * 64 * 64 * 4
    assert peak < stack / 4, f"{peak} bytes at the peak, a stack is {stack}"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("length", [0, 1, 1023, 1024, 1300, 2053])
def test_leading_sum_gives_the_engines_sum_over_rows(length):
    rng = np.random.default_rng(length)
    x = (rng.standard_normal((length, 3, 5)) * 10.0 ** rng.uniform(-4, 4, (length, 3, 5)))
    x = x.astype(F32)
    rows = LeadingSum(length, (3, 5), F32)
    for t in range(length):
        rows.add(t, x[t])
    assert_same_bits(rows.total(), en.sum(en.tensor(x), axis=0), "rows in order")
    backwards = LeadingSum(length, (3, 5), F32)   # a reversed scan's order
    for t in reversed(range(length)):
        backwards.add(t, x[t])
    exact = x.astype(np.float64).sum(axis=0)
    scale = np.abs(x).astype(np.float64).sum(axis=0) + 1e-30
    assert np.all(np.abs(backwards.total() - exact) / scale < 1e-4)


def test_a_summed_scan_differentiates_like_the_stacked_one():
    # Gradients are taken before optimization, but a summed scan node must still have a
    # correct VJP: run it eagerly under a tape and compare with the stacked one's.
    rng = np.random.default_rng(2)
    w = en.tensor(rng.standard_normal(3).astype(F32))
    xs = en.tensor(rng.standard_normal((6, 3)).astype(F32))

    def fn(w, xs):
        return en.sum(en.scan(lambda c, x: (c * 0.5 + x, en.tanh(x * w + c)),
                              en.zeros(3, dtype="float32"), xs)[1], axis=0)
    graph = en.function(fn).graph_for(w, xs)
    (node,) = _scans(graph)
    assert node.params["summed"] == (0,)
    values = {graph.inputs[0]: w, graph.inputs[1]: xs}
    inputs = [values.get(i, None) if i.op.name == "placeholder" else en.tensor(i.params["value"])
              for i in node.inputs]
    n_carry = node.params["n_carry"]
    weights = en.tensor(np.array([1.0, -2.0, 3.0], F32))

    def loss_and_grads(summed):
        with en.GradientTape() as tape:
            tape.watch([w, xs])
            # (the carries' stacks stacked again: the unread pass left them out)
            outs = apply(scan_op, *inputs, **{**node.params, "summed": summed, "unread": ()})
            total = outs[n_carry] if summed else en.sum(outs[n_carry], axis=0)
            loss = en.sum(total * weights)
        return loss, tape.gradient(loss, [w, xs])
    loss_got, g_got = loss_and_grads((0,))
    loss_want, g_want = loss_and_grads(())
    np.testing.assert_allclose(loss_got.numpy(), loss_want.numpy(), rtol=1e-6)
    for a, b in zip(g_got, g_want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)


def test_a_summed_scan_on_another_array_back_end():
    # The back-end-neutral kernel (array_api_strict here) sums the summed results too.
    xps = pytest.importorskip("array_api_strict")
    x = en.tensor(xps.asarray([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]]), backend="array_api_strict")
    f = en.function(lambda x: en.sum(en.scan(lambda c, xi: (c + xi, c * xi + xi),
                                             en.zeros(2, dtype="float64"), x)[1], axis=0))
    assert [n.params.get("summed") for n in _scans(f.graph_for(x))] == [(0,)]
    got = f(x)
    assert got.backend.name == "array_api_strict"
    # c: 0, then x0, then x0 + x1; each step's y is c * x + x.
    xs = np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]])
    c, want = np.zeros(2), np.zeros(2)
    for row in xs:
        want += c * row + row
        c = c + row
    np.testing.assert_allclose(got.numpy(), want)
