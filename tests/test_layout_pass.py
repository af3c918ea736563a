"""The ``layout`` pass: ``transpose(a @ b)`` -> ``transpose(b) @ transpose(a)``."""
import numpy as np
import pytest

import engine as en
from engine.graph.passes.layout import layout
from pass_helpers import assert_matches, count


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
