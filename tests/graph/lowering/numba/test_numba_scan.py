"""The compiled scan's loop (graph/lowering/numba/numba_scan.py): per-step buffers, carries
updated in place, results nobody reads left out, a VJP's recomputation read from the
forward loop, products batched over the steps; checked against float64 numpy BPTT
(the bench's hand-written references) and numpy loops."""
import importlib

import numpy as np
import pytest

import engine as en
from bench.workloads import rnn
from support.compilers import import_numba

numba = import_numba()

whole_graph = importlib.import_module("engine.graph.lowering.numba.whole_graph")
numba_blas = importlib.import_module("engine.graph.lowering.numba.numba_blas")
SMALL = {"steps": 6, "batch": 3, "hidden": 5, "features": 4, "repeats": 1}
CELLS = {"gru": rnn.gru_cell, "lstm": rnn.lstm_cell, "tanh": rnn.tanh_cell}


@pytest.fixture
def numba_lowering(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numba")


def _problem(cell, dtype):
    problem = rnn.Problem(dict(SMALL, cell=cell))
    params, xs, targets = problem.arrays(dtype)
    h0 = np.zeros((problem.batch, problem.hidden), dtype)
    h0 = (en.tensor(h0), en.tensor(h0)) if cell == "lstm" else en.tensor(h0)
    args = (tuple(en.tensor(p) for p in params), en.tensor(xs), en.tensor(targets), h0)
    return problem, args, problem.reference(params, xs, targets)


def _loss_and_grads(cell):
    def run(p, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch(list(p))
            loss = rnn._scan_loss(CELLS[cell], p, xs, targets, h0)
        return (loss,) + tuple(tape.gradient(loss, list(p)))
    return run


def _loop_products(source):
    """The np.dot calls inside a time loop (indented below the function's own level)."""
    return [line for line in source.splitlines() if "np.dot(" in line and
            line.startswith(" " * 8)]


# The forward's products of h by each gate's weight are one product by the weights side
# by side (scan_wide_products): GRU 2 + 3 backward, LSTM 1 + 4 backward.
@pytest.mark.parametrize("cell, per_step", [("tanh", 2), ("gru", 5), ("lstm", 5)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_cells_compiled_forward_and_backward_match_the_numpy_bptt(numba_lowering, cell,
                                                                   per_step, dtype):
    problem, args, want = _problem(cell, dtype)
    fn = en.function(_loss_and_grads(cell))
    graph = fn.graph_for(*args)
    compiled = [n for n in graph.nodes if n.op.name == "compiled_region"]
    assert len(compiled) == 1 and not [n for n in graph.nodes if n.op.name == "scan"]
    # Per step only the products with the carry remain in the loops: the forward's
    # h @ U (one for the gates sharing h), the backward's da @ U.T. The backward reads
    # the forward's values instead of recomputing them, x @ W runs for all steps before the loop, and the weights'
    # gradients are one product each after it; the inputs' gradient is not computed.
    assert len(_loop_products(compiled[0].meta["kernel_source"])) == per_step, \
        compiled[0].meta["kernel_source"]
    got = fn(*args)
    rtol = 1e-10 if dtype == np.float64 else 3e-5
    for name, g, w in zip(("loss",) + problem.names, got, want):
        assert g.dtype == np.dtype(dtype)
        scale = np.max(np.abs(w))
        np.testing.assert_allclose(g.numpy(), w, rtol=0, atol=rtol * scale, err_msg=name)


def test_a_scan_whose_stacks_pass_the_small_bound_is_still_compiled_whole(numba_lowering):
    # The tanh RNN's weight-gradient stacks, (steps, hidden, hidden) = 81,920 elements,
    # pass whole_graph_small_elements; with no product OpenBLAS would thread the graph is
    # written whole, those stacks summed inside the compiled code rather than read back by numpy.
    config = {"steps": 20, "batch": 16, "hidden": 64, "features": 8, "repeats": 1}
    problem = rnn.Problem(dict(config, cell="tanh"))
    params, xs, targets = problem.arrays(np.float64)
    args = (tuple(en.tensor(p) for p in params), en.tensor(xs), en.tensor(targets),
            en.tensor(np.zeros((16, 64))))
    fn = en.function(_loss_and_grads("tanh"))
    graph = fn.graph_for(*args)
    assert 20 * 64 * 64 > en.config.cost.whole_graph_small_elements
    assert [n.op.name for n in graph.nodes
            if n.op.name not in ("placeholder", "constant", "unpack")] \
        == ["compiled_region"]
    want = problem.reference(params, xs, targets)
    for name, g, w in zip(("loss",) + problem.names, fn(*args), want):
        np.testing.assert_allclose(g.numpy(), w, rtol=0, atol=1e-10 * np.max(np.abs(w)),
                                   err_msg=name)


def test_a_graph_with_a_threaded_sized_product_and_large_values_is_not_written_whole(
        numba_lowering):
    # The autoencoder at batch 100: values of 78,400 elements and products of 1.5e7
    # multiply-adds (numpy's threaded BLAS and fused kernels ran it faster than one
    # numba function).
    from bench.workloads import autoencoder
    args = autoencoder.Problem(100).tensors()
    fn = en.function(en.value_and_grad(autoencoder.engine_loss, argnums=(0, 1, 2)))
    graph = fn.graph_for(*args)
    assert not [n for n in graph.nodes if n.op.name == "compiled_region"]
    assert [n for n in graph.nodes if n.op.name == "matmul"]
    (note,) = [r.note for r in fn.optimization_report(*args) if r.name == "compile_numba"]
    # Its largest value is the (784, 196) weight; its largest product (100, 784) @ (784, 196).
    assert f"not written whole: a value of {784 * 196} elements" in note, note
    assert f"a matrix product of {100 * 784 * 196} multiply-adds" in note, note


def test_carries_that_swap_every_step(numba_lowering):
    def f(a0, b0, xs):
        (a, b), ys = en.scan(lambda c, x: ((c[1], c[0] * 0.5 + c[1] * x), c[0] + x),
                             (a0, b0), xs)
        return a, b, ys
    rng = np.random.default_rng(1)
    a0, b0, xs = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), \
        rng.standard_normal((5, 3, 4))
    fn = en.function(f)
    args = (en.tensor(a0), en.tensor(b0), en.tensor(xs))
    assert [n for n in fn.graph_for(*args).nodes if n.op.name == "compiled_region"]
    a, b, ys = a0, b0, []
    for x in xs:
        ys.append(a + x)
        a, b = b, a * 0.5 + b * x
    got = fn(*args)
    for g, w in zip(got, (a, b, np.stack(ys))):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-13)


def test_a_scalar_carry_and_results_nobody_reads(numba_lowering):
    def f(c0, xs):
        total, unused = en.scan(lambda c, x: (c + en.sum(x * x), en.sin(x)), c0, xs)
        return total
    xs = np.random.default_rng(2).standard_normal((4, 3, 2))
    fn = en.function(f)
    args = (en.tensor(0.5), en.tensor(xs))
    graph = fn.graph_for(*args)
    source = whole_graph.whole_graph_source(graph) if not [
        n for n in graph.nodes if n.op.name == "compiled_region"] else \
        [n for n in graph.nodes if n.op.name == "compiled_region"][0].meta["kernel_source"]
    assert "np.sin" not in source, source     # the unread ys are not computed
    np.testing.assert_allclose(fn(*args).numpy(), 0.5 + np.sum(xs * xs), rtol=1e-13)


def test_a_region_with_a_threaded_sized_product_holds_blas_at_one_thread():
    set_local = numba_blas._set_local()
    if set_local is None:
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local behind numba's np.dot")
    seen = []

    def probe():
        previous = set_local(7)   # returns the count in force, then put it back
        set_local(previous)
        seen.append(previous)
        return previous
    before = set_local(3)
    try:
        numba_blas.one_thread(probe)()
        after = set_local(before)
    finally:
        set_local(before)
    assert seen == [1] and after == 3


def test_a_graph_too_long_for_one_function_is_compiled_in_parts(numba_lowering, monkeypatch):
    def f(x, y, h):
        outs = []
        for _ in range(12):
            h = en.tanh(h * x + y)
            outs.append(h)
        return en.sum(en.stack(outs) ** 2.0), h
    x = np.linspace(0.5, 1.5, 8)
    args = [en.tensor(v) for v in (x, x * 0.5, x)]
    one = whole_graph.whole_graph_source(en.function(f, passes=["cleanup"]).graph_for(*args))
    monkeypatch.setattr(en.config.cost, "numba_max_source_lines", one.count("\n") // 2)
    fn = en.function(f)
    graph = fn.graph_for(*args)
    parts = [n for n in graph.nodes if n.op.name == "compiled_region"]
    assert len(parts) >= 3
    assert all(p.meta["kernel_source"].count("\n") <= en.config.cost.numba_max_source_lines
               for p in parts)
    h, outs = x, []
    for _ in range(12):
        h = np.tanh(h * x + x * 0.5)
        outs.append(h)
    total, last = fn(*args)
    np.testing.assert_allclose(last.numpy(), h, rtol=1e-14)
    np.testing.assert_allclose(float(total), np.sum(np.stack(outs) ** 2.0), rtol=1e-13)
    # Its gradient is compiled in parts too, and matches eager.
    grad = en.function(en.grad(lambda *a: f(*a)[0], argnums=(0, 1)))
    got, want = grad(*args), en.grad(lambda *a: f(*a)[0], argnums=(0, 1))(*args)
    assert len([n for n in grad.graph_for(*args).nodes if n.op.name == "compiled_region"]) >= 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)


def test_a_region_too_long_to_compile_stays_numpy_and_says_why(numba_lowering, monkeypatch):
    def f(x, y, h):
        for _ in range(10):
            h = en.tanh(h * x + y)
        return h
    x = np.linspace(0.5, 1.5, 8)
    monkeypatch.setattr(en.config.cost, "numba_max_source_lines", 5)
    fn = en.function(f)
    with pytest.warns(UserWarning, match=r"\d+ lines of numba source, over "
                                         r"en.config.cost.numba_max_source_lines"):
        graph = fn.graph_for(en.tensor(x), en.tensor(x), en.tensor(x))
    assert not [n for n in graph.nodes if n.op.name == "compiled_region"]
    h = x
    for _ in range(10):
        h = np.tanh(h * x + x)
    np.testing.assert_allclose(fn(en.tensor(x), en.tensor(x), en.tensor(x)).numpy(), h,
                               rtol=1e-14)


def test_a_scan_inside_a_scan_body_forward_and_gradient(numba_lowering):
    def f(xs, c0):
        def outer(c, x):
            inner_c, inner_ys = en.scan(lambda d, r: (d * 0.9 + r, en.tanh(d)), c, x)
            return inner_c + 1.0, inner_ys
        return en.scan(outer, c0, xs)

    def loss(xs, c0):
        with en.GradientTape() as tape:
            tape.watch(c0)
            cf, ys = f(xs, c0)
            value = en.sum(cf * cf) + en.sum(ys)
        return value, tape.gradient(value, c0)
    rng = np.random.default_rng(0)
    xs, c0 = rng.standard_normal((3, 4, 2)), rng.standard_normal(2)
    args = (en.tensor(xs), en.tensor(c0))
    fn = en.function(f)
    assert [n.op.name for n in fn.graph_for(*args).nodes if n.op.name in (
        "compiled_region", "scan")] == ["compiled_region"]
    c, ys = c0, []
    for x in xs:
        d, inner = c, []
        for r in x:
            inner.append(np.tanh(d))
            d = d * 0.9 + r
        c = d + 1.0
        ys.append(np.stack(inner))
    got_c, got_ys = fn(*args)
    np.testing.assert_allclose(got_c.numpy(), c, rtol=1e-13)
    np.testing.assert_allclose(got_ys.numpy(), np.stack(ys), rtol=1e-13)
    # The gradient: d/dc0 by central differences of the numpy loop.
    def numpy_loss(c0):
        c, total = c0, 0.0
        for x in xs:
            d = c
            for r in x:
                total += np.sum(np.tanh(d))
                d = d * 0.9 + r
            c = d + 1.0
        return np.sum(c * c) + total
    eps = 1e-6
    want = np.array([(numpy_loss(c0 + eps * e) - numpy_loss(c0 - eps * e)) / (2 * eps)
                     for e in np.eye(2)])
    value, grad = en.function(loss)(*args)
    np.testing.assert_allclose(value.numpy(), numpy_loss(c0), rtol=1e-13)
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-7)
