"""vmap(grad(scan)) where the scan's body draws random numbers or writes a variable
(engine/transforms/batching_state.py, batching_loops.py).

The rule is eager mode's, and the graph path agrees: a draw from an explicit key gives
that key's numbers (a key per example: numbers per example); a stateful draw and a
variable write are one per step for the whole batch (the state is not batched). Every
figure is checked against a Python loop over the examples of eager gradients, run from
the same state, and against central differences (or a numpy loop); in float32 and
float64; eagerly and inside en.function. JAX, given the same numbers, is an extra
comparison.
"""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.finite_diff import central_difference

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
FD_TOL = dict(rtol=1e-6, atol=1e-8)
STEPS, BATCH, WIDTH = 5, 3, 2
no_fallback_warning = pytest.mark.filterwarnings("ignore::engine.TransformFallbackWarning")


def _data(dtype, steps=STEPS):
    rng = np.random.default_rng(46)
    return (rng.standard_normal((BATCH, steps, WIDTH)).astype(dtype),
            (rng.standard_normal(WIDTH) * 0.5).astype(dtype))


def _both(f):
    """``f`` eagerly and compiled by en.function."""
    return [("eager", f), ("graph", en.function(f))]


def _close(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), **TOL[dtype])


# ---- draws from explicit keys ---------------------------------------------------------------------
def keyed_loss(xs, w, key):
    """A tanh RNN whose step scales its input by normal noise drawn from the carried key
    ``[seed, counter]`` (the counter advances each step)."""
    def step(carry, x):
        h, k = carry
        noise = en.random.normal_from_key(k, (WIDTH,), dtype=x.dtype)
        h = en.tanh(h * w + x * noise)
        return (h, k + np.array([0, 1])), en.sum(h * h)
    (h, _), ys = en.scan(step, (en.zeros(WIDTH, dtype=xs.dtype), key), xs)
    return en.sum(h) + en.sum(ys)


def np_keyed_loss(xs, w, key, dtype=np.float64):
    """``keyed_loss`` in numpy (float64): the noise of step ``t`` from key ``[seed,
    counter + t]`` (the engine's documented draw: np.random.default_rng of the key's
    bits, in ``dtype``)."""
    h, total = np.zeros(WIDTH), 0.0
    for t, x in enumerate(xs):
        k = np.array([key[0], key[1] + t], np.int64).view(np.uint64)
        noise = np.random.default_rng(k).standard_normal(WIDTH, dtype=dtype)
        h = np.tanh(h * w + x * noise)
        total += np.sum(h * h)
    return np.sum(h) + total


@no_fallback_warning
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_key_per_example_gives_each_example_its_own_draws(dtype):
    X, w = _data(dtype)
    keys = np.array([[7, 0], [8, 0], [9, 100]], np.int64)
    grads = en.grad(keyed_loss, argnums=(0, 1))
    loop = [grads(en.tensor(x), en.tensor(w), en.tensor(k)) for x, k in zip(X, keys)]
    for _how, f in _both(en.vmap(grads, in_axes=(0, None, 0))):
        g_x, g_w = f(en.tensor(X), en.tensor(w), en.tensor(keys))
        for b in range(BATCH):
            _close(g_x.numpy()[b], loop[b][0].numpy(), dtype)
            _close(g_w.numpy()[b], loop[b][1].numpy(), dtype)
    X64, w64 = X.astype(np.float64), w.astype(np.float64)
    for b in range(BATCH):   # the independent reference: numpy's loop, central differences
        fd_w = central_difference(lambda v, b=b: np_keyed_loss(X64[b], v, keys[b], dtype), w64)
        fd_x = central_difference(lambda v, b=b: np_keyed_loss(v, w64, keys[b], dtype), X64[b])
        np.testing.assert_allclose(g_w.numpy()[b], fd_w, **_fd(dtype))
        np.testing.assert_allclose(g_x.numpy()[b], fd_x, **_fd(dtype))


