"""Convolutions and max pooling split over their images on the kernel threads
(engine/ops/batch_split.py), against loops over windows in float64 and finite
differences: strides, padding, dilation, groups, odd batches, float32 and float64.
Every test forces the split (thresholds 0, two threads, three chunks) and checks
that it happened."""
import itertools

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import hot_swap
from engine.graph.lowering.c import c_compiler, c_pool, c_window
from engine.ops import batch_split, conv, native
from support.window_reference import check_strided_conv_gradients, loop_conv


@pytest.fixture
def split(monkeypatch):
    """Split every window kernel into three chunks on two threads; yields the list of
    chunk counts the runner (or, for the native loops, the C pool) was asked for."""
    native.load()
    c_window.installed()      # waits for the C window kernels' build (where a compiler is)
    if c_compiler.available():
        c_pool.ready()
        hot_swap.wait_for_compiles()          # the C pool's library too
        assert c_pool.ready()
    assert batch_split.RUNNERS, "the lowerings registered no runner"
    threads, run_chunks = batch_split.RUNNERS[0]
    calls = []

    def counting(fn, n, count):
        calls.append(n)
        return run_chunks(fn, n, count)

    def counting_parts(entry, pointers, bounds, *threads):
        code = run_parts(entry, pointers, bounds, *threads)
        if code is not None:       # run on the pool (None: the caller runs it serially)
            calls.append(len(bounds) - 1)
        return code
    run_parts = c_pool.run_parts
    monkeypatch.setattr(c_pool, "run_parts", counting_parts)
    monkeypatch.setattr(batch_split, "RUNNERS", [(lambda blas=True: 2, counting)])
    with en.config.cost.override(window_split_min_work=0, pool_split_min_taps=0,
                                 window_split_chunks=3, window_split_native_chunks=3):
        yield calls


