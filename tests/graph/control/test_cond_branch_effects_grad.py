"""The gradient, in a graph, of a cond branch that writes a variable it reads: the backward
re-run of the branch would read the written value (a silently wrong gradient, 11x too large
below), so it is refused by name; eagerly, and where the branch writes only, it is computed
and agrees with the closed form."""
import numpy as np
import pytest

import engine as en


def _loss_reading_then_writing(v):
    def loss(x):
        def yes(x):
            y = x * v
            v.assign(v + 10.0)
            return y
        return en.sum(en.cond(en.sum(x) > 0, yes, lambda x: x * 2.0, x) ** 2)
    return loss


def test_eagerly_the_gradient_uses_the_value_read_before_the_write():
    v = en.Variable(np.array([1.0, 2.0, 3.0]))
    x = np.array([0.5, 1.0, 2.0])
    got = en.grad(_loss_reading_then_writing(v))(en.tensor(x)).numpy()
    np.testing.assert_allclose(got, 2 * x * np.array([1.0, 2.0, 3.0]) ** 2)   # d/dx (x v)^2


@pytest.mark.parametrize("nested", [False, True])
def test_in_a_graph_it_is_refused_by_name(nested):
    v = en.Variable(np.array([1.0, 2.0, 3.0]))
    if nested:
        def loss(x):
            def yes(x):
                def body(c, _):
                    v.assign(v + c)
                    return c * 2.0, None
                return en.scan(body, x, None, length=3)[0]
            return en.sum(en.cond(en.sum(x) > 0, yes, lambda x: x * 2.0, x) ** 2)
    else:
        loss = _loss_reading_then_writing(v)
    with pytest.raises(en.NotDifferentiableError,
                       match=r"cond: the gradient, inside en.function, of a branch .* writes a "
                             r"variable.*before en.cond") as info:
        en.function(en.grad(loss))(en.tensor(np.array([0.5, 1.0, 2.0])))
    assert "test_cond_branch_effects_grad.py" in str(info.value)


def test_a_stateful_draw_in_a_branch_is_refused_in_a_graph_and_a_keyed_one_differentiates():
    def loss(noise):
        def run(x):
            def yes(x):
                return x * noise()
            return en.sum(en.cond(en.sum(x) > 0, yes, lambda x: x * 2.0, x) ** 2)
        return run
    x = en.tensor(np.array([0.5, 1.0, 2.0]))
    with pytest.raises(en.NotDifferentiableError, match="from a key passed in"):
        en.function(en.grad(loss(lambda: en.random.normal((3,)))))(x)
    key = en.tensor(np.array([7, 0], np.int64))
    keyed = loss(lambda: en.random.normal_from_key(key, (3,)))
    n = en.random.normal_from_key(key, (3,)).numpy()
    np.testing.assert_allclose(en.function(en.grad(keyed))(x).numpy(), 2 * x.numpy() * n ** 2)


def test_a_bounded_while_body_that_reads_and_writes_is_refused_in_a_graph():
    v = en.Variable(np.array([1.0, 2.0, 3.0]))

    def loss(x):
        def body(i, c):
            y = c * v
            v.assign(v + 1.0)
            return i + 1, y
        return en.sum(en.while_loop(lambda i, c: i < 2, body, (en.tensor(0), x),
                                    max_steps=5)[1])
    x = np.array([0.5, 1.0, 2.0])
    # Before: [9, 16, 25] in the graph, the values the writes left read back.
    with pytest.raises(en.NotDifferentiableError, match="while_loop with max_steps="):
        en.function(en.grad(loss))(en.tensor(x))
    v.assign(en.tensor(np.array([1.0, 2.0, 3.0])))
    np.testing.assert_allclose(en.grad(loss)(en.tensor(x)).numpy(),
                               np.array([1.0, 2.0, 3.0]) * np.array([2.0, 3.0, 4.0]))


def test_a_branch_that_only_writes_keeps_its_graph_gradient():
    v = en.Variable(np.zeros(3))
    w = en.Variable(np.array([1.0, 2.0, 3.0]))       # read, never written

    def loss(x):
        def yes(x):
            v.assign(x * 3.0)
            return x * w
        return en.sum(en.cond(en.sum(x) > 0, yes, lambda x: x * 2.0, x) ** 2)
    x = np.array([0.5, 1.0, 2.0])
    got = en.function(en.grad(loss))(en.tensor(x)).numpy()
    np.testing.assert_allclose(got, 2 * x * np.array([1.0, 2.0, 3.0]) ** 2)
    np.testing.assert_allclose(v.numpy(), x * 3.0)