def _fd(dtype):
    return FD_TOL if dtype == np.float64 else dict(rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_key_for_the_batch_gives_every_example_the_same_draws(dtype):
    X, w = _data(dtype)
    key = en.tensor(np.array([5, 3], np.int64))
    grads = en.grad(keyed_loss)
    for _how, f in _both(en.vmap(grads, in_axes=(0, None, None))):
        got = f(en.tensor(X), en.tensor(w), key).numpy()
        for b in range(BATCH):
            _close(got[b], grads(en.tensor(X[b]), en.tensor(w), key).numpy(), dtype)
            fd = central_difference(lambda v: np_keyed_loss(v, w.astype(np.float64), [5, 3], dtype),
                                    X[b].astype(np.float64))
            np.testing.assert_allclose(got[b], fd, **_fd(dtype))


# ---- stateful draws -------------------------------------------------------------------------------
def drawing_loss(gen):
    """The RNN above drawing its noise from the generator ``gen`` (its state a variable)."""
    def loss(xs, w):
        def step(h, x):
            h = en.tanh(h * w + x * gen.normal((WIDTH,), dtype=x.dtype))
            return h, en.sum(h * h)
        h, ys = en.scan(step, en.zeros(WIDTH, dtype=xs.dtype), xs)
        return en.sum(h) + en.sum(ys)
    return loss


@pytest.mark.parametrize("dtype", DTYPES)
def test_stateful_draws_are_one_per_step_for_the_whole_batch(dtype):
    # vmap is one call: each step draws once and every example sees that draw, as a
    # Python loop over the examples gives when each example starts from the same state.
    X, w = _data(dtype)
    gen = en.random.Generator(11)
    loss = drawing_loss(gen)
    grads = en.grad(loss, argnums=(0, 1))
    loop = []
    for x in X:
        gen.reset(11)
        loop.append([g.numpy() for g in grads(en.tensor(x), en.tensor(w))])
    for how, f in _both(en.vmap(grads, in_axes=(0, None))):
        gen.reset(11)
        g_x, g_w = f(en.tensor(X), en.tensor(w))
        # The generator moved on once per step: the backward pass drew nothing again.
        assert gen.state.numpy().tolist() == [11, STEPS], how
        for b in range(BATCH):
            _close(g_x.numpy()[b], loop[b][0], dtype)
            _close(g_w.numpy()[b], loop[b][1], dtype)
    X64, w64 = X.astype(np.float64), w.astype(np.float64)
    for b in range(BATCH):   # draw t is key [11, t]: numpy's loop and central differences
        fd = central_difference(lambda v, b=b: np_keyed_loss(X64[b], v, [11, 0], dtype), w64)
        np.testing.assert_allclose(g_w.numpy()[b], fd, **_fd(dtype))


def test_a_second_call_continues_the_stream():
    X, w = _data(np.float64)
    gen = en.random.Generator(3)
    f = en.function(en.vmap(en.grad(drawing_loss(gen), argnums=1), in_axes=(0, None)))
    first, second = f(en.tensor(X), en.tensor(w)).numpy(), f(en.tensor(X), en.tensor(w)).numpy()
    assert gen.state.numpy().tolist() == [3, 2 * STEPS]
    for b in range(BATCH):
        fd = central_difference(lambda v, b=b: np_keyed_loss(X[b], v, [3, STEPS]), w)
        np.testing.assert_allclose(second[b], fd, **FD_TOL)
    assert not np.allclose(first, second)


# ---- variable writes -------------------------------------------------------------------------------
def counting_loss(count):
    """A step that adds one to the variable ``count`` and scales its input by it."""
    def loss(xs, w):
        def step(h, x):
            count.assign_add(1.0)
            h = en.sin(h * w + x * count.read())
            return h, h
        h, ys = en.scan(step, en.zeros(WIDTH, dtype=xs.dtype), xs)
        return en.sum(h * h) + en.sum(ys)
    return loss


def np_counting_loss(xs, w, start):
    h, total = np.zeros(WIDTH), 0.0
    for t, x in enumerate(xs):
        h = np.sin(h * w + x * (start + t + 1))
        total += np.sum(h)
    return np.sum(h * h) + total


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_variable_write_happens_once_per_step_for_the_whole_batch(dtype):
    X, w = _data(dtype)
    count = en.Variable(np.asarray(0.0, dtype), name="count", trainable=False)
    grads = en.grad(counting_loss(count), argnums=(0, 1))
    for how, f in _both(en.vmap(grads, in_axes=(0, None))):
        count.assign(np.asarray(2.0, dtype))
        g_x, g_w = f(en.tensor(X), en.tensor(w))
        assert float(count.numpy()) == 2.0 + STEPS, how   # not once more per example or backward
        X64, w64 = X.astype(np.float64), w.astype(np.float64)
        for b in range(BATCH):
            fd_w = central_difference(lambda v, x=X64[b]: np_counting_loss(x, v, 2.0), w64)
            fd_x = central_difference(lambda v, w=w64: np_counting_loss(v, w, 2.0), X64[b])
            np.testing.assert_allclose(g_w.numpy()[b], fd_w, **_fd(dtype))
            np.testing.assert_allclose(g_x.numpy()[b], fd_x, **_fd(dtype))
            count.assign(np.asarray(2.0, dtype))   # the Python loop, from the same state
            want = grads(en.tensor(X[b]), en.tensor(w))
            _close(g_x.numpy()[b], want[0].numpy(), dtype)
            _close(g_w.numpy()[b], want[1].numpy(), dtype)


def test_writing_a_batched_value_is_refused_with_what_to_do():
    X, w = _data(np.float64)
    total = en.Variable(np.asarray(0.0), name="total", trainable=False)

    def loss(xs, w):
        def step(h, x):
            total.assign_add(en.sum(x))   # x differs per example: which value to keep?
            return en.sin(h * w + x), h
        return en.sum(en.scan(step, en.zeros(WIDTH), xs)[0])
    for _how, f in _both(en.vmap(en.grad(loss), in_axes=(0, None))):
        with pytest.raises(en.EngineError, match="variable 'total'.*return the value and "
                                                 "assign it outside"):
            f(en.tensor(X), en.tensor(w))
    assert float(total.numpy()) == 0.0


def test_a_nested_cond_on_written_state_is_refused_by_name():
    # The cond's reads live in its own trace, which the scan cannot replay.
    X, w = _data(np.float64)
    count = en.Variable(np.asarray(0.0), name="count", trainable=False)

    def loss(xs, w):
        def step(h, x):
            count.assign_add(1.0)
            h = en.cond(en.sum(w) > 0.0, lambda h: h * count.read(), lambda h: h, h)
            return en.sin(h * w + x), h
        return en.sum(en.scan(step, en.zeros(WIDTH), xs)[0])
    with pytest.raises(en.NotDifferentiableError, match="vmap\\(grad\\) of a scan.*'count'"):
        en.function(en.vmap(en.grad(loss), in_axes=(0, None)))(en.tensor(X), en.tensor(w))


def test_a_nested_scan_writing_state_is_refused_by_name():
    # A scan inside the body, with no tape entry of its own, reports to the outer body:
    # its writes would happen again in the backward pass (before: a silent wrong answer).
    X, w = _data(np.float64)
    count = en.Variable(np.asarray(0.0), name="count", trainable=False)

    def loss(xs, w):
        def inner(c, _):
            count.assign_add(1.0)
            return c * count.read(), ()

        def step(h, x):
            return en.sin(en.scan(inner, h, None, length=2)[0] * w + x), h
        return en.sum(en.scan(step, en.zeros(WIDTH), xs)[0])
    with pytest.raises(en.NotDifferentiableError, match="'count'.*in the scan's body itself"):
        en.function(en.vmap(en.grad(loss), in_axes=(0, None)))(en.tensor(X), en.tensor(w))


# ---- one scan each way, whatever the number of steps -----------------------------------------------
def test_node_counts_do_not_grow_with_the_steps():
    gen = en.random.Generator(0)
    count = en.Variable(np.asarray(0.0), name="count", trainable=False)
    counts = {}
    for steps in (10, 100):
        X, w = _data(np.float64, steps)
        row = []
        for loss in (drawing_loss(gen), counting_loss(count)):
            f = en.function(en.vmap(en.grad(loss), in_axes=(0, None)))
            graph = f.get_concrete_function(en.tensor(X), en.tensor(w)).unoptimized_graph
            assert sum(n.op.name == "scan" for n in graph.nodes) == 2   # forward, backward
            row.append(len(graph.nodes))
        counts[steps] = row
    assert counts[10] == counts[100], counts


# ---- JAX, given the same numbers: an extra comparison ----------------------------------------------
def test_stateful_draws_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    X, w = _data(np.float64)
    gen = en.random.Generator(5)
    got = en.function(en.vmap(en.grad(drawing_loss(gen), argnums=1), in_axes=(0, None)))(
        en.tensor(X), en.tensor(w)).numpy()
    noise = np.stack([en.random.normal_from_key(en.tensor(np.array([5, t])), (WIDTH,),
                                                dtype=np.float64).numpy() for t in range(STEPS)])

    def jax_loss(xs, w):
        def step(h, xn):
            h = jnp.tanh(h * w + xn[0] * xn[1])
            return h, jnp.sum(h * h)
        h, ys = jax.lax.scan(step, jnp.zeros(WIDTH), (xs, noise))
        return jnp.sum(h) + jnp.sum(ys)
    want = jax.jit(jax.vmap(jax.grad(jax_loss, argnums=1), in_axes=(0, None)))(X, w)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-13)


