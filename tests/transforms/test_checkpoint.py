"""``en.checkpoint``: gradients unchanged, intermediates recomputed instead of stored.

The memory figures come from the traced function's memory plan
(``memory_report``): a 16-layer tanh MLP of equal widths, checkpointed every 4
layers, must plan at most 60% of the uncheckpointed peak (the ideal is about
47%: three saved block inputs and four recomputed activations against sixteen)
and run at most one extra forward pass (counted in the graph's nodes). With the
checkpoints at narrow layers the plan must stay at most 55% of the uncheckpointed one.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.passes.dce import dce

LAYERS, WIDTH, BATCH = 16, 64, 128


def _params(rng):
    return [(en.tensor(rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)),
             en.tensor(rng.standard_normal(WIDTH) * 0.1)) for _ in range(LAYERS)]


def _layers(h, params):
    for w, b in params:
        h = en.tanh(h @ w + b)
    return h


def _loss(params, x, every=None, policy=None):
    if every is None:
        return en.mean(_layers(x, params) ** 2.0)
    block = en.checkpoint(_layers, policy=policy)
    h = x
    for i in range(0, len(params), every):
        h = block(h, params[i:i + every])
    return en.mean(h ** 2.0)


def _problem():
    rng = np.random.default_rng(0)
    return _params(rng), en.tensor(rng.standard_normal((BATCH, WIDTH)))


def _flat(grads):
    return [np.asarray(g) for pair in grads for g in pair]


def test_gradients_are_bit_identical_eagerly_and_in_graphs():
    params, x = _problem()
    plain = _flat(en.grad(_loss)(params, x))
    ckpt = _flat(en.grad(lambda p, x: _loss(p, x, every=4))(params, x))
    for a, b in zip(plain, ckpt):
        np.testing.assert_array_equal(a, b)
    f_plain = en.function(en.grad(_loss), optimize=False)
    f_ckpt = en.function(en.grad(lambda p, x: _loss(p, x, every=4)), optimize=False)
    for a, b in zip(_flat(f_plain(params, x)), _flat(f_ckpt(params, x))):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(plain, _flat(f_ckpt(params, x))):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _report_and_graph(fn, params, x):
    """The memory plan of the optimized trace, and the unoptimized graph (its nodes are
    the ops as called: fusion would merge them)."""
    concrete = en.function(en.value_and_grad(fn)).get_concrete_function(params, x)
    concrete.graph.lint()
    plain = en.function(en.value_and_grad(fn), optimize=False).get_concrete_function(params, x)
    plain.graph.lint()
    return concrete.memory_report(), plain.graph


def _count(graph, name):
    return sum(1 for n in graph.nodes if n.op.name == name)


def test_memory_plan_of_a_checkpointed_mlp_is_at_most_60_percent():
    params, x = _problem()
    plain, g_plain = _report_and_graph(_loss, params, x)
    ckpt, g_ckpt = _report_and_graph(lambda p, x: _loss(p, x, every=4), params, x)
    ratio = ckpt["buffer_bytes"] / plain["buffer_bytes"]
    print(f"\nplanned peak: {plain['buffer_bytes']} B plain, {ckpt['buffer_bytes']} B "
          f"checkpointed ({ratio:.0%}); unplanned {plain['unplanned_peak_bytes']} B vs "
          f"{ckpt['unplanned_peak_bytes']} B")
    assert ratio <= 0.60, (plain, ckpt)
    # At most one extra forward pass: each layer's matmul and tanh run at most twice.
    assert _count(g_plain, "tanh") == LAYERS
    assert _count(g_ckpt, "tanh") <= 2 * LAYERS
    assert _count(g_ckpt, "matmul") <= _count(g_plain, "matmul") + LAYERS


# Checkpoints at narrow layers: 16 -> (128, 128, 128, 16) x 4, the block inputs 16 wide.
NARROW, NARROW_BATCH = [16] + [128, 128, 128, 16] * 4, 512


def _narrow_problem():
    rng = np.random.default_rng(2)
    params = [(en.tensor(rng.standard_normal((m, n)) / np.sqrt(m)),
               en.tensor(rng.standard_normal(n) * 0.1)) for m, n in zip(NARROW, NARROW[1:])]
    return params, en.tensor(rng.standard_normal((NARROW_BATCH, NARROW[0])))


def _numpy_loss_and_grads(params, x):
    """The loss and the gradients of the weights and biases, by hand-written backprop."""
    hs = [np.asarray(x)]
    for w, b in params:
        hs.append(np.tanh(hs[-1] @ np.asarray(w) + np.asarray(b)))
    g = 2.0 * hs[-1] / hs[-1].size
    grads = []
    for (w, _), h_in, h_out in reversed(list(zip(params, hs, hs[1:]))):
        dz = g * (1.0 - h_out ** 2)
        grads.append((h_in.T @ dz, dz.sum(axis=0)))
        g = dz @ np.asarray(w).T
    return np.mean(hs[-1] ** 2), grads[::-1]


def test_checkpoints_at_narrow_layers_plan_at_most_55_percent():
    """The step keeps three small block inputs and one block's activations at a time. A
    small value kept until the backward pass must not hold a large buffer it happened to
    find free (the large values after it would need new ones): the plan stays within the
    unplanned peak of the same schedule, and the results are right."""
    params, x = _narrow_problem()
    every = lambda p, x: _loss(p, x, every=4)   # noqa: E731
    plain, _ = _report_and_graph(_loss, params, x)
    ckpt, _ = _report_and_graph(every, params, x)
    ratio = ckpt["buffer_bytes"] / plain["buffer_bytes"]
    assert ratio <= 0.55, (f"checkpointed plan {ratio:.0%} of the uncheckpointed one", plain, ckpt)
    assert ckpt["buffer_bytes"] <= ckpt["unplanned_peak_bytes"], ckpt
    loss, grads = en.function(en.value_and_grad(every))(params, x)
    want_loss, want = _numpy_loss_and_grads(params, x)
    np.testing.assert_allclose(float(loss), want_loss, rtol=1e-12)
    for got_pair, want_pair in zip(grads, want):
        for a, b in zip(got_pair, want_pair):
            np.testing.assert_allclose(np.asarray(a), b, rtol=1e-9, atol=1e-12)


def test_dots_saveable_keeps_the_matmuls_and_recomputes_the_rest():
    params, x = _problem()
    policy = en.checkpoint_policies.dots_saveable
    _, graph = _report_and_graph(lambda p, x: _loss(p, x, every=4, policy=policy), params, x)
    _, g_plain = _report_and_graph(_loss, params, x)
    assert _count(graph, "matmul") == _count(g_plain, "matmul")    # none recomputed
    assert _count(graph, "tanh") == 2 * LAYERS                        # every tanh again
    grads = en.grad(lambda p, x: _loss(p, x, every=4, policy=policy))(params, x)
    for a, b in zip(_flat(grads), _flat(en.grad(_loss)(params, x))):
        np.testing.assert_array_equal(a, b)


def test_save_only_these_names():
    def block(h, w):
        a = en.checkpoint_name(en.tanh(h @ w), "a")
        return en.tanh(a @ w)
    rng = np.random.default_rng(1)
    w, x = en.tensor(rng.standard_normal((4, 4))), en.tensor(rng.standard_normal((3, 4)))
    policy = en.checkpoint_policies.save_only_these_names("a")
    f = lambda w, x, ck: en.sum(ck(block)(x, w))   # noqa: E731
    want = en.grad(lambda w: f(w, x, lambda g: g))(w)
    got = en.grad(lambda w: f(w, x, lambda g: en.checkpoint(g, policy=policy)))(w)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    def traced(ck):
        graph = en.function(en.grad(lambda w: f(w, x, ck)),
                            optimize=False).get_concrete_function(w).graph
        graph.lint()
        dce(graph)
        return graph
    # Without a policy both tanh are recomputed; with "a" kept, only the second.
    assert _count(traced(lambda g: en.checkpoint(g)), "tanh") == 4
    assert _count(traced(lambda g: en.checkpoint(g, policy=policy)), "tanh") == 3


def test_checkpoint_as_a_decorator_with_second_derivatives():
    @en.checkpoint
    def f(x):
        return en.sin(x) * x
    d2 = en.grad(en.grad(f))(en.tensor(0.7))
    assert float(d2) == pytest.approx(2 * np.cos(0.7) - 0.7 * np.sin(0.7), rel=1e-14)


def test_checkpoint_sees_variables_read_inside():
    v = en.Variable([1.0, 2.0])
    block = en.checkpoint(lambda x: en.tanh(x * v))
    with en.GradientTape() as tape:
        y = en.sum(block(en.tensor([0.5, 0.25])))
    g = tape.gradient(y, v)
    np.testing.assert_allclose(np.asarray(g), (1 - np.tanh([0.5, 0.5]) ** 2) * [0.5, 0.25],
                               rtol=1e-14)


def test_a_function_that_runs_other_ops_the_second_time_is_refused():
    calls = []

    def f(x):
        calls.append(1)
        return en.exp(x) if len(calls) == 1 else en.sin(x)
    with pytest.raises(en.EngineError, match="recomputation ran other ops"):
        en.grad(en.checkpoint(f, policy=en.checkpoint_policies.dots_saveable))(en.tensor(1.0))


def test_bad_policy():
    with pytest.raises(TypeError, match="policy"):
        en.checkpoint(en.sin, policy="everything")
