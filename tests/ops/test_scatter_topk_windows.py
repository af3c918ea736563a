"""Scatter, top-k, partitions, running log-sum-exp and extremes with indices, truncating
division, sliding windows and numpy's cross (issue #48), against independent references:
numpy's ``ufunc.at``, sorts and ``sliding_window_view``, scipy's ``logsumexp``, Python's
integers, closed forms for the gradients and finite differences; eagerly, inside
``en.function`` and under ``en.vmap``; ``topk`` and ``scatter_reduce`` exported to ONNX
and run by onnxruntime."""
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view as np_windows
from scipy.special import logsumexp

import engine as en
from support.finite_diff import numeric_grad

RNG = np.random.default_rng(48)
UFUNCS = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _along(index, axis):
    """numpy's index pairing ``index`` along ``axis`` with its own other coordinates."""
    return tuple(index if a == axis else np.arange(n).reshape((n,) + (1,) * (index.ndim - a - 1))
                 for a, n in enumerate(index.shape))


# ---- scatter_reduce ------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", list(UFUNCS))
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_reduce_matches_numpy_ufunc_at(reduce, axis):
    x = RNG.standard_normal((4, 5))
    n = x.shape[axis]
    ishape = (3, 5) if axis == 0 else (4, 7)
    index = RNG.integers(0, n, size=ishape)
    src = RNG.standard_normal(ishape)
    want = x.copy()
    UFUNCS[reduce].at(want, _along(index, axis % 2), src)
    got = en.scatter_reduce(en.tensor(x), axis, en.tensor(index), en.tensor(src), reduce)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    traced = en.function(lambda a, i, s: en.scatter_reduce(a, axis, i, s, reduce))
    np.testing.assert_allclose(traced(en.tensor(x), en.tensor(index), en.tensor(src)).numpy(),
                               want, rtol=1e-12)


@pytest.mark.parametrize("reduce", list(UFUNCS))
def test_scatter_reduce_without_self_starts_from_the_values(reduce):
    x = np.full((2, 4), 100.0)
    index = np.array([[0, 0, 2], [3, 1, 3]])
    src = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    want = x.copy()
    start = {"sum": 0.0, "prod": 1.0, "amax": -np.inf, "amin": np.inf}[reduce]
    want[_along(index, 1)] = start
    UFUNCS[reduce].at(want, _along(index, 1), src)
    got = en.scatter_reduce(en.tensor(x), 1, en.tensor(index), en.tensor(src), reduce,
                            include_self=False)
    np.testing.assert_array_equal(got.numpy(), want)


def test_scatter_mean_divides_by_the_count():
    x = np.array([10.0, 20.0, 30.0])
    got = en.scatter_reduce(en.tensor(x), 0, en.tensor([0, 0, 2]), en.tensor([1.0, 2.0, 3.0]),
                            "mean")
    np.testing.assert_allclose(got.numpy(), [13.0 / 3, 20.0, 33.0 / 2])
    ints = en.scatter_reduce(en.tensor([7, 0]), 0, en.tensor([0, 0]), en.tensor([-4, 0]), "mean",
                             include_self=False)
    assert ints.numpy().tolist() == [-2, 0]


def test_scatter_amax_gradient_goes_to_the_winner_and_ties_share():
    x = en.tensor([1.0, 5.0, 0.0])
    src = en.tensor([3.0, 5.0, -1.0, 2.0])
    index = en.tensor([0, 1, 2, 0])

    def f(x, src):
        return en.sum(en.scatter_reduce(x, 0, index, src, "amax") * en.tensor([1.0, 2.0, 4.0]))
    gx, gs = en.grad(f, argnums=(0, 1))(x, src)
    # target 0: src 3 wins; target 1: x and src tie at 5 and share; target 2: x 0 wins
    np.testing.assert_allclose(gx.numpy(), [0.0, 1.0, 4.0])
    np.testing.assert_allclose(gs.numpy(), [1.0, 1.0, 0.0, 0.0])


