"""conv2d_backprop_filter's ``out_impl``: the filter gradient written into a given
buffer, against a loop over filter taps in float64 (strides, padding, dilation,
groups, float32/float64, split over images or not); and what it tells memory
planning: a filter gradient returned to the caller no longer makes its inputs (the
activations and cotangents of a training step) escape, so they get planned buffers,
and the step's gradients still match finite differences."""
import itertools

import numpy as np
import pytest

import engine as en
from engine.ops import conv
from engine.graph.lowering.memory_planning import plan_memory
from support.finite_diff import check_gradients_in_dtype
from support.window_split import chunks_in_order


def _loop_filter_grad(x, g, khw, strides, pads, dilation, groups):
    """dw[a, b, c, o] = sum over images and output pixels of the input tap times the
    cotangent, tap by tap in float64 (explicit pads, NHWC x HWIO)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    n, oh, ow, o = g.shape
    c = x.shape[3]
    cg, og = c // groups, o // groups
    dw = np.zeros((*khw, cg, o))
    for a, b, gr in itertools.product(range(khw[0]), range(khw[1]), range(groups)):
        r0, c0 = a * dilation[0], b * dilation[1]
        tap = xp[:, r0:r0 + strides[0] * (oh - 1) + 1:strides[0],
                 c0:c0 + strides[1] * (ow - 1) + 1:strides[1], gr * cg:(gr + 1) * cg]
        dw[a, b, :, gr * og:(gr + 1) * og] = np.einsum(
            "nijc,nijo->co", tap, g[..., gr * og:(gr + 1) * og].astype(np.float64))
    return dw


CASES = [  # (N, H, W, C, O, kernel, strides, pads, dilation, groups)
    (3, 7, 6, 1, 4, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    (2, 9, 8, 4, 6, (3, 2), (2, 1), ((0, 2), (1, 0)), (1, 2), 1),
    (5, 8, 8, 4, 6, (2, 2), (1, 2), ((1, 0), (0, 1)), (2, 1), 2),
]


def _case(case, dtype, seed=0):
    n, h, w, c, o, khw, strides, pads, dilation, groups = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c)).astype(dtype)
    oh = (h + sum(pads[0]) - (khw[0] - 1) * dilation[0] - 1) // strides[0] + 1
    ow = (w + sum(pads[1]) - (khw[1] - 1) * dilation[1] - 1) // strides[1] + 1
    g = rng.standard_normal((n, oh, ow, o)).astype(dtype)
    params = dict(kernel_hw=khw, strides=strides, padding=pads, dilation=dilation, groups=groups)
    return x, g, params


@pytest.fixture
def chunks(monkeypatch):
    """Split every convolution into three chunks of images, run in order on this
    thread; yields the chunk counts the runner was asked for."""
    with chunks_in_order(monkeypatch) as calls:
        yield calls


def _check_out_impl(case, dtype):
    x, g, params = _case(case, dtype)
    want = _loop_filter_grad(x, g, params["kernel_hw"], params["strides"], params["padding"],
                             params["dilation"], params["groups"])
    out = np.full(want.shape, np.nan, dtype)
    got = conv.conv2d_backprop_filter_op.out_impl(x, g, out=out, **params)
    assert got is out and got.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(conv.conv2d_backprop_filter_op.impl(x, g, **params), want,
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_impl_writes_the_filter_gradient_into_out(case, dtype):
    with en.config.cost.override(window_split_min_work=2 ** 62):
        _check_out_impl(case, dtype)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_out_impl_adds_the_chunks_into_out(case, dtype, chunks):
    _check_out_impl(case, dtype)
    assert chunks == [min(case[0], 3)] * 2       # out_impl, then impl


def test_out_impl_into_a_non_contiguous_out():
    x, g, params = _case(CASES[1], np.float64)
    want = _loop_filter_grad(x, g, params["kernel_hw"], params["strides"], params["padding"],
                             params["dilation"], params["groups"])
    holder = np.zeros(want.shape[:3] + (2 * want.shape[3],))
    out = holder[..., ::2]
    conv.conv2d_backprop_filter_op.out_impl(x, g, out=out, **params)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    assert not holder[..., 1::2].any()


def _step(w1, w2, images):
    a = en.relu(en.conv2d(images, w1, padding="same"))
    a = en.relu(en.conv2d(a, w2, padding="same"))
    return en.sum(a * a)


def _inputs(dtype):
    rng = np.random.default_rng(1)
    return (rng.standard_normal((3, 3, 1, 4)).astype(dtype),
            rng.standard_normal((3, 3, 4, 3)).astype(dtype),
            rng.standard_normal((2, 6, 6, 1)).astype(dtype))


def test_planning_gives_the_inputs_of_a_returned_filter_gradient_buffers():
    w1, w2, images = (en.tensor(a) for a in _inputs(np.float32))
    f = en.function(en.grad(_step, argnums=(0, 1)))
    graph = f.graph_for(w1, w2, images)
    filter_grads = [n for n in graph.nodes if n.op is conv.conv2d_backprop_filter_op]
    assert filter_grads and all(n in graph.outputs for n in filter_grads)
    plan = plan_memory(graph)
    # The second filter gradient reads the first ReLU's output (an activation, not an
    # input of the graph): it is planned now.
    activations = [n.inputs[0] for n in filter_grads if n.inputs[0].op.out_impl is not None
                   and n.inputs[0] not in graph.inputs]
    assert activations and all(a in plan.buffer_of for a in activations)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_planned_step_gradients_match_finite_differences(dtype):
    w1, w2, images = _inputs(dtype)
    f = en.function(en.grad(_step, argnums=(0, 1)))
    args = [en.tensor(a) for a in (w1, w2, images)]
    graph = f.get_concrete_function(*args).graph
    assert any(n.op is conv.conv2d_backprop_filter_op for n in graph.nodes)
    for _ in range(2):      # the second call runs on the buffers the first one left
        got = f(*args)
    check_gradients_in_dtype(got, _step, (w1, w2, images), (0, 1), dtype)
