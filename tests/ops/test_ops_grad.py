"""Gradients of every differentiable op and composite against finite differences.

For a sample ``op(*args)`` and a random cotangent ``c`` the suite differentiates
``f(xs) = sum(op(xs) * c)`` with respect to the float64 array arguments:

* order 1: the tape gradient ``g`` against central differences of ``f`` along
  random directions ``v`` (``<g, v>`` vs ``(f(x + e v) - f(x - e v)) / 2e``),
  the vectorized check JAX's ``check_grads`` makes;
* order 2: the Hessian-vector product ``H u`` from nested tapes against
  central differences of the gradient along ``u``.
"""
import numpy as np
import pytest

import engine as en
from op_db import ALL_ENTRIES, F32, F64, OPS_BY_NAME, call_engine, seeded_rng
from support.op_checks import as_list, get_leaf, leaf_paths, with_leaves

C64, C128 = np.dtype("complex64"), np.dtype("complex128")
EPS = 1e-5
N_DIRECTIONS = 2


class GradProblem:
    """``f(*xs) = sum_k sum(out_k * c_k)`` for one sample; ``xs`` are its float64 arrays."""

    def __init__(self, info, sample, rng):
        self.info, self.sample = info, sample
        self.idx = leaf_paths(sample.args, F64)
        self.x0 = [get_leaf(sample.args, path) for path in self.idx]
        outs = as_list(call_engine(info, sample))
        self.cots = [rng.standard_normal(o.shape) if o.dtype in (F32, F64)
                     else rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape)
                     if o.dtype in (C64, C128) else None for o in outs]

    @property
    def checkable(self):
        return bool(self.idx) and any(c is not None for c in self.cots)

    def f(self, *xs):
        args = with_leaves(self.sample.args, self.idx, xs)
        total = None
        for o, c in zip(as_list(self.info.op(*args, **self.sample.kwargs)), self.cots):
            if c is not None:
                # A complex result (an fft) enters through the real part of its
                # product with a complex cotangent: a real f, differentiated through
                # the complex values with JAX's convention.
                term = en.sum(o * en.tensor(c, dtype=o.dtype))
                term = en.real(term) if o.dtype in (C64, C128) else term
                total = term if total is None else total + term
        return total

    def value(self, xs):
        return float(self.f(*[en.tensor(x) for x in xs]))

    def grad(self, xs):
        """The tape gradient at numpy points ``xs``, as numpy arrays (zeros for None)."""
        ts = [en.tensor(x) for x in xs]
        with en.GradientTape() as tape:
            tape.watch(ts)
            y = self.f(*ts)
        gs = tape.gradient(y, ts)
        return [np.zeros_like(x) if g is None else self._checked(g, x) for g, x in zip(gs, xs)]

    def hvp(self, xs, us):
        """``H u`` by differentiating ``<grad f, u>`` with an outer tape."""
        ts = [en.tensor(x) for x in xs]
        with en.GradientTape() as outer:
            outer.watch(ts)
            with en.GradientTape() as inner:
                inner.watch(ts)
                y = self.f(*ts)
            gs = inner.gradient(y, ts)
            s = None
            for g, u in zip(gs, us):
                if g is not None:
                    term = en.sum(g * en.tensor(u))
                    s = term if s is None else s + term
        if s is None:
            return [np.zeros_like(x) for x in xs]
        hs = outer.gradient(s, ts)
        return [np.zeros_like(x) if h is None else self._checked(h, x) for h, x in zip(hs, xs)]

    def _checked(self, g, x):
        where = f"{self.info.name} on {self.sample}"
        assert g.shape == x.shape, f"{where}: gradient shape {g.shape}, input shape {x.shape}"
        assert g.dtype == x.dtype, f"{where}: gradient dtype {g.dtype}, input dtype {x.dtype}"
        return np.asarray(g)


def check_first_order(p, rng):
    g = p.grad(p.x0)
    for _ in range(N_DIRECTIONS):
        vs = [rng.standard_normal(x.shape) for x in p.x0]
        fd = (p.value([x + EPS * v for x, v in zip(p.x0, vs)])
              - p.value([x - EPS * v for x, v in zip(p.x0, vs)])) / (2 * EPS)
        analytic = sum(float(np.sum(gi * v)) for gi, v in zip(g, vs))
        scale = 1.0 + sum(float(np.sum(np.abs(gi * v))) for gi, v in zip(g, vs))
        assert abs(fd - analytic) <= 1e-6 * scale, (
            f"{p.info.name} on {p.sample}: directional derivative {analytic!r} from the tape, "
            f"{fd!r} by finite differences")


