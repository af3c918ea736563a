"""Values a later scan recomputes from an earlier scan's steps (graph/passes/scan_residuals.py):
the earlier scan stacks them, the later one reads the stacks.

A scan's VJP recomputes the forward step in its backward loop; after the pass the backward
body holds no product of the forward step and none of its sigmoids or tanhs. Checked
against finite differences of numpy models (float64), numpy references and the
unoptimized graph (float32 and float64), under the numpy and C lowerings; the cases the
pass must leave alone keep their recomputation; under bitwise numerics the bits are eager's.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op
from support.bitwise import assert_same_bits, numerics
from support.finite_diff import central_difference
from support.models import concat_lstm_loss, numpy_concat_lstm_loss
from support.pass_helpers import numpy_lowering  # noqa: F401 (a fixture)

# The rewrite is read off the numpy lowering's graph (a compiled lowering would hold the
# loops in regions); the values are checked under the C lowering too.
pytestmark = pytest.mark.usefixtures("numpy_lowering")

RTOL = {np.float32: 2e-4, np.float64: 1e-10}


def _arrays(dtype, *shapes, seed=0, scale=0.5):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s in shapes]


def _scans(graph):
    return [n for n in graph.nodes if n.op is scan_op]


def _body_ops(scan):
    return sorted(n.op.name for n in scan.params["body"].graph.nodes)


def _backward(graph):
    (scan,) = [n for n in _scans(graph) if n.params["reverse"]]
    return scan


def _assert_close(got, want, dtype):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        scale = float(np.max(np.abs(w)))
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


# ---- the LSTM's backward loop ---------------------------------------------------------------
def test_the_lstm_backward_loop_reads_the_forward_steps_gates_and_matches_finite_differences():
    wt, bias, xs = _arrays(np.float64, (6 + 4, 16), (16,), (5, 3, 6), seed=1)
    args = [en.tensor(a) for a in (wt, bias, xs)]
    grad = en.function(en.grad(concat_lstm_loss, argnums=(0, 1, 2)))
    graph = grad.graph_for(*args)
    backward = _backward(graph)
    ops = _body_ops(backward)
    # No forward product ([x, h] @ W: (3, 16)) and none of its sigmoids and tanhs.
    assert "sigmoid" not in ops and "tanh" not in ops, ops
    assert (3, 16) not in [tuple(n.shape) for n in backward.params["body"].graph.nodes
                           if n.op.name == "matmul"]
    got = [g.numpy() for g in grad(*args)]
    arrays = (wt, bias, xs)
    for k, g in enumerate(got):
        want = central_difference(
            lambda v, k=k: numpy_concat_lstm_loss(*[v if j == k else a for j, a in enumerate(arrays)]),
            arrays[k])
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lowering", ["numpy", "c"])
def test_the_lstm_gradient_matches_the_unoptimized_graph(dtype, lowering):
    wt, bias, xs = _arrays(dtype, (8 + 8, 32), (32,), (7, 4, 8), seed=2)
    args = [en.tensor(a) for a in (wt, bias, xs)]
    want = en.function(en.value_and_grad(concat_lstm_loss, argnums=(0, 1)), optimize=False)(*args)
    with numerics(en.config.numerics, lowering):
        fn = en.function(en.value_and_grad(concat_lstm_loss, argnums=(0, 1)))
        loss, grads = fn(*args)
    _assert_close([loss.numpy()] + [g.numpy() for g in grads],
                  [want[0].numpy()] + [g.numpy() for g in want[1]], dtype)


# ---- a tanh RNN and two scans of one program --------------------------------------------------
def _rnn_loss(w, u, xs):
    step = lambda h, x: (en.tanh(h @ w + x @ u),) * 2      # noqa: E731
    hs = en.scan(step, en.zeros((xs.shape[1], w.shape[0]), dtype=xs.dtype), xs)[1]
    return en.sum(hs ** 3.0)


def _numpy_rnn_loss(w, u, xs):
    h = np.zeros((xs.shape[1], w.shape[0]))
    total = 0.0
    for x in xs:
        h = np.tanh(h @ w + x @ u)
        total += np.sum(h ** 3)
    return total


def test_a_tanh_rnns_backward_loop_reads_the_forward_tanh():
    w, u, xs = _arrays(np.float64, (5, 5), (3, 5), (6, 2, 3), seed=3)
    args = [en.tensor(a) for a in (w, u, xs)]
    # (the cleanup stage alone: scan_hoist would move a recomputation out of the loop)
    graph = en.function(en.grad(_rnn_loss, argnums=(0, 1)), passes=["cleanup"]).graph_for(*args)
    assert "tanh" not in _body_ops(_backward(graph))
    (forward,) = [n for n in _scans(graph) if not n.params["reverse"]]
    assert "tanh" in _body_ops(forward)
    for k, g in enumerate(en.function(en.grad(_rnn_loss, argnums=(0, 1)))(*args)):
        want = central_difference(
            lambda v, k=k: _numpy_rnn_loss(*[v if j == k else a for j, a in
                                        enumerate((w, u, xs))]), (w, u, xs)[k])
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_second_scan_over_the_same_steps_reads_the_firsts_stack(dtype):
    def f(w, xs):
        first = en.scan(lambda c, x: (c + en.sum(en.tanh(x @ w)), c), 0.0, xs)[0]
        # the same tanh(x_t @ w) and a carry of its own
        second = en.scan(lambda c, x: (c * 0.5 + en.exp(en.tanh(x @ w)), c),
                         en.zeros((xs.shape[1], w.shape[1]), dtype=xs.dtype), xs)[0]
        return first, second

    def ref(w, xs):
        first, second = 0.0, np.zeros((xs.shape[1], w.shape[1]))
        for x in xs:
            first += np.sum(np.tanh(x @ w))
            second = second * 0.5 + np.exp(np.tanh(x @ w))
        return first, second
    w, xs = _arrays(dtype, (4, 6), (5, 3, 4), seed=4)
    args = [en.tensor(w), en.tensor(xs)]
    fn = en.function(f, passes=["cleanup"])
    graph = fn.graph_for(*args)
    first, second = sorted(_scans(graph), key=lambda n: n.id)
    assert "matmul" not in _body_ops(second) and "matmul" in _body_ops(first)
    got = [t.numpy() for t in fn(*args)]
    _assert_close(got, ref(w.astype(np.float64), xs.astype(np.float64)), dtype)
    _assert_close(got, [t.numpy() for t in en.function(f, optimize=False)(*args)], dtype)


# ---- left alone ------------------------------------------------------------------------------
def test_elementwise_values_are_recomputed_not_stacked():
    # tanh(h + x): no product to save, so the backward recomputes its tanh
    def loss(xs):
        step = lambda h, x: (en.tanh(h * 0.5 + x),) * 2      # noqa: E731
        return en.sum(en.scan(step, en.zeros(xs.shape[1:], dtype=xs.dtype), xs)[1] ** 2.0)
    xs = _arrays(np.float64, (6, 3, 4), seed=5)[0]
    grad = en.function(en.grad(loss))
    assert "tanh" in _body_ops(_backward(grad.graph_for(en.tensor(xs))))
    want = central_difference(lambda v: np.sum(_numpy_steps(v) ** 2), xs)
    np.testing.assert_allclose(grad(en.tensor(xs)).numpy(), want, rtol=1e-6, atol=1e-8)


def _numpy_steps(xs):
    h, out = np.zeros(xs.shape[1:]), []
    for x in xs:
        h = np.tanh(h * 0.5 + x)
        out.append(h)
    return np.stack(out)


def test_stacks_over_the_memory_bound_or_scans_of_other_lengths_are_left_alone():
    w, u, xs = (en.tensor(a) for a in _arrays(np.float64, (5, 5), (3, 5), (6, 2, 3), seed=3))
    with en.config.cost.override(scan_hoist_max_bytes=6 * 2 * 5 * 8 - 1):
        graph = en.function(en.grad(_rnn_loss, argnums=(0, 1))).graph_for(w, u, xs)
    assert "tanh" in _body_ops(_backward(graph))

    def f(w, xs):
        a = en.scan(lambda c, x: (c + en.tanh(x @ w), c), en.zeros((2, 6)), xs)[0]
        b = en.scan(lambda c, x: (c + en.tanh(x @ w), c), en.zeros((2, 6)), xs[1:])[0]
        return a, b
    w, xs = (en.tensor(a) for a in _arrays(np.float64, (4, 6), (5, 2, 4), seed=6))
    graph = en.function(f, passes=["cleanup"]).graph_for(w, xs)
    assert all("matmul" in _body_ops(s) for s in _scans(graph))


# ---- bitwise numerics -----------------------------------------------------------------------
@pytest.mark.parametrize("lowering", ["numpy", "c"])
def test_under_bitwise_numerics_the_gradients_bits_are_eagers(lowering):
    wt, bias, xs = (en.tensor(a) for a in _arrays(np.float32, (6 + 4, 16), (16,), (5, 3, 6)))
    with numerics("bitwise", lowering):
        fn = en.function(en.value_and_grad(concat_lstm_loss, argnums=(0, 1)))
        got = fn(wt, bias, xs)
        eager = en.value_and_grad(concat_lstm_loss, argnums=(0, 1))(wt, bias, xs)
        if lowering == "numpy":
            assert "sigmoid" not in _body_ops(_backward(fn.graph_for(wt, bias, xs)))
    assert_same_bits(got, eager, f"bitwise {lowering}")
