"""The 60 numpy functions people reach for first: each exists under numpy's name on
``en`` (or ``en.linalg`` / ``en.fft``), gives numpy's values in eager mode and traced,
is reached from numpy itself (``np.X(tensor)``), and, where it is differentiable, has
a gradient that traces and matches central finite differences of the numpy function.

Names not there yet are listed in EXPECTED_MISSING with the area adding them; the
test fails when one of them appears (shrink the list) and when any other is missing.
Run with ``-s`` to see the count.
"""
import math

import numpy as np
import pytest

import engine as en
from support.finite_diff import central_difference

_rng = np.random.default_rng(7)


def _normal(*shape):
    return _rng.standard_normal(shape)


def _away_from_integers(*shape):            # floor/mod: no jump within finite differences
    return np.floor(_normal(*shape) * 3) + 0.25 + 0.5 * _rng.random(shape)


def _well_conditioned(n):
    return _normal(n, n) + 3.0 * np.eye(n)


M34, N34, M43, V4, W3 = _normal(3, 4), _normal(3, 4), _normal(4, 3), _normal(4), _normal(3)
POS34 = np.abs(_normal(3, 4)) + 0.5
SQ = _well_conditioned(3)

# name -> (arguments, call(fn, xp, *args), differentiable argument positions or ()).
# ``xp`` is numpy for the reference and engine for the engine, for helper calls.
COMMON = {
    # elementwise
    "exp": ((M34,), lambda f, xp, x: f(x), (0,)),
    "log": ((POS34,), lambda f, xp, x: f(x), (0,)),
    "sqrt": ((POS34,), lambda f, xp, x: f(x), (0,)),
    "abs": ((M34,), lambda f, xp, x: f(x), (0,)),
    "tanh": ((M34,), lambda f, xp, x: f(x), (0,)),
    "sin": ((M34,), lambda f, xp, x: f(x), (0,)),
    "cos": ((M34,), lambda f, xp, x: f(x), (0,)),
    "square": ((M34,), lambda f, xp, x: f(x), (0,)),
    "power": ((POS34, N34), lambda f, xp, x, y: f(x, y), (0, 1)),
    "maximum": ((M34, N34), lambda f, xp, x, y: f(x, y), (0, 1)),
    "minimum": ((M34, N34), lambda f, xp, x, y: f(x, y), (0, 1)),
    "clip": ((M34,), lambda f, xp, x: f(x, -0.7, 0.7), (0,)),
    "floor": ((_away_from_integers(3, 4),), lambda f, xp, x: f(x), (0,)),
    "mod": ((_away_from_integers(3, 4) * 1.0,), lambda f, xp, x: f(x, 1.0), (0,)),
    "erf": ((M34,), lambda f, xp, x: f(x), (0,)),
    "isnan": ((M34,), lambda f, xp, x: f(x), ()),
    "where": ((M34, N34), lambda f, xp, x, y: f(x > y, x, y), (0, 1)),
    # reductions and statistics
    "sum": ((M34,), lambda f, xp, x: f(x, axis=0), (0,)),
    "mean": ((M34,), lambda f, xp, x: f(x, axis=1), (0,)),
    "max": ((M34,), lambda f, xp, x: f(x, axis=1), (0,)),
    "min": ((M34,), lambda f, xp, x: f(x, axis=0), (0,)),
    "prod": ((POS34,), lambda f, xp, x: f(x, axis=1), (0,)),
    "std": ((M34,), lambda f, xp, x: f(x, axis=0), (0,)),
    "var": ((M34,), lambda f, xp, x: f(x, axis=1, ddof=1), (0,)),
    "argmax": ((M34,), lambda f, xp, x: f(x, axis=1), ()),
    "argmin": ((M34,), lambda f, xp, x: f(x), ()),
    "all": ((M34,), lambda f, xp, x: f(x > -1.0, axis=0), ()),
    "any": ((M34,), lambda f, xp, x: f(x > 1.0, axis=1), ()),
    "cumsum": ((M34,), lambda f, xp, x: f(x, axis=1), (0,)),
    "sort": ((M34,), lambda f, xp, x: f(x, axis=-1), (0,)),
    # products
    "dot": ((M34, V4), lambda f, xp, a, v: f(a, v), (0, 1)),
    "matmul": ((M34, M43), lambda f, xp, a, b: f(a, b), (0, 1)),
    "outer": ((V4, W3), lambda f, xp, a, b: f(a, b), (0, 1)),
    "einsum": ((M34, M43), lambda f, xp, a, b: f("ij,jk->ik", a, b), (0, 1)),
    "tensordot": ((M34, M43), lambda f, xp, a, b: f(a, b, 1), (0, 1)),
    # shapes
    "reshape": ((M34,), lambda f, xp, x: f(x, (4, 3)), (0,)),
    "transpose": ((M34,), lambda f, xp, x: f(x), (0,)),
    "expand_dims": ((M34,), lambda f, xp, x: f(x, 1), (0,)),
    "squeeze": ((M34.reshape(3, 1, 4),), lambda f, xp, x: f(x, axis=1), (0,)),
    "concatenate": ((M34, N34), lambda f, xp, x, y: f([x, y], axis=0), (0, 1)),
    "stack": ((M34, N34), lambda f, xp, x, y: f([x, y], axis=1), (0, 1)),
    "pad": ((M34,), lambda f, xp, x: f(x, ((1, 0), (0, 2))), (0,)),
    "tile": ((M34,), lambda f, xp, x: f(x, (2, 1)), (0,)),
    "repeat": ((M34,), lambda f, xp, x: f(x, 2, axis=0), (0,)),
    "flip": ((M34,), lambda f, xp, x: f(x, axis=0), (0,)),
    "roll": ((M34,), lambda f, xp, x: f(x, 1, axis=1), (0,)),
    "tril": ((SQ,), lambda f, xp, x: f(x), (0,)),
    "triu": ((SQ,), lambda f, xp, x: f(x, 1), (0,)),
    # creation
    "zeros": ((), lambda f, xp: f((2, 3)), ()),
    "ones": ((), lambda f, xp: f((2, 3)), ()),
    "arange": ((), lambda f, xp: f(1, 7, 2), ()),
    "eye": ((), lambda f, xp: f(3), ()),
    "linspace": ((), lambda f, xp: f(0.0, 1.0, 5), ()),
    # linalg and fft
    "linalg.solve": ((SQ, W3), lambda f, xp, a, b: f(a, b), (0, 1)),
    "linalg.inv": ((SQ,), lambda f, xp, a: f(a), (0,)),
    "linalg.det": ((SQ,), lambda f, xp, a: f(a), (0,)),
    "linalg.norm": ((M34,), lambda f, xp, a: f(a), (0,)),
    "linalg.cholesky": ((M34[:, :3],),
                        lambda f, xp, m: f(xp.matmul(m, xp.transpose(m)) + 3.0 * np.eye(3)),
                        (0,)),
    "linalg.svd": ((M34,), lambda f, xp, a: f(a, full_matrices=False)[1], (0,)),  # singular values
    "fft.fft": ((V4,), lambda f, xp, x: xp.real(f(x)) + 2.0 * xp.imag(f(x)), (0,)),
}

