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
from engine.graph.control_flow import scan_op
from pass_helpers import assert_same_bits, numpy_lowering  # noqa: F401 (a fixture)

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


def test_a_left_out_stack_takes_no_memory():
    # 3000 steps of a (32, 64) float32 carry: 23 MiB stacked.
    xs = en.tensor(np.random.default_rng(1).standard_normal((3000, 32, 64)).astype(F32))
    f = en.function(lambda xs: _decay(xs, 0.5)[0])
    f(xs)
    tracemalloc.start()
    try:
        f(xs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    stack = 3000 * 32 * 64 * 4
    assert peak < stack / 4, f"{peak} bytes at the peak, a stack is {stack}"


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
    with pytest.raises(EngineError, match="carries are not stacked"):
        scan_op.vjp([None] * len(node.avals), [None] * len(node.avals), *([None] * 2),
                    **node.params)
