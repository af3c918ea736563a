"""Gradients: tapes, en.grad / en.value_and_grad, higher orders, custom gradients, memory.

Every expected value comes from a closed form or from central finite differences
of a plain numpy version of the function, never from the engine itself.
"""
import gc
import weakref

import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference as numeric_grad


def close(t, expected, rtol=1e-7, atol=1e-9):
    assert isinstance(t, en.Tensor), type(t)
    expected = np.asarray(expected)
    assert t.shape == expected.shape, (t.shape, expected.shape)
    np.testing.assert_allclose(t.numpy(), expected, rtol=rtol, atol=atol)


X = np.array([0.3, -1.2, 2.0])


# ---- GradientTape basics -------------------------------------------------------------
def test_watch_and_gradient_of_one_source():
    x = en.tensor(X)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(en.sin(x) * x)
    close(tape.gradient(y, x), np.cos(X) * X + np.sin(X))


def test_unwatched_tensor_gets_none():
    x = en.tensor(X)
    with en.GradientTape() as tape:
        y = en.sum(x * x)
    assert tape.gradient(y, x) is None


def test_unconnected_source_gets_none():
    x, z = en.tensor(X), en.tensor(1.0)
    with en.GradientTape() as tape:
        tape.watch([x, z])
        y = en.sum(x * 2.0)
    gx, gz = tape.gradient(y, [x, z])
    close(gx, np.full(3, 2.0))
    assert gz is None


def test_sources_as_list_tuple_and_dict_keep_their_structure():
    a, b = en.tensor(2.0), en.tensor(3.0)
    with en.GradientTape(persistent=True) as tape:
        tape.watch({"a": a, "b": b})
        y = a * a * b
    as_list = tape.gradient(y, [a, b])
    as_tuple = tape.gradient(y, (a, b))
    as_dict = tape.gradient(y, {"b": b, "a": a})
    assert isinstance(as_list, list) and len(as_list) == 2
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 2
    assert isinstance(as_dict, dict) and list(as_dict) == ["b", "a"]
    for ga, gb in (as_list, as_tuple, (as_dict["a"], as_dict["b"])):
        assert float(ga) == pytest.approx(2 * 2.0 * 3.0)
        assert float(gb) == pytest.approx(2.0 * 2.0)


def test_non_scalar_target_is_summed():
    x = en.tensor(X)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * x * x
    close(tape.gradient(y, x), 3 * X ** 2)


def test_list_of_targets_adds_gradients():
    x = en.tensor(X)
    with en.GradientTape() as tape:
        tape.watch(x)
        y1 = en.sum(x * x)
        y2 = en.sum(en.exp(x))
    close(tape.gradient([y1, y2], x), 2 * X + np.exp(X))


def test_output_gradients_weight_the_target():
    x = en.tensor(X)
    w = np.array([1.0, -2.0, 0.5])
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    close(tape.gradient(y, x, output_gradients=en.tensor(w)), 2 * X * w)


def test_persistent_tape_allows_several_gradients():
    x = en.tensor(1.5)
    with en.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = en.exp(x)
    assert float(tape.gradient(y, x)) == pytest.approx(3.0)
    assert float(tape.gradient(z, x)) == pytest.approx(np.exp(1.5))
    assert float(tape.gradient(y, x)) == pytest.approx(3.0)


def test_non_persistent_tape_twice_is_a_clear_error():
    x = en.tensor(1.5)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(en.EngineError, match="persistent"):
        tape.gradient(y, x)


def test_stop_recording():
    x = en.tensor(2.0)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = y * x  # not recorded: z does not depend on x for this tape
    assert tape.gradient(z, x) is None


def test_watching_an_int_tensor_is_refused():
    with en.GradientTape() as tape:
        with pytest.raises(en.EngineError, match="floating"):
            tape.watch(en.tensor([1, 2]))


def test_tensor_used_twice():
    x = en.tensor(X)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(x * x + x * 3.0)
    close(tape.gradient(y, x), 2 * X + 3.0)


def test_variable_used_twice():
    v = en.Variable(X.copy())
    with en.GradientTape() as tape:
        y = en.sum(v * en.sin(v))
    close(tape.gradient(y, v), np.sin(X) + X * np.cos(X))


