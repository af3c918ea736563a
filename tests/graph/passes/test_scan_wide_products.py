"""Loop products sharing a left operand (graph/passes/scan_wide_products.py): in a scan
body, ``h @ W`` and ``h @ dW`` (a JVP's step) become one product by ``[W | dW]``,
concatenated once before the loop.

Checked against numpy (a hand-written forward-mode loop in float64), central
differences, the unoptimized graph and eager, in float32 and float64; the bodies show
the wider product; what the pass must leave alone keeps its products; under bitwise
numerics nothing changes.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import scan_op
from support.bitwise import numerics
from support.models import mean_square_rnn_loss, rnn_direction_problem
from support.pass_helpers import numpy_lowering  # noqa: F401 (a fixture)

RTOL = {np.float32: 2e-5, np.float64: 1e-12}
STEPS, BATCH, HIDDEN, INPUTS = 6, 4, 8, 3


def _problem(dtype, seed=0):
    return rnn_direction_problem(dtype, seed, STEPS, BATCH, HIDDEN, INPUTS, w_scale=0.4)


_loss = mean_square_rnn_loss


def _jvp(w, u, b, xs, tw, tu, tb):
    return en.jvp(lambda w, u, b: _loss(w, u, b, xs), (w, u, b), (tw, tu, tb))


def _numpy_jvp(w, u, b, xs, tw, tu, tb):
    """The loss and its derivative along (tw, tu, tb), forward mode by hand."""
    n = xs.shape[0] * xs.shape[1]
    h, dh = np.zeros((xs.shape[1], w.shape[0])), np.zeros((xs.shape[1], w.shape[0]))
    loss = tangent = 0.0
    for x in xs:
        a = np.tanh(h @ w + x @ u + b)
        da = (1 - a * a) * (dh @ w + h @ tw + x @ tu + tb)
        h, dh = a, da
        loss += np.sum(a * a) / n
        tangent += np.sum(2 * a * da) / n
    return loss, tangent


def _scan_bodies(graph):
    return [n.params["body"].graph for n in graph.nodes if n.op is scan_op]


def _product_shapes(body):
    return sorted(tuple(n.shape) for n in body.nodes if n.op.name == "matmul")


@pytest.mark.usefixtures("numpy_lowering")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_jvp_step_computes_h_at_w_and_h_at_dw_as_one_product(dtype):
    arrays, tangents = _problem(dtype)
    args = [en.tensor(a) for a in arrays + tangents]
    f = en.function(_jvp)
    (body,) = _scan_bodies(f.graph_for(*args))
    # h @ [W | dW] and dh @ W: two products a step, not three
    assert _product_shapes(body) == [(BATCH, HIDDEN), (BATCH, 2 * HIDDEN)]
    got = [float(v) for v in f(*args)]
    want = _numpy_jvp(*[a.astype(np.float64) for a in arrays + tangents])
    unoptimized = [float(v) for v in en.function(_jvp, optimize=False)(*args)]
    for g, w, u in zip(got, want, unoptimized):
        assert g == pytest.approx(w, rel=RTOL[dtype] * 10)
        assert g == pytest.approx(u, rel=RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_default_lowering_agrees_with_numpy_and_finite_differences(dtype):
    arrays, tangents = _problem(dtype, seed=1)
    args = [en.tensor(a) for a in arrays + tangents]
    loss, tangent = (float(v) for v in en.function(_jvp)(*args))
    a64 = [a.astype(np.float64) for a in arrays]
    want_loss, want_tangent = _numpy_jvp(*a64, *[t.astype(np.float64) for t in tangents])
    eps = 1e-6
    shifted = [_numpy_jvp(*[a + s * eps * t for a, t in zip(a64[:3], tangents)], a64[3],
                          *tangents)[0] for s in (1, -1)]
    assert loss == pytest.approx(want_loss, rel=RTOL[dtype] * 10)
    assert tangent == pytest.approx(want_tangent, rel=RTOL[dtype] * 10)
    assert want_tangent == pytest.approx((shifted[0] - shifted[1]) / (2 * eps), rel=1e-6)


@pytest.mark.usefixtures("numpy_lowering")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_hvp_backward_loop_merges_the_transposed_weights(dtype):
    arrays, tangents = _problem(dtype, seed=2)
    args = [en.tensor(a) for a in arrays + tangents]
    grad = en.grad(_loss, argnums=(0, 1, 2))

    def hvp(w, u, b, xs, tw, tu, tb):
        return en.jvp(lambda w, u, b: grad(w, u, b, xs), (w, u, b), (tw, tu, tb))[1]
    f = en.function(hvp)
    bodies = _scan_bodies(f.graph_for(*args))
    # each loop reads its two weights side by side: d @ [W.T | dW.T] in the backward one
    assert len(bodies) == 2 and all((BATCH, 2 * HIDDEN) in _product_shapes(b) for b in bodies)
    got = [t.numpy() for t in f(*args)]
    # the reference: central differences of eager float64 gradients along the tangent
    a64 = [a.astype(np.float64) for a in arrays]
    eps = 1e-5
    plus = grad(*[en.tensor(a + eps * t) for a, t in zip(a64[:3], tangents)], en.tensor(a64[3]))
    minus = grad(*[en.tensor(a - eps * t) for a, t in zip(a64[:3], tangents)],
                 en.tensor(a64[3]))
    unoptimized = [t.numpy() for t in en.function(hvp, optimize=False)(*args)]
    for g, p, m, u in zip(got, plus, minus, unoptimized):
        fd = (p.numpy() - m.numpy()) / (2 * eps)
        scale = float(np.max(np.abs(fd)))
        np.testing.assert_allclose(g, fd, rtol=0, atol=max(RTOL[dtype] * 50, 1e-7) * scale)
        np.testing.assert_allclose(g, u, rtol=0, atol=RTOL[dtype] * scale)


@pytest.mark.usefixtures("numpy_lowering")
def test_vmap_of_the_jvp_merges_the_batched_products():
    arrays, tangents = _problem(np.float64, seed=3)
    w, u, b = (en.tensor(a) for a in arrays[:3])
    tw, tu, tb = (en.tensor(t) for t in tangents)
    rng = np.random.default_rng(3)
    sequences = rng.standard_normal((3,) + arrays[3].shape)      # three inputs, one vmap

    def per_sequence(xs):
        return _jvp(w, u, b, xs, tw, tu, tb)[1]
    f = en.function(lambda seqs: en.vmap(per_sequence)(seqs))
    (body,) = _scan_bodies(f.graph_for(en.tensor(sequences)))
    assert (3 * BATCH, 2 * HIDDEN) in _product_shapes(body)   # the examples as rows
    got = f(en.tensor(sequences)).numpy()
    want = [_numpy_jvp(*arrays[:3], xs, *tangents)[1] for xs in sequences]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.usefixtures("numpy_lowering")
def test_large_products_and_products_of_different_rows_are_left_alone():
    arrays, tangents = _problem(np.float64, seed=4)
    args = [en.tensor(a) for a in arrays + tangents]
    with en.config.cost.override(batched_product_max_work=BATCH * HIDDEN * HIDDEN - 1):
        (body,) = _scan_bodies(en.function(_jvp).graph_for(*args))
    assert _product_shapes(body) == [(BATCH, HIDDEN)] * 3

    def two_carries(h0, xs, w, v):     # h @ w and g @ v: no shared left operand
        def step(c, x):
            h, g = c
            return (en.tanh(h @ w + x), en.tanh(g @ v + x)), en.sum(h * g)
        return en.scan(step, (h0, h0), xs)[1]
    rng = np.random.default_rng(5)
    h0, xs, w, v = (rng.standard_normal(s) for s in
                    ((BATCH, HIDDEN), (STEPS, BATCH, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, HIDDEN)))
    (body,) = _scan_bodies(en.function(two_carries).graph_for(
        *(en.tensor(a) for a in (h0, xs, w, v))))
    assert _product_shapes(body) == [(BATCH, HIDDEN)] * 2


@pytest.mark.usefixtures("numpy_lowering")
def test_bitwise_numerics_keep_the_products_apart():
    arrays, tangents = _problem(np.float32, seed=6)
    args = [en.tensor(a) for a in arrays + tangents]
    with numerics("bitwise"):
        (body,) = _scan_bodies(en.function(_jvp).graph_for(*args))
    # x @ U, x @ dU stay in the loop too (not hoisted under bitwise numerics)
    assert _product_shapes(body) == [(BATCH, HIDDEN)] * 5
