"""Functions handed to a transformation inside en.function are converted too (issue 45,
item 8): a Python ``if`` on a tensor in a function given to en.grad, en.value_and_grad,
en.jvp, en.vmap, en.scan, en.cond, en.while_loop, en.checkpoint, en.jacrev or
en.custom_gradient traces, and the result is the closed form computed with numpy."""
import warnings

import numpy as np
import pytest

import engine as en


def loss(h):
    """sum(h * h) where sum(h) > 0, else sum(-h)."""
    if en.sum(h) > 0:
        return en.sum(h * h)
    return en.sum(-h)


def loss_np(h):
    return (h * h).sum() if h.sum() > 0 else (-h).sum()


def loss_grad_np(h):
    return 2.0 * h if h.sum() > 0 else -np.ones_like(h)


POINTS = [np.array([1.0, 2.0]), np.array([-3.0, 0.5])]   # one per branch


@pytest.mark.parametrize("h", POINTS)
def test_grad_of_a_function_with_an_if(h):
    by_lambda = en.function(lambda v: en.grad(loss)(v))
    direct = en.function(en.grad(loss))
    for f in (by_lambda, direct):
        np.testing.assert_allclose(f(en.tensor(h)).numpy(), loss_grad_np(h))


@pytest.mark.parametrize("h", POINTS)
def test_value_and_grad_of_a_function_with_an_if(h):
    value, g = en.function(en.value_and_grad(loss))(en.tensor(h))
    np.testing.assert_allclose(float(value), loss_np(h))
    np.testing.assert_allclose(g.numpy(), loss_grad_np(h))


@pytest.mark.parametrize("h", POINTS)
def test_jvp_of_a_function_with_an_if(h):
    t = np.array([0.25, -1.5])
    f = en.function(lambda v, u: en.jvp(loss, (v,), (u,)))
    value, tangent = f(en.tensor(h), en.tensor(t))
    np.testing.assert_allclose(float(value), loss_np(h))
    np.testing.assert_allclose(float(tangent), loss_grad_np(h) @ t)


def test_jvp_of_an_if_on_a_dual_numbers_truth():
    # `if s:` asks the truth of a tensor that carries a tangent.
    def f(h):
        s = en.sum(h) - 3.0
        y = h * 2.0
        if s:
            y = h * h
        return en.sum(y)
    jvp = en.function(lambda v: en.jvp(f, (v,), (en.ones_like(v),)))
    for h in (np.array([1.0, 2.0]), np.array([1.0, 4.0])):
        value, tangent = jvp(en.tensor(h))
        square = h.sum() != 3.0
        np.testing.assert_allclose(float(value), (h * h).sum() if square else 2.0 * h.sum())
        np.testing.assert_allclose(float(tangent), 2.0 * h.sum() if square else 4.0)


def test_grad_of_jvp_and_jacrev_of_a_function_with_an_if():
    h = np.array([1.0, 2.0])
    jacrev = en.function(en.jacrev(loss))(en.tensor(h))
    np.testing.assert_allclose(jacrev.numpy(), loss_grad_np(h))
    # d/dh of the directional derivative along ones: the Hessian (2 I) times ones.
    outer = en.function(en.grad(lambda v: en.jvp(loss, (v,), (en.ones_like(v),))[1]))
    np.testing.assert_allclose(outer(en.tensor(h)).numpy(), [2.0, 2.0])


def test_vmap_of_a_function_with_an_if_on_an_unbatched_value():
    def scaled(row, s):
        if s > 0:
            return row * s
        return row - s
    rows = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = en.function(lambda r, s: en.vmap(scaled, in_axes=(0, None))(r, s))
    for s in (2.0, -2.0):
        want = rows * s if s > 0 else rows - s
        np.testing.assert_allclose(f(en.tensor(rows), en.tensor(s)).numpy(), want)


