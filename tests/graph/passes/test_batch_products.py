"""The batch_products pass: small products sharing an operand, or summed, become one.

Each test traces a function, counts the products of its optimized graph, and checks
its results against numpy in float64 (the rewrites reorder float sums, so they are
compared to rounding, not bit for bit). ``tests/conftest.py`` lints the graph after
every pass, which catches a batch that would feed itself.
"""
import numpy as np
import pytest

import engine as en
from bench.workloads.rnn import numpy_tanh_loss_and_grad
from support.compilers import import_numba
from support.pass_helpers import count

RNG = np.random.default_rng(7)


def _arr(*shape):
    return RNG.standard_normal(shape)


def _close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_steps_of_one_sequence_times_a_shared_weight_are_one_product():
    xs, w = _arr(6, 4, 5), _arr(5, 3)
    f = en.function(lambda xs, w: [xs[t] @ w for t in range(6)])
    graph = f.graph_for(xs, w)
    assert count(graph, "matmul") == 1, str(graph)
    assert count(graph, "concat") == 0 and count(graph, "reshape") == 1   # xs itself, no copy
    for t, got in enumerate(f(xs, w)):
        _close(got, xs[t] @ w)


def test_blocks_made_in_the_graph_are_concatenated():
    # Four (3, 4) blocks made in the graph are batched; the (2, 4) one has another shape.
    a, b, w = _arr(3, 4), _arr(2, 4), _arr(4, 4)
    makers = [en.tanh, en.sin, en.cos, lambda v: v * 2.0]
    f = en.function(lambda a, b, w: [m(a) @ w for m in makers] + [b @ w])
    graph = f.graph_for(a, b, w)
    assert count(graph, "matmul") == 2 and count(graph, "concat") == 1, str(graph)
    wants = [np.tanh(a) @ w, np.sin(a) @ w, np.cos(a) @ w, (a * 2.0) @ w, b @ w]
    for got, want in zip(f(a, b, w), wants):
        _close(got, want)


def test_fewer_than_min_batch_products_stay_apart_and_exact():
    few = en.config.cost.batched_min_products - 1
    a, w = _arr(few, 3, 4), _arr(4, 4)
    f = en.function(lambda a, w: [a[k] @ w for k in range(few)])
    assert count(f.graph_for(a, w), "matmul") == few
    for k, got in enumerate(f(a, w)):
        np.testing.assert_array_equal(np.asarray(got), a[k] @ w)


def test_a_carried_product_is_not_batched():
    h0, u = _arr(4, 5), _arr(5, 5) * 0.3

    def f(h, u):
        for _ in range(5):
            h = en.tanh(h @ u)
        return h
    graph = en.function(f).graph_for(h0, u)
    assert count(graph, "matmul") == 5, str(graph)
    want = h0
    for _ in range(5):
        want = np.tanh(want @ u)
    _close(en.function(f)(h0, u), want)


def test_a_product_depending_on_another_joins_no_batch_with_it():
    # q's product reads p's; the other four are independent of both: p and those four
    # are batched, q is left alone.
    a, cs, w = _arr(3, 4), _arr(4, 3, 4), _arr(4, 4)

    def f(a, cs, w):
        p = a @ w
        q = en.tanh(p) @ w
        return [p, q] + [cs[k] @ w for k in range(4)]
    graph = en.function(f).graph_for(a, cs, w)
    assert count(graph, "matmul") == 2, str(graph)
    p = a @ w
    wants = [p, np.tanh(p) @ w] + [cs[k] @ w for k in range(4)]
    for got, want in zip(en.function(f)(a, cs, w), wants):
        _close(got, want)


def test_a_sum_of_products_is_one_product_over_the_stacked_blocks():
    xs, gs = _arr(7, 4, 3), _arr(7, 4, 5)

    def f(xs, gs):
        total = en.transpose(xs[0]) @ gs[0]
        for t in range(1, 7):
            total = total + en.transpose(xs[t]) @ gs[t]
        return total
    graph = en.function(f).graph_for(xs, gs)
    assert count(graph, "matmul") == 1 and count(graph, "add") == 0, str(graph)
    _close(en.function(f)(xs, gs), np.einsum("tbi,tbj->ij", xs, gs))


