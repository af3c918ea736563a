"""The cleanup passes inside control-flow bodies (graph/passes/body_cleanup.py).

Each program is checked against a numpy loop (or eager mode, for random draws) and the
unoptimized graph, and its bodies are counted: duplicates merged, identities and
reshape chains gone, dead nodes removed; effects (draws, variable writes, prints) kept
in number and order.
"""
import numpy as np
import pytest

import engine as en
from engine.graph.control.control_flow import cond_op, scan_op, while_op
from engine.graph.lowering.pipeline import optimize
from support.pass_helpers import assert_matches

DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 2e-6, np.float64: 1e-13}


def _nodes(graph, op):
    return [n for n in graph.nodes if n.op is op]


def _body(graph, op=scan_op, key="body"):
    (node,) = _nodes(graph, op)
    return node.params[key].graph


def _count(graph, name):
    return sum(n.op.name == name for n in graph.nodes)


def _wasteful_step(w):
    """A step with a duplicate, an identity, a reshape chain and a dead node."""
    def step(c, x):
        a = en.tanh(x * w)
        b = en.tanh(x * w)                       # the same as a
        c = c * 0.5 + a + b * 1.0                # * 1.0: an identity
        back = en.reshape(en.reshape(c, (1,) + tuple(c.shape)), tuple(c.shape))
        en.exp(c)                                # read by nothing
        return c, en.sum(back)
    return step


def _numpy_wasteful(xs, w, reverse=False):
    c, ys = np.zeros(xs.shape[1:], xs.dtype), [None] * len(xs)
    for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        a = np.tanh(xs[t] * w)
        c = c * xs.dtype.type(0.5) + a + a
        ys[t] = c.sum()
    return c, np.array(ys)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reverse", [False, True])
def test_a_scan_body_loses_its_duplicates_identities_reshapes_and_dead_nodes(dtype, reverse):
    rng = np.random.default_rng(0)
    xs, w = rng.standard_normal((7, 4, 3)).astype(dtype), dtype(0.7)

    def f(xs):
        return en.scan(_wasteful_step(w), en.zeros((4, 3), dtype=dtype), xs, reverse=reverse)
    cleaned = _body(en.function(f, passes=["cleanup"]).graph_for(en.tensor(xs)))
    plain = _body(en.function(f, optimize=False).graph_for(en.tensor(xs)))
    assert (_count(plain, "tanh"), _count(cleaned, "tanh")) == (2, 1)
    assert (_count(plain, "exp"), _count(cleaned, "exp")) == (1, 0)
    assert _count(plain, "reshape") == 2 and _count(cleaned, "reshape") == 0
    assert cleaned.node_count() < plain.node_count()
    got = en.function(f)(xs)
    want = _numpy_wasteful(xs, w, reverse)
    for g, r in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.numpy(), r, rtol=RTOL[dtype], atol=1e-6)
    assert_matches(got, en.function(f, optimize=False)(xs), "cleaned scan body",
                   rtol=RTOL[dtype])


def test_a_nested_scans_inner_body_is_cleaned_too():
    rng = np.random.default_rng(1)
    xs, w = rng.standard_normal((5, 6, 3)), 1.3

    def inner(c, row):
        return en.scan(_wasteful_step(w), c, row)

    def f(xs):
        return en.scan(lambda c, row: (inner(c, row)[0], en.sum(c)), en.zeros(3), xs)
    graph = en.function(f, passes=["cleanup"]).graph_for(en.tensor(xs))
    inner_body = _body(_body(graph))
    assert _count(inner_body, "tanh") == 1 and _count(inner_body, "exp") == 0
    got = en.function(f)(xs)
    c, sums = np.zeros(3), []
    for row in xs:
        sums.append(c.sum())
        c = _numpy_wasteful_from(c, row, w)
    np.testing.assert_allclose(got[0].numpy(), c, rtol=1e-13)
    np.testing.assert_allclose(got[1].numpy(), sums, rtol=1e-13)
    assert_matches(got, en.function(f, optimize=False)(xs), "nested scan", rtol=1e-13)


def _numpy_wasteful_from(c, row, w):
    for x in row:
        a = np.tanh(x * w)
        c = c * 0.5 + a + a
    return c


