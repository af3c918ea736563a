"""Scans whose bodies broadcast, split and concatenate are compiled whole by the numba
lowering (graph/lowering/numba/numba_shapes.py), forward and backward: an LSTM written
as concat + one product + split, a tanh RNN with a written-out layer norm (its backward
broadcasts the row statistics back), a cell cutting its input by rows. Checked against
float64 numpy loops and central differences of them."""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.finite_diff import central_difference

numba = import_numba()

STEPS, BATCH, HIDDEN = 4, 3, 4


def lstm_concat(carry, x, p, ops):
    h, c = carry
    w, b = p
    i, f, g, o = ops.split(ops.concat([x, h], axis=1) @ w + b, 4, axis=1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    return (ops.sigmoid(o) * ops.tanh(c), c), c


def tanh_ln(h, x, p, ops):
    w, u, b, gamma, beta = p
    a = x @ w + h @ u + b
    mu = ops.mean(a, axis=-1, keepdims=True)
    var = ops.mean((a - mu) ** 2.0, axis=-1, keepdims=True)
    h = ops.tanh((a - mu) / ops.sqrt(var + 1e-5) * gamma + beta)
    return h, h


def rows_split(h, x, p, ops):
    # The input's first rows drive the state, its last row a bias broadcast over them.
    (w,) = p
    top, last = ops.split(x, [BATCH, 1], axis=0)
    h = ops.tanh(top @ w + ops.broadcast_to(last, (BATCH, HIDDEN)) * h)
    return h, h


class NumpyOps:
    split = staticmethod(lambda a, n, axis: np.split(a, np.cumsum(n)[:-1] if isinstance(
        n, list) else n, axis=axis))
    concat = staticmethod(np.concatenate)
    sigmoid = staticmethod(lambda a: 1.0 / (1.0 + np.exp(-a)))
    tanh, mean, sqrt = staticmethod(np.tanh), staticmethod(np.mean), staticmethod(np.sqrt)
    broadcast_to = staticmethod(np.broadcast_to)


class EngineOps:
    split, concat, sigmoid, tanh = (staticmethod(en.split), staticmethod(en.concat),
                                    staticmethod(en.sigmoid), staticmethod(en.tanh))
    mean, sqrt, broadcast_to = (staticmethod(en.mean), staticmethod(en.sqrt),
                                staticmethod(en.broadcast_to))


def _problem(name, rng):
    """``(cell, params, xs, targets, carry0)`` as float64 numpy arrays."""
    rows = BATCH + 1 if name == "rows_split" else BATCH
    xs = rng.standard_normal((STEPS, rows, HIDDEN))
    targets = rng.standard_normal((STEPS, BATCH, HIDDEN))
    h0 = np.zeros((BATCH, HIDDEN))
    if name == "lstm_concat":
        params = [rng.standard_normal((2 * HIDDEN, 4 * HIDDEN)) * 0.5,
                  rng.standard_normal(4 * HIDDEN) * 0.1]
        return lstm_concat, params, xs, targets, (h0, h0)
    if name == "tanh_ln":
        params = [rng.standard_normal((HIDDEN, HIDDEN)) * 0.5,
                  rng.standard_normal((HIDDEN, HIDDEN)) * 0.5, rng.standard_normal(HIDDEN) * 0.1,
                  1.0 + rng.standard_normal(HIDDEN) * 0.1, rng.standard_normal(HIDDEN) * 0.1]
        return tanh_ln, params, xs, targets, h0
    return rows_split, [rng.standard_normal((HIDDEN, HIDDEN)) * 0.5], xs, targets, h0


def _numpy_loss(cell, params, xs, targets, carry):
    outs = []
    for x in xs:
        carry, y = cell(carry, x, params, NumpyOps)
        outs.append(y)
    return np.mean((np.stack(outs) - targets) ** 2.0)


@pytest.mark.parametrize("name", ["lstm_concat", "tanh_ln", "rows_split"])
def test_a_scan_body_that_broadcasts_splits_or_concatenates_is_compiled(monkeypatch, name):
    monkeypatch.setattr(en.config, "lowering", "numba")
    cell, params, xs, targets, carry = _problem(name, np.random.default_rng(3))

    def loss(p, xs, targets, carry):
        _, ys = en.scan(lambda c, x: cell(c, x, p, EngineOps), carry, xs)
        return en.mean((ys - targets) ** 2.0)
    fn = en.function(en.value_and_grad(loss))
    tree = lambda c: tuple(en.tensor(a) for a in c) if isinstance(c, tuple) else en.tensor(c)
    args = (tuple(en.tensor(p) for p in params), en.tensor(xs), en.tensor(targets),
            tree(carry))
    graph = fn.graph_for(*args)
    assert [n.op.name for n in graph.nodes if n.op.name in ("scan", "compiled_region")] == \
        ["compiled_region"], graph.notes
    value, grads = fn(*args)
    np.testing.assert_allclose(float(value), _numpy_loss(cell, params, xs, targets, carry),
                               rtol=1e-12)
    for k, (got, p) in enumerate(zip(grads, params)):
        def at(pk, k=k):
            return _numpy_loss(cell, params[:k] + [pk] + params[k + 1:], xs, targets, carry)
        np.testing.assert_allclose(got.numpy(), central_difference(at, p), rtol=1e-6,
                                   atol=1e-9, err_msg=f"gradient {k}")


def test_a_scan_left_to_the_numpy_lowering_says_why_in_the_report(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numba")

    def f(h, xs):
        def body(h, x):
            h = en.cumsum(h * x, axis=-1)
            return h, h
        return en.scan(body, h, xs)[1]
    rng = np.random.default_rng(4)
    h0, xs = rng.standard_normal(3), rng.standard_normal((5, 3))
    fn = en.function(f)
    got = fn(en.tensor(h0), en.tensor(xs)).numpy()
    h, want = h0, []
    for x in xs:
        h = np.cumsum(h * x)
        want.append(h)
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-13)
    (note,) = [r.note for r in fn.optimization_report(en.tensor(h0), en.tensor(xs))
               if r.name == "compile_numba"]
    assert "numba lowering: a scan stays with the numpy lowering: op cumsum has no numba " \
        "form" in note, note
