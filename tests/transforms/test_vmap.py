"""``en.vmap`` against stacking the function over the batch, for every op and for models.

For every op and composite of the database, three samples of the same shapes
(drawn with different seeds) are stacked along a batch axis (first, then
last); ``vmap(op)`` of the stack must equal the stack of ``op`` on each
sample: bit for bit for elementwise ops, to 1e-12 relative where a batched
kernel sums in another order. Models (an MLP, the GRU cell of the rnn
benchmark, a convolution layer) and per-example gradients are checked the same
way, eagerly and inside ``en.function`` (one graph, no loop).
"""
import warnings

import numpy as np
import pytest

import engine as en
from bench.workloads.rnn import gru_cell
from op_db import ALL_ENTRIES, F64, I64, BOOL, seeded_rng, to_engine
from support.op_checks import get_leaf, with_leaves

B = 3


@pytest.fixture(autouse=True)
def _quiet_fallbacks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", en.TransformFallbackWarning)
        yield


def _batch_positions(args):
    """``(i,)`` for array arguments and ``(i, j)`` for arrays in a list argument (concat)."""
    out = []
    for i, a in enumerate(args):
        if isinstance(a, (np.ndarray, np.generic)):
            out.append((i,))
        elif isinstance(a, (list, tuple)) and any(isinstance(b, np.ndarray) for b in a):
            out += [(i, j) for j, b in enumerate(a) if isinstance(b, (np.ndarray, np.generic))]
    return out


def _dtype_for(info):
    for dt in (F64, I64, BOOL):
        if dt in info.dtypes:
            return dt
    return info.dtypes[0]


def _stacked_cases(info):
    dt = _dtype_for(info)
    draws = [list(info.sample_inputs(dt, seeded_rng(info.name, "vmap", k))) for k in range(B)]
    for samples in zip(*draws):
        paths = _batch_positions(samples[0].args)
        if not paths or any(_batch_positions(s.args) != paths for s in samples):
            continue
        leaves = [[np.asarray(get_leaf(s.args, p)) for s in samples] for p in paths]
        if any(len({x.shape for x in per}) != 1 for per in leaves):
            continue
        yield samples, paths, leaves


def _outputs(value):
    return [np.asarray(v) for v in value] if isinstance(value, (tuple, list)) else \
        [np.asarray(value)]


def _takes_tensors(info):
    """Whether the entry's samples pass arrays (composites like logspace take none)."""
    samples = info.sample_inputs(info.dtypes[0], seeded_rng(info.name, "vmap"))
    return any(_batch_positions(s.args) for s in samples)


# Ops that take no tensor (zeros, arange, logspace, ...) have nothing to map over.
VMAP_ENTRIES = [pytest.param(info, id=info.name) for info in ALL_ENTRIES
                if getattr(en.REGISTRY.get(info.name), "n_inputs", None) != 0
                and _takes_tensors(info)]


@pytest.mark.parametrize("axis", ["first", "last"])
@pytest.mark.parametrize("info", VMAP_ENTRIES)
def test_vmap_equals_stacking_over_the_batch(info, axis):
    checked = 0
    for samples, paths, leaves in _stacked_cases(info):
        s0 = samples[0]
        try:
            per = [_outputs(info.op(*[to_engine(a) for a in s.args], **s.kwargs)) for s in samples]
        except en.EngineError:
            continue
        if any([o.shape for o in p] != [o.shape for o in per[0]] for p in per):
            continue   # the result's shape depends on the values (no common batch)
        axes = [0 if axis == "first" else per_leaf[0].ndim for per_leaf in leaves]
        stacked = [en.tensor(np.stack(per_leaf, axis=ax)) for per_leaf, ax in zip(leaves, axes)]

        def one(*xs):
            return info.op(*with_leaves(s0.args, paths, xs), **s0.kwargs)
        got = _outputs(en.vmap(one, in_axes=tuple(axes))(*stacked))
        expected = [np.stack([p[k] for p in per]) for k in range(len(per[0]))]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape and g.dtype == e.dtype, (
                f"{info.name} on {s0}: vmap gave {g.dtype}{g.shape}, stacking {e.dtype}{e.shape}")
            if getattr(en.REGISTRY.get(info.name), "elementwise", False):
                np.testing.assert_array_equal(g, e, err_msg=f"{info.name} on {s0} (bit for bit)")
            elif e.dtype.kind == "f":
                scale = float(np.max(np.abs(e), initial=0.0))
                np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12 * scale,
                                           err_msg=f"{info.name} on {s0}")
            else:
                np.testing.assert_array_equal(g, e, err_msg=f"{info.name} on {s0}")
        checked += 1
    assert checked, f"{info.name}: no sample could be batched"


