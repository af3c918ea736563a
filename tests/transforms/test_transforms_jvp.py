"""Forward mode (``en.jvp``, ``en.linearize``) and ``en.vjp`` over the op database.

For every differentiable op and composite, on its float64 gradient samples,
with random tangents ``v`` and cotangents ``u``:

* ``<u, J v>`` from ``jvp`` equals ``<J^T u, v>`` from ``vjp`` (reverse mode on
  the tape, an independent code path) to 1e-10;
* ``J v`` equals central finite differences of the op along ``v``.
"""
import warnings

import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference
from op_db import ALL_ENTRIES, F32, F64, seeded_rng
from support.op_checks import as_list, get_leaf, leaf_paths, with_leaves

EPS = 1e-6
COMPLEX = (np.dtype("complex64"), np.dtype("complex128"))

ENTRIES = [pytest.param(info, id=info.name) for info in ALL_ENTRIES if info.supports_grad]


@pytest.fixture(autouse=True)
def _quiet_fallbacks():
    # Ops without a native rule warn once; the coverage test lists them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", en.TransformFallbackWarning)
        yield


class Problem:
    """One sample as a function of its float64 array arguments, returning a list of outputs."""

    def __init__(self, info, sample):
        self.info, self.sample = info, sample
        self.paths = leaf_paths(sample.args, F64)
        self.x0 = [get_leaf(sample.args, p) for p in self.paths]

    def f(self, *xs):
        args = with_leaves(self.sample.args, self.paths, xs)
        return as_list(self.info.op(*args, **self.sample.kwargs))

    def float_outputs(self, outs):
        """The outputs with tangents: real floating, or complex (the transforms)."""
        return [i for i, o in enumerate(outs) if o.dtype in (F32, F64) + COMPLEX]


def _problems(info):
    rng = seeded_rng(info.name, "jvp")
    out = []
    for s in info.samples_for_grad(rng):
        p = Problem(info, s)
        if p.paths and p.float_outputs(p.f(*[en.tensor(x) for x in p.x0])):
            out.append(p)
    assert out, f"{info.name}: no sample with a float64 input and a float output"
    return out, rng


def _inner(a, b):
    """``Re(sum(a * b))``, unconjugated: how JAX's convention pairs a cotangent with a
    tangent (for real arrays, the plain inner product)."""
    a, b = np.asarray(a), np.asarray(b)
    wide = np.complex128 if a.dtype in COMPLEX or b.dtype in COMPLEX else np.float64
    return float(np.real(np.sum(a.astype(wide) * b.astype(wide))))


def _random_like(rng, o):
    if o.dtype in COMPLEX:
        return en.tensor(rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape),
                         dtype=o.dtype)
    return en.tensor(rng.standard_normal(o.shape), dtype=o.dtype)


@pytest.mark.parametrize("info", ENTRIES)
def test_jvp_is_the_transpose_of_vjp(info):
    problems, rng = _problems(info)
    for p in problems:
        xs = [en.tensor(x) for x in p.x0]
        vs = [en.tensor(rng.standard_normal(x.shape)) for x in p.x0]
        outs, jv = en.jvp(p.f, tuple(xs), tuple(vs))
        keep = p.float_outputs(outs)
        us = [_random_like(rng, o) if i in keep else en.zeros_like(o)
              for i, o in enumerate(outs)]
        _, vjp_fn = en.vjp(p.f, *xs)
        jtu = vjp_fn(us)
        lhs = sum(_inner(us[i], jv[i]) for i in keep)
        rhs = sum(_inner(g, v) for g, v in zip(jtu, vs))
        scale = 1.0 + sum(abs(_inner(np.abs(us[i]), np.abs(jv[i]))) for i in keep)
        assert abs(lhs - rhs) <= 1e-10 * scale, (
            f"{info.name} on {p.sample}: <u, J v> = {lhs!r} by jvp, <J^T u, v> = {rhs!r} by vjp")
        for o, t in zip(outs, jv):
            assert t.shape == o.shape and t.dtype == o.dtype, (
                f"{info.name} on {p.sample}: tangent {t.dtype}{t.shape} for output "
                f"{o.dtype}{o.shape}")


@pytest.mark.parametrize("info", ENTRIES)
def test_jvp_matches_finite_differences(info):
    problems, rng = _problems(info)
    for p in problems:
        vs = [rng.standard_normal(x.shape) for x in p.x0]
        outs, jv = en.jvp(p.f, tuple(en.tensor(x) for x in p.x0),
                          tuple(en.tensor(v) for v in vs))
        plus = p.f(*[en.tensor(x + EPS * v) for x, v in zip(p.x0, vs)])
        minus = p.f(*[en.tensor(x - EPS * v) for x, v in zip(p.x0, vs)])
        for i in p.float_outputs(outs):
            fd = (np.asarray(plus[i]) - np.asarray(minus[i])) / (2 * EPS)
            scale = 1.0 + float(np.max(np.abs(fd), initial=0.0))
            np.testing.assert_allclose(
                np.asarray(jv[i]), fd, rtol=1e-5, atol=1e-6 * scale,
                err_msg=f"{info.name} on {p.sample}: output {i}, jvp vs central differences")