# ---- the compiled lowerings run the replayed steps -------------------------------------------------
@pytest.mark.parametrize("lowering", ["numba", "c"])
def test_compiled_lowerings_replay_the_state(monkeypatch, lowering):
    if lowering == "numba":
        import_numba()
    X, w = _data(np.float64)
    gen = en.random.Generator(4)
    count = en.Variable(np.asarray(0.0), name="count", trainable=False)

    def loss(xs, w):
        def step(h, x):
            count.assign_add(1.0)
            h = en.tanh(h * w + x * gen.normal((WIDTH,), dtype=x.dtype) * count.read())
            return h, en.sum(h * h)
        h, ys = en.scan(step, en.zeros(WIDTH), xs)
        return en.sum(h) + en.sum(ys)
    grads = en.grad(loss, argnums=1)
    want = []
    for x in X:   # the Python loop, each example from the same state
        gen.reset(4)
        count.assign(0.0)
        want.append(grads(en.tensor(x), en.tensor(w)).numpy())
    monkeypatch.setattr(en.config, "lowering", lowering)
    gen.reset(4)
    count.assign(0.0)
    got = en.function(en.vmap(grads, in_axes=(0, None)))(en.tensor(X), en.tensor(w))
    np.testing.assert_allclose(got.numpy(), np.stack(want), rtol=1e-12, atol=1e-13)
    assert gen.state.numpy().tolist() == [4, STEPS] and float(count.numpy()) == STEPS


