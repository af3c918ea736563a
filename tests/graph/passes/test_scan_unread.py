"""Scan stacks nothing reads (graph/passes/scan_unread.py): the per-step stacks of a
scan's carries are left out where no node reads them.

Checked against numpy and the unoptimized graph: a forward scan and a backward pass
give the same values with their stacks left out, the memory of a stack is not taken,
and a forward pass whose stacks a gradient reads keeps them.
"""
import tracemalloc

import numpy as np
import pytest

import engine as en
from engine.errors import EngineError
from engine.graph.control.control_flow import scan_op
from support.pass_helpers import assert_same_bits, numpy_lowering  # noqa: F401 (a fixture)

F32 = np.float32


# The pass is for the numpy lowering's scans; a compiled one writes what it returns.
pytestmark = pytest.mark.usefixtures("numpy_lowering")


def _unread(graph):
    return [n.params.get("unread") for n in graph.nodes if n.op is scan_op]


def _decay(xs, w):
    final, ys = en.scan(lambda c, x: (en.tanh(c * w + x), en.sum(c)), en.zeros(xs.shape[1:]), xs)
    return final, ys


def test_a_forward_scan_leaves_out_its_carries_stack():
    rng = np.random.default_rng(0)
    xs, w = rng.standard_normal((9, 4, 3)), 0.8
    f = en.function(lambda xs: _decay(xs, w))
    assert _unread(f.graph_for(en.tensor(xs))) == [(0,)]
    got = f(xs)
    assert_same_bits(got, en.function(lambda xs: _decay(xs, w), optimize=False)(xs),
                     "unread stack")
    c, sums = np.zeros((4, 3)), []
    for x in xs:
        sums.append(c.sum())
        c = np.tanh(c * w + x)
    np.testing.assert_allclose(got[0].numpy(), c, rtol=1e-13)
    np.testing.assert_allclose(got[1].numpy(), sums, rtol=1e-13, atol=1e-15)


