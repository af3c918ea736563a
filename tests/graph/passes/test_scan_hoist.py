"""Carry-independent work hoisted out of scan loops (graph/passes/scan_hoist.py) and the
product of a concatenation split by its parts (graph/passes/scan_hoist_split.py).

Values are checked against numpy loops written here (float32 and float64), gradients
against central differences, and the graphs: no product in a body reads only per-step
inputs and weights once the pass ran, the product sits before the loop, and the cases
the pass must leave alone (a carry, random draws, side effects, elementwise work alone,
a stack over the memory bound, bitwise numerics) keep their bodies.
"""
import io

import numpy as np
import pytest

import engine as en
from engine import ops
from engine.cost_model import cost
from engine.graph.control.control_flow import scan_op
from engine.graph.passes.scan_hoist import body_kinds, scan_hoist
from support.finite_diff import numeric_grad
from support.models import concat_lstm_states
from support.pass_helpers import numpy_lowering  # noqa: F401 (a fixture)

PASSES = ["cleanup", "scan_hoist"]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}


def _scans(graph):
    return [n for n in graph.nodes if n.op is scan_op]


def _movable_products(node):
    """The products of scan ``node``'s body that read no carry (what should have left)."""
    p = node.params
    kinds = body_kinds(p["body"], p["n_carry"], p["n_x"])
    return [n for n in p["body"].graph.nodes if n.op is ops.matmul_op and n in kinds]


def _products(graph):
    return [n for n in graph.nodes if n.op is ops.matmul_op]


def _rnn_arrays(dtype, steps=7, batch=3, n_in=4, hidden=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.5).astype(dtype)
            for s in [(batch, hidden), (steps, batch, n_in), (hidden, hidden),
                      (n_in, hidden), (hidden,)]]


def _rnn(h, xs, w, u, b, reverse=False):
    return en.scan(lambda h, x: (en.tanh(h @ w + x @ u + b),) * 2, h, xs, reverse=reverse)


def _numpy_rnn(h, xs, w, u, b, reverse=False):
    hs = [None] * len(xs)
    for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
        h = np.tanh(h @ w + xs[t] @ u + b)
        hs[t] = h
    return h, np.stack(hs)


# ---- values and graphs -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True])
def test_an_rnns_input_projection_is_one_product_before_the_loop(dtype, reverse):
    args = _rnn_arrays(dtype)
    f = en.function(lambda *a: _rnn(*a, reverse=reverse), passes=PASSES)
    h, hs = f(*args)
    want_h, want_hs = _numpy_rnn(*args, reverse=reverse)
    np.testing.assert_allclose(h.numpy(), want_h, **TOL[dtype])
    np.testing.assert_allclose(hs.numpy(), want_hs, **TOL[dtype])
    graph = f.graph_for(*args)
    (scan,) = _scans(graph)
    assert _movable_products(scan) == []
    assert len(_products(scan.params["body"].graph)) == 1          # h @ w stays
    (before,) = _products(graph)                                  # xs @ u, all steps' rows
    assert before.shape == (7 * 3, 5) and before.inputs[1] is graph.inputs[3]
    assert scan.params["n_x"] == 1 and scan.inputs[1].shape == (7, 3, 5)


def test_the_unoptimized_graph_keeps_its_body():
    args = _rnn_arrays(np.float32)
    f = en.function(_rnn, passes=PASSES)
    f(*args)
    (scan,) = _scans(f.get_concrete_function(*args).unoptimized_graph)
    assert len(_movable_products(scan)) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_lstm_written_with_concat_and_split_hoists_its_input_projection(dtype):
    rng = np.random.default_rng(1)
    steps, batch, n_in, hidden = 6, 3, 4, 5
    w = (rng.standard_normal((n_in + hidden, 4 * hidden)) * 0.4).astype(dtype)
    b = (rng.standard_normal(4 * hidden) * 0.1).astype(dtype)
    xs = rng.standard_normal((steps, batch, n_in)).astype(dtype)

    def numpy_lstm(w, b, xs):
        sig = lambda v: 1 / (1 + np.exp(-v))   # noqa: E731
        h = c = np.zeros((batch, hidden), dtype)
        hs = []
        for x in xs:
            i, f, g, o = np.split(np.concatenate([x, h], axis=1) @ w + b, 4, axis=1)
            c = sig(f) * c + sig(i) * np.tanh(g)
            h = sig(o) * np.tanh(c)
            hs.append(h)
        return np.stack(hs)
    f = en.function(concat_lstm_states, passes=PASSES)
    np.testing.assert_allclose(f(w, b, xs).numpy(), numpy_lstm(w, b, xs), **TOL[dtype])
    graph = f.graph_for(w, b, xs)
    (scan,) = _scans(graph)
    body = scan.params["body"].graph
    assert not any(n.op is ops.concat_op for n in body.nodes)
    assert _movable_products(scan) == []
    (inside,) = _products(body)                   # h @ w[n_in:]
    assert inside.inputs[1].shape == (hidden, 4 * hidden)
    (before,) = _products(graph)                  # x @ w[:n_in] for every step
    assert before.shape == (steps * batch, 4 * hidden)


