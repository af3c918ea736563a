"""Concatenations whose parts are written in place (graph/lowering/concat_in_place.py): the same
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


def _check(fn, x, w, name):
    f = en.function(fn)
    got, want = f(x, w), fn(en.tensor(x), en.tensor(w))
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13, err_msg=name)
    return _source(f, x, w)


def test_parts_that_do_not_qualify_are_copied_as_before():
    x, w = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3))
    cases = {
        # half the parts are graph inputs: one concatenation copies them as well
        "input part": lambda x, w: en.concat([en.reshape(x, (-1,)), en.sum(w, axis=0)]) + 1.0,
        # the concatenation is itself the output
        "output": lambda x, w: en.concat([en.reshape(x @ w, (-1,)), en.sum(w, axis=0)]),
        # along another axis than the first, a part is no run of the result
        "axis 1": lambda x, w: en.concat([x @ w, x @ w * 2.0], axis=1) + 1.0,
        # three inputs among four parts
        "three copies": lambda x, w: en.concat([x, x * 2.0, x + w[0, 0], x - w[1, 1]][::-1][:1]
                                               + [x, x, x], axis=0) + 1.0,
    }
    for name, fn in cases.items():
        assert "_np_empty" not in _check(fn, x, w, name), name


def test_a_part_read_elsewhere_and_parts_of_two_dimensions_are_written_in_place():
    x, w = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3))
    cases = {
        # a part read by something else too: it reads the part in the result
        "shared part": lambda x, w: (lambda g: (en.concat([g, en.sum(w, axis=0)]) + 1.0,
                                                 en.sum(g)))(en.reshape(x @ w, (-1,))),
        # two dimensions, along the first axis
        "2-D": lambda x, w: en.concat([x @ w, x @ w * 2.0], axis=0) + 1.0,
        # a stack along a new first axis
        "stack": lambda x, w: en.stack([en.tanh(x @ w), en.sin(x @ w), en.cos(x)[:, :3]]) + 1.0,
        # an input part copied in beside two written in place
        "one copy": lambda x, w: en.concat([x[:, :3], x @ w, en.tanh(x @ w)], axis=0) + 1.0,
    }
    for name, fn in cases.items():
        source = _check(fn, x, w, name)
        assert "_np_empty" in source and "k_concat" not in source and "k_stack" not in source, \
            name + "\n" + source


def test_a_kernel_over_a_dying_part_does_not_write_into_the_result():
    # Each tanh(x_t) dies at its product by 3.0, which the memory plan may run in place
    # over it; the part lives in the concatenation's result by then, which must keep it.
    xs = RNG.standard_normal((4, 6, 5))

    def f(xs):
        parts = [en.tanh(xs[t] * 1.5) for t in range(4)]
        tripled = [p * 3.0 for p in parts]
        return en.concat(parts, axis=0) + 1.0, en.stack(tripled)
    traced = en.function(f)
    got_concat, got_tripled = traced(xs)
    parts = [np.tanh(xs[t] * 1.5) for t in range(4)]
    np.testing.assert_allclose(got_concat.numpy(), np.concatenate(parts) + 1.0, rtol=1e-13)
    np.testing.assert_allclose(got_tripled.numpy(), np.stack(parts) * 3.0, rtol=1e-13)
    assert "_np_empty" in _source(traced, xs)


def _states_rnn(xs, u, h0):
    """The unrolled RNN's pattern: its weight gradient reads h_0 .. h_{T-1}, its loss
    h_1 .. h_T."""
    hs = [h0]
    for t in range(5):
        hs.append(en.tanh(xs[t] + hs[-1] @ u))
    return (en.transpose(en.concat(hs[:-1], axis=0)) @ en.concat(hs[1:], axis=0),
            en.sum(en.stack(hs[1:]) ** 2.0, axis=(1, 2)))


def test_a_concat_and_a_stack_of_one_run_of_states_share_one_result():
    # Both joins of the states are views of one array that each step's kernel writes once.
    xs, u = RNG.standard_normal((5, 4, 3)), RNG.standard_normal((3, 3)) * 0.5
    h0 = RNG.standard_normal((4, 3))
    traced = en.function(_states_rnn)
    got_gram, got_norms = traced(xs, u, h0)
    hs = [h0]
    for t in range(5):
        hs.append(np.tanh(xs[t] + hs[-1] @ u))
    np.testing.assert_allclose(got_gram.numpy(), np.concatenate(hs[:-1]).T @ np.concatenate(hs[1:]),
                               rtol=1e-12)
    np.testing.assert_allclose(got_norms.numpy(), (np.stack(hs[1:]) ** 2).sum(axis=(1, 2)),
                               rtol=1e-12)
    source = _source(traced, xs, u, h0)
    # One array of h_0 .. h_5, allocated as a stack of them (each state one index into it).
    assert source.count("_np_empty(") == 1 and "_np_empty((6, 4, 3)," in source, source


def test_a_stack_of_scalar_results_writes_into_views_of_its_array():
    # Each 0-d part is one index into the stacked array; a plain index gives a numpy
    # scalar, which a kernel's out= refuses ("return arrays must be of ArrayType").
    cases = {
        "two parts, used twice": (lambda x: (lambda a: a + a)(en.stack([x / 2.0, x ** 2])),
                                  lambda x: 2.0 * np.stack([x / 2.0, x ** 2])),
        "a copied input part": (lambda x: (lambda a: a * a)(en.stack([x / 2.0, en.sin(x), x])),
                                lambda x: np.stack([x / 2.0, np.sin(x), x]) ** 2),
    }
    for name, (fn, reference) in cases.items():
        f = en.function(fn)
        for x in (3.0, -0.7):
            np.testing.assert_allclose(f(en.tensor(x)).numpy(), reference(np.float64(x)),
                                       rtol=1e-14, err_msg=name)
        assert "_np_empty(" in _source(f, en.tensor(3.0)), name   # written in place


def test_jvp_through_a_scan_with_a_scalar_carry_in_a_function():
    # The tangents of the scan's 0-d outputs are stacked in place like the values.
    def g(x):
        c, ys = en.scan(lambda c, _: (c * 2.0, c * c), x, None, length=3)
        return en.sum(ys) + c

    f = en.function(lambda x, v: en.jvp(g, (x,), (v,)))
    for x in (3.0, -1.5):
        value, tangent = f(en.tensor(x), en.tensor(1.0))
        # carries x, 2x, 4x: g = x^2 (1 + 4 + 16) + 8x, g' = 42x + 8
        np.testing.assert_allclose(float(value), 21.0 * x * x + 8.0 * x, rtol=1e-14)
        np.testing.assert_allclose(float(tangent), 42.0 * x + 8.0, rtol=1e-14)


def test_values_written_into_a_concatenation_get_no_planned_buffer():
    # The product and the sum write into the concatenation's array, which is a fresh
    # one: nothing is left for the memory plan (it used to give all three buffers).
    x, w = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 3))
    f = en.function(lambda x, w: en.concat([en.reshape(x @ w, (-1,)), en.sum(w, axis=0)]) * 2.0)
    np.testing.assert_allclose(f(x, w).numpy(),
                               2.0 * np.concatenate([(x @ w).ravel(), w.sum(0)]), rtol=1e-13)
    report = f.get_concrete_function(x, w).memory_report()
    assert (report["buffers"], report["planned_nodes"]) == (0, 0), report
    # The RNN's states: only the step products (4, 3) and the squares (5, 4, 3) are planned;
    # the states and the two joins of them live in the one array of h_0 .. h_5.
    xs, u = RNG.standard_normal((5, 4, 3)), RNG.standard_normal((3, 3)) * 0.5
    h0 = RNG.standard_normal((4, 3))
    traced = en.function(_states_rnn)
    for got, want in zip(traced(xs, u, h0),
                         _states_rnn(en.tensor(xs), en.tensor(u), en.tensor(h0))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)
    plan = traced.get_concrete_function(xs, u, h0).graph.memory_plan
    assert sorted(shape for _, shape, _ in plan.views) == [(4, 3)] * 5 + [(5, 4, 3)]


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


# ---- generated programs: joins of values that other ops read too, forward and gradient -----
_UNARY = [en.tanh, en.sin, lambda v: v * 1.5, lambda v: v + 0.25, en.exp, lambda v: -v]


def _generated(seed):
    """A random program of (4, 3) values: elementwise ops, products, and concats and stacks
    of values that later ops read again (the cases where a part lives in the result)."""
    r = np.random.default_rng(seed)
    plan = [(r.choice(["unary", "binary", "concat", "stack", "matmul", "sum"]),
             r.integers(0, 1000, size=3)) for _ in range(int(r.integers(4, 10)))]

    def f(*xs):
        vals, outs = list(xs), []
        for kind, a in plan:
            x = vals[int(a[0]) % len(vals)]
            same = [v for v in vals if v.shape == x.shape]
            parts = [same[(int(a[1]) + j) % len(same)] for j in range(2 + int(a[2]) % 3)]
            if kind == "unary":
                vals.append(_UNARY[int(a[1]) % len(_UNARY)](x))
            elif kind == "binary":
                vals.append(x * parts[0] + x)
            elif kind == "concat":
                joined = en.concat(parts, axis=0)
                vals.append(joined[:x.shape[0]] * 2.0)
                outs.append(en.sum(joined))
            elif kind == "stack":
                stacked = en.stack(parts)
                vals.append(stacked[0] + stacked[-1])
                outs.append(stacked * 1.0 + 0.5)
            elif kind == "matmul":
                vals.append(x @ en.transpose(x) @ x * 0.1)
            else:
                outs.append(en.sum(x ** 2.0, axis=0))
        return tuple(outs) + (vals[-1], vals[-2])
    return f, [r.standard_normal((4, 3)) for _ in range(int(r.integers(3, 7)))]


def test_generated_programs_with_joins_agree_with_eager_forward_and_gradient():
    placed = 0
    for seed in range(40):
        f, xs = _generated(seed)

        def loss(*ts, f=f):
            return sum(en.sum(o * o) for o in f(*ts))
        for fn in (f, en.value_and_grad(loss, argnums=tuple(range(len(xs))))):
            want = _leaves(fn(*[en.tensor(x) for x in xs]))       # eager
            traced = en.function(fn)
            first = _leaves(traced(*xs))
            snapshot = [np.array(a) for a in first]
            again = _leaves(traced(*xs))    # a second call, while the first's results live
            for a, b, c, kept in zip(first, again, want, snapshot):
                np.testing.assert_allclose(kept, np.asarray(c), rtol=1e-9, atol=1e-10,
                                           err_msg=f"seed {seed}")
                np.testing.assert_array_equal(np.asarray(a), kept, err_msg=f"seed {seed}")
                np.testing.assert_array_equal(np.asarray(b), kept, err_msg=f"seed {seed}")
            placed += "_np_empty" in _source(traced, *xs)
    assert placed >= 10, placed     # the programs do exercise joins written in place


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
