"""Row regions (graph/lowering/row_regions.py): a layer norm, a softmax and their gradients
become one C kernel each, agree with numpy in float64 closed forms, keep results used
outside the region, never fuse a region into its own ancestor, and stand aside under
bitwise numerics and the numpy lowering."""
import importlib

import numpy as np
import pytest

import engine as en
from support.compilers import needs_c_compiler

hot_swap = importlib.import_module("engine.graph.lowering.hot_swap")

pytestmark = needs_c_compiler
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
SHAPES = [(64, 64), (3, 50, 37), (1, 300, 1), (1, 1, 700), (40, 9)]
EPS = 1e-5


def _layer_norm(x, g, b):
    m = en.mean(x, axis=-1, keepdims=True)
    d = x - m
    v = en.mean(en.square(d), axis=-1, keepdims=True)
    return d / en.sqrt(v + EPS) * g + b


def _softmax(x):
    e = en.exp(x - en.max(x, axis=-1, keepdims=True))
    return e / en.sum(e, axis=-1, keepdims=True)


def _ln_ref(x, g, b):
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + EPS) * g + b


def _ln_grads_ref(x, g, b, w):
    """Gradients of sum(ln(x) * w) in closed form (float64)."""
    n = x.shape[-1]
    d = x - x.mean(-1, keepdims=True)
    s = np.sqrt((d * d).mean(-1, keepdims=True) + EPS)
    xhat = d / s
    dy = w * g
    dx = (dy - dy.mean(-1, keepdims=True) - xhat * (dy * xhat).mean(-1, keepdims=True)) / s
    axes = tuple(range(x.ndim - 1))
    assert n == x.shape[-1]
    return dx, (w * xhat).sum(axes), w.sum(axes)


def _sm_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _run(fn, *args):
    """``fn``'s result once its kernels' libraries are built (the first calls may run the
    members' numpy kernels while they build): both must agree."""
    first = fn(*args)
    hot_swap.wait_for_compiles()
    return first, fn(*args)


def _arrays(result):
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    return [np.asarray(result.numpy() if hasattr(result, "numpy") else result)]


def _close(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, **TOL[dtype])


def _row_nodes(graph):
    return [n for n in graph.topo_order() if n.name.startswith("row_region")]


@pytest.fixture(autouse=True)
def _settings(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "auto")
    monkeypatch.setattr(en.config, "numerics", "fast")
    # Small shapes too: the kernel's edges (rows of one value, a tail of lanes).
    monkeypatch.setattr(en.config.cost, "row_region_min_work", 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_layer_norm_forward_and_gradient_match_numpy(shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape) * 3 + 1
    g, b = rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])
    w = rng.standard_normal(shape)
    args = [en.tensor(a.astype(dtype)) for a in (x, g, b)]
    wt = en.tensor(w.astype(dtype))
    f = en.function(_layer_norm)
    assert _row_nodes(f.graph_for(*args))
    for out in _run(f, *args):
        _close(out.numpy(), _ln_ref(x, g, b), dtype)
    loss = en.function(en.grad(lambda x, g, b: en.sum(_layer_norm(x, g, b) * wt),
                               argnums=(0, 1, 2)))
    want = _ln_grads_ref(x, g, b, w)
    for grads in _run(loss, *args):
        for got, ref in zip(_arrays(grads), want):
            _close(got, ref, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_forward_and_gradient_match_numpy(shape, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape) * 4
    w = rng.standard_normal(shape)
    xt, wt = en.tensor(x.astype(dtype)), en.tensor(w.astype(dtype))
    f = en.function(_softmax)
    assert _row_nodes(f.graph_for(xt))
    for out in _run(f, xt):
        _close(out.numpy(), _sm_ref(x), dtype)
    s = _sm_ref(x)
    want = s * (w - (w * s).sum(-1, keepdims=True))
    grad = en.function(en.grad(lambda x: en.sum(_softmax(x) * wt)))
    for got in _run(grad, xt):
        _close(got.numpy(), want, dtype)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 70))
    g, b, w = rng.standard_normal(70), rng.standard_normal(70), rng.standard_normal((4, 70))
    wt = en.tensor(w)

    def loss(x):
        return en.sum(_softmax(_layer_norm(x, en.tensor(g), en.tensor(b))) * wt)

    got = _run(en.function(en.grad(loss)), en.tensor(x))[1].numpy()
    h = 1e-6
    for k in [(0, 0), (1, 33), (3, 69)]:
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        ref = (np.sum(_sm_ref(_ln_ref(up, g, b)) * w) -
               np.sum(_sm_ref(_ln_ref(down, g, b)) * w)) / (2 * h)
        np.testing.assert_allclose(got[k], ref, rtol=1e-5, atol=1e-7)


