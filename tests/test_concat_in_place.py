"""Concatenations whose parts are written in place (graph/concat_in_place.py): the same
values as numpy's concatenate, a fresh result every call, and a copy only where a
part does not qualify."""
import numpy as np

import engine as en

RNG = np.random.default_rng(0)


def _source(f, *args):
    return f.get_concrete_function(*args).source


def _flat_grad_parts(x, w, b):
    g = en.reshape(x @ w + x @ w, (-1,))          # a kernel's result, seen through a reshape
    return en.concat([g, en.sum(w, axis=0), en.sum(x * 2.0, axis=1)])


def _numpy_parts(x, w, b):
    return np.concatenate([(2 * (x @ w)).ravel(), w.sum(0), (x * 2.0).sum(1)])


def test_the_parts_write_into_the_result_and_a_variable_takes_it():
    x, w = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3))
    v = en.Variable(np.zeros(15 + 3 + 5), name="flat")

    @en.function
    def f(x, w):
        flat = _flat_grad_parts(x, w, None)
        v.assign(flat)
        return en.sum(flat * flat)

    out = f(x, w)
    want = _numpy_parts(x, w, None)
    np.testing.assert_allclose(v.numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(float(out), np.sum(want * want), rtol=1e-13)
    source = _source(f, x, w)
    assert "k_concat" not in source and "_cc0 = _np_empty(23" in source
    first = v.numpy()
    f(x * 3.0, w)                                   # a new result array for every call
    np.testing.assert_allclose(first, want, rtol=1e-13)
    np.testing.assert_allclose(v.numpy(), _numpy_parts(x * 3.0, w, None), rtol=1e-13)


def test_parts_that_do_not_qualify_are_copied_as_before():
    x, w = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3))
    cases = {
        # a part read by something else too
        "shared part": lambda x, w: (lambda g: (en.concat([g, en.sum(w, axis=0)]) * 1.0,
                                                 en.sum(g)))(en.reshape(x @ w, (-1,))),
        # a part that is a graph input
        "input part": lambda x, w: en.concat([en.reshape(x, (-1,)), en.sum(w, axis=0)]) * 1.0,
        # the concatenation is itself the output
        "output": lambda x, w: en.concat([en.reshape(x @ w, (-1,)), en.sum(w, axis=0)]),
        # two dimensions
        "2-D": lambda x, w: en.concat([x @ w, x @ w * 2.0], axis=0) * 1.0,
    }
    for name, fn in cases.items():
        f = en.function(fn)
        got, want = f(x, w), fn(en.tensor(x), en.tensor(w))
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, err_msg=name)
        assert "_np_empty" not in _source(f, x, w), name


def test_lbfgs_flattens_its_gradients_in_place_with_the_eager_iterates():
    w0, x = RNG.standard_normal((6, 4)), en.tensor(RNG.standard_normal((8, 6)))

    def problem():
        w, b = en.Variable(w0.copy(), name="w"), en.Variable(np.zeros(4), name="b")
        opt = en.optim.LBFGS(history=3)
        return (lambda: opt.minimize(lambda: en.mean((x @ w + b) ** 2.0), [w, b])), w
    eager_step, eager_w = problem()
    traced_step, traced_w = problem()
    traced = en.function(traced_step)
    for _ in range(5):
        np.testing.assert_allclose(float(traced()), float(eager_step()), rtol=1e-10)
    np.testing.assert_allclose(traced_w.numpy(), eager_w.numpy(), rtol=1e-9, atol=1e-12)
    assert "k_concat(" not in traced.get_concrete_function().source