def test_terms_that_are_not_products_stay_in_the_sum():
    xs, gs, c = _arr(4, 4, 3), _arr(4, 4, 3), _arr(3, 3)

    def f(xs, gs, c):
        total = xs[0].T @ gs[0] + c
        for t in range(1, 4):
            total = total + xs[t].T @ gs[t]
        return total
    graph = en.function(f).graph_for(xs, gs, c)
    assert count(graph, "matmul") == 1, str(graph)
    _close(en.function(f)(xs, gs, c), np.einsum("tbi,tbj->ij", xs, gs) + c)


def test_a_sum_over_different_weights_is_left_alone():
    # sum_i g_i @ w_i (a cell's gradient with respect to its input): batching it would
    # copy the weights into one matrix at every call.
    gs, ws = _arr(4, 4, 3), _arr(4, 3, 3)

    def f(gs, ws):
        total = gs[0] @ ws[0]
        for i in range(1, 4):
            total = total + gs[i] @ ws[i]
        return total
    assert count(en.function(f).graph_for(gs, ws), "matmul") == 4
    _close(en.function(f)(gs, ws), np.einsum("ibj,ijk->bk", gs, ws))


def test_column_sums_of_the_steps_reuse_the_stacked_blocks():
    # A dense layer's weight and bias gradients over the steps: one product, one sum,
    # both reading one concatenation of the steps' blocks.
    xs, w = _arr(5, 4, 3), _arr(3, 6)

    def f(xs, w):
        gs = [en.tanh(xs[t] @ w) for t in range(5)]
        gw = en.transpose(xs[0]) @ gs[0]
        gb = en.sum(gs[0], axis=0)
        for t in range(1, 5):
            gw = gw + en.transpose(xs[t]) @ gs[t]
            gb = gb + en.sum(gs[t], axis=0)
        return gw, gb
    graph = en.function(f).graph_for(xs, w)
    assert count(graph, "sum") == 1 and count(graph, "concat") == 1, str(graph)
    gs = np.tanh(xs @ w)
    got = en.function(f)(xs, w)
    _close(got[0], np.einsum("tbi,tbj->ij", xs, gs))
    _close(got[1], gs.sum(axis=(0, 1)))


def test_large_products_are_left_alone():
    n = 120            # 120 ** 3 multiply-adds each: over batched_product_max_work
    assert n ** 3 > en.config.cost.batched_product_max_work
    a, w = _arr(4, n, n), _arr(n, n)
    graph = en.function(lambda a, w: [a[k] @ w for k in range(4)]).graph_for(a, w)
    assert count(graph, "matmul") == 4


def test_integer_products_are_left_alone():
    a, b = RNG.integers(-5, 5, (4, 3, 4)), RNG.integers(-5, 5, (4, 4))
    f = en.function(lambda a, b: [a[k] @ b for k in range(4)])
    assert count(f.graph_for(a, b), "matmul") == 4
    np.testing.assert_array_equal(f(a, b)[3], a[3] @ b)


