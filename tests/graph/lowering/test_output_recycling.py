"""Graph outputs written into the previous call's released arrays (graph/lowering/output_recycling.py):
the same bits as numpy, and never an array that a caller (tensor, view, numpy array) still holds."""
import doctest
import threading
import weakref

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import output_recycling

SHAPE = (128, 300)       # 300 KiB of float64: above en.config.cost.recycle_min_bytes


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(SHAPE), rng.standard_normal(SHAPE[1])


def _fn(x, v):
    return en.tanh(x) * v, en.sum(x, axis=0)


def _reference(x, v):
    return np.tanh(x) * v, np.sum(x, axis=0)


def _base(t):
    return t.numpy().base       # the array the tensor wraps (numpy() is a view of it)


def test_doc_examples():
    failures, tried = doctest.testmod(output_recycling)
    assert tried and not failures


def test_released_output_is_rewritten_with_the_same_bits_as_numpy():
    f = en.function(_fn)
    previous = None
    for seed in range(4):
        x, v = _inputs(seed)
        got = f(en.tensor(x), en.tensor(v))
        want = _reference(x, v)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)
        if previous is not None:          # the call before was released: its array came back
            assert _base(got[0]) is previous()
        previous = weakref.ref(_base(got[0]))
        del got


def test_held_results_are_never_overwritten():
    f = en.function(_fn)
    kept, values = [], []
    for seed in range(4):
        x, v = _inputs(seed)
        out = f(en.tensor(x), en.tensor(v))
        kept.append(out)
        values.append(_reference(x, v)[0])
    for (out, _), want in zip(kept, values):
        np.testing.assert_array_equal(out.numpy(), want)
    assert len({id(_base(o)) for o, _ in kept}) == len(kept)


@pytest.mark.parametrize("hold", ["numpy view", "slice", "np.asarray", "tensor view"])
def test_a_view_of_a_released_result_keeps_its_array(hold):
    f = en.function(_fn)
    x0, v0 = _inputs(0)
    out = f(en.tensor(x0), en.tensor(v0))[0]
    if hold == "numpy view":
        held = out.numpy()
    elif hold == "slice":
        held = out.numpy()[3:7]
    elif hold == "np.asarray":
        held = np.asarray(out)
    else:
        held = en.reshape(out, (-1,))
    expected = np.array(held)
    del out
    x1, v1 = _inputs(1)
    np.testing.assert_array_equal(f(en.tensor(x1), en.tensor(v1))[0].numpy(),
                                  _reference(x1, v1)[0])
    np.testing.assert_array_equal(np.asarray(held), expected)


def test_a_result_passed_back_as_input_is_not_its_own_output():
    f = en.function(lambda x: en.exp(x) * 0.5)
    x = np.random.default_rng(3).standard_normal(SHAPE) * 0.1
    y = f(en.tensor(x))
    z = f(y)          # y's array is an input here: z must be written elsewhere
    np.testing.assert_array_equal(y.numpy(), np.exp(x) * 0.5)
    np.testing.assert_array_equal(z.numpy(), np.exp(np.exp(x) * 0.5) * 0.5)
    assert _base(z) is not _base(y)


def test_small_outputs_inputs_and_constants_are_not_recycled():
    big = en.tensor(np.ones(SHAPE))
    f = en.function(lambda x, s: (x, x + 1.0, s * 2.0, big))
    graph = f.graph_for(en.tensor(np.ones(SHAPE)), en.tensor(np.ones(4)))
    plan = graph.memory_plan
    chosen = output_recycling.recyclable_outputs(graph, plan, en.backend.get("numpy"))
    assert [n.shape for n in chosen] == [SHAPE]       # x + 1.0 only
    x = np.random.default_rng(4).standard_normal(SHAPE)
    out = f(en.tensor(x), en.tensor(np.arange(4.0)))
    np.testing.assert_array_equal(out[0].numpy(), x)
    np.testing.assert_array_equal(out[1].numpy(), x + 1.0)
    np.testing.assert_array_equal(out[2].numpy(), np.arange(4.0) * 2.0)


def test_switched_off_every_call_allocates():
    en.config.recycle_graph_outputs = False
    try:
        f = en.function(_fn)
        x, v = _inputs(0)
        first = weakref.ref(_base(f(en.tensor(x), en.tensor(v))[0]))
        assert "_held" not in f.source_for(en.tensor(x), en.tensor(v))
        got = f(en.tensor(x), en.tensor(v))[0]
        assert first() is None       # nothing kept it: a fresh array each call
        np.testing.assert_array_equal(got.numpy(), _reference(x, v)[0])
    finally:
        en.config.recycle_graph_outputs = True


def test_under_a_tape_gradients_match_numpy_and_residuals_survive():
    f = en.function(lambda x, v: en.sum(en.tanh(x) * v))
    for seed in range(3):
        x, v = _inputs(seed)
        xt = en.tensor(x)
        with en.GradientTape() as tape:
            tape.watch(xt)
            loss = f(xt, en.tensor(v))
        g = tape.gradient(loss, xt)
        np.testing.assert_allclose(g.numpy(), (1.0 - np.tanh(x) ** 2) * v, rtol=1e-12)
        np.testing.assert_allclose(float(loss), np.sum(np.tanh(x) * v), rtol=1e-12)


def test_threads_never_share_an_output():
    f = en.function(lambda x: en.tanh(x) * 3.0)
    inputs = [np.random.default_rng(s).standard_normal(SHAPE) for s in range(4)]
    errors = []

    def work(k):
        for _ in range(30):
            x = inputs[(k + _) % 4]
            out = f(en.tensor(x))
            if not np.array_equal(out.numpy(), np.tanh(x) * 3.0):
                errors.append(k)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_per_example_gradients_of_vmap_match_a_loop_of_grad():
    rng = np.random.default_rng(5)
    w = en.tensor(rng.standard_normal((40, 30)))
    X = rng.standard_normal((64, 40))

    def loss(w, x):
        return en.sum(en.tanh(x @ w) ** 2.0)
    per_example = en.function(en.vmap(en.grad(loss), in_axes=(None, 0)))
    want = np.stack([en.grad(loss)(w, en.tensor(x)).numpy() for x in X])
    for _ in range(3):         # the (64, 40, 30) output is recycled from the second call
        got = per_example(w, en.tensor(X)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