def test_scan_body_with_an_if():
    def step(c, x):
        if x > 1.5:
            c = c + x
        else:
            c = c - x
        return c, c * 2.0
    xs = np.array([1.0, 2.0, 3.0, 0.5])
    c, ys = 0.0, []
    for x in xs:
        c = c + x if x > 1.5 else c - x
        ys.append(2.0 * c)
    carry, out = en.function(lambda v: en.scan(step, en.tensor(0.0), v))(en.tensor(xs))
    np.testing.assert_allclose(float(carry), c)
    np.testing.assert_allclose(out.numpy(), ys)


def test_while_loop_body_with_an_if():
    def body(i, acc):
        if acc > 2.0:
            acc = acc * 0.5
        else:
            acc = acc + 1.0
        return i + 1, acc
    f = en.function(lambda a: en.while_loop(lambda i, v: i < 5, body, (en.tensor(0), a)))
    acc = 0.5
    for _ in range(5):
        acc = acc * 0.5 if acc > 2.0 else acc + 1.0
    i, got = f(en.tensor(0.5))
    assert int(i) == 5
    np.testing.assert_allclose(float(got), acc)


@pytest.mark.parametrize("h", POINTS)
def test_cond_branches_with_an_if(h):
    f = en.function(lambda v: en.cond(en.max(v) > 1.0, loss, lambda u: loss(-u), v))
    want = loss_np(h) if h.max() > 1.0 else loss_np(-h)
    np.testing.assert_allclose(float(f(en.tensor(h))), want)


@pytest.mark.parametrize("h", POINTS)
def test_checkpoint_of_a_function_with_an_if(h):
    value = en.function(lambda v: en.checkpoint(loss)(v))(en.tensor(h))
    np.testing.assert_allclose(float(value), loss_np(h))
    g = en.function(en.grad(lambda v: en.checkpoint(loss)(v) * 3.0))(en.tensor(h))
    np.testing.assert_allclose(g.numpy(), 3.0 * loss_grad_np(h))


@pytest.mark.parametrize("h", POINTS)
def test_custom_gradient_function_with_an_if(h):
    @en.custom_gradient
    def clipped(v):
        if en.sum(v) > 0:
            y = v * 2.0
        else:
            y = v * 0.0
        return y, lambda dy: en.minimum(dy, 1.0)
    f = en.function(lambda v: clipped(v))
    np.testing.assert_allclose(f(en.tensor(h)).numpy(), h * 2.0 if h.sum() > 0 else 0.0 * h)


def test_autograph_off_leaves_the_handed_function_as_written():
    f = en.function(en.grad(loss), autograph=False)
    with pytest.raises(en.errors.TracingError, match="bool"):
        f(en.tensor([1.0, 2.0]))


def test_a_function_traced_without_autograph_inside_a_converted_one_is_not_converted():
    inner = en.function(lambda v: en.grad(loss)(v), autograph=False)
    outer = en.function(lambda v: inner(v) * 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(en.errors.TracingError, match="bool"):
            outer(en.tensor([1.0, 2.0]))


def test_eager_transformations_still_run_the_function_as_written():
    h = POINTS[0]
    np.testing.assert_allclose(en.grad(loss)(en.tensor(h)).numpy(), loss_grad_np(h))


def test_jvp_of_a_function_with_a_tensor_while_loop():
    def doubled(x):
        while en.sum(x) < 10.0:
            x = x * 2.0
        return x
    f = en.function(lambda v: en.jvp(doubled, (v,), (en.ones_like(v),)))
    for h in (np.array([1.0, 2.0]), np.array([0.1, 0.2]), np.array([20.0, 1.0])):
        k = 0
        while h.sum() * 2.0 ** k < 10.0:
            k += 1
        value, tangent = f(en.tensor(h))
        np.testing.assert_allclose(value.numpy(), h * 2.0 ** k)
        np.testing.assert_allclose(tangent.numpy(), np.full(2, 2.0 ** k))


def test_do_not_convert_leaves_what_it_hands_to_a_transformation_as_written():
    @en.autograph.do_not_convert
    def as_written(v):
        return en.grad(loss)(v)
    for f in (en.function(as_written), en.function(lambda v: as_written(v) * 1.0)):
        with pytest.raises(en.errors.TracingError, match="bool"):
            f(en.tensor([1.0, 2.0]))