def test_the_pass_fires_and_kernels_drop(monkeypatch):
    monkeypatch.setattr(en.config.cost, "row_region_min_work", 16384)
    x = en.tensor(np.random.default_rng(3).standard_normal((64, 64)).astype("float32"))
    g, b = en.ones(64, dtype="float32"), en.zeros(64, dtype="float32")
    f = en.function(_layer_norm)
    with_pass = f.graph_for(x, g, b)
    assert len(_row_nodes(with_pass)) == 1
    assert not _row_nodes(f.graph_for(x[:2], g, b))      # too little work to pay
    off = en.function(_layer_norm, passes=[p for p in _default() if p != "row_regions"])
    without = off.graph_for(x, g, b)
    assert not _row_nodes(without)
    assert _kernels(with_pass) < _kernels(without)
    node = _row_nodes(with_pass)[0]
    assert node.meta["backend"] == "c" and "int rowk" in node.meta["kernel_source"]
    assert "row_region" in f.source_for(x, g, b)


def _default():
    from engine.graph.lowering.pipeline import DEFAULT_PIPELINE
    return list(DEFAULT_PIPELINE)


def _kernels(graph):
    skip = ("placeholder", "constant", "unpack")
    return sum(1 for n in graph.topo_order() if n.op.name not in skip)


def test_a_member_used_outside_is_a_result():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 48))

    def f(x):
        e = en.exp(x - en.max(x, axis=-1, keepdims=True))
        s = en.sum(e, axis=-1, keepdims=True)
        return e / s, e * 2.0, s

    fn = en.function(f)
    xt = en.tensor(x)
    assert len(_row_nodes(fn.graph_for(xt))) == 1
    e = np.exp(x - x.max(-1, keepdims=True))
    for out in _run(fn, xt):
        sm, e2, s = _arrays(out)
        _close(sm, e / e.sum(-1, keepdims=True), "float64")
        _close(e2, 2 * e, "float64")
        _close(s, e.sum(-1, keepdims=True), "float64")


def test_a_path_leaving_the_region_and_coming_back_is_not_fused_in():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 64))
    w = rng.standard_normal((64, 64))

    def f(x, w):
        m = en.mean(x, axis=-1, keepdims=True)
        d = x - m
        p = en.matmul(d, w)              # leaves the row region
        return d * p + en.sum(d, axis=-1, keepdims=True)   # and comes back

    fn = en.function(f)
    xt, wt = en.tensor(x), en.tensor(w)
    graph = fn.graph_for(xt, wt)
    graph.lint()
    d = x - x.mean(-1, keepdims=True)
    for out in _run(fn, xt, wt):
        _close(out.numpy(), d * (d @ w) + d.sum(-1, keepdims=True), "float64")


@pytest.mark.parametrize("setting", [dict(numerics="bitwise"), dict(lowering="numpy")])
def test_bitwise_numerics_and_the_numpy_lowering_take_no_region(setting, monkeypatch):
    x = en.tensor(np.random.default_rng(6).standard_normal((64, 64)).astype("float32"))
    assert _row_nodes(en.function(_softmax).graph_for(x))
    for name, value in setting.items():
        monkeypatch.setattr(en.config, name, value)
    fn = en.function(_softmax)
    assert not _row_nodes(fn.graph_for(x))
    _close(fn(x).numpy(), _sm_ref(x.numpy().astype(np.float64)), "float32")


