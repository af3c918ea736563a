"""Sums of per-step products after the loop (graph/passes/scan_products.py): a scan's
accumulator ``c' = c + P(a_t, b_t)``, or a per-step product read only by its sum over the
steps, becomes one product of the factors' stacks after the loop.

Checked against numpy (a Python loop over the steps, float64 backpropagation by hand,
finite differences of a numpy LSTM) and the unoptimized graph, in float32 and float64,
for forward and reversed scans; the graphs show the product after the loop and no
accumulator; the cases the pass must leave alone keep their loops.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op
from engine.graph.passes.scan_products import scan_product_pays, scan_products
from support.bitwise import numerics
from support.finite_diff import central_difference
from support.models import (concat_lstm_loss, numpy_concat_lstm_loss, numpy_tanh_rnn_grads,
                            tanh_rnn_loss)
from support.pass_helpers import numpy_lowering  # noqa: F401 (a fixture)

# The rewrite is read off the numpy lowering's graph (a compiled lowering would hold the
# loop in a region); the values are checked under the default lowering too.
pytestmark = pytest.mark.usefixtures("numpy_lowering")

RTOL = {np.float32: 2e-5, np.float64: 1e-12}


def _scans(graph):
    return [n for n in graph.nodes if n.op is scan_op]


def _products_after_loops(graph):
    """The matrix products the pass wrote after the loops."""
    return [n for n in graph.nodes if n.name.startswith("step_product")]


def _scan_value_shapes(graph):
    """Every shape a scan of ``graph`` returns."""
    return {tuple(s) for n in _scans(graph) for s, _ in n.avals}


def _close(got, want, rtol):
    """``got`` equals ``want`` to ``rtol`` of the largest entry (float32 sums of many
    terms cancel: a small entry carries the rounding of the large ones)."""
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * float(np.max(np.abs(want))))


def _rng_arrays(dtype, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * 0.5).astype(dtype) for s in shapes]


# ---- forward and reversed scans of outer products and matrix products ------------------
def _outer_accumulator(w, xs, reverse):
    """``sum_t (x_t @ w)[:, :, None] * x_t[:, None, :]`` as an accumulator carry."""
    def step(c, x):
        return c + en.expand_dims(en.tanh(x @ w), 2) * en.expand_dims(x, 1), x
    init = en.ones((xs.shape[1], w.shape[1], xs.shape[2]), dtype=xs.dtype)
    return en.scan(step, init, xs, reverse=reverse)[0]


def _numpy_outer(w, xs):
    return 1.0 + sum(np.tanh(x @ w)[:, :, None] * x[:, None, :] for x in xs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reversed"])
def test_an_accumulated_outer_product_is_one_batched_product_after_the_loop(dtype, reverse):
    w, xs = _rng_arrays(dtype, (32, 32), (12, 6, 32))
    fn = en.function(lambda w, xs: _outer_accumulator(w, xs, reverse))
    args = en.tensor(w), en.tensor(xs)
    graph = fn.graph_for(*args)
    assert [p.shape for p in _products_after_loops(graph)] == [(6, 32, 32)]
    assert (6, 32, 32) not in _scan_value_shapes(graph)     # no accumulator in the loop
    got = fn(*args).numpy()
    np.testing.assert_allclose(got, _numpy_outer(w.astype(np.float64), xs.astype(np.float64)),
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype])
    unoptimized = en.function(lambda w, xs: _outer_accumulator(w, xs, reverse), optimize=False)
    np.testing.assert_allclose(got, unoptimized(*args).numpy(), rtol=RTOL[dtype],
                               atol=RTOL[dtype])


# Per-step results summed over the steps: h_t.T @ d_t, h_t @ d_t.T, and batched h_t @ d_t.
FORMS = {
    "left-transposed": (lambda a, b: en.transpose(a) @ b, (5, 32), (5, 40),
                        lambda a, b: a.T @ b),
    "right-transposed": (lambda a, b: a @ en.transpose(b), (32, 4), (40, 4),
                         lambda a, b: a @ b.T),
    "batched": (lambda a, b: a @ b, (3, 32, 2), (3, 2, 40), lambda a, b: a @ b),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reversed"])
def test_a_per_step_product_read_by_its_sum_is_one_product_after_the_loop(form, dtype, reverse):
    product, a_shape, b_shape, reference = FORMS[form]
    steps = 9
    v, xs, ys = _rng_arrays(dtype, a_shape[-1:], (steps,) + a_shape, (steps,) + b_shape)

    def fn(v, xs, ys):
        def step(c, xy):
            x, y = xy
            a = en.sin(x + c)           # a per-step value made in the body
            return c + 1.0, product(a, y)
        return en.sum(en.scan(step, v, (xs, ys), reverse=reverse)[1], axis=0)
    args = [en.tensor(a) for a in (v, xs, ys)]
    optimized = en.function(fn)
    graph = optimized.graph_for(*args)
    assert len(_products_after_loops(graph)) == 1
    assert not [n for n in graph.nodes if n.op.name == "sum"]
    got = optimized(*args).numpy()
    v64, xs64, ys64 = (a.astype(np.float64) for a in (v, xs, ys))
    want = sum(reference(np.sin(x + v64 + t), y) for t, (x, y) in
               enumerate(zip(xs64[::-1] if reverse else xs64, ys64[::-1] if reverse else ys64)))
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)
    np.testing.assert_allclose(got, en.function(fn, optimize=False)(*args).numpy(),
                               rtol=RTOL[dtype], atol=RTOL[dtype])


def test_a_result_already_summed_in_the_loop_is_taken_from_its_summed_param():
    w, xs = _rng_arrays(np.float64, (32, 32), (7, 4, 32))

    def fn(w, xs):
        return en.sum(en.scan(lambda c, x: (c, en.transpose(en.tanh(x @ w)) @ x), 0.0,
                              xs)[1], axis=0)
    args = en.tensor(w), en.tensor(xs)
    summed_first = en.function(fn, passes=["cleanup", "scan_sums", scan_products, "dce"])
    graph = summed_first.graph_for(*args)
    assert [n.params.get("summed") for n in _scans(graph)] == [None]
    assert len(_products_after_loops(graph)) == 1
    want = sum(np.tanh(x @ w).T @ x for x in xs)
    np.testing.assert_allclose(summed_first(*args).numpy(), want, rtol=1e-12)


# ---- gradients: the per-example RNN (vmap of grad) and the weights of an RNN -----------
# (the tanh RNN and its float64 backpropagation by hand: support.models)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_example_rnn_gradients_have_no_per_example_accumulators(dtype):
    w, u, b, xs = _rng_arrays(dtype, (8, 32), (32, 32), (32,), (5, 6, 1, 8), seed=1)
    # xs: per example (steps, batch 1, inputs); vmap over 5 examples
    per_example = en.function(en.vmap(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)),
                                      in_axes=(None, None, None, 0)))
    args = [en.tensor(a) for a in (w, u, b, xs)]
    graph = per_example.graph_for(*args)
    shapes = _scan_value_shapes(graph)
    assert (5, 8, 32) not in shapes and (5, 32, 32) not in shapes
    # the bias's accumulator adds up terms the loop now stacks: their sum after the loop
    assert (5, 32) not in shapes
    assert [n.shape for n in graph.nodes if n.name.startswith("step_sum")] == [(5, 32)]
    assert {p.shape for p in _products_after_loops(graph)} == {(5, 8, 32), (5, 32, 32)}
    got = [g.numpy() for g in per_example(*args)]
    for i in range(xs.shape[0]):
        want = numpy_tanh_rnn_grads(w, u, b, xs[i])
        eager = en.grad(tanh_rnn_loss, argnums=(0, 1, 2))(*[en.tensor(a) for a in (w, u, b, xs[i])])
        for g, ref, e in zip(got, want, eager):
            _close(g[i], ref, RTOL[dtype] * 10)
            _close(g[i], e.numpy(), RTOL[dtype])


@pytest.mark.parametrize("lowering", ["numpy", "auto"])
def test_rnn_weight_gradients_are_one_product_over_the_steps(lowering):
    w, u, b, xs = _rng_arrays(np.float32, (32, 32), (32, 32), (32,), (20, 4, 32), seed=2)
    en.config.lowering = lowering
    grad = en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)))
    args = [en.tensor(a) for a in (w, u, b, xs)]
    if lowering == "numpy":
        graph = grad.graph_for(*args)
        assert [p.shape for p in _products_after_loops(graph)] == [(32, 32)] * 2
        # the bias's gradient, a sum over the steps but no product, is summed in the loop
        assert [n.params.get("summed") for n in _scans(graph)] == [None, (0,)]
    got = [g.numpy() for g in grad(*args)]
    for g, want in zip(got, numpy_tanh_rnn_grads(w, u, b, xs)):
        _close(g, want, 1e-4)         # float32 against float64: the forward's rounding
    unoptimized = en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)), optimize=False)
    for g, want in zip(got, unoptimized(*args)):
        _close(g, want.numpy(), 2e-5)


def test_lstm_weight_gradients_match_finite_differences():
    wt, bias, xs = _rng_arrays(np.float64, (24 + 8, 32), (32,), (6, 3, 24), seed=3)
    grad = en.function(en.grad(concat_lstm_loss, argnums=(0, 1)))
    args = [en.tensor(a) for a in (wt, bias, xs)]
    assert [p.shape for p in _products_after_loops(grad.graph_for(*args))] == [(32, 32)]
    g_wt, g_bias = (g.numpy() for g in grad(*args))
    np.testing.assert_allclose(g_wt, central_difference(lambda v: numpy_concat_lstm_loss(v, bias, xs),
                                                        wt), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_bias, central_difference(
        lambda v: numpy_concat_lstm_loss(wt, v, xs), bias), rtol=1e-6, atol=1e-8)


def test_lstm_weight_gradients_agree_with_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    wt, bias, xs = _rng_arrays(np.float64, (24 + 8, 32), (32,), (6, 3, 24), seed=3)

    def loss(wt, bias, xs):
        hidden = wt.shape[1] // 4

        def step(carry, x):
            h, c = carry
            i, f, g, o = jnp.split(jnp.concatenate([x, h], axis=1) @ wt + bias, 4, axis=1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zeros = jnp.zeros((xs.shape[1], hidden))
        return jnp.sum(jax.lax.scan(step, (zeros, zeros), xs)[1] ** 2)
    want = jax.grad(loss, argnums=(0, 1))(wt, bias, xs)
    got = en.function(en.grad(concat_lstm_loss, argnums=(0, 1)))(*[en.tensor(a) for a in (wt, bias, xs)])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_long_sum_is_cut_into_runs_of_steps_each_product_unthreaded(dtype):
    # Products above cost.openblas_threaded_work would run on OpenBLAS's threads: with a
    # bound of 3 steps' work the 12 steps are 4 runs, one batched product, then their sum.
    w, xs = _rng_arrays(dtype, (32, 32), (12, 6, 32))
    step_work = 32 * 32         # one example's outer product, per matrix of the batch
    with en.config.cost.override(openblas_threaded_work=3 * step_work):
        fn = en.function(lambda w, xs: _outer_accumulator(w, xs, True))
        args = en.tensor(w), en.tensor(xs)
        graph = fn.graph_for(*args)
        assert [p.shape for p in _products_after_loops(graph)] == [(4 * 6, 32, 32)]
        got = fn(*args).numpy()
    np.testing.assert_allclose(got, _numpy_outer(w.astype(np.float64), xs.astype(np.float64)),
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype])
    with en.config.cost.override(openblas_threaded_work=step_work - 1):   # one step too big
        _left_alone(lambda w, xs: _outer_accumulator(w, xs, True), w, xs)


def test_a_weight_gradient_too_long_for_one_unthreaded_product_stays_in_the_loop():
    # 2-d products cut into runs would be a 3-d product, which the compiled lowerings do
    # not write in a whole graph: the sum stays in the loop.
    w, u, b, xs = _rng_arrays(np.float32, (32, 32), (32, 32), (32,), (20, 4, 32), seed=2)
    args = [en.tensor(a) for a in (w, u, b, xs)]
    with en.config.cost.override(openblas_threaded_work=32 * 32 * 4 * 10):   # ten steps
        grad = en.function(en.grad(tanh_rnn_loss, argnums=(0, 1, 2)))
        assert not _products_after_loops(grad.graph_for(*args))
        got = [g.numpy() for g in grad(*args)]
    for g, want in zip(got, numpy_tanh_rnn_grads(w, u, b, xs)):
        _close(g, want, 1e-4)


# ---- cases left alone ---------------------------------------------------------------
def _left_alone(fn, *arrays):
    """``fn`` keeps its loop as the unoptimized graph has it: no product after the loop,
    and the same values."""
    args = [en.tensor(a) for a in arrays]
    optimized = en.function(fn)
    graph = optimized.graph_for(*args)
    assert not _products_after_loops(graph), str(graph)
    got, want = optimized(*args), en.function(fn, optimize=False)(*args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    return graph


def test_a_factor_reading_the_accumulator_keeps_the_loop():
    w, xs = _rng_arrays(np.float32, (32, 32), (6, 4, 32))

    def fn(w, xs):
        def step(c, x):   # the factor reads c: no sum of products independent of c
            a = en.tanh(x @ w + en.sum(c, axis=2))
            return c * 0.5 + en.expand_dims(a, 2) * en.expand_dims(x, 1), x
        return en.scan(step, en.zeros((4, 32, 32)), xs)[0]
    graph = _left_alone(fn, w, xs)
    assert (4, 32, 32) in _scan_value_shapes(graph)


def test_an_integer_product_keeps_the_loop():
    rng = np.random.default_rng(4)
    xs = rng.integers(-3, 4, (6, 4, 32)).astype(np.int32)

    def fn(xs):
        step = lambda c, x: (c + en.expand_dims(x, 2) * en.expand_dims(x, 1), x)  # noqa: E731
        return en.scan(step, en.zeros((4, 32, 32), dtype="int32"), xs)[0]
    _left_alone(fn, xs)
    np.testing.assert_array_equal(en.function(fn)(en.tensor(xs)).numpy(),
                                  sum(x[:, :, None] * x[:, None, :] for x in xs))


def test_bitwise_numerics_keep_the_loop():
    w, xs = _rng_arrays(np.float32, (32, 32), (6, 4, 32))
    with numerics("bitwise"):
        _left_alone(lambda w, xs: _outer_accumulator(w, xs, False), w, xs)


def test_a_small_product_keeps_its_accumulator():
    w, xs = _rng_arrays(np.float32, (4, 4), (6, 3, 4))        # 3 * 4 * 4 elements a step
    graph = _left_alone(lambda w, xs: _outer_accumulator(w, xs, False), w, xs)
    assert (3, 4, 4) in _scan_value_shapes(graph)


def test_the_cost_rule_weighs_new_stacks_against_the_product_and_memory():
    per_example = (32 * 64 * 64, 32 * 64)          # a product per step, a new stack per step
    assert scan_product_pays(50, *per_example, per_example[1], 4)
    assert not scan_product_pays(50, 64 * 64, 32 * 64, 32 * 64, 4)    # stacks half of it
    assert not scan_product_pays(50, 16 * 16, 0, 0, 4)                 # small
    assert not scan_product_pays(1, *per_example, per_example[1], 4)  # one step
    with en.config.cost.override(scan_product_max_stack_bytes=50 * 32 * 64 * 4 - 1):
        assert not scan_product_pays(50, *per_example, per_example[1], 4)
    w, xs = _rng_arrays(np.float32, (32, 32), (6, 4, 32))
    with en.config.cost.override(scan_product_min_elements=1 << 20):
        _left_alone(lambda w, xs: _outer_accumulator(w, xs, False), w, xs)