def _assert_no_stack_is_made(f, xs):
    """A second call of ``f`` on ``xs`` (3000 steps of (32, 64) float32, 23 MiB if
    stacked) peaks well below one stack."""
    f(xs)
    tracemalloc.start()
    try:
        f(xs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    stack = 3000 * 32 * 64 * 4
    assert peak < stack / 4, f"{peak} bytes at the peak, a stack is {stack}"


def test_a_left_out_stack_takes_no_memory():
    xs = en.tensor(np.random.default_rng(1).standard_normal((3000, 32, 64)).astype(F32))
    _assert_no_stack_is_made(en.function(lambda xs: _decay(xs, 0.5)[0]), xs)


def test_a_gradients_backward_scan_leaves_out_its_stack_and_the_forward_keeps_its():
    rng = np.random.default_rng(2)
    xs, w = rng.standard_normal((8, 5)), en.tensor(0.7)

    def loss(w, xs):
        final, ys = en.scan(lambda c, x: (en.tanh(c * w + x), c * c), en.zeros(5), xs)
        return en.sum(final) + en.sum(ys)
    grad = en.function(en.grad(loss, argnums=(0, 1)))
    # The forward scan's stack of carries is read by the backward one, whose own is not.
    assert sorted(_unread(grad.graph_for(w, en.tensor(xs))), key=str) == [(0,), None]
    got = grad(w, xs)
    want = en.function(en.grad(loss, argnums=(0, 1)), optimize=False)(w, xs)
    assert_same_bits(got, want, "backward scan with its stack left out")
    # Against central differences of a float64 numpy loop.
    def numpy_loss(w, xs):
        c, total = np.zeros(5), 0.0
        for x in xs:
            total += np.sum(c * c)
            c = np.tanh(c * w + x)
        return np.sum(c) + total
    eps = 1e-6
    dw = (numpy_loss(0.7 + eps, xs) - numpy_loss(0.7 - eps, xs)) / (2 * eps)
    np.testing.assert_allclose(float(got[0]), dw, rtol=1e-7)


def test_a_function_under_a_tape_keeps_the_stack_its_gradient_reads():
    rng = np.random.default_rng(3)
    xs, w = en.tensor(rng.standard_normal((6, 2))), en.tensor(0.6)
    f = en.function(lambda w, xs: en.sum(_decay(xs, w)[0]))
    with en.GradientTape() as tape:
        tape.watch(w)
        out = f(w, xs)
    got = float(tape.gradient(out, w))
    with en.GradientTape() as tape:
        tape.watch(w)
        eager = en.sum(_decay(xs, w)[0])
    np.testing.assert_allclose(got, float(tape.gradient(eager, w)), rtol=1e-13)


def test_a_scan_node_with_a_left_out_stack_refuses_a_gradient():
    f = en.function(lambda xs: _decay(xs, 0.5)[0])
    xs = en.tensor(np.ones((3, 2)))
    node = next(n for n in f.graph_for(xs).nodes if n.op is scan_op)
    assert node.params["unread"] == (0,)
    with pytest.raises(EngineError, match="stacks are left out"):
        scan_op.vjp([None] * len(node.avals), [None] * len(node.avals), *([None] * 2),
                    **node.params)


# ---- the stacks of random draws (a scan's replayed values) -------------------------------
def _noisy_walk(gen, dtype="float64"):
    def walk(xs):
        def step(c, x):
            return c * 0.9 + x + gen.normal(x.shape, dtype=dtype), en.sum(c)
        return en.scan(step, en.zeros(xs.shape[1:], dtype=dtype), xs)
    return walk


def _stacks_left_out(graph):
    """``(carries, draws)`` left out per scan: the indices of each kind in ``unread``."""
    out = []
    for n in graph.nodes:
        if n.op is scan_op:
            unread, n_carry = n.params.get("unread") or (), n.params["n_carry"]
            out.append((sum(k < n_carry for k in unread), sum(k >= n_carry for k in unread)))
    return out


def test_a_forward_scan_leaves_out_the_stacks_of_its_draws():
    xs = np.random.default_rng(4).standard_normal((7, 3))
    f = en.function(_noisy_walk(en.random.Generator(11)))
    node = next(n for n in f.graph_for(en.tensor(xs)).nodes if n.op is scan_op)
    n_draws = len(node.params["body"].replay)
    assert n_draws >= 1
    assert _stacks_left_out(f.graph_for(en.tensor(xs))) == [(1, n_draws)]
    got = f(xs)
    plain = en.function(_noisy_walk(en.random.Generator(11)), optimize=False)
    assert_same_bits(got, plain(xs), "unread stacks of draws")
    # Against a Python loop drawing from a generator of the same seed, eagerly.
    gen, c, sums = en.random.Generator(11), np.zeros(3), []
    for x in xs:
        sums.append(c.sum())
        c = c * 0.9 + x + gen.normal((3,), dtype="float64").numpy()
    np.testing.assert_allclose(got[0].numpy(), c, rtol=1e-13)
    np.testing.assert_allclose(got[1].numpy(), sums, rtol=1e-13, atol=1e-15)


def test_a_left_out_stack_of_draws_takes_no_memory():
    walk = _noisy_walk(en.random.Generator(2), "float32")
    xs = en.tensor(np.zeros((3000, 32, 64), F32))
    _assert_no_stack_is_made(en.function(lambda xs: walk(xs)[0]), xs)


def test_a_gradient_keeps_the_draws_its_backward_replays():
    xs = en.tensor(np.random.default_rng(5).standard_normal((5, 3)))

    def loss(gen):
        def step(c, x):   # the noise scales x: the backward pass reads each step's draw
            return c * 0.9 + x * gen.normal(x.shape, dtype="float64"), en.sum(c)
        return lambda xs: en.sum(en.scan(step, en.zeros(3, dtype="float64"), xs)[0] ** 2.0)
    grad = en.function(en.grad(loss(en.random.Generator(8))))
    # The forward scan keeps its draws (the backward reads them) and leaves out the
    # stacks of its carries and of the generator's state (the step is linear in the
    # carry: the backward reads neither); the backward scan draws nothing and leaves
    # out its carries' stack.
    assert sorted(_stacks_left_out(grad.graph_for(xs))) == [(1, 0), (1, 1)]
    got = grad(xs).numpy()
    # d/dxs of sum(c_T^2) with c_{t+1} = 0.9 c_t + x_t noise_t: 2 c_T 0.9^(T-1-t) noise_t.
    gen, c, noise = en.random.Generator(8), np.zeros(3), []
    for x in xs.numpy():
        noise.append(gen.normal((3,), dtype="float64").numpy())
        c = c * 0.9 + x * noise[-1]
    want = np.stack([2 * c * 0.9 ** (4 - t) * noise[t] for t in range(5)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
