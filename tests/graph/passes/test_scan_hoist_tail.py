"""scan_hoist leaves a hoisted product's elementwise tail of loop invariants in the loop
(graph/passes/scan_hoist.py, ``_below_elementwise_tail``): ``x_t @ W + b`` hoists the
product alone, and the bias is added inside the step (no pass over the whole stack
before the loop). Values and gradients against a numpy loop and finite differences,
numpy and C lowerings."""
import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference

T, B, NX, NH = 6, 3, 4, 5


def _rnn_loss(w, u, b, xs):
    def step(h, x):
        h = en.tanh(x @ w + b + h @ u)
        return h, h
    return en.sum(en.scan(step, en.zeros((B, NH), dtype=xs.dtype), xs)[1] ** 2.0)


def _numpy_rnn_loss(w, u, b, xs):
    h, total = np.zeros((B, NH)), 0.0
    for x in xs:
        h = np.tanh(x @ w + b + h @ u)
        total += np.sum(h ** 2)
    return total


def _args():
    rng = np.random.default_rng(4)
    return [rng.standard_normal(s) * scale for s, scale in
            (((NX, NH), 0.5), ((NH, NH), 0.4), ((NH,), 0.3), ((T, B, NX), 1.0))]


def _stacked_ops(scan):
    """The ops computing the scan's per-step inputs (a batched product is a reshape of a
    product of a reshape: the reshapes skipped)."""
    found = []
    for n in scan.inputs[scan.params["n_carry"]:scan.params["n_carry"] + scan.params["n_x"]]:
        while n.op.name == "reshape":
            n = n.inputs[0]
        found.append(n.op.name)
    return found


def _hoisted_graph(fn, args):
    graph = en.function(fn, passes=["cleanup", "scan_hoist"]).graph_for(*args)
    (scan,) = [n for n in graph.nodes if n.op.name == "scan"]
    return graph, scan


def test_the_bias_stays_in_the_loop_and_the_product_leaves():
    args = [en.tensor(a) for a in _args()]
    graph, scan = _hoisted_graph(_rnn_loss, args)
    assert _stacked_ops(scan) == ["matmul"], graph     # (the xs no longer read)
    body = scan.params["body"].graph
    names = [n.op.name for n in body.nodes]
    assert names.count("matmul") == 1 and "add" in names, names     # h @ u, + b


def test_a_tail_reading_two_stacked_values_is_hoisted_with_them():
    def two_products(w, u, b, xs):
        def step(h, x):
            h = en.tanh(x @ w + en.sin(x) @ w + h @ u)
            return h, h
        return en.sum(en.scan(step, en.zeros((B, NH), dtype=xs.dtype), xs)[1])
    args = [en.tensor(a) for a in _args()]
    graph, scan = _hoisted_graph(two_products, args)
    # one stacked sum read a step, not the two products' stacks
    assert _stacked_ops(scan) == ["add"], graph


@pytest.mark.parametrize("lowering", ["numpy", "c"])
def test_values_and_gradients_against_numpy_and_finite_differences(monkeypatch, lowering):
    monkeypatch.setattr(en.config, "lowering", lowering)
    arrays = _args()
    fn = en.function(en.value_and_grad(_rnn_loss, argnums=(0, 1, 2)))
    loss, grads = fn(*[en.tensor(a) for a in arrays])
    np.testing.assert_allclose(loss.numpy(), _numpy_rnn_loss(*arrays), rtol=1e-12)
    for k, g in enumerate(grads):
        def at(v, k=k):
            return _numpy_rnn_loss(*[v if j == k else a for j, a in enumerate(arrays)])
        np.testing.assert_allclose(g.numpy(), central_difference(at, arrays[k]),
                                   rtol=1e-6, atol=1e-8, err_msg=f"argument {k}")