def test_float32_gradients_stay_float32():
    x = en.tensor([1.0, 2.0], dtype="float32")
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(x * 3.0 + x * x)
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    close(g, np.array([5.0, 7.0], np.float32))


# ---- broadcasting ---------------------------------------------------------------------
def test_broadcast_gradients_are_summed_back_to_input_shapes():
    a = np.arange(3.0).reshape(3, 1) + 1.0
    b = np.array([0.5, -1.0, 2.0, 3.0])
    ta, tb = en.tensor(a), en.tensor(b)
    with en.GradientTape() as tape:
        tape.watch([ta, tb])
        y = en.sum(ta * tb)  # (3, 4)
    ga, gb = tape.gradient(y, [ta, tb])
    close(ga, np.full((3, 1), b.sum()))
    close(gb, np.full(4, a.sum()))


def test_bias_add_and_scalar_broadcast():
    x = np.arange(6.0).reshape(2, 3)
    tx, tb, ts = en.tensor(x), en.tensor(np.zeros(3)), en.tensor(2.0)
    with en.GradientTape() as tape:
        tape.watch([tx, tb, ts])
        y = en.sum((tx + tb) * ts)
    gx, gb, gs = tape.gradient(y, [tx, tb, ts])
    close(gx, np.full((2, 3), 2.0))
    close(gb, np.full(3, 4.0))
    close(gs, x.sum())


def test_batched_matmul_gradient_with_broadcast_batch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4))
    b = rng.standard_normal((4, 5))
    ta, tb = en.tensor(a), en.tensor(b)
    with en.GradientTape() as tape:
        tape.watch([ta, tb])
        y = en.sum(en.matmul(ta, tb))
    ga, gb = tape.gradient(y, [ta, tb])
    close(ga, numeric_grad(lambda a_: np.sum(a_ @ b), a), rtol=1e-6)
    close(gb, numeric_grad(lambda b_: np.sum(a @ b_), b), rtol=1e-6)


CASES = [
    ("tanh-matmul", lambda w: en.sum(en.tanh(en.matmul(M, w)) ** 2.0),
     lambda w: np.sum(np.tanh(M @ w) ** 2.0), (4, 2)),
    ("logsumexp", lambda x: en.log(en.sum(en.exp(x))), lambda x: np.log(np.sum(np.exp(x))), (5,)),
    ("sigmoid-div", lambda x: en.mean(en.sigmoid(x) / (1.0 + x * x)),
     lambda x: np.mean(1 / (1 + np.exp(-x)) / (1.0 + x * x)), (2, 3)),
    ("max-abs", lambda x: en.max(en.abs(x), axis=1).sum(),
     lambda x: np.max(np.abs(x), axis=1).sum(), (3, 4)),
    ("sqrt-log1p", lambda x: en.sum(en.sqrt(en.log1p(x * x) + 1.0)),
     lambda x: np.sum(np.sqrt(np.log1p(x * x) + 1.0)), (3,)),
    ("transpose-reshape", lambda x: en.sum(en.reshape(x.T, (-1,)) * en.tensor(np.arange(6.0))),
     lambda x: np.sum(x.T.reshape(-1) * np.arange(6.0)), (2, 3)),
]
M = np.random.default_rng(1).standard_normal((3, 4))