def test_agrees_with_eager():
    rng = np.random.default_rng(7)
    x = en.tensor(rng.standard_normal((8, 16, 40)).astype("float32"))
    g, b = en.tensor(rng.standard_normal(40).astype("float32")), en.zeros(40, dtype="float32")

    def f(x, g, b):
        return _softmax(_layer_norm(x, g, b))

    eager = f(x, g, b).numpy()
    fn = en.function(f)
    assert _row_nodes(fn.graph_for(x, g, b))
    for out in _run(fn, x, g, b):
        np.testing.assert_allclose(out.numpy(), eager, rtol=2e-5, atol=2e-7)


def test_nan_and_inf_rows_follow_numpy():
    x = np.random.default_rng(8).standard_normal((64, 40))
    x[3, 5] = np.nan
    x[7, :] = -np.inf
    x[9, 2] = np.inf
    fn = en.function(lambda x: en.max(x, axis=-1, keepdims=True) + x * 0.5
                     + en.min(x, axis=-1, keepdims=True))
    xt = en.tensor(x)
    assert _row_nodes(fn.graph_for(xt))
    want = x.max(-1, keepdims=True) + x * 0.5 + x.min(-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        for out in _run(fn, xt):
            np.testing.assert_array_equal(np.isnan(out.numpy()), np.isnan(want))
            ok = ~np.isnan(want)
            np.testing.assert_allclose(out.numpy()[ok], want[ok], rtol=1e-12)


def test_the_numpy_fallback_matches_the_kernel():
    """While its library builds, a region runs its members' own numpy kernels."""
    rng = np.random.default_rng(9)
    x = en.tensor(rng.standard_normal((16, 24, 33)).astype("float32"))
    g, b = en.tensor(rng.standard_normal(33).astype("float32")), en.zeros(33, dtype="float32")
    fn = en.function(en.grad(lambda x, g, b: en.sum(_softmax(_layer_norm(x, g, b)) * x),
                             argnums=(0, 1)))
    fn(x, g, b)
    hot_swap.wait_for_compiles()
    graph = fn.graph_for(x, g, b)
    values = {n: v for n, v in zip(graph.inputs, (x.numpy(), g.numpy(), b.numpy()))}
    nodes = _row_nodes(graph)
    assert nodes
    for node in graph.topo_order():
        if node in values:
            continue
        args = [values[i] for i in node.inputs]
        values[node] = node.op.impl(*args, **node.params)
        if node in nodes:
            fallback = node.op.impl.__self__.numpy_impl(*args)
            for got, want in zip(values[node], fallback):
                np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_two_regions_never_feed_each_other_both_ways():
    """A node that could join an older region through a newer one that reads that older
    region stays out of it: once each region is one node, the graph stays acyclic."""
    rng = np.random.default_rng(10)
    x, z = rng.standard_normal((64, 64)), rng.standard_normal((64, 32))

    def f(x, z):
        a = en.max(x, axis=-1, keepdims=True)       # region 1, rows of 64
        e = z * 2.0                                  # region 2, rows of 32
        b = e * a                                    # region 2 reads region 1
        c = en.sum(e, axis=-1, keepdims=True)        # region 2
        t = x - a                                    # region 1
        return t * c, b                              # region 1 would read region 2

    fn = en.function(f)
    xt, zt = en.tensor(x), en.tensor(z)
    graph = fn.graph_for(xt, zt)
    graph.lint()
    assert len(_row_nodes(graph)) == 2
    a = x.max(-1, keepdims=True)
    e = 2 * z
    for out in _run(fn, xt, zt):
        got_d, got_b = _arrays(out)
        _close(got_d, (x - a) * e.sum(-1, keepdims=True), "float64")
        _close(got_b, e * a, "float64")
