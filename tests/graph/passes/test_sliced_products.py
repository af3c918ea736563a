"""Products read only in part (graph/passes/sliced_products.py): a matrix product whose
readers take a slice, an index or split pieces of its rows or columns becomes the product
of the factor's part.

Checked against numpy (float64 references), the unoptimized graph and finite differences
(an LSTM written with ``concat([x, h]) @ W``, whose backward loop reads only ``h``'s
columns of ``d_gates @ W.T``), in float32 and float64; the graphs show the narrower
product; the cases the pass must leave alone keep the whole product; under bitwise
numerics nothing changes and the bits are eager's.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op
from support.bitwise import numerics
from support.finite_diff import central_difference
from support.models import concat_lstm_loss, numpy_concat_lstm_loss
from support.pass_helpers import numpy_lowering  # noqa: F401 (a fixture)

# The rewrite is read off the numpy lowering's graph (a compiled lowering would hold the
# products in a region); the values are checked under the default lowering too.
pytestmark = pytest.mark.usefixtures("numpy_lowering")

RTOL = {np.float32: 2e-5, np.float64: 1e-12}


def _arrays(dtype, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _product_shapes(graph):
    return sorted(tuple(n.shape) for n in graph.nodes if n.op.name == "matmul")


def _check(fn, reference, arrays, dtype, want_shapes):
    """``fn`` traced: its products have ``want_shapes``; its values match ``reference``
    (numpy, float64) and the unoptimized graph."""
    args = [en.tensor(a) for a in arrays]
    graph = en.function(fn).graph_for(*args)
    assert _product_shapes(graph) == sorted(want_shapes)
    got = en.function(fn)(*args)
    got = [t.numpy() for t in got] if isinstance(got, tuple) else [got.numpy()]
    want = reference(*[a.astype(np.float64) for a in arrays])
    want = list(want) if isinstance(want, tuple) else [want]
    unoptimized = en.function(fn, optimize=False)(*args)
    unoptimized = [t.numpy() for t in unoptimized] if isinstance(unoptimized, tuple) \
        else [unoptimized.numpy()]
    for g, w, u in zip(got, want, unoptimized):
        assert g.dtype == dtype and g.shape == w.shape
        scale = float(np.max(np.abs(w)))
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10 * scale)
        np.testing.assert_allclose(g, u, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_column_slice_is_the_product_of_the_right_factors_columns(dtype):
    _check(lambda a, w: (a @ w)[:, 40:72], lambda a, w: (a @ w)[:, 40:72],
           _arrays(dtype, (16, 48), (48, 128)), dtype, [(16, 32)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_slice_is_the_product_of_the_left_factors_rows(dtype):
    _check(lambda a, w: (a @ w)[8:24], lambda a, w: (a @ w)[8:24],
           _arrays(dtype, (64, 48), (48, 40)), dtype, [(16, 40)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_pieces_and_an_index_read_from_one_narrower_product(dtype):
    def f(a, w):
        _, f1, f2, _ = en.split(a @ w, 4, axis=1)
        return en.tanh(f1) * f2, (a @ w)[:, 40]

    def ref(a, w):
        p = a @ w
        return np.tanh(p[:, 32:64]) * p[:, 64:96], p[:, 40]
    # the split's pieces 1 and 2 and column 40 lie in columns [32, 96)
    _check(f, ref, _arrays(dtype, (16, 48), (48, 128)), dtype, [(16, 64)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_slice_of_a_transposed_factor_is_taken_before_the_transpose(dtype):
    fn = lambda d, w: (d @ en.transpose(w))[..., 48:]      # noqa: E731
    _check(fn, lambda d, w: (d @ w.T)[..., 48:], _arrays(dtype, (3, 16, 96), (64, 96)),
           dtype, [(3, 16, 16)])
    d, w = (en.tensor(a) for a in _arrays(dtype, (3, 16, 96), (64, 96)))
    graph = en.function(fn).graph_for(d, w)
    product = next(n for n in graph.nodes if n.op.name == "matmul")
    right = product.inputs[1]
    # a block of the weight's rows (a view), transposed: no copy of a strided slice
    assert right.op.name == "transpose" and right.inputs[0].op.name == "getitem"
    assert right.inputs[0].inputs[0] in graph.inputs


def test_a_reader_of_the_whole_product_leaves_it_alone():
    a, w = _arrays(np.float64, (16, 48), (48, 128))
    _check(lambda a, w: ((a @ w)[:, :32], en.sum(a @ w)),
           lambda a, w: ((a @ w)[:, :32], np.sum(a @ w)), [a, w], np.float64, [(16, 128)])


def test_a_wide_slice_or_a_tiny_product_is_left_alone():
    side = 128
    wide = int(en.config.cost.sliced_product_max_fraction * side) + 1
    a, w = _arrays(np.float64, (16, 48), (48, side))
    _check(lambda a, w: (a @ w)[:, :wide], lambda a, w: (a @ w)[:, :wide], [a, w],
           np.float64, [(16, side)])
    a, w = _arrays(np.float64, (2, 3), (3, 8))     # saves 2 * 3 * 4 multiply-adds
    _check(lambda a, w: (a @ w)[:, :4], lambda a, w: (a @ w)[:, :4], [a, w],
           np.float64, [(2, 8)])


def test_the_threshold_decides_whether_a_slice_narrows_the_product():
    a, w = (en.tensor(x) for x in _arrays(np.float64, (16, 48), (48, 128)))
    fn = lambda a, w: (a @ w)[:, :64]      # noqa: E731
    with en.config.cost.override(sliced_product_max_fraction=0.4):
        assert _product_shapes(en.function(fn).graph_for(a, w)) == [(16, 128)]
    with en.config.cost.override(sliced_product_max_fraction=0.5):
        assert _product_shapes(en.function(fn).graph_for(a, w)) == [(16, 64)]


# ---- inside a loop body: the LSTM's backward scan --------------------------------------------
def _backward_body_products(graph):
    """The product shapes in the body of each reversed scan (a VJP's loop)."""
    return [_product_shapes(n.params["body"].graph) for n in graph.nodes
            if n.op is scan_op and n.params["reverse"]]


def test_the_lstm_backward_loop_computes_only_the_carrys_columns():
    # inputs 24, hidden 16: of d_gates (4, 64) @ W.T (64, 40) only h's 16 columns are read
    # (no gradient reaches xs)
    wt, bias, xs = _arrays(np.float64, (24 + 16, 64), (64,), (6, 4, 24), seed=3)
    wt *= 0.3
    args = [en.tensor(a) for a in (wt, bias, xs)]
    grad = en.function(en.grad(concat_lstm_loss, argnums=(0, 1)))
    shapes = _backward_body_products(grad.graph_for(*args))
    assert shapes and all((4, 16) in s and (4, 40) not in s for s in shapes), shapes
    g_wt, g_bias = (g.numpy() for g in grad(*args))
    np.testing.assert_allclose(g_wt, central_difference(lambda v: numpy_concat_lstm_loss(v, bias, xs),
                                                        wt), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_bias, central_difference(
        lambda v: numpy_concat_lstm_loss(wt, v, xs), bias), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_lstm_gradient_matches_the_unoptimized_graph_under_every_lowering(dtype):
    wt, bias, xs = _arrays(dtype, (16 + 16, 64), (64,), (5, 4, 16), seed=4)
    wt *= 0.3
    args = [en.tensor(a) for a in (wt, bias, xs)]
    want = en.function(en.grad(concat_lstm_loss, argnums=(0, 1)), optimize=False)(*args)
    for lowering in ("numpy", "c"):
        with numerics(en.config.numerics, lowering):
            got = en.function(en.grad(concat_lstm_loss, argnums=(0, 1)))(*args)
        for g, w in zip(got, want):
            scale = float(np.max(np.abs(w.numpy())))
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=RTOL[dtype] * 10,
                                       atol=RTOL[dtype] * 10 * scale)


def test_under_bitwise_numerics_the_product_stays_whole_and_the_bits_are_eagers():
    a, w = (en.tensor(x) for x in _arrays(np.float32, (16, 48), (48, 128)))
    fn = lambda a, w: en.tanh((a @ w)[:, 40:72])      # noqa: E731
    with numerics("bitwise"):
        assert _product_shapes(en.function(fn).graph_for(a, w)) == [(16, 128)]
        got = en.function(fn)(a, w).numpy()
        eager = fn(a, w).numpy()
    assert got.tobytes() == eager.tobytes()
