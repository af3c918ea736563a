"""The ``layout`` pass: ``transpose(a @ b)`` -> ``transpose(b) @ transpose(a)``."""
import numpy as np
import pytest

import engine as en
from engine.graph.passes.layout import layout
from support.pass_helpers import assert_matches, count


def _w_gradient(x, h, w):
    # y = h @ w.T: the gradient of w arrives as transpose(h.T @ g), added to x.T @ g2.
    with en.GradientTape() as tape:
        tape.watch(w)
        loss = en.sum(en.sigmoid(en.matmul(h, en.transpose(w)))) + en.sum(en.matmul(x, w) ** 2.0)
    return tape.gradient(loss, w)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_of_a_transposed_weight_matches_and_loses_the_strided_view(dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 5)).astype(dtype)
    h = rng.normal(size=(6, 4)).astype(dtype)
    w = rng.normal(size=(5, 4)).astype(dtype)
    plain = en.function(_w_gradient, optimize=False)
    laid = en.function(_w_gradient, passes=["simplify", "layout", "dce"])
    without = en.function(_w_gradient, passes=["simplify", "dce"])
    assert_matches(laid(x, h, w), plain(x, h, w), "layout", rtol=1e-12 if dtype == "float64" else 1e-6)
    # The product that fed a transpose is now computed transposed: no transpose
    # of a matmul is left, and transposes only feed matmuls.
    g = laid.graph_for(x, h, w)
    for node in g.nodes:
        if node.op is en.ops.transpose_op:
            assert node.inputs[0].op is not en.ops.matmul_op
    assert count(without.graph_for(x, h, w), "transpose") > 0


def test_rewrite_needs_a_product_with_no_other_use():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)

    def shared(a, b):
        p = en.matmul(a, b)
        return en.transpose(p), p * 2.0

    f = en.function(shared, passes=["layout"])
    g = f.graph_for(a, b)
    assert count(g, "matmul") == 1
    got = f(a, b)
    np.testing.assert_array_equal(got[0].numpy(), (a @ b).T)
    assert not layout(g)            # leaves it alone (the product is used twice)


def test_batched_products_are_left_alone():
    a = np.ones((2, 3, 4))
    b = np.ones((2, 4, 5))
    f = en.function(lambda a, b: en.transpose(en.matmul(a, b), (0, 2, 1)), passes=["layout"])
    assert not layout(f.graph_for(a, b))
    np.testing.assert_array_equal(f(a, b).numpy(), np.swapaxes(a @ b, 1, 2))


def test_layout_is_idempotent():
    rng = np.random.default_rng(1)
    args = [rng.normal(size=s) for s in ((6, 5), (6, 4), (5, 4))]
    f = en.function(_w_gradient)
    g = f.graph_for(*args)
    assert not layout(g)            # the default pipeline already applied it


def _backward_steps(g1, g2, u):
    # Two steps of an RNN's backward pass: each reads U^T as its right operand.
    ut = en.transpose(u)
    return en.tanh(en.matmul(g1, ut)) + en.matmul(g2, ut), ut


def _transposes(graph):
    return [n for n in graph.nodes if n.op is en.ops.transpose_op]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_transposed_operand_of_small_products_is_copied_to_c_order_once(dtype):
    rng = np.random.default_rng(2)
    g1, g2 = (rng.normal(size=(8, 6)).astype(dtype) for _ in range(2))
    u = rng.normal(size=(5, 6)).astype(dtype)
    f = en.function(_backward_steps)
    got, ut = f(g1, g2, u)
    (node,) = _transposes(f.graph_for(g1, g2, u))
    assert node.meta.get("contiguous")
    assert "_np_ascontiguousarray(" in f.source_for(g1, g2, u)
    assert ut.numpy().flags.c_contiguous            # a copy, not a strided view of u
    np.testing.assert_array_equal(ut.numpy(), u.T)
    want = np.tanh(g1 @ u.T) + g2 @ u.T
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5 if dtype == "float32" else 1e-12)
    assert_matches(f(g1, g2, u), en.function(_backward_steps, optimize=False)(g1, g2, u),
                   "contiguous operand", rtol=1e-6)


def test_one_reader_or_a_large_product_keeps_the_view():
    rng = np.random.default_rng(3)
    one = en.function(lambda g, u: en.matmul(g, en.transpose(u)), passes=["layout"])
    g, u = rng.normal(size=(8, 6)), rng.normal(size=(5, 6))
    (node,) = _transposes(one.graph_for(g, u))
    assert not node.meta.get("contiguous")
    np.testing.assert_allclose(one(g, u).numpy(), g @ u.T, rtol=1e-12)
    # 128 * 128 * 128 multiply-adds and more: BLAS reads the transpose as fast.
    big = en.function(_backward_steps, passes=["layout"])
    gb1, gb2, ub = (rng.normal(size=(128, 128)) for _ in range(3))
    (node,) = _transposes(big.graph_for(gb1, gb2, ub))
    assert not node.meta.get("contiguous")
    assert "ascontiguousarray" not in big.source_for(gb1, gb2, ub)