# ---- models ------------------------------------------------------------------------------------
def _rng():
    return np.random.default_rng(7)


def mlp(params, x):
    w1, b1, w2, b2 = params
    return en.tanh(x @ w1 + b1) @ w2 + b2


def _mlp_params(rng, sizes=(5, 8, 3)):
    return [en.tensor(rng.standard_normal((sizes[0], sizes[1])) * 0.5),
            en.tensor(rng.standard_normal(sizes[1]) * 0.1),
            en.tensor(rng.standard_normal((sizes[1], sizes[2])) * 0.5),
            en.tensor(rng.standard_normal(sizes[2]) * 0.1)]


def _rows_close(got, rows):
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(r) for r in rows]),
                               rtol=1e-12, atol=1e-13)


def test_mlp_per_row():
    rng = _rng()
    p = _mlp_params(rng)
    X = en.tensor(rng.standard_normal((6, 5)))
    _rows_close(en.vmap(mlp, in_axes=(None, 0))(p, X), [mlp(p, X[i]) for i in range(6)])


def test_gru_cell_per_sequence_element():
    rng = _rng()
    hid, feat = 4, 3
    p = tuple(en.tensor(rng.standard_normal(s) * 0.4) for s in
              [(feat, hid), (hid, hid), (hid,)] * 3)
    H = en.tensor(rng.standard_normal((5, 2, hid)))
    X = en.tensor(rng.standard_normal((5, 2, feat)))
    got = en.vmap(gru_cell, in_axes=(0, 0, None))(H, X, p)
    _rows_close(got, [gru_cell(H[i], X[i], p) for i in range(5)])


def test_conv_layer_per_image_batch():
    rng = _rng()
    w = en.tensor(rng.standard_normal((3, 3, 2, 4)) * 0.3)
    X = en.tensor(rng.standard_normal((4, 2, 6, 6, 2)))    # 4 batches of 2 NHWC images

    def layer(x):
        return en.max_pool2d(en.relu(en.conv2d(x, w, padding="same")))
    _rows_close(en.vmap(layer)(X), [layer(X[i]) for i in range(4)])


def _loss(params, x, y):
    return en.cross_entropy(mlp(params, x)[None], y[None])


def test_per_example_gradients_equal_a_loop_of_grad():
    rng = _rng()
    p = _mlp_params(rng)
    X = en.tensor(rng.standard_normal((6, 5)))
    Y = en.tensor(rng.integers(0, 3, size=6))
    batched = en.vmap(en.grad(_loss), in_axes=(None, 0, 0))(p, X, Y)
    loop = [en.grad(_loss)(p, X[i], Y[i]) for i in range(6)]
    for k in range(4):
        _rows_close(batched[k], [g[k] for g in loop])


def test_per_example_gradients_in_a_graph_are_one_batched_trace():
    rng = _rng()
    p = _mlp_params(rng)
    X = en.tensor(rng.standard_normal((6, 5)))
    Y = en.tensor(rng.integers(0, 3, size=6))
    f = en.function(en.vmap(en.grad(_loss), in_axes=(None, 0, 0)))
    got = f(p, X, Y)
    loop = [en.grad(_loss)(p, X[i], Y[i]) for i in range(6)]
    for k in range(4):
        _rows_close(got[k], [g[k] for g in loop])
    graph = f.get_concrete_function(p, X, Y).graph
    graph.lint()
    one = en.function(en.grad(_loss)).get_concrete_function(p, X[0], Y[0]).graph
    # Batched ops, not one copy of the computation per row.
    assert len(graph.nodes) < 2 * len(one.nodes), (len(graph.nodes), len(one.nodes))


# ---- composition ---------------------------------------------------------------------------------
def test_nested_vmap_is_an_outer_product_of_batches():
    x, y = en.tensor([1.0, 2.0, 3.0]), en.tensor([10.0, 20.0])
    got = en.vmap(en.vmap(lambda a, b: a * b + a, in_axes=(None, 0)), in_axes=(0, None))(x, y)
    np.testing.assert_array_equal(np.asarray(got), np.outer([1, 2, 3], [10, 20]) +
                                  np.array([[1], [2], [3]]))


def test_vmap_of_jvp_and_jvp_of_vmap():
    f = lambda x: en.sin(x) * x   # noqa: E731
    X = en.tensor(np.linspace(-1, 1, 8).reshape(4, 2))
    V = en.tensor(np.ones((4, 2)))
    d = np.cos(np.asarray(X)) * np.asarray(X) + np.sin(np.asarray(X))
    a = en.vmap(lambda x, v: en.jvp(f, (x,), (v,))[1])(X, V)
    b = en.jvp(en.vmap(f), (X,), (V,))[1]
    np.testing.assert_allclose(np.asarray(a), d, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(b), d, rtol=1e-14)


