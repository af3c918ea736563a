"""An en.function called from eager code: its cache lookup and its gradient on a tape.

The GRU workload's ``graph_cell`` mode calls a compiled cell ``cell(h, x, weights)``
in an eager loop under a tape; these pin what makes that call cheap and right.
"""
import numpy as np

import engine as en


def _cell(h, x, p):
    w, u, b = p
    return en.tanh(x @ w + h @ u + b)


def _numpy_cell(h, x, p):
    w, u, b = p
    return np.tanh(x @ w + h @ u + b)


def _weights(rng, n=4):
    return tuple(en.tensor(rng.standard_normal(s)) for s in ((3, n), (n, n), (n,)))


def test_a_tuple_of_tensors_argument_is_found_again_without_a_retrace():
    rng = np.random.default_rng(0)
    p = _weights(rng)
    f = en.function(_cell)
    h, x = en.tensor(rng.standard_normal((2, 4))), en.tensor(rng.standard_normal((2, 3)))
    for _ in range(3):
        out = f(h, x, p)
    assert f.trace_count == 1
    # Found by the shapes and dtypes of the leaves (the lean path), not a full signature.
    assert [k[4:6] for k in f._fast] == [(tuple, 3)]
    np.testing.assert_allclose(out.numpy(), _numpy_cell(h.numpy(), x.numpy(),
                                                        [t.numpy() for t in p]), rtol=1e-12)
    # Another shape inside the tuple, or another length of it, is another signature.
    q = _weights(rng, n=5)
    h5 = en.tensor(rng.standard_normal((2, 5)))
    out5 = f(h5, x, q)
    assert f.trace_count == 2 and out5.shape == (2, 5)
    np.testing.assert_allclose(out5.numpy(), _numpy_cell(h5.numpy(), x.numpy(),
                                                         [t.numpy() for t in q]), rtol=1e-12)
    g = en.function(lambda h, p: h * p[0] if len(p) == 1 else h * p[0] + p[1])
    one, two = g(h, (h,)), g(h, (h, h))
    assert g.trace_count == 2
    np.testing.assert_allclose(one.numpy(), h.numpy() ** 2)
    np.testing.assert_allclose(two.numpy(), h.numpy() ** 2 + h.numpy())


def test_the_backward_of_a_call_skips_inputs_the_tape_does_not_need():
    rng = np.random.default_rng(1)
    p = _weights(rng)
    h0 = en.tensor(rng.standard_normal((2, 4)))
    xs = [en.tensor(rng.standard_normal((2, 3))) for _ in range(3)]
    f = en.function(_cell)

    def loss(cell):
        with en.GradientTape() as tape:
            tape.watch(list(p))
            h = h0
            for x in xs:
                h = cell(h, x, p)
            total = en.sum(h * h)
        return tape.gradient(total, list(p))

    eager = loss(_cell)
    for _ in range(2):   # the second time the calls save what the backward reads
        compiled = loss(f)
        for a, b in zip(compiled, eager):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)
    concrete = f.get_concrete_function(h0, xs[0], p)
    # h0 and the x's are not watched: the first step needs only the weights' gradients,
    # the others h's and the weights', never x's. (The split of the backward graph
    # traces it once for every gradient, to serve any choice.)
    want = [(False, False, True, True, True), (True, False, True, True, True)]
    split = concrete._saving
    assert sorted(w for w in concrete._backward if w != split.all_wanted) == want
    assert sorted(split._functions) == want
    every = concrete.backward_function()      # all gradients, as before
    everything = every.get_concrete_function(h0, xs[0], *p, en.ones_like(h0)).graph
    weights_only = concrete.backward_function(want[0]).get_concrete_function(
        h0, xs[0], *p, en.ones_like(h0)).graph
    products = [sum(n.op.name == "matmul" for n in g.nodes) for g in (weights_only, everything)]
    assert products[0] < products[1]


def test_squaring_runs_exactly_and_its_gradient_is_2x():
    x = en.tensor(np.array([-3.0, -0.0, 0.5, np.inf, np.nan], np.float32))
    y = x ** 2.0
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), np.power(x.numpy(), np.float32(2)))
    np.testing.assert_array_equal((x ** 1.0).numpy(), x.numpy())
    g = en.grad(lambda a: en.sum(a ** 2.0))(en.tensor(np.array([-3.0, 0.0, 0.5])))
    np.testing.assert_array_equal(g.numpy(), [-6.0, 0.0, 1.0])
    gg = en.grad(lambda a: en.sum(en.grad(lambda b: en.sum(b ** 3.0))(a)))(
        en.tensor(np.array([-1.0, 0.0, 2.0])))
    np.testing.assert_allclose(gg.numpy(), [-6.0, 0.0, 12.0])