def test_a_concat_of_per_step_parts_only_is_hoisted_whole():
    rng = np.random.default_rng(2)
    xs, ys = rng.standard_normal((2, 5, 3, 2))
    w, u = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))

    def fn(xs, ys, w, u):
        return en.scan(lambda h, xy: (en.tanh(h @ u + en.concat(list(xy), axis=1) @ w),) * 2,
                       en.zeros((3, 3)), (xs, ys))[1]
    f = en.function(fn, passes=PASSES)
    h, want = np.zeros((3, 3)), []
    for x, y in zip(xs, ys):
        h = np.tanh(h @ u + np.concatenate([x, y], axis=1) @ w)
        want.append(h)
    np.testing.assert_allclose(f(xs, ys, w, u).numpy(), np.stack(want), **TOL[np.float64])
    (scan,) = _scans(f.graph_for(xs, ys, w, u))
    assert _movable_products(scan) == []
    assert not any(n.op is ops.concat_op for n in scan.params["body"].graph.nodes)


# ---- under the transformations --------------------------------------------------------------
def _loss(w, u, b, xs):
    h0 = en.zeros((xs.shape[1], w.shape[0]), dtype=xs.dtype)
    _, hs = _rnn(h0, xs, w, u, b)
    return en.mean(hs ** 2.0)


def test_the_backward_scan_recomputes_no_product_in_its_loop():
    _, xs, w, u, b = _rnn_arrays(np.float64, seed=3)
    grad = en.function(en.grad(_loss, argnums=(0, 1, 2)), passes=PASSES)
    got = grad(w, u, b, xs)
    for k in range(3):
        want = numeric_grad(_loss, [w, u, b, xs], i=k)
        np.testing.assert_allclose(got[k].numpy(), want, rtol=1e-6, atol=1e-8)
    graph = grad.graph_for(w, u, b, xs)
    assert len(_scans(graph)) == 2
    for scan in _scans(graph):
        assert _movable_products(scan) == []