def test_while_loop_and_cond_bodies_are_cleaned():
    def f(n, x):
        def body(i, s):
            k = en.cast(i, "float64")
            step = en.sin(k * x) + en.sin(k * x)
            s = en.cond(i % 2 == 0, lambda v: v + en.cos(x) + en.cos(x), lambda v: v * 1.0,
                        s + step)
            return i + 1, s
        return en.while_loop(lambda i, s: i < n, body, (en.tensor(0), en.tensor(0.0)))[1]
    args = (en.tensor(6), en.tensor(0.3))
    graph = en.function(f, passes=["cleanup"]).graph_for(*args)
    body = _body(graph, while_op)
    assert _count(body, "sin") == 1
    branch = _nodes(body, cond_op)[0].params["true"].graph
    assert _count(branch, "cos") == 1
    s = 0.0
    for i in range(6):
        s += 2 * np.sin(i * 0.3)
        if i % 2 == 0:
            s += 2 * np.cos(0.3)
    np.testing.assert_allclose(en.function(f)(*args).numpy(), s, rtol=1e-14)
    assert_matches(en.function(f)(*args), en.function(f, optimize=False)(*args), "while")


def test_effects_in_a_body_are_kept_in_number_and_order(capsys):
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((4, 3))

    def program(gen, counter):
        def step(c, x):
            gen.normal((3,), dtype="float64")                  # drawn, never read
            noise = gen.normal((3,), dtype="float64")
            counter.assign_add(1.0)
            en.print("step")
            return c * 0.5 + x + noise + noise * 0.0, en.sum(c) + en.sum(c)
        return lambda xs: en.scan(step, en.zeros(3, dtype="float64"), xs)

    eager_counter = en.Variable(0.0)
    want = program(en.random.Generator(3), eager_counter)(en.tensor(xs))
    eager_out = capsys.readouterr().out
    counter = en.Variable(0.0)
    f = en.function(program(en.random.Generator(3), counter))
    got = f(xs)
    assert capsys.readouterr().out == eager_out == "step\n" * 4
    assert float(counter.numpy()) == float(eager_counter.numpy()) == 4.0
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-14)
    body = _body(f.graph_for(en.tensor(xs)))
    assert _count(body, "random_normal") == 2 and _count(body, "print") == 1
    assert _count(body, "assign_variable") >= 1


def test_the_unoptimized_graph_keeps_its_bodies():
    xs = en.tensor(np.ones((3, 2)))

    def f(xs):
        return en.scan(_wasteful_step(2.0), en.zeros(2), xs)
    plain = en.function(f, optimize=False).graph_for(xs)
    (node,) = _nodes(plain, scan_op)
    body, before = node.params["body"], node.params["body"].graph.node_count()
    optimized, _ = optimize(plain, ["cleanup"])
    assert node.params["body"] is body and body.graph.node_count() == before
    (new,) = _nodes(optimized, scan_op)
    assert new.params["body"] is not body
    assert new.params["body"].graph.node_count() < before


def test_a_gradients_size_one_axes_leave_the_body():
    # The backward step of h @ w adds a size-1 axis to the cotangent (expand_dims) and
    # takes it away again (reshape(-1, n)): simplify now sees the chain, in the body too.
    rng = np.random.default_rng(4)
    xs, w = rng.standard_normal((5, 2, 3)), rng.standard_normal((3, 3))

    def f(xs):
        def step(h, x):
            lifted = en.expand_dims(h, 1)                       # (2, 1, 3)
            return en.tanh(en.reshape(lifted, (-1, 3)) @ w + x), h
        return en.scan(step, en.zeros((2, 3)), xs)
    body = _body(en.function(f, passes=["cleanup"]).graph_for(en.tensor(xs)))
    assert _count(body, "reshape") == 0 and _count(body, "expand_dims") == 0
    h, hs = np.zeros((2, 3)), []
    for x in xs:
        hs.append(h)
        h = np.tanh(h @ w + x)
    got = en.function(f)(xs)
    np.testing.assert_allclose(got[0].numpy(), h, rtol=1e-14)
    np.testing.assert_array_equal(got[1].numpy(), np.stack(hs))
