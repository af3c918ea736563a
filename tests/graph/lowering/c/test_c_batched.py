"""Batched matrix products and max/min reductions in whole C graphs
(``graph/lowering/c/c_batched.py``): against float64 numpy references, NaN rules, and an
attention block's loss and gradient (softmax, batched products over heads) against
eager and finite differences, each graph one C function."""
import math

import numpy as np
import pytest

import engine as en
from support.compilers import needs_c_compiler
from support.finite_diff import central_difference

pytestmark = needs_c_compiler


@pytest.fixture
def c_lowering(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "c")


def _one_c_function(fn, *args):
    graph = fn.graph_for(*args)
    compiled = [n for n in graph.nodes if n.op.name == "compiled_region"]
    assert len(compiled) == 1 and compiled[0].meta.get("backend", "c") == "c", graph.notes
    return compiled[0]


PRODUCTS = [((3, 4, 5), (3, 5, 2)), ((2, 3, 4, 5), (3, 5, 2)), ((2, 1, 4, 5), (3, 5, 2)),
            ((3, 4, 5), (5, 2)), ((4, 5), (3, 5, 2)), ((2, 3, 4, 5), (1, 5, 6))]


@pytest.mark.parametrize("shapes", PRODUCTS, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_batched_products_match_float64_numpy(c_lowering, shapes, dtype):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(s).astype(dtype) for s in shapes)
    fn = en.function(lambda a, b: (a @ b) * 1.5)
    args = en.tensor(x), en.tensor(y)
    _one_c_function(fn, *args)
    got = fn(*args).numpy()
    want = np.matmul(x.astype(np.float64), y.astype(np.float64)) * 1.5
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_stack_times_a_transposed_matrix(c_lowering):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 4, 5)), rng.standard_normal((2, 5))
    fn = en.function(lambda a, b: a @ en.transpose(b) + 1.0)
    args = en.tensor(x), en.tensor(w)
    _one_c_function(fn, *args)
    np.testing.assert_allclose(fn(*args).numpy(), x @ w.T + 1.0, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_max_and_min_over_axes_with_numpy_nan_rule(c_lowering, axis, keepdims):
    x = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    x[1, 2, 3] = np.nan
    x[0, 0, 0] = -np.inf
    fn = en.function(lambda a: (en.max(a, axis=axis, keepdims=keepdims) * 2.0,
                                en.min(a, axis=axis, keepdims=keepdims) * 2.0))
    _one_c_function(fn, en.tensor(x))
    got_max, got_min = (t.numpy() for t in fn(en.tensor(x)))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got_max, np.max(x, axis=axis, keepdims=keepdims) * 2)
        np.testing.assert_array_equal(got_min, np.min(x, axis=axis, keepdims=keepdims) * 2)


def _attention_loss(x, wq, wk, wv):
    batch, seq, d = x.shape
    heads = 2

    def split(a):
        return en.transpose(en.reshape(a, (batch, seq, heads, -1)), (0, 2, 1, 3))
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = q @ en.swapaxes(k, -1, -2) * float(1.0 / math.sqrt(d // heads))
    att = en.softmax(scores, axis=-1) @ v
    att = en.reshape(en.transpose(att, (0, 2, 1, 3)), (batch, seq, d))
    return en.mean(en.gelu(att) ** 2.0)


def _attention64(x, wq, wk, wv):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    batch, seq, d = x.shape

    def split(a):
        return a.reshape(batch, seq, 2, -1).transpose(0, 2, 1, 3)
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(d // 2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    att = (e / e.sum(axis=-1, keepdims=True)) @ v
    att = att.transpose(0, 2, 1, 3).reshape(batch, seq, d)
    return np.mean((0.5 * att * (1 + erf(att / math.sqrt(2.0)))) ** 2)


def test_attention_loss_and_gradient_in_one_c_function(c_lowering):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 8))
    ws = [rng.standard_normal((8, 8)) / 3.0 for _ in range(3)]
    fn = en.function(en.value_and_grad(_attention_loss, argnums=(1, 2, 3)))
    args = [en.tensor(a) for a in [x] + ws]
    _one_c_function(fn, *args)
    loss, grads = fn(*args)
    np.testing.assert_allclose(float(loss), _attention64(x, *ws), rtol=1e-12)
    for k, g in enumerate(grads):
        def at(w, k=k):
            given = list(ws)
            given[k] = w
            return _attention64(x, *given)
        np.testing.assert_allclose(g.numpy(), central_difference(at, ws[k]), rtol=1e-5,
                                   atol=1e-9)
    # float32: the C function agrees with eager to the op database's tolerances.
    args32 = [en.tensor(a.astype(np.float32)) for a in [x] + ws]
    loss32, grads32 = fn(*args32)
    eager_loss, eager_grads = en.value_and_grad(_attention_loss, argnums=(1, 2, 3))(*args32)
    np.testing.assert_allclose(float(loss32), float(eager_loss), rtol=1.3e-6)
    for g, w in zip(grads32, eager_grads):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-6)