# ---- the API -----------------------------------------------------------------------------------
def test_jvp_of_a_function_of_several_arguments_and_structures():
    def f(a, pair):
        x, y = pair
        return {"s": en.sum(a * x), "p": en.tanh(x) * y}
    a, x, y = np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([3.0, 4.0])
    ta, tx, ty = np.array([0.1, 0.2]), np.array([1.0, 0.0]), np.array([0.0, 1.0])
    out, tan = en.jvp(f, (en.tensor(a), (en.tensor(x), en.tensor(y))),
                      (en.tensor(ta), (en.tensor(tx), en.tensor(ty))))
    assert float(out["s"]) == pytest.approx(float(np.sum(a * x)))
    assert float(tan["s"]) == pytest.approx(float(np.sum(ta * x + a * tx)))
    expected = (1 - np.tanh(x) ** 2) * tx * y + np.tanh(x) * ty
    np.testing.assert_allclose(np.asarray(tan["p"]), expected, rtol=1e-14)


def test_integer_arguments_get_no_tangent():
    out, tan = en.jvp(lambda x, n: x * en.cast(n, "float64"), (en.tensor(2.0), en.tensor(3)),
                      (en.tensor(1.0), en.tensor(0)))
    assert float(tan) == 3.0


def test_jvp_errors_name_the_mismatch():
    with pytest.raises(en.ShapeError, match="tangent"):
        en.jvp(en.sin, (en.tensor([1.0, 2.0]),), (en.tensor([1.0]),))
    with pytest.raises(en.ShapeError, match="structure"):
        en.jvp(lambda a, b: a * b, (en.tensor(1.0), en.tensor(2.0)), (en.tensor(1.0),))


def test_linearize_computes_the_primal_once_and_is_linear():
    calls = []

    def f(x):
        calls.append(1)
        return en.sin(x) * x
    x = en.tensor([0.3, 1.2])
    y, f_jvp = en.linearize(f, x)
    np.testing.assert_allclose(np.asarray(y), np.sin([0.3, 1.2]) * [0.3, 1.2])
    t1, t2 = en.tensor([1.0, 0.0]), en.tensor([0.0, 2.0])
    d = np.cos([0.3, 1.2]) * [0.3, 1.2] + np.sin([0.3, 1.2])
    np.testing.assert_allclose(np.asarray(f_jvp(t1)), d * [1.0, 0.0], rtol=1e-14)
    np.testing.assert_allclose(np.asarray(f_jvp(t1 + t2)),
                               np.asarray(f_jvp(t1)) + np.asarray(f_jvp(t2)), rtol=1e-14)


def test_vjp_returns_one_cotangent_per_argument_and_can_be_called_again():
    out, vjp_fn = en.vjp(lambda x, y: x * y, en.tensor([1.0, 2.0]), en.tensor([3.0, 4.0]))
    gx, gy = vjp_fn(en.tensor([1.0, 1.0]))
    assert gx.numpy().tolist() == [3.0, 4.0] and gy.numpy().tolist() == [1.0, 2.0]
    gx, gy = vjp_fn(en.tensor([2.0, 0.0]))
    assert gx.numpy().tolist() == [6.0, 0.0]
    with pytest.raises(en.ShapeError, match="cotangent"):
        vjp_fn(en.tensor([1.0]))


def test_python_control_flow_on_dual_numbers_reads_the_primal():
    def f(x):
        return x * x if float(en.sum(x)) > 0 else -x
    assert float(en.jvp(f, (en.tensor(2.0),), (en.tensor(1.0),))[1]) == 4.0
    assert float(en.jvp(f, (en.tensor(-2.0),), (en.tensor(1.0),))[1]) == -1.0


def test_reverse_over_forward_and_forward_over_reverse_agree():
    f = lambda x: en.sum(en.sin(x) * x ** 2.0)   # noqa: E731
    x, v = en.tensor([0.3, -0.7, 1.1]), en.tensor([1.0, 0.5, -2.0])
    hvp_fwd = en.jvp(en.grad(f), (x,), (v,))[1]                       # forward over reverse
    hvp_rev = en.grad(lambda x: en.sum(en.jvp(f, (x,), (v,))[1]))(x)  # reverse over forward
    xn = np.asarray(x)
    h = np.diag(-np.sin(xn) * xn ** 2 + 4 * np.cos(xn) * xn + 2 * np.sin(xn))
    np.testing.assert_allclose(np.asarray(hvp_fwd), h @ np.asarray(v), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(hvp_rev), h @ np.asarray(v), rtol=1e-12)