def _tanh_rnn_loss_and_grads(steps):
    def loss_and_grads(w, u, b, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch([w, u, b])
            h, outs = h0, []
            for t in range(steps):
                h = en.tanh(xs[t] @ w + h @ u + b)
                outs.append(h)
            loss = en.mean((en.stack(outs) - targets) ** 2.0)
        return [loss] + tape.gradient(loss, [w, u, b])
    return loss_and_grads


@pytest.mark.parametrize("lowering", ["numpy", "numba"])
def test_unrolled_rnn_gradient_batches_its_products_and_agrees(lowering, monkeypatch):
    if lowering == "numba":
        import_numba()
    steps, batch, hidden = 6, 4, 5
    w, u = _arr(3, hidden) * 0.5, _arr(hidden, hidden) * 0.5
    b, xs = _arr(hidden) * 0.1, _arr(steps, batch, 3)
    targets, h0 = _arr(steps, batch, hidden), np.zeros((batch, hidden))
    args = (w, u, b, xs, targets, h0)
    monkeypatch.setattr(en.config, "lowering", lowering)
    f = en.function(_tanh_rnn_loss_and_grads(steps))
    graph = f.graph_for(*args)
    if lowering == "numba":
        assert count(graph, "compiled_region") >= 1, str(graph)
    else:
        # Forward: the steps' x_t @ w as one product, h @ u once a step; backward: the
        # carried gradient once a step but the first, and w's and u's gradients one
        # product each.
        assert count(graph, "matmul") == 1 + steps + (steps - 1) + 2, str(graph)
    # The benchmark's hand-written float64 backpropagation through time (h0 = 0).
    for got, want in zip(f(*args), numpy_tanh_loss_and_grad([w, u, b], xs, targets)):
        _close(got, want)


def test_two_batches_that_would_feed_each_other_are_not_both_made():
    # p_k -> q_k and r_k -> s_k, with p and s sharing w1, q and r sharing w2: batching
    # (p, s) and (q, r) together would make a cycle (p -> q -> ... -> r -> s -> p).
    a, b = _arr(2, 3, 4), _arr(2, 3, 4)
    w1, w2 = _arr(4, 4), _arr(4, 4) * 0.5

    def f(a, b, w1, w2):
        ps = [a[k] @ w1 for k in range(2)]
        rs = [b[k] @ w2 for k in range(2)]
        qs = [en.tanh(p) @ w2 for p in ps]
        ss = [en.tanh(r) @ w1 for r in rs]
        return ps + qs + rs + ss
    graph = en.function(f).graph_for(a, b, w1, w2)
    graph.lint()
    assert count(graph, "matmul") < 8, str(graph)
    ps, rs = [a[k] @ w1 for k in range(2)], [b[k] @ w2 for k in range(2)]
    wants = ps + [np.tanh(p) @ w2 for p in ps] + rs + [np.tanh(r) @ w1 for r in rs]
    for got, want in zip(en.function(f)(a, b, w1, w2), wants):
        _close(got, want)


def test_a_product_of_a_product_is_not_batched_with_it():
    # Four chains p_k = a_k @ w, q_k = p_k @ w: the p's are one batch, the q's another.
    a, w = _arr(4, 3, 3), _arr(3, 3)
    f = en.function(lambda a, w: [(a[k] @ w) @ w for k in range(4)])
    assert count(f.graph_for(a, w), "matmul") == 2
    for k, got in enumerate(f(a, w)):
        _close(got, (a[k] @ w) @ w)


# ---- a bias every step adds (graph/passes/batched_bias.py) --------------------------------
def _broadcast_adds(graph, bias_name):
    return [n for n in graph.nodes if n.op is en.ops.add_op and
            any(i.op.name == "placeholder" and i.name == bias_name for i in n.inputs)]


def test_a_bias_every_step_adds_is_added_once_to_the_batched_product():
    xs, w, u, b = _arr(6, 4, 5), _arr(5, 3), _arr(3, 3) * 0.3, _arr(3)

    def cell_sums(xs, w, u, b):
        h = en.zeros((4, 3), dtype="float64")
        out = []
        for t in range(6):
            h = en.tanh(xs[t] @ w + h @ u + b)      # (x_t w + h u) + b
            out.append(h)
        return out
    f = en.function(cell_sums, passes=("cleanup",))
    graph = f.graph_for(xs, w, u, b)
    adds = _broadcast_adds(graph, "x3")
    assert len(adds) == 1 and adds[0].shape == (24, 3), str(graph)
    h = np.zeros((4, 3))
    for t, got in enumerate(f(xs, w, u, b)):
        h = np.tanh(xs[t] @ w + h @ u + b)
        _close(got, h)


def test_a_bias_added_to_each_slice_alone_is_folded_too():
    xs, w, b = _arr(5, 4, 3), _arr(3, 2), _arr(1, 2)
    f = en.function(lambda xs, w, b: [en.sin(xs[t] @ w + b) for t in range(5)],
                    passes=("cleanup",))
    graph = f.graph_for(xs, w, b)
    assert len(_broadcast_adds(graph, "x2")) == 1, str(graph)
    for t, got in enumerate(f(xs, w, b)):
        _close(got, np.sin(xs[t] @ w + b))


def test_steps_with_different_biases_or_a_bias_made_from_a_step_are_not_folded():
    xs, w, bs = _arr(4, 3, 2), _arr(2, 2), _arr(4, 2)
    per_step = en.function(lambda xs, w, bs: [xs[t] @ w + bs[t] for t in range(4)],
                           passes=("cleanup",))
    graph = per_step.graph_for(xs, w, bs)
    assert count(graph, "add") == 4, str(graph)
    for t, got in enumerate(per_step(xs, w, bs)):
        _close(got, xs[t] @ w + bs[t])

    def from_a_step(xs, w):
        ps = [xs[t] @ w for t in range(4)]
        b = en.sum(ps[0], axis=0)                 # the bias is computed from step 0
        return [p + b for p in ps]
    f = en.function(from_a_step, passes=("cleanup",))
    graph = f.graph_for(xs, w)
    assert count(graph, "add") == 4, str(graph)
    b = (xs[0] @ w).sum(axis=0)
    for t, got in enumerate(f(xs, w)):
        _close(got, xs[t] @ w + b)