@pytest.mark.parametrize("reduce", ["sum", "prod", "amin"])
def test_scatter_gradients_match_finite_differences(reduce):
    x = RNG.uniform(0.5, 2.0, (3, 4))
    src = RNG.uniform(0.5, 2.0, (3, 5))
    index = RNG.integers(0, 4, size=(3, 5))
    w = RNG.standard_normal((3, 4))

    def f(a, s):
        return en.sum(en.scatter_reduce(a, 1, en.tensor(index), s, reduce) * en.tensor(w))
    ga, gs = en.grad(f, argnums=(0, 1))(en.tensor(x), en.tensor(src))
    np.testing.assert_allclose(ga.numpy(), numeric_grad(f, [x, src], 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gs.numpy(), numeric_grad(f, [x, src], 1), rtol=1e-5, atol=1e-7)


def test_scatter_reduce_under_vmap_matches_a_loop():
    xs = RNG.standard_normal((3, 4))
    srcs = RNG.standard_normal((3, 6))
    index = en.tensor(RNG.integers(0, 4, size=6))
    batched = en.vmap(lambda a, s: en.scatter_reduce(a, 0, index, s, "amax"))(en.tensor(xs),
                                                                              en.tensor(srcs))
    for k in range(3):
        want = xs[k].copy()
        np.maximum.at(want, index.numpy(), srcs[k])
        np.testing.assert_array_equal(batched.numpy()[k], want)


def test_index_add_adds_slices():
    x = RNG.standard_normal((4, 3))
    src = RNG.standard_normal((4, 5))
    index = np.array([0, 2, 2, 1, 0])
    want = x.copy()
    np.add.at(want, (slice(None), index), 0.5 * src)
    got = en.index_add(en.tensor(x), 1, en.tensor(index), en.tensor(src), alpha=0.5)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_scatter_errors_name_the_function_and_line():
    with pytest.raises(en.ShapeError, match=r"scatter_reduce: reduce must be one of(.|\n)*"
                                            r"test_scatter_topk_windows.py"):
        en.scatter_reduce(en.zeros(3), 0, en.tensor([0]), en.ones(1), "max")
    with pytest.raises(en.ShapeError, match="index_add"):
        en.index_add(en.zeros((2, 3)), 0, en.tensor([0, 1]), en.ones((2, 2)))
    with pytest.raises(IndexError):
        en.scatter_reduce(en.zeros(3), 0, en.tensor([3]), en.ones(1), "sum")


# ---- topk ----------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_a_stable_sort(largest):
    x = RNG.integers(0, 5, size=(4, 9)).astype(np.float64)      # many ties
    order = np.argsort(-x if largest else x, axis=1, kind="stable")[:, :3]
    values, indices = en.topk(en.tensor(x), 3, largest=largest)
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, order, 1))
    f = en.function(lambda t: en.topk(t, 3, axis=0, largest=largest))
    v0, i0 = f(en.tensor(x))
    order0 = np.argsort(-x if largest else x, axis=0, kind="stable")[:3]
    np.testing.assert_array_equal(i0.numpy(), order0)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_on_long_axes_selects_as_a_stable_sort(dtype, largest):
    # k much smaller than the axis: chosen by a partition, then sorted; many ties and NaNs
    x = RNG.integers(0, 5, size=(4, 150)).astype(dtype)
    if dtype.startswith("float"):
        x[RNG.random(x.shape) < 0.1] = np.nan
    for k in (1, 7, 37):
        values, indices = en.topk(en.tensor(x), k, largest=largest)
        for r in range(4):
            def key(i, row=x[r]):
                v = row[i].item()
                rank = (1, 0) if v != v else (0, v)
                return ((-rank[0], -rank[1]), i) if largest else (rank, i)
            want = sorted(range(150), key=key)[:k]
            assert indices.numpy()[r].tolist() == want
            np.testing.assert_array_equal(values.numpy()[r], x[r, want])


def test_topk_gradient_is_one_hot_on_the_chosen():
    x = RNG.permutation(10).astype(np.float64)
    g = en.grad(lambda t: en.sum(en.topk(t, 3)[0] * en.tensor([1.0, 2.0, 3.0])))(en.tensor(x))
    want = np.zeros(10)
    want[np.argsort(-x)[:3]] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(g.numpy(), want)


def test_topk_under_vmap_and_nan_first():
    xs = RNG.standard_normal((5, 6))
    values, indices = en.vmap(lambda t: en.topk(t, 2))(en.tensor(xs))
    np.testing.assert_array_equal(values.numpy(), -np.sort(-xs, axis=1)[:, :2])
    v, i = en.topk(en.tensor([1.0, np.nan, 3.0]), 2)
    assert np.isnan(v.numpy()[0]) and i.numpy().tolist() == [1, 2]


# ---- partition / argpartition ----------------------------------------------------------------
def _assert_partitioned(part, x, kth, axis):
    srt = np.sort(x, axis=axis)
    p = np.moveaxis(part, axis, -1)
    s = np.moveaxis(srt, axis, -1)
    for k in np.atleast_1d(kth):
        k = k % p.shape[-1]
        np.testing.assert_array_equal(p[..., k], s[..., k])
        assert np.all(p[..., :k] <= p[..., k:k + 1]) and np.all(p[..., k + 1:] >= p[..., k:k + 1])