def check_second_order(p, rng):
    us = [rng.standard_normal(x.shape) for x in p.x0]
    hv = p.hvp(p.x0, us)
    plus = p.grad([x + EPS * u for x, u in zip(p.x0, us)])
    minus = p.grad([x - EPS * u for x, u in zip(p.x0, us)])
    for i, (h, gp, gm) in enumerate(zip(hv, plus, minus)):
        fd = (gp - gm) / (2 * EPS)
        scale = 1.0 + float(np.max(np.abs(fd), initial=0.0))
        np.testing.assert_allclose(
            h, fd, rtol=1e-5, atol=1e-6 * scale,
            err_msg=f"{p.info.name} on {p.sample}: Hessian-vector product for argument "
                    f"at {p.idx[i]} (nested tapes vs finite differences of the gradient)")


GRAD_ENTRIES = [pytest.param(info, id=info.name) for info in ALL_ENTRIES if info.supports_grad]


def _problems(info, rng):
    problems = [GradProblem(info, s, rng) for s in info.samples_for_grad(rng)]
    problems = [p for p in problems if p.checkable]
    assert problems, f"{info.name}: no sample has a float64 input and a float output"
    return problems


@pytest.mark.parametrize("info", GRAD_ENTRIES)
def test_first_order(info):
    rng = seeded_rng(info.name, "grad1")
    for p in _problems(info, rng):
        check_first_order(p, rng)


@pytest.mark.parametrize("info", GRAD_ENTRIES)
def test_second_order(info):
    rng = seeded_rng(info.name, "grad2")
    for p in _problems(info, rng):
        check_second_order(p, rng)


def _prod_hessian(x):
    """The full Hessian of ``prod`` at ``x``, one nested-tape product per column."""
    t = en.tensor(x)
    columns = []
    for u in np.eye(len(x)):
        with en.GradientTape() as outer:
            outer.watch(t)
            with en.GradientTape() as inner:
                inner.watch(t)
                y = en.prod(t)
            s = en.sum(inner.gradient(y, t) * en.tensor(u))
        columns.append(np.asarray(outer.gradient(s, t)))
    return np.array(columns)


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 5.0], [2.0, 0.0, 0.0, 5.0], [0.0, 0.0, 0.0, 5.0]],
                         ids=["one zero", "two zeros", "three zeros"])
def test_prod_hessian_at_zeros(x):
    """prod is a polynomial, so it has a Hessian at zeros too (exactly, no differences):
    d2 prod / dx_i dx_j is the product of the entries other than i and j."""
    x = np.array(x)
    n = len(x)
    expected = np.array([[0.0 if i == j else np.prod(np.delete(x, [i, j])) for j in range(n)]
                         for i in range(n)])
    np.testing.assert_allclose(_prod_hessian(x), expected, atol=1e-12,
                               err_msg=f"prod: wrong second derivative at {x}")


@pytest.mark.parametrize("info", [p for p in GRAD_ENTRIES
                                  if F32 in p.values[0].dtypes])
def test_float32_gradients_stay_float32(info):
    """Gradients come back in the dtype of the input they belong to."""
    rng = seeded_rng(info.name, "f32")
    for sample in list(info.sample_inputs(F32, rng))[:3]:
        paths = leaf_paths(sample.args, F32)
        if not paths:
            continue
        xs = [en.tensor(get_leaf(sample.args, path)) for path in paths]
        args = with_leaves(sample.args, paths, xs)
        with en.GradientTape() as tape:
            tape.watch(xs)
            outs = [o for o in as_list(info.op(*args, **sample.kwargs)) if o.dtype == F32]
            if not outs:
                continue
            y = outs[0] if len(outs) == 1 else en.add(*[en.sum(o) for o in outs[:2]])
        for g, x in zip(tape.gradient(y, xs), xs):
            if g is not None:
                assert (g.shape, g.dtype) == (x.shape, x.dtype), f"{info.name} on {sample}"


def test_stop_gradient_has_zero_gradient():
    x = en.tensor([1.0, -2.0, 3.0])
    g = en.grad(lambda x: en.sum(en.stop_gradient(x) * x))(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(x))
    g2 = en.grad(lambda x: en.sum(en.stop_gradient(x * x)))(x)
    np.testing.assert_array_equal(np.asarray(g2), np.zeros(3))


def test_every_differentiable_entry_is_checked():
    """A registered op with a vjp either has finite-difference checks or says why not."""
    for info in OPS_BY_NAME.values():
        if en.REGISTRY[info.name].differentiable and not info.supports_grad:
            assert info.grad_skip, f"{info.name}: differentiable, but its gradient is never checked"
