"""shared_columns: a convolution and its filter gradient of the same input read one
im2col matrix. The kernels against a direct loop convolution in float64 (strides,
padding, dilation; float32 and float64; split over images or not); traced training
steps against finite differences and against the graph without the pass (same bits);
the byte bound of the cost model; the cases left alone."""

import numpy as np
import pytest

import engine as en
from engine.ops import conv_columns
from engine.graph.lowering.pipeline import DEFAULT_PIPELINE
from engine.graph.lowering.shared_columns import shared_columns
from support.finite_diff import check_gradients_in_dtype
from support.pass_helpers import assert_same_bits, run_pass
from support.window_reference import loop_conv
from support.window_split import chunks_in_order

# The pass is not in the default list (measured no faster there): the default passes
# with it before memory planning.
WITH_PASS = [p for p in DEFAULT_PIPELINE if p != "memory_planning"] + \
    ["shared_columns", "memory_planning"]

GEOMETRIES = [  # (kernel, strides, padding, dilation)
    ((3, 3), (1, 1), "same", (1, 1)),
    ((3, 2), (2, 1), ((0, 2), (1, 0)), (1, 1)),
    ((2, 2), (1, 2), "valid", (2, 1)),
]


def _pads(h, w, khw, strides, padding, dilation):
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding != "same":
        return padding
    pads = []
    for size, k, s, d in zip((h, w), khw, strides, dilation):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


@pytest.fixture(autouse=True)
def im2col_convolutions():
    """The small convolutions here are im2col ones (the direct loop, which makes no
    columns, is left alone: test_direct_loop_convolutions_are_left_alone)."""
    with en.config.cost.override(conv_direct_max_taps=0):
        yield


@pytest.fixture(params=[False, True], ids=["one_chunk", "split"])
def chunks(request, monkeypatch):
    """Either no split, or every kernel split into three chunks of images run in order."""
    if not request.param:
        with en.config.cost.override(window_split_min_work=2 ** 62):
            yield None
        return
    with chunks_in_order(monkeypatch) as calls:
        yield calls


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_match_a_loop_convolution_and_its_filter_gradient(geometry, dtype, chunks):
    khw, strides, padding, dilation = geometry
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 9, 8, 3)).astype(dtype)
    w = rng.standard_normal((*khw, 3, 5)).astype(dtype)
    pads = _pads(9, 8, khw, strides, padding, dilation)
    want = loop_conv(x, w, strides, pads, dilation)
    g = rng.standard_normal(want.shape).astype(dtype)
    geo = dict(kernel_hw=khw, strides=strides, padding=padding, dilation=dilation)
    cols = np.full(conv_columns.columns_shape(x.shape, **geo), np.nan, dtype)
    work = cols.shape[0] * cols.shape[1] * 5
    conv_columns.im2col_out(x, out=cols, split_work=work, **geo)
    out = np.full(want.shape, np.nan, dtype)
    conv_columns.conv2d_columns_out(cols, w, out=out, images=4)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    # The filter gradient: d/dw of sum(conv * g), by the loop convolution's linearity.
    dw = np.full(w.shape, np.nan, dtype)
    conv_columns.filter_grad_columns_out(cols, g, out=dw)
    basis = np.eye(w.size).reshape(w.size, *w.shape)
    want_dw = np.array([np.sum(loop_conv(x, e, strides, pads, dilation) * g)
                        for e in basis]).reshape(w.shape)
    np.testing.assert_allclose(dw, want_dw, rtol=10 * tol, atol=10 * tol)
    if chunks is not None:
        assert chunks == [3, 3, 3]


def _step(w1, w2, images):
    a = en.relu(en.conv2d(images, w1, padding="same"))
    a = en.max_pool2d(a, 2)
    a = en.relu(en.conv2d(a, w2, stride=(1, 2), padding=((1, 0), (0, 1))))
    return en.sum(a * a)


def _inputs(dtype, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 3, 2, 4)).astype(dtype),
            rng.standard_normal((2, 3, 4, 3)).astype(dtype),
            rng.standard_normal((2, 8, 8, 2)).astype(dtype)]