# ---- forward over reverse: refused by name, with a way that works -----------------------------------
def test_jvp_of_grad_of_a_scan_writing_state_is_refused_with_what_to_do():
    # The reverse rule of a scan staged by jvp runs the body again: it would draw again
    # and write again (before: a silent wrong Hessian-vector product).
    X, w = _data(np.float64)
    x, t = X[0], np.array([1.0, 0.5])
    gen = en.random.Generator(4)
    loss = drawing_loss(gen)

    def hvp(x, w):
        return en.jvp(lambda w: en.grad(loss, argnums=1)(x, w), (w,), (en.tensor(t),))[1]
    with pytest.raises(en.NotDifferentiableError, match="'rng_state'.*grad\\(jvp\\(f\\)\\)"):
        en.function(hvp)(en.tensor(x), en.tensor(w))
    assert gen.state.numpy().tolist() == [4, 0]   # refused while tracing: nothing ran

    def reverse_over_forward(x, w):
        return en.grad(lambda w: en.jvp(lambda w: loss(x, w), (w,), (en.tensor(t),))[1])(w)
    eps = 1e-6
    at = []
    for v in (w + eps * t, w - eps * t):   # central differences of the gradient along t
        gen.reset(4)
        at.append(en.grad(loss, argnums=1)(en.tensor(x), en.tensor(v)).numpy())
    want = (at[0] - at[1]) / (2 * eps)
    for f in (hvp, reverse_over_forward, en.function(reverse_over_forward)):
        gen.reset(4)
        np.testing.assert_allclose(f(en.tensor(x), en.tensor(w)).numpy(), want, rtol=1e-6,
                                   atol=1e-8)
        assert gen.state.numpy().tolist() == [4, STEPS]