# Names not on ``en`` yet, and the area adding them (others add them in parallel).
EXPECTED_MISSING = {}

# On en, but not numpy's function yet (the test is a strict xfail: it fails once fixed).
KNOWN_DEFECTS = {}


def _erf(x):
    return np.vectorize(math.erf)(x)


def numpy_function(name):
    """numpy's function of that name (``erf``, not in numpy, by ``math.erf``)."""
    if name == "erf":
        return _erf
    space, _, attr = name.rpartition(".")
    return getattr(getattr(np, space) if space else np, attr)


def engine_function(name):
    """The function of exactly numpy's name on ``en`` / ``en.linalg`` / ``en.fft``, or None."""
    space, _, attr = name.rpartition(".")
    namespace = getattr(en, space, None) if space else en
    if namespace is None or attr not in getattr(namespace, "__all__", dir(namespace)):
        return None
    return getattr(namespace, attr, None)


def test_the_list_holds_sixty_names():
    assert len(COMMON) == 60
    assert set(EXPECTED_MISSING) <= set(COMMON)


def _values(out):
    out = out.numpy() if isinstance(out, en.Tensor) else np.asarray(out)
    return out


def _assert_close(got, want, what):
    assert isinstance(got, en.Tensor), f"{what}: got {type(got).__name__}, not a tensor"
    got = _values(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, numpy {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[n]))
    if n in KNOWN_DEFECTS else n for n in sorted(COMMON)])
def test_common_numpy_name(name):
    fn = engine_function(name)
    if name in EXPECTED_MISSING:
        assert fn is None, (f"{name} is on en now: remove it from EXPECTED_MISSING in "
                            "tests/interop/test_numpy_common_names.py (its check then runs)")
        return
    assert fn is not None, f"en.{name} is missing (numpy's name, on en / en.linalg / en.fft)"
    args, call, diff = COMMON[name]
    ref = numpy_function(name)
    want = call(ref, np, *args)
    tensors = [en.tensor(a) for a in args]

    _assert_close(call(fn, en, *tensors), want, f"en.{name} eager")
    _assert_close(en.function(lambda *xs: call(fn, en, *xs))(*tensors), want, f"en.{name} traced")
    if name != "erf" and tensors:           # numpy itself, on tensors, dispatches to the engine
        _assert_close(call(ref, np, *tensors), want, f"np.{name} on tensors")
    if not diff:
        return

    weights = _rng.standard_normal(np.shape(want))

    def engine_loss(*xs):
        return en.sum(call(fn, en, *xs) * weights)

    grads = en.function(en.grad(engine_loss, argnums=diff))(*tensors)
    for k, g in zip(diff, grads):
        def numpy_loss(xk, k=k):
            xs = list(args)
            xs[k] = xk
            return np.sum(call(ref, np, *xs) * weights)
        want_g = central_difference(numpy_loss, args[k])
        assert isinstance(g, en.Tensor)
        np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-5, atol=1e-7,
                                   err_msg=f"traced gradient of en.{name} w.r.t. argument {k}")


def test_report_count():
    present = sorted(n for n in COMMON if engine_function(n) is not None)
    working = [n for n in present if n not in KNOWN_DEFECTS]
    differentiable = [n for n in working if COMMON[n][2]]
    print(f"\n{len(working)} of {len(COMMON)} common numpy names are on en with numpy's "
          f"values ({len(differentiable)} of them differentiable, each with a traced gradient "
          f"checked against finite differences in test_common_numpy_name); missing: "
          f"{sorted(set(COMMON) - set(present))}; known defects: {sorted(KNOWN_DEFECTS)}")
    assert len(present) == len(COMMON) - len(EXPECTED_MISSING)
