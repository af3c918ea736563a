"""The rewrites a forward-over-reverse Hessian-vector product needs (issue #46).

* ``simplify``: ``x ** 0`` -> ones. The second derivative of ``u ** 2`` leaves
  ``u ** 0``; kept, a compiled kernel called pow() once an element (8 ms of a 10 ms
  HVP's elementwise work on the autoencoder).
* ``layout``: ``transpose(p + q)`` of products nothing else reads -> ``transpose(p) +
  transpose(q)``, each product then computed in the transposed layout (the tangent of a
  transposed weight's gradient), so the sum walks contiguous arrays.

Values are checked against central differences of the gradient in float64, against
eager mode and against the unoptimized graph, in float32 and float64; and each rewrite
leaves alone what it must not touch.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.passes.layout import layout
from engine.graph.passes.simplify import simplify
from support.pass_helpers import assert_matches, assert_same_bits, count, run_pass

TOL = {"float32": 2e-3, "float64": 1e-6}


def _problem(dtype, batch=6, features=7, hidden=5, seed=0):
    """A tied-weight autoencoder's parameters, data and a direction, as numpy arrays."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((features, hidden)) * 0.5
    b1, b2 = rng.standard_normal(hidden) * 0.1, rng.standard_normal(features) * 0.1
    x = rng.uniform(0, 1, (batch, features))
    tw, tb1, tb2 = (rng.standard_normal(a.shape) for a in (w, b1, b2))
    return [a.astype(dtype) for a in (w, b1, b2, x)], [a.astype(dtype) for a in (tw, tb1, tb2)]


def _loss(w, b1, b2, x):
    h = en.sigmoid(x @ w + b1)
    y = en.sigmoid(h @ en.transpose(w) + b2)
    return en.mean((y - x) ** 2.0)


_grad = en.grad(_loss, argnums=(0, 1, 2))


def _hvp(w, b1, b2, x, tw, tb1, tb2):
    return en.jvp(lambda w, b1, b2: _grad(w, b1, b2, x), (w, b1, b2), (tw, tb1, tb2))[1]


def _fd_hvp(params, direction, eps=1e-6):
    """Central differences of the float64 gradient along the direction."""
    p64 = [np.asarray(a, np.float64) for a in params]
    d64 = [np.asarray(d, np.float64) for d in direction] + [0.0]
    plus = _grad(*[en.tensor(a + eps * d) for a, d in zip(p64, d64)])
    minus = _grad(*[en.tensor(a - eps * d) for a, d in zip(p64, d64)])
    return [(np.asarray(a) - np.asarray(b)) / (2 * eps) for a, b in zip(plus, minus)]


def _close(got, want, dtype):
    for g, w in zip(got, want):
        g = np.asarray(g, np.float64)
        scale = max(float(np.max(np.abs(w))), 1e-30)
        assert float(np.max(np.abs(g - w))) / scale < TOL[dtype]


