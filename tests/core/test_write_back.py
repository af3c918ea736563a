"""A compiled function that writes its arguments gives each its new values after the
call (graph/jit/concrete.py's finish_writing and the entry's inlined write-back,
graph/lowering/executor.py): the result array itself where nothing can tell, the values
copied in otherwise. Each case against the same function run eagerly, or numpy."""
import numpy as np
import pytest

import engine as en


def _eager_and_graph(fn, *arrays):
    """Run ``fn`` eagerly and compiled (three calls each) on fresh tensors of ``arrays``;
    return both sets of tensors after the calls."""
    compiled = en.function(fn)
    eager = [en.tensor(a) for a in arrays]
    graph = [en.tensor(a) for a in arrays]
    for _ in range(3):
        fn(*eager)
        compiled(*graph)
    return eager, graph, compiled


def test_an_optimizer_step_updates_each_parameter_in_place():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 4)), rng.standard_normal(32)

    def step(w, b):
        def loss(w, b):
            return en.mean((en.tensor(x) @ w + b - en.tensor(y)) ** 2.0)
        gw, gb = en.grad(loss, argnums=(0, 1))(w, b)
        w -= 0.1 * gw
        b -= 0.1 * gb
    eager, graph, compiled = _eager_and_graph(step, rng.standard_normal(4), np.zeros(()))
    ids = [id(t) for t in graph]
    for e, g in zip(eager, graph):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
    assert [id(t) for t in graph] == ids and compiled.trace_count == 1


def test_two_arguments_given_the_same_value_do_not_share_memory():
    def same(a, b):
        v = a + b
        a[...] = v
        b[...] = v
    eager, (a, b), _ = _eager_and_graph(same, np.ones(3), np.full(3, 2.0))
    np.testing.assert_array_equal(a.numpy(), eager[0].numpy())
    np.testing.assert_array_equal(b.numpy(), eager[1].numpy())
    a[0] = -1.0                      # numpy: two arrays, a write to one leaves the other
    np.testing.assert_array_equal(b.numpy(), eager[1].numpy())
    assert a.numpy()[0] == -1.0


def test_a_written_argument_that_views_another_writes_through_to_it():
    base = en.tensor(np.arange(6.0))
    view = base[2:5]
    compiled = en.function(lambda v: v.__imul__(10.0))
    compiled(view)
    want = np.arange(6.0)
    want[2:5] *= 10.0
    np.testing.assert_array_equal(base.numpy(), want)
    np.testing.assert_array_equal(view.numpy(), want[2:5])


def test_a_written_argument_a_trace_captured_is_seen_by_that_trace():
    w = en.tensor([1.0, 2.0])
    read = en.function(lambda: w * 1.0)          # captures w
    np.testing.assert_array_equal(read().numpy(), [1.0, 2.0])
    step = en.function(lambda t: t.__iadd__(1.0))
    step(w)
    np.testing.assert_array_equal(w.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(read().numpy(), [2.0, 3.0])


@pytest.mark.parametrize("n", [2, 9, 12])
def test_many_written_arguments_each_get_their_values(n):
    # Up to 8 the entry gives the arrays itself; more take finish_writing's loop.
    def step(*ts):
        for k, t in enumerate(ts):
            t += float(k)
    arrays = [np.full(4, float(i)) for i in range(n)]
    eager, graph, _ = _eager_and_graph(step, *arrays)
    for k, (e, g) in enumerate(zip(eager, graph)):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
        np.testing.assert_array_equal(g.numpy(), np.full(4, k + 3.0 * k))


def test_a_step_that_writes_and_returns_gives_both():
    def step(w):
        w *= 2.0
        return w + 1.0, en.sum(w)
    compiled = en.function(step)
    w = en.tensor([1.0, 2.0])
    out, total = compiled(w)
    np.testing.assert_array_equal(w.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(out.numpy(), [3.0, 5.0])
    assert float(total) == 6.0
    out[0] = 100.0                   # a result is its own memory
    np.testing.assert_array_equal(w.numpy(), [2.0, 4.0])


def test_under_a_persistent_tape_a_written_argument_behaves_as_eagerly():
    got = []
    for step in (lambda t: t.__imul__(3.0), en.function(lambda t: t.__imul__(3.0))):
        w = en.tensor([1.0, 2.0])
        with en.GradientTape(persistent=True) as tape:
            tape.watch(w)
            y = w * 1.0
            loss = en.sum(y * y)
        step(y)                         # the tape holds y: its values are copied in
        got.append((w.numpy().tolist(), y.numpy().tolist(),
                    tape.gradient(loss, w).numpy().tolist()))
    assert got[0] == got[1] == ([1.0, 2.0], [3.0, 6.0], [2.0, 4.0])