def test_jvp_of_jvp_is_a_second_directional_derivative():
    def first(x):
        return en.jvp(lambda y: y ** 3.0, (x,), (en.tensor(1.0),))[1]
    second = en.jvp(first, (en.tensor(2.0),), (en.tensor(1.0),))[1]
    assert float(second) == pytest.approx(12.0)


def test_jvp_inside_a_traced_function_is_one_graph_that_lints():
    f = en.function(lambda x, v: en.jvp(lambda y: en.tanh(y @ y.T), (x,), (v,)))
    x, v = np.random.default_rng(0).standard_normal((2, 3, 3))
    out, tan = f(en.tensor(x), en.tensor(v))
    expected = (1 - np.tanh(x @ x.T) ** 2) * (v @ x.T + x @ v.T)
    np.testing.assert_allclose(np.asarray(tan), expected, rtol=1e-12)
    f.get_concrete_function(en.tensor(x), en.tensor(v)).graph.lint()
    assert f.trace_count == 1


def test_fallback_warns_once_naming_the_op_and_is_right(monkeypatch):
    # Without sin's rule (the one its elementwise flag implies), the double-VJP trick runs.
    from engine.transforms import base, forward
    monkeypatch.setattr(forward, "default_rule", lambda op, params: None)
    monkeypatch.setattr(base, "_WARNED", set())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", en.TransformFallbackWarning)
        _, t = en.jvp(en.sin, (en.tensor(0.4),), (en.tensor(2.0),))
        _, t2 = en.jvp(en.sin, (en.tensor([0.1, 0.2]),), (en.tensor([1.0, 1.0]),))
    messages = [str(w.message) for w in seen if issubclass(w.category, en.TransformFallbackWarning)]
    assert len(messages) == 1 and "'sin'" in messages[0], messages
    assert float(t) == pytest.approx(2.0 * np.cos(0.4), rel=1e-14)
    np.testing.assert_allclose(np.asarray(t2), np.cos([0.1, 0.2]), rtol=1e-14)


def test_custom_jvp_rule_is_used_under_jvp_only():
    @en.custom_jvp
    def f(x):
        return en.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return en.sin(x), t * 10.0
    assert float(en.jvp(f, (en.tensor(0.5),), (en.tensor(1.0),))[1]) == 10.0
    assert float(f(en.tensor(0.5))) == pytest.approx(np.sin(0.5))
    assert float(en.grad(f)(en.tensor(0.5))) == pytest.approx(np.cos(0.5))


def test_custom_gradient_functions_work_under_jvp():
    @en.custom_gradient
    def square(x):
        return x * x, lambda g: g * 2.0 * x
    _, t = en.jvp(lambda x: square(x) + x, (en.tensor(3.0),), (en.tensor(1.0),))
    assert float(t) == 7.0


def _grow(x):
    """Steps c -> 1.5 c + x^2 from c = x until c passes 10; the step count as well."""
    i, c = en.while_loop(lambda i, c: c < 10.0, lambda i, c: (i + 1, 1.5 * c + x * x),
                         (0, x))
    return c, i


def _numpy_grow(x):
    c, i = x, 0
    while c < 10.0:
        c, i = 1.5 * c + x * x, i + 1
    return c, i


def test_jvp_of_a_while_loop_in_a_traced_function_is_one_staged_loop():
    # The condition depends on the dual variable, so in a trace its value is known only
    # at run time: the loop is staged once (primals and tangents) and serves every x.
    f = en.function(lambda x, v: en.jvp(_grow, (x,), (v,)))
    for x in (0.2, 1.0, 2.0, 4.0):
        (c, i), (dc, _) = f(en.tensor(x), en.tensor(1.0))
        want_c, want_i = _numpy_grow(x)
        # The step count is constant near x, so the central difference is the derivative.
        want_dc = central_difference(lambda y: _numpy_grow(float(y))[0], np.float64(x))
        np.testing.assert_allclose(float(c), want_c, rtol=1e-14)
        assert int(i) == want_i
        np.testing.assert_allclose(float(dc), float(want_dc), rtol=1e-7)
        eager = en.jvp(_grow, (en.tensor(x),), (en.tensor(1.0),))
        np.testing.assert_allclose(float(dc), float(eager[1][0]), rtol=1e-14)
    assert f.trace_count == 1
    assert any(n.op.name == "while_loop"
               for n in f.get_concrete_function(en.tensor(1.0), en.tensor(1.0)).graph.nodes)


def test_jvp_of_jvp_of_a_while_loop_in_a_traced_function():
    def slope(x):
        return en.jvp(lambda y: _grow(y)[0], (x,), (en.ones_like(x),))[1]

    f = en.function(lambda x: en.jvp(slope, (x,), (en.ones_like(x),))[1])
    for x in (0.2, 2.0):
        want = central_difference(
            lambda y: central_difference(lambda z: _numpy_grow(float(z))[0], y, eps=1e-4),
            np.float64(x), eps=1e-4)
        np.testing.assert_allclose(float(f(en.tensor(x))), float(want), rtol=1e-5)