@pytest.mark.parametrize("lowering", ["auto", "numpy"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hvp_of_a_squared_error_matches_differences_of_the_gradient(dtype, lowering):
    params, direction = _problem(dtype)
    args = [en.tensor(a) for a in params + direction]
    previous = en.config.lowering
    en.config.lowering = lowering
    try:
        f = en.function(_hvp)
        got = f(*args)
        graph = f.graph_for(*args)
    finally:
        en.config.lowering = previous
    _close(got, _fd_hvp(params, direction), dtype)
    assert_matches(got, _hvp(*args), "graph vs eager", rtol=TOL[dtype])
    # Neither rewrite's pattern is left: no pow, alone or inside a fused kernel, and no
    # transposed sum of products.
    assert count(graph, "pow") == 0
    members = [op for n in graph.nodes for op in n.meta.get("fused_ops", ())]
    assert members and "pow" not in members
    assert not _transposed_sums(graph)


def test_the_hvp_graph_loses_its_power_and_its_transposed_sum():
    params, direction = _problem("float64")
    args = [en.tensor(a) for a in params + direction]
    cleaned = en.function(_hvp, passes=["cleanup"]).graph_for(*args)
    assert count(cleaned, "pow") == 0
    assert not _transposed_sums(cleaned)
    # Both patterns are there before the passes (the sum once simplify has run).
    assert count(en.function(_hvp, optimize=False).graph_for(*args), "pow") > 0
    assert _transposed_sums(en.function(_hvp, passes=["simplify", "dce"]).graph_for(*args))


def _transposed_sums(graph):
    """Transposes of sums (or differences) of matrix products."""
    return [n for n in graph.nodes if n.op is en.ops.transpose_op
            and n.inputs[0].op in (en.ops.add_op, en.ops.sub_op)
            and all(x.op is en.ops.matmul_op for x in n.inputs[0].inputs)]


# ---- simplify: x ** 0 ----------------------------------------------------------------------

SPECIAL = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-300]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex128"])
def test_power_zero_is_ones_as_numpy_computes_it(dtype):
    x = np.array(SPECIAL if dtype != "int64" else [0, -3, 7, 2], dtype=dtype)
    zero = np.zeros((), dtype)

    def fn(x):
        return x ** zero

    plain = en.function(fn, optimize=False)
    f = en.function(fn, passes=["simplify", "dce"])
    assert count(f.graph_for(x), "pow") == 0
    got = f(x)
    np.testing.assert_array_equal(got.numpy(), np.power(x, zero))
    assert_same_bits(got, plain(x), "x ** 0")


def test_power_zero_broadcasts_to_the_result_shape_and_dtype():
    x = np.arange(3.0, dtype=np.float32)
    zeros = np.zeros((2, 1))                   # float64 exponent: the result is float64
    f = en.function(lambda x: x ** zeros, passes=["simplify", "dce"])
    got = f(x).numpy()
    want = np.power(x, zeros)
    assert got.shape == want.shape == (2, 3) and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("exponent", [np.array(0.5), np.array([0.0, 1.0, 0.0])],
                         ids=["half", "partly-zero"])
def test_other_constant_powers_are_left_alone(exponent):
    x = np.array([0.5, 2.0, 3.0])
    f = en.function(lambda x: x ** exponent, optimize=False)
    g, changed = run_pass(simplify, f.graph_for(x))
    assert not changed and count(g, "pow") == 1


def test_a_zero_exponent_known_only_at_run_time_is_left_alone():
    x, y = np.array([np.nan, 2.0]), np.array(0.0)
    f = en.function(lambda x, y: x ** y, optimize=False)
    g, changed = run_pass(simplify, f.graph_for(x, y))
    assert not changed and count(g, "pow") == 1


def test_an_unknown_dimension_is_left_alone():
    spec = en.TensorSpec((None, 3), "float64")
    f = en.function(lambda x: x ** 0.0, input_signature=[spec], optimize=False)
    g, changed = run_pass(simplify, f.get_concrete_function(np.ones((2, 3))).graph)
    assert not changed and count(g, "pow") == 1


# ---- layout: transpose of a sum of products --------------------------------------------------

def _transposed_sum(a, b, c, d):
    return en.transpose(a @ b + c @ d)


def _mats(dtype, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in ((4, 3), (3, 5), (4, 2), (2, 5))]


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_transposed_sum_of_products_is_computed_transposed(dtype, op):
    a, b, c, d = _mats(dtype)
    combine = en.add if op == "add" else en.subtract

    def fn(a, b, c, d):
        return en.transpose(combine(a @ b, c @ d))

    f = en.function(fn, passes=["simplify", "layout", "dce"])
    g = f.graph_for(a, b, c, d)
    for node in g.nodes:                        # transposes feed only the products now
        if node.op is en.ops.transpose_op:
            assert node.inputs[0].op not in (en.ops.matmul_op, en.ops.add_op, en.ops.sub_op)
    want = (a.astype(np.float64) @ b + (1 if op == "add" else -1) * (c.astype(np.float64) @ d)).T
    np.testing.assert_allclose(f(a, b, c, d).numpy(), want, rtol=TOL[dtype], atol=TOL[dtype])


def test_a_sum_read_elsewhere_is_left_alone():
    a, b, c, d = _mats("float64")

    def fn(a, b, c, d):
        s = a @ b + c @ d
        return en.transpose(s), s * 2.0

    f = en.function(fn, optimize=False)
    g, changed = run_pass(layout, f.graph_for(a, b, c, d))
    assert not changed and count(g, "transpose") == 1
    s = a @ b + c @ d
    got = en.function(fn, passes=["layout"])(a, b, c, d)
    np.testing.assert_allclose(got[0].numpy(), s.T)
    np.testing.assert_allclose(got[1].numpy(), s * 2.0)


def _product_read_twice(a, b, c, d):
    p = c @ d
    return en.transpose(a @ b + p), p


@pytest.mark.parametrize("fn", [
    _product_read_twice,
    lambda a, b, c, d: en.transpose(a @ b + en.ones((4, 5))),      # not a product
    lambda a, b, c, d: en.transpose(a @ b * (c @ d)),              # not a sum
], ids=["product-read-twice", "not-a-product", "not-a-sum"])
def test_other_transposed_values_are_left_alone(fn):
    mats = _mats("float64")
    f = en.function(fn, optimize=False)
    g, changed = run_pass(layout, f.graph_for(*mats))
    assert not changed
    assert_matches(en.function(fn, passes=["layout"])(*mats), f(*mats), "layout", rtol=1e-12)
