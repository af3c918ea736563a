"""The copies a C time loop no longer makes each step (graph/lowering/c/c_scan.py,
c_graph_ops.py): a split's pieces along the last axis read in place through the rows, an
elementwise value read only by a concat computed in the concat's loop, stacked results
written straight into their stacks' rows, and the summed weight gradient of a concat
``[x_t, h_t]`` taken as one product per part from the stacks the scan already reads.
Values and gradients agree with a numpy loop (finite differences for the gradients),
with eager mode, with the numpy lowering, and bit for bit with eager under bitwise
numerics."""
import re

import numpy as np
import pytest

import engine as en
from support.bitwise import assert_same_bits, numerics
from support.compilers import needs_c_compiler
from support.finite_diff import central_difference
from support.models import concat_lstm_loss, numpy_concat_lstm_loss

pytestmark = needs_c_compiler
T, B, NX, NH = 5, 3, 4, 6


@pytest.fixture(params=["whole", "scans"])
def in_c(request, monkeypatch):
    """The C lowering: the whole graph as one function, or (whole graphs declined, as a
    graph of large values is) each scan written alone with its products hoisted."""
    monkeypatch.setattr(en.config, "lowering", "c")
    if request.param == "whole":
        yield
        return
    with en.config.cost.override(whole_graph_small_elements=8, whole_graph_max_elements=8,
                                 c_scan_hoist_min_work=0):
        yield


def _args(dtype):
    rng = np.random.default_rng(1)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s, scale in
            (((NX + NH, 4 * NH), 0.5), ((4 * NH,), 0.1), ((T, B, NX), 1.0))]


def _sources(fn, *args):
    graph = fn.graph_for(*args)
    regions = [n for n in graph.nodes if n.op.name == "compiled_region"]
    assert regions and all(n.meta["backend"] == "c" for n in regions), graph.notes
    assert not [n for n in graph.nodes if n.op.name == "scan"], graph.notes
    return [n.meta["kernel_source"] for n in regions]


# A line that only moves values (`dst[index] = src[index];`).
_COPY = re.compile(r"^\s*(?P<dst>[\w() +*]+)\[(?P<di>[^\]]+)\] = (?P<src>[\w() +*]+)"
                   r"\[(?P<si>[^\]]+)\];$")


def _gate_copies_in_loops(source):
    """The lines inside a time loop that copy a block of the gates' columns (rows of
    ``4 * NH``) on its own: a split's gate moved out of the gates, or a gate's gradient
    moved into their concat."""
    found, depth_of_loop = [], None
    gate_column = f" * {4 * NH} + ("
    for line in source.splitlines():
        depth = len(line) - len(line.lstrip())
        if re.match(r"\s*for \(int64_t t\d+ ", line):
            depth_of_loop = depth
            continue
        if depth_of_loop is not None and depth <= depth_of_loop:
            depth_of_loop = None
        m = _COPY.match(line)
        if depth_of_loop is not None and m and (gate_column in m["di"] or
                                                gate_column in m["si"]):
            found.append(line.strip())
    return found