@pytest.mark.parametrize("kth,axis", [(3, -1), (-1, -1), ([0, 4, 7], 1), (2, 0)])
def test_partition_property(kth, axis):
    x = RNG.integers(-5, 5, size=(6, 9)).astype(np.float64)
    part = en.partition(en.tensor(x), kth, axis=axis).numpy()
    _assert_partitioned(part, x, kth, axis)
    idx = en.argpartition(en.tensor(x), kth, axis=axis).numpy()
    assert np.array_equal(np.sort(idx, axis=axis), np.broadcast_to(
        np.arange(x.shape[axis]).reshape((-1, 1) if axis == 0 else (1, -1)), x.shape))
    _assert_partitioned(np.take_along_axis(x, idx, axis), x, kth, axis)
    traced = en.function(lambda t: en.partition(t, kth, axis=axis))(en.tensor(x)).numpy()
    _assert_partitioned(traced, x, kth, axis)


def test_partition_flattened_under_vmap_and_gradient():
    x = RNG.standard_normal((3, 4))
    _assert_partitioned(en.partition(en.tensor(x), 5, axis=None).numpy(), x.ravel(), 5, 0)
    rows = en.vmap(lambda t: en.partition(t, 1))(en.tensor(x)).numpy()
    _assert_partitioned(rows, x, 1, 1)
    g = en.grad(lambda t: en.partition(t, 2, axis=None)[2])(en.tensor(x)).numpy()
    want = np.zeros(12)
    want[np.argsort(x.ravel())[2]] = 1.0
    np.testing.assert_array_equal(g.ravel(), want)


def test_partition_errors_name_the_function():
    with pytest.raises(en.ShapeError, match="partition: kth 5 is out of bounds"):
        en.partition(en.ones(5), 5)


# ---- logcumsumexp, cummax/cummin indices --------------------------------------------------------
def test_logcumsumexp_matches_prefix_logsumexp_and_is_stable():
    x = np.array([[-1000.0, 0.0, 2.0, 1000.0, 999.0], [1.0, -np.inf, 3.0, -50.0, 700.0]])
    want = np.stack([[logsumexp(r[:j + 1]) for j in range(5)] for r in x])
    np.testing.assert_allclose(en.logcumsumexp(en.tensor(x), axis=1).numpy(), want, rtol=1e-14)
    traced = en.function(lambda t: en.logcumsumexp(t, axis=0))(en.tensor(x.T)).numpy()
    np.testing.assert_allclose(traced, want.T, rtol=1e-14)
    batched = en.vmap(lambda t: en.logcumsumexp(t, axis=0))(en.tensor(x)).numpy()
    np.testing.assert_allclose(batched, want, rtol=1e-14)


def test_logcumsumexp_gradient_matches_finite_differences():
    x = RNG.uniform(-20, 20, (2, 6))
    w = RNG.standard_normal((2, 6))

    def f(t):
        return en.sum(en.logcumsumexp(t, axis=1) * en.tensor(w))
    np.testing.assert_allclose(en.grad(f)(en.tensor(x)).numpy(), numeric_grad(f, [x]),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name,better", [("cummax", np.greater_equal), ("cummin", np.less_equal)])
def test_running_extremes_return_pytorchs_indices(name, better):
    x = RNG.integers(0, 4, size=(3, 8)).astype(np.float64)
    values, indices = getattr(en, name)(en.tensor(x), axis=1, return_indices=True)
    want = np.zeros(x.shape, np.int64)
    for r in range(3):
        at = 0
        for j in range(8):
            if better(x[r, j], x[r, at]):
                at = j
            want[r, j] = at
    np.testing.assert_array_equal(indices.numpy(), want)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, want, 1))
    # the gradient flows to the index chosen: each element gets how often it was chosen
    y = RNG.permutation(8).astype(np.float64)
    g = en.grad(lambda t: en.sum(getattr(en, name)(t)))(en.tensor(y)).numpy()
    chosen = getattr(en, name)(en.tensor(y), return_indices=True)[1].numpy()
    np.testing.assert_array_equal(g, np.bincount(chosen, minlength=8))


# ---- trunc_divide --------------------------------------------------------------------------
def test_trunc_divide_is_cs_integer_division():
    a = RNG.integers(-50, 50, size=40)
    b = RNG.integers(1, 9, size=40) * RNG.choice([-1, 1], size=40)
    want = [int(x / y) if abs(x) < 2**52 else None for x, y in zip(a.tolist(), b.tolist())]
    got = en.trunc_divide(en.tensor(a), en.tensor(b))
    assert got.dtype == np.int64 and got.numpy().tolist() == want
    small = en.function(lambda p, q: en.trunc_divide(p, q))(en.tensor(a.astype(np.int32)),
                                                           en.tensor(b.astype(np.int32)))
    assert small.dtype == np.int32 and small.numpy().tolist() == want
    f = RNG.uniform(-10, 10, 20)
    np.testing.assert_array_equal(en.trunc_divide(en.tensor(f), 3.0).numpy(), np.trunc(f / 3.0))