CONVS = [  # batch, input channels, output channels, kernel, strides, pads, dilation, groups
    (7, 1, 16, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    (5, 16, 32, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    (4, 4, 3, (3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 1),
    (3, 3, 5, (3, 3), (2, 2), ((2, 2), (2, 2)), (2, 2), 1),
    (6, 4, 6, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 2),
    (5, 8, 3, (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),   # input gradient: the full form
    (3, 7, 2, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),   # ... the scatter (not split)
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c,o,k,strides,pads,dilation,groups", CONVS)
def test_split_conv_and_both_gradients_match_a_window_loop(split, dtype, n, c, o, k, strides,
                                                           pads, dilation, groups):
    rng = np.random.default_rng(n * 100 + c * 10 + o)
    x = rng.standard_normal((n, 9, 8, c)).astype(dtype)
    w = rng.standard_normal(k + (c // groups, o)).astype(dtype)
    kw = dict(stride=strides, padding=pads, dilation=dilation, groups=groups)
    want = loop_conv(x, w, strides, pads, dilation, groups)
    out = en.conv2d(en.tensor(x), en.tensor(w), **kw)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), want, rtol=tol, atol=tol)
    g = rng.standard_normal(out.shape).astype(dtype)
    dx = en.ops.conv2d_backprop_input(en.tensor(g), en.tensor(w), (9, 8), **kw).numpy()
    dw = en.ops.conv2d_backprop_filter(en.tensor(x), en.tensor(g), k, **kw).numpy()
    assert dx.dtype == dtype and dw.dtype == dtype
    # Each gradient element is the loop convolution's response to a unit change.
    for idx in [(0, 0, 0, 0), (n - 1, 4, 3, c - 1), (n // 2, 8, 7, 0)]:
        basis = np.zeros_like(x)
        basis[idx] = 1
        col = float(np.sum(loop_conv(basis, w, strides, pads, dilation, groups) * g))
        np.testing.assert_allclose(dx[idx], col, rtol=tol * 10, atol=tol * 10)
    for idx in [(0, 0, 0, 0), (k[0] - 1, k[1] - 1, c // groups - 1, o - 1)]:
        basis = np.zeros_like(w)
        basis[idx] = 1
        col = float(np.sum(loop_conv(x, basis, strides, pads, dilation, groups) * g))
        np.testing.assert_allclose(dw[idx], col, rtol=tol * 10, atol=tol * 50)
    assert split.count(3) >= 2       # the forward and the filter gradient were split


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_split_full_form_of_the_input_gradient_matches_a_window_loop(split, dtype):
    # The full correlation (chosen where the input has more than twice the output
    # channels) splits too; the C col2im form is covered above.
    rng = np.random.default_rng(9)
    w = rng.standard_normal((3, 3, 8, 3)).astype(dtype)
    g = rng.standard_normal((5, 6, 7, 3)).astype(dtype)
    dx = conv._bp_input_full(g, w, (6, 7), ((1, 1), (1, 1)))
    assert split == [3] and dx.dtype == dtype
    tol = 2e-4 if dtype == np.float32 else 1e-10
    for idx in [(0, 0, 0, 0), (4, 5, 6, 7), (2, 3, 1, 4)]:
        basis = np.zeros((5, 6, 7, 8))
        basis[idx] = 1
        col = float(np.sum(loop_conv(basis, w, (1, 1), ((1, 1), (1, 1)), (1, 1), 1) * g))
        np.testing.assert_allclose(dx[idx], col, rtol=tol, atol=tol)


def test_split_conv_gradients_match_finite_differences(split):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((5, 6, 5, 3))
    w = rng.standard_normal((3, 3, 3, 4))
    c = rng.standard_normal((5, 3, 3, 4))
    check_strided_conv_gradients(x, w, c)
    assert split


def _loop_max_pool(x, pool, strides):
    """Valid max pooling and its gradient (at each window's first maximum), window by window."""
    n, h, w, c = x.shape
    oh, ow = (h - pool[0]) // strides[0] + 1, (w - pool[1]) // strides[1] + 1
    out = np.empty((n, oh, ow, c))
    first = np.empty((n, oh, ow, c, 2), dtype=int)
    for k, i, j, ch in itertools.product(range(n), range(oh), range(ow), range(c)):
        win = x[k, i * strides[0]:i * strides[0] + pool[0],
                j * strides[1]:j * strides[1] + pool[1], ch]
        a, b = np.unravel_index(int(np.argmax(win)), win.shape)
        out[k, i, j, ch] = win[a, b]
        first[k, i, j, ch] = (i * strides[0] + a, j * strides[1] + b)
    return out, first


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool,strides", [((2, 2), (2, 2)), ((3, 2), (1, 2))])
def test_split_max_pool_and_its_gradient_match_a_window_loop(split, dtype, pool, strides):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 9, 8, 3)).astype(dtype)
    x[2, :4, :4, 0] = 0.0                                   # ties: the first tap wins
    want, first = _loop_max_pool(x, pool, strides)
    xt = en.tensor(x)
    out = en.max_pool2d(xt, pool, strides=strides)
    np.testing.assert_array_equal(out.numpy(), want.astype(dtype))
    g = rng.standard_normal(out.shape).astype(dtype)
    want_dx = np.zeros(x.shape)
    for k, i, j, ch in itertools.product(*map(range, out.shape)):
        want_dx[(k, *first[k, i, j, ch], ch)] += g[k, i, j, ch]
    dx = en.grad(lambda t: en.sum(en.max_pool2d(t, pool, strides=strides) * en.tensor(g)))(xt)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(dx.numpy(), want_dx, rtol=tol, atol=tol)
    if native.kernel("max_pool2d", dtype) is not None:     # the C kernels (a compiler) split
        assert split


def test_a_traced_cnn_step_with_split_kernels_matches_the_unsplit_one(split):
    rng = np.random.default_rng(4)
    images = rng.standard_normal((9, 12, 12, 1)).astype(np.float32)
    w1 = (rng.standard_normal((3, 3, 1, 8)) / 3).astype(np.float32)
    w2 = (rng.standard_normal((3, 3, 8, 6)) / 8).astype(np.float32)

    def loss(w1, w2, images):
        a = en.max_pool2d(en.relu(en.conv2d(images, w1, padding="same")), 2)
        a = en.relu(en.conv2d(a, w2, padding="same"))
        return en.mean(a * a)
    args = [en.tensor(a) for a in (w1, w2, images)]
    step = en.function(en.value_and_grad(loss, argnums=(0, 1)))
    for _ in range(2):                                  # the second call reuses buffers
        value, grads = step(*args)
    assert split
    before = en.config.lowering
    try:
        en.config.lowering = "numpy"                    # numpy's kernels, never split
        want_value, want_grads = en.value_and_grad(loss, argnums=(0, 1))(*args)
    finally:
        en.config.lowering = before
    np.testing.assert_allclose(float(value), float(want_value), rtol=1e-5)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)


def test_a_kernel_below_the_threshold_or_under_bitwise_numerics_runs_whole(split):
    with en.config.cost.override(window_split_min_work=100):
        assert batch_split.threads(99) == 1
        assert batch_split.run(6, 99, lambda lo, hi: (lo, hi)) == [(0, 6)]
        assert batch_split.run(6, 100, lambda lo, hi: (lo, hi)) == [(0, 2), (2, 4), (4, 6)]
    before = en.config.numerics
    try:
        en.config.numerics = "bitwise"    # a filter gradient's sum keeps eager's order
        assert batch_split.threads(1 << 40) == 1
    finally:
        en.config.numerics = before
    assert split == [3]