def _gemm_rows_after_loops(source):
    """The ``k_`` of each BLAS call outside the time loops (12 spaces and more: inside)."""
    return [int(line.split("k_ = ")[1].split(",")[0]) for line in source.splitlines()
            if "const int m_ = " in line and not line.startswith(" " * 12)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_concat_lstm_in_c_moves_no_gate_and_no_concat_a_step(in_c, dtype):
    w, b, xs = (en.tensor(a) for a in _args(dtype))
    fn = en.function(en.value_and_grad(concat_lstm_loss, argnums=(0, 1)))
    sources = _sources(fn, w, b, xs)
    for source in sources:
        assert _gate_copies_in_loops(source) == [], source
    # The weight gradient [X; H].T @ D after the backward loop: one product per part,
    # each over every step's rows, read from the xs and hs stacks.
    after = [k for s in sources for k in _gemm_rows_after_loops(s)]
    assert after.count(T * B) >= 2, after
    loss, (gw, gb) = fn(w, b, xs)
    want_loss, (want_w, want_b) = en.value_and_grad(concat_lstm_loss, argnums=(0, 1))(w, b, xs)
    rtol = 2e-5 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=rtol)
    np.testing.assert_allclose(gw.numpy(), want_w.numpy(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(gb.numpy(), want_b.numpy(), rtol=rtol, atol=rtol)


def test_the_concat_lstm_in_c_against_numpy_and_finite_differences(in_c):
    # (the gradient of xs too: the gates' gradient is then both a stacked result and
    # the summed weight product's factor, two stacks written from one value)
    w, b, xs = _args(np.float64)
    fn = en.function(en.value_and_grad(concat_lstm_loss, argnums=(0, 1, 2)))
    loss, (gw, gb, gx) = fn(en.tensor(w), en.tensor(b), en.tensor(xs))
    np.testing.assert_allclose(loss.numpy(), numpy_concat_lstm_loss(w, b, xs), rtol=1e-12)
    num_w = central_difference(lambda v: numpy_concat_lstm_loss(v, b, xs), w)
    num_b = central_difference(lambda v: numpy_concat_lstm_loss(w, v, xs), b)
    num_x = central_difference(lambda v: numpy_concat_lstm_loss(w, b, v), xs)
    np.testing.assert_allclose(gw.numpy(), num_w, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb.numpy(), num_b, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx.numpy(), num_x, rtol=1e-6, atol=1e-8)


def test_the_numpy_lowering_gives_the_c_lowerings_values(monkeypatch):
    args = [en.tensor(a) for a in _args(np.float64)]
    results = {}
    for lowering in ("numpy", "c"):
        monkeypatch.setattr(en.config, "lowering", lowering)
        fn = en.function(en.value_and_grad(concat_lstm_loss, argnums=(0, 1)))
        loss, grads = fn(*args)
        results[lowering] = [loss.numpy()] + [g.numpy() for g in grads]
    for got, want in zip(results["c"], results["numpy"]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_concat_lstm_keeps_eagers_bits_in_c(dtype):
    args = [en.tensor(a) for a in _args(dtype)]
    step = en.value_and_grad(concat_lstm_loss, argnums=(0, 1))
    with numerics("bitwise", "c"):
        want = step(*args)
        fn = en.function(step)
        assert_same_bits(fn(*args), want, f"the concat LSTM's loss and gradient, {dtype}")
        for source in _sources(fn, *args):
            assert _gate_copies_in_loops(source) == [], source


def _pieces_read_otherwise(w, xs):
    """A split's pieces read by a product, by a broadcasting op and by an op of their
    shape; a concat of an elementwise value, of a value read twice, and of an input."""
    def step(h, x):
        z = en.concat([x, h], axis=1) @ w
        a, b, c = en.split(z, 3, axis=1)
        a_row = en.sum(a, axis=0)                      # not elementwise: a copy
        h = en.tanh(a @ en.ones((NH, NH), dtype=w.dtype) * 0.1 + b * c[:1] + a_row)
        d = en.exp(-h * h)
        return h, en.concat([en.sin(h), d, d * 2.0, x], axis=1)
    return en.scan(step, en.zeros((B, NH), dtype=xs.dtype), xs)


def _numpy_pieces(w, xs):
    h, ys = np.zeros((B, NH)), []
    for x in xs:
        a, b, c = np.split(np.concatenate([x, h], axis=1) @ w, 3, axis=1)
        h = np.tanh(a @ np.ones((NH, NH)) * 0.1 + b * c[:1] + a.sum(axis=0))
        d = np.exp(-h * h)
        ys.append(np.concatenate([np.sin(h), d, d * 2.0, x], axis=1))
    return h, np.stack(ys)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pieces_and_parts_read_otherwise_are_still_right(in_c, dtype):
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((NX + NH, 3 * NH)) * 0.4).astype(dtype)
    xs = rng.standard_normal((T, B, NX)).astype(dtype)
    fn = en.function(_pieces_read_otherwise)
    _sources(fn, en.tensor(w), en.tensor(xs))
    got = [t.numpy() for t in fn(en.tensor(w), en.tensor(xs))]
    eager = [t.numpy() for t in _pieces_read_otherwise(en.tensor(w), en.tensor(xs))]
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for g, e, want in zip(got, eager, _numpy_pieces(w.astype(np.float64),
                                                    xs.astype(np.float64))):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol)


def _two_weight_lstm_loss(wi, wh, b, xs):
    """An LSTM with the input's and the state's products apart (as ``en.nn.LSTMCell``):
    with the inputs' gradient taken, the backward loop's gates' gradient is both stacked
    (for ``xs``' gradient, after the loop) and a factor of ``wh``'s summed product."""
    def step(carry, x):
        h, c = carry
        i, f, g, o = en.split(x @ wi + h @ wh + b, 4, axis=1)
        c = en.sigmoid(f) * c + en.sigmoid(i) * en.tanh(g)
        h = en.sigmoid(o) * en.tanh(c)
        return (h, c), h
    zeros = en.zeros((xs.shape[1], NH), dtype=xs.dtype)
    return en.sum(en.scan(step, (zeros, zeros), xs)[1] ** 2.0)


def _numpy_two_weight_lstm_loss(wi, wh, b, xs):
    def sig(z):
        return 1.0 / (1.0 + np.exp(-z))
    h = c = np.zeros((xs.shape[1], NH))
    total = 0.0
    for x in xs:
        i, f, g, o = np.split(x @ wi + h @ wh + b, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        total += np.sum(h ** 2)
    return total


def test_a_value_stacked_twice_is_written_into_both_stacks(in_c):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) * scale for s, scale in
              (((NX, 4 * NH), 0.5), ((NH, 4 * NH), 0.4), ((4 * NH,), 0.1),
               ((T, B, NX), 1.0))]
    fn = en.function(en.value_and_grad(_two_weight_lstm_loss, argnums=(0, 1, 2, 3)))
    loss, grads = fn(*[en.tensor(a) for a in arrays])
    np.testing.assert_allclose(loss.numpy(), _numpy_two_weight_lstm_loss(*arrays),
                               rtol=1e-12)
    for k, g in enumerate(grads):
        def at(v, k=k):
            return _numpy_two_weight_lstm_loss(*[v if j == k else a
                                                 for j, a in enumerate(arrays)])
        np.testing.assert_allclose(g.numpy(), central_difference(at, arrays[k]),
                                   rtol=1e-6, atol=1e-8, err_msg=f"argument {k}")