# ---- sliding_window_view -------------------------------------------------------------------------
@pytest.mark.parametrize("window,axis", [(3, None), ((2, 3), None), (2, 0), ((2, 2), (1, 1))])
def test_sliding_window_view_matches_numpy(window, axis):
    x = RNG.standard_normal((4, 6)) if np.ndim(window) == 1 and axis is None or axis is not None \
        else RNG.standard_normal(7)
    want = np_windows(x, window, axis=axis)
    got = en.sliding_window_view(en.tensor(x), window, axis=axis)
    np.testing.assert_array_equal(got.numpy(), want)
    traced = en.function(lambda t: en.sliding_window_view(t, window, axis=axis))(en.tensor(x))
    np.testing.assert_array_equal(traced.numpy(), want)
    dispatched = np_windows(en.tensor(x), window, axis=axis)     # numpy's function on a tensor
    assert isinstance(dispatched, en.Tensor)
    np.testing.assert_array_equal(dispatched.numpy(), want)


def test_sliding_window_gradient_counts_the_windows_of_each_element():
    n, w = 7, 3
    g = en.grad(lambda t: en.sum(en.sliding_window_view(t, w)))(en.ones(n)).numpy()
    want = [min(i + 1, w, n - i, n - w + 1) for i in range(n)]
    np.testing.assert_array_equal(g, want)
    batched = en.vmap(lambda t: en.sliding_window_view(t, 2))(en.tensor(np.arange(12.0).reshape(3, 4)))
    np.testing.assert_array_equal(batched.numpy(), np_windows(np.arange(12.0).reshape(3, 4), 2,
                                                             axis=1))


def test_sliding_window_view_needs_a_known_size_while_tracing():
    f = en.function(lambda t: en.sliding_window_view(t, 2),
                    input_signature=[en.TensorSpec((None,), "float64")])
    with pytest.raises(en.TracingError, match="sliding_window_view: axis 0 .* unknown size"):
        f(en.ones(4))


# ---- cross ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,kw", [((3, 4), (4, 3), dict(axisa=0)),
                                      ((3, 4), (2, 4), dict(axisa=0, axisb=0, axisc=0)),
                                      ((5, 1, 3), (2, 3), dict(axisc=1)),
                                      ((2, 3, 5), (2, 3, 1), dict(axis=1)),
                                      ((4, 2), (3,), {})])
def test_cross_takes_numpys_axes(sa, sb, kw):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    with warnings.catch_warnings():    # numpy 2 deprecates 2-vectors (and still computes them)
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.cross(a, b, **kw)
    np.testing.assert_allclose(en.cross(en.tensor(a), en.tensor(b), **kw).numpy(), want,
                               rtol=1e-12)


# ---- ONNX ----------------------------------------------------------------------------------
def _onnx_run(fn, args, tmp_path, opset=17):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    path = str(tmp_path / "model.onnx")
    en.export_onnx(en.function(fn), path, *[en.tensor(a) for a in args], opset=opset)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, args)))


@pytest.mark.parametrize("largest", [True, False])
def test_topk_exports_to_onnx(largest, tmp_path):
    x = RNG.integers(0, 4, size=(3, 7)).astype(np.float32)
    values, indices = _onnx_run(lambda t: en.topk(t, 3, largest=largest), [x], tmp_path)
    want_v, want_i = en.topk(en.tensor(x), 3, largest=largest)
    np.testing.assert_array_equal(values, want_v.numpy())
    np.testing.assert_array_equal(indices, want_i.numpy())


@pytest.mark.parametrize("reduce,include_self", [("sum", True), ("prod", False),
                                                 ("amax", True), ("amin", False)])
def test_scatter_reduce_exports_to_onnx(reduce, include_self, tmp_path):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    src = RNG.standard_normal((3, 5)).astype(np.float32)
    index = RNG.integers(0, 4, size=(3, 5))
    (got,) = _onnx_run(lambda a, i, s: en.scatter_reduce(a, 1, i, s, reduce,
                                                         include_self=include_self),
                       [x, index, src], tmp_path, opset=18)
    want = en.scatter_reduce(en.tensor(x), 1, en.tensor(index), en.tensor(src), reduce,
                             include_self=include_self).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_scatter_amax_needs_opset_18(tmp_path):
    pytest.importorskip("onnx")
    f = en.function(lambda a, s: en.scatter_reduce(a, 0, en.tensor([0, 0]), s, "amax"))
    with pytest.raises(en.EngineError, match="opset=18"):
        en.export_onnx(f, str(tmp_path / "m.onnx"), en.zeros(2), en.ones(2))