def test_jvp_of_a_scan_hoists_the_input_projection_and_its_tangent():
    _, xs, w, u, b = _rnn_arrays(np.float64, seed=4)
    rng = np.random.default_rng(5)
    tw, tu, tb = (rng.standard_normal(a.shape) for a in (w, u, b))

    def jvp(w, u, b, tw, tu, tb):
        return en.jvp(lambda w, u, b: _loss(w, u, b, xs), (w, u, b), (tw, tu, tb))
    f = en.function(jvp, passes=PASSES)
    _, tangent = f(w, u, b, tw, tu, tb)
    eps = 1e-6
    plus = _loss(*[en.tensor(a + eps * t) for a, t in ((w, tw), (u, tu), (b, tb))], xs)
    minus = _loss(*[en.tensor(a - eps * t) for a, t in ((w, tw), (u, tu), (b, tb))], xs)
    want = (float(plus) - float(minus)) / (2 * eps)
    np.testing.assert_allclose(float(tangent), want, rtol=1e-6)
    (scan,) = _scans(f.graph_for(w, u, b, tw, tu, tb))
    assert _movable_products(scan) == []
    # x @ u and x @ tu, one product by [u | tu] (scan_wide_products)
    assert [n.shape[-1] for n in _products(f.graph_for(w, u, b, tw, tu, tb))] == \
        [2 * u.shape[1]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vmap_of_a_scan_hoists_the_batched_projection(dtype):
    h, xs, w, u, b = _rnn_arrays(dtype, seed=6)
    batch_xs = np.stack([xs, xs[::-1] * 0.5])      # two sequences

    def last(xs, h, w, u, b):
        return _rnn(h, xs, w, u, b)[0]
    f = en.function(en.vmap(last, in_axes=(0, None, None, None, None)), passes=PASSES)
    got = f(batch_xs, h, w, u, b).numpy()
    for k in range(2):
        np.testing.assert_allclose(got[k], _numpy_rnn(h, batch_xs[k], w, u, b)[0],
                                   **TOL[dtype])
    (scan,) = _scans(f.graph_for(batch_xs, h, w, u, b))
    assert _movable_products(scan) == []


# ---- the cost model: large products in blocks, stacks bounded --------------------------------
def test_a_product_openblas_would_thread_runs_in_row_blocks():
    args = _rnn_arrays(np.float64, steps=8, batch=4, seed=7)
    with cost.override(openblas_threaded_work=4 * 4 * 5 * 2):      # two steps' rows a block
        f = en.function(_rnn, passes=PASSES)
        got = f(*args)[1].numpy()
        graph = f.graph_for(*args)
    np.testing.assert_allclose(got, _numpy_rnn(*args)[1], **TOL[np.float64])
    (before,) = _products(graph)
    assert before.shape == (4, 8, 5)             # 32 rows as 4 blocks of 8


def test_a_stack_over_the_memory_bound_stays_in_the_loop():
    args = _rnn_arrays(np.float64, seed=8)
    with cost.override(scan_hoist_max_bytes=7 * 3 * 5 * 8 - 1):
        f = en.function(_rnn, passes=PASSES)
        graph = f.graph_for(*args)
    (scan,) = _scans(graph)
    assert len(_movable_products(scan)) == 1 and _products(graph) == []


# ---- left alone ---------------------------------------------------------------------------------
def _unchanged(fn, *args):
    """The scan bodies ``scan_hoist`` leaves as they are (it reports no change)."""
    g = en.function(fn, passes=["cleanup"]).graph_for(*args).copy()
    return not scan_hoist(g)


def test_work_that_reads_a_carry_stays():
    h, xs, w, _, _ = _rnn_arrays(np.float64)
    assert _unchanged(lambda h, xs, w: en.scan(lambda h, x: (en.tanh(h @ w + x),) * 2,
                                                h, xs), h, xs[..., :1] * np.ones(5), w)


def test_elementwise_work_alone_stays():
    # Stacked, it would only add memory traffic: no product leaves.
    xs, w = np.ones((6, 3)), np.ones(3)
    assert _unchanged(lambda xs, w: en.scan(lambda c, x: (c + en.exp(x * w), c), en.zeros(3),
                                            xs), xs, w)


def test_a_product_of_random_draws_stays():
    h, xs, w, u, _ = _rnn_arrays(np.float64)

    def fn(h, xs, w, u):
        def step(h, x):
            noise = en.random.normal(x.shape, dtype="float64")
            return (en.tanh(h @ w + (x + noise) @ u),) * 2
        return en.scan(step, h, xs)
    f = en.function(fn, passes=PASSES)
    f(h, xs, w, u)
    (scan,) = _scans(f.graph_for(h, xs, w, u))
    assert len(_movable_products(scan)) == 0        # the draw's product is not movable
    assert len(_products(scan.params["body"].graph)) == 2
    assert _products(f.graph_for(h, xs, w, u)) == []


def test_a_product_feeding_a_side_effect_is_hoisted_but_the_effect_stays():
    h, xs, w, u, _ = _rnn_arrays(np.float64)
    printed = io.StringIO()

    def fn(h, xs, w, u):
        def step(h, x):
            p = x @ u
            en.print(en.sum(p), file=printed)
            return (en.tanh(h @ w + p),) * 2
        return en.scan(step, h, xs)
    f = en.function(fn, passes=PASSES)
    got = f(h, xs, w, u)[1].numpy()
    np.testing.assert_allclose(got, _numpy_rnn(h, xs, w, u, np.zeros(5))[1],
                               **TOL[np.float64])
    (scan,) = _scans(f.graph_for(h, xs, w, u))
    body = scan.params["body"].graph
    assert any(n.side_effects for n in body.nodes) and _movable_products(scan) == []
    assert len(_products(f.graph_for(h, xs, w, u))) == 1
    sums = [float(v) for v in printed.getvalue().split()]
    np.testing.assert_allclose(sums, [np.sum(x @ u) for x in xs], rtol=1e-6)


def test_bitwise_numerics_leave_scans_alone():
    args = _rnn_arrays(np.float32)
    with _bitwise():
        assert _unchanged(_rnn, *args)


class _bitwise:
    """``en.config.numerics = "bitwise"`` for a ``with`` block."""

    def __enter__(self):
        self.old = en.config.numerics
        en.config.numerics = "bitwise"

    def __exit__(self, *exc):
        en.config.numerics = self.old


def test_the_default_pipeline_hoists_the_numpy_lowerings_scans(numpy_lowering):  # noqa: F811
    args = _rnn_arrays(np.float32, seed=9)
    f = en.function(_rnn)
    np.testing.assert_allclose(f(*args)[1].numpy(), _numpy_rnn(*args)[1], **TOL[np.float32])
    (scan,) = _scans(f.graph_for(*args))
    assert _movable_products(scan) == []
    assert "hoisted 1 per-step value out of scan loops" in str(f.get_concrete_function(*args)
                                                                .report)