def test_in_axes_nested_structures_none_and_out_axes():
    def f(d, scale):
        return {"y": d["a"] * scale + d["b"]}
    A = en.tensor(np.arange(6.0).reshape(3, 2))
    b = en.tensor([1.0, -1.0, 0.5])
    out = en.vmap(f, in_axes=({"a": 1, "b": None}, None), out_axes={"y": 1})(
        {"a": A, "b": b}, 2.0)    # the columns of A
    np.testing.assert_array_equal(np.asarray(out["y"]),
                                  np.asarray(A) * 2.0 + np.asarray(b)[:, None])


def test_unbatched_outputs_are_broadcast_and_out_axes_none_keeps_them():
    X = en.tensor(np.ones((3, 2)))
    c = en.tensor([5.0, 6.0])
    got = en.vmap(lambda x: (x, c), out_axes=(0, None))(X)
    assert got[1] is c
    assert en.vmap(lambda x: c)(X).shape == (3, 2)
    with pytest.raises(en.ShapeError, match="out_axes None"):
        en.vmap(lambda x: x, out_axes=None)(X)


def test_vmap_errors():
    with pytest.raises(en.ShapeError, match="different sizes"):
        en.vmap(lambda a, b: a + b)(en.ones((3, 2)), en.ones((4, 2)))
    with pytest.raises(en.ShapeError, match="no argument is mapped"):
        en.vmap(lambda a: a, in_axes=None)(en.ones(3))
    with pytest.raises(en.ShapeError, match="matmul"):
        en.vmap(lambda a: a @ en.ones((4, 2)))(en.ones((3, 2)))
    with pytest.raises(en.TracingError, match="batched"):
        en.vmap(lambda a: a if float(en.sum(a)) > 0 else -a)(en.ones((3, 2)))


def test_cond_on_a_batched_predicate_selects_per_element():
    f = en.function(lambda x: en.cond(en.sum(x) > 0, lambda: x * 2.0, lambda: -x))
    X = en.tensor([[1.0, 2.0], [-3.0, 1.0], [0.5, -0.1]])
    got = en.vmap(f)(X)
    expected = [np.asarray(f(X[i])) for i in range(3)]
    np.testing.assert_array_equal(np.asarray(got), np.stack(expected))


def test_scan_under_vmap_runs_per_sequence():
    def cumulative(xs):
        return en.scan(lambda c, x: (c + x, c * x), en.tensor(0.0), xs)
    X = en.tensor(np.arange(12.0).reshape(3, 4))
    carry, ys = en.vmap(cumulative)(X)
    for i in range(3):
        c, y = cumulative(X[i])
        assert float(carry[i]) == float(c)
        np.testing.assert_array_equal(np.asarray(ys[i]), np.asarray(y))


def test_vmap_inside_a_function_traces_batched_ops():
    rng = _rng()
    p = _mlp_params(rng)
    X = en.tensor(rng.standard_normal((7, 5)))
    f = en.function(en.vmap(mlp, in_axes=(None, 0)))
    _rows_close(f(p, X), [mlp(p, X[i]) for i in range(7)])
    graph = f.get_concrete_function(p, X).graph
    graph.lint()
    assert sum(1 for n in graph.nodes if n.op.name == "matmul") == 2


def test_fallback_loops_warn_once_and_agree(monkeypatch):
    from engine.transforms import base, batching
    monkeypatch.setattr(batching, "default_rule", lambda op, params: None)
    monkeypatch.setattr(base, "_WARNED", set())
    X = en.tensor(np.linspace(0.1, 2, 6).reshape(3, 2))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", en.TransformFallbackWarning)
        got = en.vmap(lambda x: en.exp(x) + en.exp(x))(X)
    names = [str(w.message) for w in seen if issubclass(w.category, en.TransformFallbackWarning)]
    assert len(names) == 2 and "'exp'" in names[0] and "'add'" in names[1], names
    np.testing.assert_array_equal(np.asarray(got), 2 * np.exp(np.asarray(X)))


def test_a_converted_if_on_a_batched_tensor_selects_per_element():
    @en.function
    def f(x):
        if en.sum(x) > 0:
            return x
        return -x
    X = en.tensor([[1.0, 2.0], [-3.0, 1.0], [0.5, -2.0]])
    got = en.vmap(f)(X)   # tests/transforms/test_vmap_control_flow.py has the loops
    np.testing.assert_array_equal(np.asarray(got), [[1.0, 2.0], [3.0, -1.0], [-0.5, 2.0]])