def _names(graph):
    return sorted(n.op.name for n in graph.nodes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_training_step_shares_columns_and_matches_finite_differences(dtype):
    w1, w2, images = _inputs(dtype)
    f = en.function(en.grad(_step, argnums=(0, 1)), passes=WITH_PASS)
    args = [en.tensor(a) for a in (w1, w2, images)]
    names = _names(f.get_concrete_function(*args).graph)
    assert names.count("im2col") == 2 and names.count("conv2d_backprop_filter_columns") == 2
    assert "conv2d_backprop_filter" not in names
    for _ in range(2):      # the second call runs on the first one's buffers
        got = f(*args)
    check_gradients_in_dtype(got, _step, (w1, w2, images), (0, 1), dtype)


def test_same_bits_as_the_graph_without_the_pass():
    args = [en.tensor(a) for a in _inputs(np.float32, seed=2)]
    fn = en.value_and_grad(_step, argnums=(0, 1))
    without = en.function(fn)
    want = without(*args)
    assert "im2col" not in _names(without.get_concrete_function(*args).graph)
    with_pass = en.function(fn, passes=WITH_PASS)
    assert "im2col" in _names(with_pass.get_concrete_function(*args).graph)
    assert_same_bits(with_pass(*args), want, "shared columns")


def test_columns_over_the_byte_bound_are_not_shared():
    w1, _, images = (en.tensor(a) for a in _inputs(np.float64))
    f = en.function(en.grad(lambda w, x: en.sum(en.conv2d(x, w, padding="same") ** 2.0)),
                    passes=["cleanup"])
    graph = f.graph_for(w1, images)
    nbytes = 2 * 8 * 8 * 9 * 2 * 8           # (N*OH*OW, KH*KW*C) float64
    with en.config.cost.override(shared_columns_max_bytes=nbytes - 1):
        _, changed = run_pass(shared_columns, graph)
    assert not changed
    with en.config.cost.override(shared_columns_max_bytes=nbytes):
        shared, changed = run_pass(shared_columns, graph)
    assert changed and _names(shared).count("im2col") == 1


def test_cases_left_alone():
    rng = np.random.default_rng(3)
    x = en.tensor(rng.standard_normal((2, 6, 6, 4)))
    w = en.tensor(rng.standard_normal((3, 3, 2, 4)))
    w_plain = en.tensor(rng.standard_normal((3, 3, 4, 4)))
    cases = {
        # grouped convolutions lay their columns out per group
        "groups": lambda w, x: en.sum(en.conv2d(x, w, groups=2) ** 2.0),
        # only the input gradient: no filter gradient to share with
        "no filter gradient": lambda w, x: en.sum(en.conv2d(x, w_plain) ** 2.0),
    }
    for name, loss in cases.items():
        argnums = 1 if name == "no filter gradient" else 0
        f = en.function(en.grad(loss, argnums=argnums), passes=["cleanup"])
        graph = f.graph_for(w if name == "groups" else w_plain, x)
        _, changed = run_pass(shared_columns, graph)
        assert not changed, name
    # different strides: the forward's columns are not the filter gradient's
    f = en.function(lambda x, w, g: (en.conv2d(x, w, stride=2),
                                     en.ops.conv2d_backprop_filter(x, g, (3, 3))),
                    passes=["cleanup"])
    graph = f.graph_for(x, w_plain, en.tensor(rng.standard_normal((2, 4, 4, 4))))
    _, changed = run_pass(shared_columns, graph)
    assert not changed


def test_direct_loop_convolutions_are_left_alone():
    w1, _, images = (en.tensor(a) for a in _inputs(np.float32))
    f = en.function(en.grad(lambda w, x: en.sum(en.conv2d(x, w, padding="same") ** 2.0)),
                    passes=["cleanup"])
    graph = f.graph_for(w1, images)
    taps = int(np.prod(w1.shape[:3]))
    with en.config.cost.override(conv_direct_max_taps=taps):
        if en.ops.conv.runs_direct(np.dtype(np.float32), 1, taps, 4):    # (a C compiler)
            _, changed = run_pass(shared_columns, graph)
            assert not changed
    with en.config.cost.override(conv_direct_max_taps=taps - 1):
        _, changed = run_pass(shared_columns, graph)
    assert changed