@pytest.mark.parametrize("name, f, ref, shape", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(name, f, ref, shape):
    x = np.random.default_rng(2).uniform(0.2, 1.5, size=shape)
    g = en.grad(f)(en.tensor(x))
    close(g, numeric_grad(ref, x), rtol=1e-5, atol=1e-7)


# ---- higher order -------------------------------------------------------------------------
def nested_derivatives(f, x0):
    """First, second and third derivatives of ``f`` at ``x0`` with three nested tapes."""
    x = en.tensor(x0)
    with en.GradientTape() as t3:
        t3.watch(x)
        with en.GradientTape() as t2:
            t2.watch(x)
            with en.GradientTape() as t1:
                t1.watch(x)
                y = f(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    return d1, d2, d3


def _tanh_derivs(x):
    t = np.tanh(x)
    return 1 - t ** 2, -2 * t * (1 - t ** 2), -2 * (1 - t ** 2) * (1 - 3 * t ** 2)


HIGHER = [
    ("cube", lambda x: x ** 3, lambda x: (3 * x ** 2, 6 * x, 6.0 + 0 * x)),
    ("cube-mul", lambda x: x * x * x, lambda x: (3 * x ** 2, 6 * x, 6.0 + 0 * x)),
    ("sin", en.sin, lambda x: (np.cos(x), -np.sin(x), -np.cos(x))),
    ("tanh", en.tanh, _tanh_derivs),
    ("exp-of-square", lambda x: en.exp(x * x),
     lambda x: (2 * x * np.exp(x * x), (2 + 4 * x ** 2) * np.exp(x * x),
                (12 * x + 8 * x ** 3) * np.exp(x * x))),
    ("log", en.log, lambda x: (1 / x, -1 / x ** 2, 2 / x ** 3)),
]


@pytest.mark.parametrize("name, f, derivs", HIGHER, ids=[h[0] for h in HIGHER])
@pytest.mark.parametrize("x0", [0.7, np.array([0.4, 1.3])])
def test_nested_tapes_give_higher_derivatives(name, f, derivs, x0):
    d1, d2, d3 = nested_derivatives(f, x0)
    e1, e2, e3 = derivs(np.asarray(x0))
    close(d1, e1)
    close(d2, e2)
    close(d3, e3)


@pytest.mark.parametrize("name, f, derivs", HIGHER, ids=[h[0] for h in HIGHER])
def test_grad_of_grad_of_grad(name, f, derivs):
    x0 = 0.7
    e1, e2, e3 = derivs(np.asarray(x0))
    g1 = en.grad(f)
    g2 = en.grad(g1)
    g3 = en.grad(g2)
    close(g1(x0), e1)
    close(g2(x0), e2)
    close(g3(en.tensor(x0)), e3)


def test_hessian_vector_product_with_nested_tapes():
    # f(x) = x0**2 * x1: H = [[2 x1, 2 x0], [2 x0, 0]]; the outer gradient of
    # (grad f . v) is H @ v.
    x0 = np.array([0.5, 2.0])
    v = np.array([1.0, -3.0])
    x = en.tensor(x0)
    with en.GradientTape() as outer:
        outer.watch(x)
        with en.GradientTape() as inner:
            inner.watch(x)
            first, second = en.tensor([1.0, 0.0]), en.tensor([0.0, 1.0])
            y = en.sum(x * x * first) * en.sum(x * second)
        g = inner.gradient(y, x)
        gv = en.sum(g * en.tensor(v))
    hv = outer.gradient(gv, x)
    hessian = np.array([[2 * x0[1], 2 * x0[0]], [2 * x0[0], 0.0]])
    close(g, [2 * x0[0] * x0[1], x0[0] ** 2])
    close(hv, hessian @ v)


# ---- en.grad and en.value_and_grad ----------------------------------------------------------
def f2(a, b):
    return en.sum(a * a * b) + en.sum(en.sin(b))


A0, B0 = np.array([1.0, 2.0]), np.array([0.5, -0.5])


def test_grad_argnums_int():
    close(en.grad(f2)(A0, B0), 2 * A0 * B0)
    close(en.grad(f2, argnums=1)(A0, B0), A0 ** 2 + np.cos(B0))
    close(en.grad(f2, argnums=-1)(A0, B0), A0 ** 2 + np.cos(B0))


def test_grad_argnums_tuple():
    ga, gb = en.grad(f2, argnums=(0, 1))(en.tensor(A0), en.tensor(B0))
    close(ga, 2 * A0 * B0)
    close(gb, A0 ** 2 + np.cos(B0))
    (gb2,) = en.grad(f2, argnums=(1,))(A0, B0)
    close(gb2, A0 ** 2 + np.cos(B0))


def test_value_and_grad():
    value, g = en.value_and_grad(f2, argnums=(0, 1))(A0, B0)
    assert float(value) == pytest.approx(np.sum(A0 * A0 * B0) + np.sum(np.sin(B0)))
    close(g[0], 2 * A0 * B0)
    close(g[1], A0 ** 2 + np.cos(B0))


def test_has_aux():
    def f(x):
        y = en.sum(x * x)
        return y, {"norm": en.sqrt(y), "tag": "aux"}

    g, aux = en.grad(f, has_aux=True)(A0)
    close(g, 2 * A0)
    assert aux["tag"] == "aux"
    assert float(aux["norm"]) == pytest.approx(np.sqrt(5.0))
    (value, aux2), g2 = en.value_and_grad(f, has_aux=True)(A0)
    assert float(value) == pytest.approx(5.0)
    assert aux2["tag"] == "aux"
    close(g2, 2 * A0)


def test_grad_of_unused_argument_is_zero():
    g = en.grad(lambda a, b: en.sum(a * 2.0), argnums=1)(A0, B0)
    close(g, np.zeros(2))


def test_grad_needs_a_scalar_output():
    with pytest.raises(en.EngineError, match="scalar"):
        en.grad(lambda x: x * 2.0)(A0)


def test_grad_of_an_int_argument_is_refused():
    with pytest.raises(en.NotDifferentiableError, match="floating"):
        en.grad(lambda x: en.sum(x))(np.array([1, 2]))


def test_grad_argnums_out_of_range():
    with pytest.raises(en.EngineError, match="argnums"):
        en.grad(f2, argnums=2)(A0, B0)


def test_grad_with_keyword_arguments_passed_through():
    g = en.grad(lambda x, scale=1.0: en.sum(x * x) * scale)(A0, scale=3.0)
    close(g, 6 * A0)


def test_grad_with_respect_to_a_variable_argument():
    v = en.Variable(A0.copy())
    close(en.grad(lambda w: en.sum(w * w * w))(v), 3 * A0 ** 2)


# ---- stop_gradient ---------------------------------------------------------------------------
def test_stop_gradient():
    x = en.tensor(X)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(en.stop_gradient(x * x) * x)
    close(tape.gradient(y, x), X * X)  # x*x treated as a constant
    close(en.stop_gradient(x), X)


def test_stop_gradient_in_higher_order():
    # f(x) = x**2 * sg(x): f' = 2 x sg(x) ; f'' = 2 sg(x)
    f = lambda x: x * x * en.stop_gradient(x)  # noqa: E731
    assert float(en.grad(f)(3.0)) == pytest.approx(18.0)
    assert float(en.grad(en.grad(f))(3.0)) == pytest.approx(6.0)


# ---- custom_gradient -----------------------------------------------------------------------
@en.custom_gradient
def clip_gradient(x):
    def grad_fn(dy):
        return en.minimum(en.maximum(dy, -1.0), 1.0)
    return en.identity(x), grad_fn


def test_custom_gradient_clips():
    x = en.tensor(np.array([1.0, 2.0, 3.0]))
    with en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(clip_gradient(x) * en.tensor([0.5, 5.0, -7.0]))
    close(tape.gradient(y, x), [0.5, 1.0, -1.0])
    close(clip_gradient(x), [1.0, 2.0, 3.0])  # the forward value is untouched


@en.custom_gradient
def log1pexp(x):
    """The numerically stable log(1 + e^x) from TensorFlow's custom_gradient docs."""
    e = en.exp(x)

    def grad_fn(dy):
        return dy * (1.0 - 1.0 / (1.0 + e))
    return en.log(1.0 + e), grad_fn


def test_custom_gradient_log1pexp_is_stable():
    x = en.tensor(100.0, dtype="float32")
    with np.errstate(over="ignore", invalid="ignore"):
        naive = en.grad(lambda x: en.log(1.0 + en.exp(x)))(x)
        stable = en.grad(log1pexp)(x)
    assert np.isnan(float(naive))  # inf / inf: why the custom gradient exists
    assert float(stable) == 1.0
    assert stable.dtype == np.float32
    assert float(en.grad(log1pexp)(0.0)) == pytest.approx(0.5)


@en.custom_gradient
def softplus(x):
    """log(1 + e^x) whose backward rule is built from ``x``, so it differentiates again."""
    def grad_fn(dy):
        return dy * en.sigmoid(x)
    return en.log1p(en.exp(x)), grad_fn


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_custom_gradient_second_derivative_under_nested_tapes():
    x0 = np.array([-1.0, 0.3, 2.0])
    d1, d2, d3 = nested_derivatives(softplus, x0)
    s = _sig(x0)
    close(d1, s)
    close(d2, s * (1 - s))
    close(d3, s * (1 - s) * (1 - 2 * s))
    close(en.grad(en.grad(lambda x: en.sum(softplus(x))))(en.tensor(0.4)), _sig(0.4) * (1 - _sig(0.4)))


def test_custom_gradient_with_two_inputs():
    @en.custom_gradient
    def scaled_mul(a, b):
        def grad_fn(dy):
            return dy * b * 10.0, dy * a
        return a * b, grad_fn

    a, b = en.tensor(2.0), en.tensor(3.0)
    with en.GradientTape() as tape:
        tape.watch([a, b])
        y = scaled_mul(a, b)
    ga, gb = tape.gradient(y, [a, b])
    assert float(ga) == pytest.approx(30.0)
    assert float(gb) == pytest.approx(2.0)


def test_custom_gradient_wrong_number_of_gradients():
    @en.custom_gradient
    def bad(a, b):
        return a * b, lambda dy: dy

    a, b = en.tensor(2.0), en.tensor(3.0)
    with en.GradientTape() as tape:
        tape.watch([a, b])
        y = bad(a, b)
    with pytest.raises(en.EngineError, match="bad"):
        tape.gradient(y, [a, b])


def test_custom_gradient_used_twice_accumulates():
    x = en.tensor(1.0)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = clip_gradient(x) * 5.0 + clip_gradient(x) * 0.25
    assert float(tape.gradient(y, x)) == pytest.approx(1.25)


# ---- memory ------------------------------------------------------------------------------
def _array_of(t):
    """The array holding a tensor's value (``numpy()`` hands out a view of it)."""
    view = t.numpy()
    return view.base if view.base is not None else view


class _GcDisabled:
    """Turn the cycle collector off so only reference counting can free objects."""

    def __enter__(self):
        gc.collect()
        self.was = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def test_non_persistent_tape_frees_intermediates_by_refcount():
    with _GcDisabled():
        x = en.tensor(np.linspace(0.1, 1.0, 1000))
        with en.GradientTape() as tape:
            tape.watch(x)
            a = en.exp(x)
            b = en.sin(a) * a
            c = en.matmul(en.reshape(b, (10, 100)), en.reshape(a, (100, 10)))
            loss = en.sum(en.tanh(c))
        refs = [weakref.ref(t) for t in (a, b, c)] + [weakref.ref(_array_of(t)) for t in (a, b, c)]
        del a, b, c
        alive_before = sum(r() is not None for r in refs)
        g = tape.gradient(loss, x)
        dead = [r() is None for r in refs]
        assert alive_before == len(refs)  # the tape kept them for the backward pass
        assert all(dead), f"still alive after gradient(): {dead}"
        assert g.shape == x.shape


def test_gradient_creates_no_reference_cycles():
    def step():
        x = en.tensor(np.linspace(-1.0, 1.0, 64))
        v = en.Variable(np.ones(64))
        with en.GradientTape() as tape:
            tape.watch(x)
            y = en.sum(en.tanh(x * v) ** 2.0 + en.exp(x) / (1.0 + x * x))
        gx, gv = tape.gradient(y, [x, v])
        return float(en.sum(gx)) + float(en.sum(gv))

    step()  # warm caches (shape-rule cache, imports) outside the measurement
    with _GcDisabled():
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(5):
                step()
            unreachable = gc.collect()
            leaked = [type(o).__name__ for o in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert unreachable == 0, f"gradient computations left reference cycles: {leaked[:20]}"


def test_tape_object_itself_is_freed_by_refcount():
    with _GcDisabled():
        x = en.tensor(X)
        with en.GradientTape() as tape:
            tape.watch(x)
            y = en.sum(x * x)
        tape_ref = weakref.ref(tape)
        y_ref = weakref.ref(y)
        tape.gradient(y, x)
        del tape, y
        assert tape_ref() is None
        assert y_ref() is None


def test_persistent_tape_frees_on_delete():
    with _GcDisabled():
        x = en.tensor(X)
        with en.GradientTape(persistent=True) as tape:
            tape.watch(x)
            a = en.exp(x)
            y = en.sum(a * a)
        ref = weakref.ref(a)
        del a
        tape.gradient(y, x)
        tape.gradient(y, x)
        assert ref() is not None  # a persistent tape keeps what it recorded
        del tape, y
        assert ref() is None


def test_grad_function_frees_intermediates():
    refs = []

    def f(x):
        a = en.exp(x)
        b = en.sin(a)
        refs.extend([weakref.ref(a), weakref.ref(b), weakref.ref(_array_of(b))])
        return en.sum(a * b)

    with _GcDisabled():
        g = en.grad(f)(X)
        assert all(r() is None for r in refs)
        close(g, np.exp(X) * np.sin(np.exp(X)) + np.exp(X) * np.cos(np.exp(X)) * np.exp(X))


def test_a_differentiated_argument_is_its_own_variable():
    # The same tensor passed twice, or also captured by f: the partial derivative,
    # as JAX gives it (the closed form below), in every reverse-mode entry point.
    x = en.tensor([1.0, 2.0, 3.0])
    want = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(en.grad(lambda a: en.sum(a * x))(x).numpy(), want)
    np.testing.assert_allclose(en.grad(lambda a, b: en.sum(a * b))(x, x).numpy(), want)
    ga, gb = en.grad(lambda a, b: en.sum(a * b), argnums=(0, 1))(x, x)
    np.testing.assert_allclose(ga.numpy(), want)
    np.testing.assert_allclose(gb.numpy(), want)
    ca, cb = en.vjp(lambda a, b: a * b, x, x)[1](en.ones(3))
    np.testing.assert_allclose(ca.numpy(), want)
    np.testing.assert_allclose(cb.numpy(), want)
    np.testing.assert_allclose(en.jacrev(lambda a: a * x)(x).numpy(), np.diag(want))
    np.testing.assert_allclose(en.function(en.grad(lambda a: en.sum(a * x)))(x).numpy(), want)
    # A parameter in a pytree that also appears elsewhere in it.
    g = en.grad(lambda p: en.sum(p["w"] * p["v"]))({"w": x, "v": x})
    np.testing.assert_allclose(g["w"].numpy(), want)
    np.testing.assert_allclose(g["v"].numpy(), want)


@en.custom_gradient
def _sin_with_triple_gradient(x):
    return en.sin(x), lambda dy: dy * 3.0 * en.cos(x)


def _scan_of_custom(a):
    def body(c, x):
        return c + _sin_with_triple_gradient(x), c
    return en.sum(en.scan(body, en.tensor(0.0), a)[0])


def _cond_of_custom(a):
    return en.sum(en.cond(en.tensor(True), _sin_with_triple_gradient, lambda v: v, a))


@pytest.mark.parametrize("make", [
    lambda: en.grad(en.function(lambda a: en.sum(_sin_with_triple_gradient(a)))),
    lambda: en.function(en.grad(lambda a: en.sum(_sin_with_triple_gradient(a)))),
    lambda: en.grad(en.function(_scan_of_custom)),
    lambda: en.function(en.grad(_scan_of_custom)),
    lambda: en.grad(_cond_of_custom),
    lambda: en.function(en.grad(_cond_of_custom)),
], ids=["grad-of-function", "function-of-grad", "grad-of-function-scan",
        "function-of-grad-scan", "cond", "function-of-grad-cond"])
def test_a_custom_gradient_holds_inside_traced_functions_and_bodies(make):
    # The hand-written rule (3 cos x), not the forward ops' derivative (cos x).
    y = np.array([0.1, 0.5, -1.2])
    np.testing.assert_allclose(make()(en.tensor(y)).numpy(), 3.0 * np.cos(y), rtol=1e-12)


def test_a_custom_gradient_of_a_traced_function_to_second_order():
    d2 = en.grad(en.grad(en.function(lambda a: en.sum(_sin_with_triple_gradient(a)))))
    np.testing.assert_allclose(float(d2(en.tensor(0.3))), -3.0 * np.sin(0.3), rtol=1e-12)