def test_a_compiled_function_under_jvp_branches_on_the_primal():
    @en.function
    def f(x):
        if en.sum(x) > 0:
            return x * x
        return -x
    assert float(en.jvp(f, (en.tensor(2.0),), (en.tensor(1.0),))[1]) == 4.0
    assert float(en.jvp(f, (en.tensor(-2.0),), (en.tensor(1.0),))[1]) == -1.0


def test_per_example_gradients_of_a_conv_layer_need_no_fallback():
    rng = _rng()
    w = en.tensor(rng.standard_normal((3, 3, 2, 4)) * 0.3)
    X = en.tensor(rng.standard_normal((5, 1, 6, 6, 2)))

    def loss(w, x):
        return en.sum(en.max_pool2d(en.tanh(en.conv2d(x, w, padding="same"))))
    with warnings.catch_warnings():
        warnings.simplefilter("error", en.TransformFallbackWarning)
        got = en.vmap(en.grad(loss), in_axes=(None, 0))(w, X)
    _rows_close(got, [en.grad(loss)(w, X[i]) for i in range(5)])


def test_a_while_loop_on_a_batched_condition_counts_per_element():
    def count_up(x):
        return en.while_loop(lambda i, v: v < 3.0, lambda i, v: (i + 1, v + 1.0),
                             (en.tensor(0), x))
    i, v = en.vmap(count_up)(en.tensor([0.0, 1.0]))   # tests/transforms/test_vmap_control_flow.py
    assert i.tolist() == [3, 2] and v.tolist() == [3.0, 3.0]
    # An unbatched condition loops as usual.
    i, v = en.vmap(lambda x: en.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, v * 2.0),
                                           (en.tensor(0), x)))(en.tensor([1.0, 3.0]))
    assert i.tolist() == [2, 2] and v.tolist() == [4.0, 12.0]   # outputs are broadcast


# ---- custom rules under vmap, differentiated from outside --------------------------------------
@en.custom_gradient
def _scaled(x, w):
    # The rule is deliberately not the forward's derivative (that would be w and x).
    return x * w, lambda dy: (dy * 7.0, dy * x * 3.0)


@pytest.mark.parametrize("in_axes", [(0, None), (1, None)])
def test_grad_of_vmap_of_a_custom_gradient_uses_the_rule(in_axes):
    X = np.arange(6.0).reshape(3, 2) if in_axes[0] == 0 else np.arange(6.0).reshape(2, 3)
    w = np.array([1.0, 2.0])
    rows = X if in_axes[0] == 0 else X.T
    mapped = en.vmap(_scaled, in_axes=in_axes)
    gx, gw = en.grad(lambda a, b: en.sum(mapped(a, b)), argnums=(0, 1))(en.tensor(X),
                                                                        en.tensor(w))
    np.testing.assert_allclose(gx.numpy(), np.full(X.shape, 7.0))
    # w is shared by the batch: the sum of each row's 3 x.
    np.testing.assert_allclose(gw.numpy(), 3.0 * rows.sum(axis=0))
    # The same inside a traced function, and a tape begun inside the vmap.
    traced = en.function(en.grad(lambda a, b: en.sum(mapped(a, b)), argnums=1))
    np.testing.assert_allclose(traced(en.tensor(X), en.tensor(w)).numpy(), 3.0 * rows.sum(axis=0))
    per_row = en.vmap(en.grad(lambda x, b: en.sum(_scaled(x, b))), in_axes=in_axes)
    np.testing.assert_allclose(per_row(en.tensor(X), en.tensor(w)).numpy(),
                               np.full(rows.shape, 7.0))   # stacked along axis 0


@en.custom_jvp
def _sin_with_tangent_five(x):
    return en.sin(x)


@_sin_with_tangent_five.defjvp
def _sin_with_tangent_five_rule(primals, tangents):
    return en.sin(primals[0]), 5.0 * tangents[0]


def test_jvp_of_vmap_of_a_custom_jvp_uses_the_rule():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    t = np.arange(6.0).reshape(2, 3)
    y, dy = en.jvp(en.vmap(_sin_with_tangent_five), (en.tensor(x),), (en.tensor(t),))
    np.testing.assert_allclose(y.numpy(), np.sin(x))
    np.testing.assert_allclose(dy.numpy(), 5.0 * t)
    np.testing.assert_allclose(en.vmap(_sin_with_tangent_five)(en.tensor(x)).numpy(), np.sin(x))
