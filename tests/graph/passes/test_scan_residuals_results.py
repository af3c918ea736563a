"""scan_residuals with an earlier scan's stacked per-step results as leaves: a later loop
that recomputes values from the earlier loop's results reads the earlier loop's stacks.

Forward over reverse (``jvp(grad(loss))``, a Hessian-vector product) of a loss over
``en.scan`` gives a forward loop that stacks the carries entering each step as results
(``h_{t-1}``, ``dh_{t-1}``) and a backward loop that recomputed the forward step from
those stacks: ``h_{t-1} @ W``, ``dh_{t-1} @ W``, ``h_{t-1} @ dW``, three products a step
of the eight the HVP needs. After the pass the backward body holds no product of the
forward step and no tanh. The HVP is checked against central differences (float64) of
a numpy loop's gradient, itself by central differences, and against the unoptimized
graph, in float32 and float64, under the numpy and C lowerings; the rewrite is also
checked on a pair of scans written by hand in another style, and left alone where the
stacked result is not the value of the same step.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op
from support.bitwise import numerics
from support.finite_diff import central_difference
from support.models import mean_square_rnn_loss, rnn_direction_problem
from support.pass_helpers import numpy_lowering  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("numpy_lowering")

TOL = {np.float32: 2e-3, np.float64: 1e-6}
STEPS, BATCH, HIDDEN, INPUTS = 6, 3, 4, 3


def _problem(dtype, seed=0):
    return rnn_direction_problem(dtype, seed, STEPS, BATCH, HIDDEN, INPUTS)


_loss = mean_square_rnn_loss


def _numpy_loss(w, u, b, xs):
    h, total = np.zeros((xs.shape[1], w.shape[0])), 0.0
    for x in xs:
        h = np.tanh(h @ w + x @ u + b)
        total += np.sum(h * h)
    return total / (xs.shape[0] * xs.shape[1])


_grad = en.grad(_loss, argnums=(0, 1, 2))


def _hvp(w, u, b, xs, tw, tu, tb):
    return en.jvp(lambda w, u, b: _grad(w, u, b, xs), (w, u, b), (tw, tu, tb))[1]


def _numpy_hvp(params, direction, eps=1e-4):
    """Central differences along the direction of the numpy loop's gradient, itself by
    central differences (float64)."""
    p64 = [np.asarray(a, np.float64) for a in params]
    d64 = [np.asarray(d, np.float64) for d in direction]

    def gradient(sign):
        at = [a + sign * eps * d for a, d in zip(p64[:3], d64)] + [p64[3]]
        return [central_difference(
            lambda v, k=k: _numpy_loss(*[v if j == k else a for j, a in enumerate(at)]),
            at[k], eps=1e-5) for k in range(3)]
    return [(p - m) / (2 * eps) for p, m in zip(gradient(1), gradient(-1))]


def _backward(graph):
    return _backward_scan(graph).params["body"].graph


def _backward_scan(graph):
    (scan,) = [n for n in graph.nodes if n.op is scan_op and n.params["reverse"]]
    return scan


def _close(got, want, dtype):
    for g, w in zip(got, want):
        g = np.asarray(g, np.float64)
        scale = max(float(np.max(np.abs(w))), 1e-30)
        assert float(np.max(np.abs(g - w))) / scale < TOL[dtype]


def test_the_hvp_backward_loop_recomputes_no_forward_product():
    params, direction = _problem(np.float64)
    args = [en.tensor(a) for a in params + direction]
    fn = en.function(_hvp)
    scan = _backward_scan(fn.graph_for(*args))
    body = scan.params["body"].graph
    ops = [n.op.name for n in body.nodes]
    assert "tanh" not in ops, ops
    # The backward step's products: the carry's gradient and its tangent (g @ W.T,
    # dg @ W.T, g @ dW.T, the first and last as g @ [W.T | dW.T]), the weights'
    # gradients' tangents (dh.T @ g, h.T @ dg, x.T @ dg); none of the forward step's
    # h @ W, dh @ W, h @ dW (a product of a captured weight with no transpose: the
    # function's own input).
    outer = dict(zip(body.inputs, scan.inputs))
    forward_products = [n for n in body.nodes if n.op.name == "matmul" and
                        n.inputs[1] in outer and outer[n.inputs[1]].op.name == "placeholder"]
    assert not forward_products, [str(n) for n in forward_products]
    _close(fn(*args), _numpy_hvp(params, direction), np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lowering", ["numpy", "c"])
def test_the_hvp_matches_differences_of_the_gradient_and_the_unoptimized_graph(dtype, lowering):
    params, direction = _problem(dtype, seed=1)
    args = [en.tensor(a) for a in params + direction]
    want = en.function(_hvp, optimize=False)(*args)
    with numerics(en.config.numerics, lowering):
        got = en.function(_hvp)(*args)
    _close(got, _numpy_hvp(params, direction), dtype)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=TOL[dtype],
                                   atol=TOL[dtype] * float(np.max(np.abs(w.numpy()))))


# ---- the same pattern written by hand ---------------------------------------------------
def _two_loops(w, xs, shift):
    """A forward loop that returns the state entering each step as a result, and a
    second loop over the same steps that reads those states (``shift``: a step later)
    and computes ``tanh(h @ w + x)`` from them again."""
    def first(h, x):
        new = en.tanh(h @ w + x)
        return new, h
    _, entering = en.scan(first, en.zeros((xs.shape[1], w.shape[0]), dtype=xs.dtype), xs)
    if shift:
        entering = en.concatenate([entering[1:], entering[:1]], axis=0)

    def second(acc, hx):
        h, x = hx
        return acc + en.sum(en.tanh(h @ w + x) * x), acc
    total, _ = en.scan(second, en.zeros((), dtype=xs.dtype), (entering, xs))
    return total


def _numpy_two_loops(w, xs, shift):
    h, entering = np.zeros((xs.shape[1], w.shape[0])), []
    for x in xs:
        entering.append(h)
        h = np.tanh(h @ w + x)
    if shift:
        entering = entering[1:] + entering[:1]
    return sum(np.sum(np.tanh(e @ w + x) * x) for e, x in zip(entering, xs))


@pytest.mark.parametrize("shift", [False, True])
def test_a_later_loop_reads_an_earlier_loops_stacked_results(shift):
    rng = np.random.default_rng(3)
    w, xs = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal((5, 2, 4))
    fn = en.function(lambda w, xs: _two_loops(w, xs, shift))
    # The cleanup passes alone: scan_hoist would take the loop-invariant work out of the
    # second loop either way.
    graph = en.function(lambda w, xs: _two_loops(w, xs, shift), passes=["cleanup"]).graph_for(
        en.tensor(w), en.tensor(xs))
    later = [n for n in graph.topo_order() if n.op is scan_op][-1]
    ops = [n.op.name for n in later.params["body"].graph.nodes]
    # The same step's state: read from the first loop. A step later: recomputed.
    assert ("tanh" in ops) == shift and ("matmul" in ops) == shift, ops
    got = float(fn(en.tensor(w), en.tensor(xs)))
    np.testing.assert_allclose(got, _numpy_two_loops(w, xs, shift), rtol=1e-12)
    want = en.function(lambda w, xs: _two_loops(w, xs, shift), optimize=False)(
        en.tensor(w), en.tensor(xs))
    np.testing.assert_allclose(got, float(want), rtol=1e-12)
