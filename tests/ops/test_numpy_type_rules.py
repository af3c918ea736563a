"""numpy's type rules where the Array API standard is silent (issue #48), against numpy:
every elementwise op of numpy's ufuncs on every pair of dtypes and with Python numbers
on either side gives numpy's result dtype and values, or raises where numpy raises;
``where`` with a condition that is not bool, ``round`` of complex numbers, and 0-d
integer tensors where numpy takes an integer (``operator.index``)."""
import warnings

import numpy as np
import pytest

import engine as en
from engine import names
from engine.op import REGISTRY
from support.compilers import import_numba

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
SCALARS = [True, 2, 2.5, 1j]

# Where the engine refuses on purpose what numpy computes, with the reason.
REFUSED = {
    # numpy's reciprocal of an integer is an integer division (1 // x, 0 for |x| > 1, a
    # warning and INT_MIN for 0): refused so that reciprocal(x) * x == 1 holds for ints
    # the engine takes (use 1 / x, or floor_divide).
    ("reciprocal", "int"): "integer reciprocal",
}


def _numpy_ufunc(fn, name):
    ref = getattr(np, name, None)
    if isinstance(ref, np.ufunc):
        return ref
    for alias, target in names.numpy_aliases().items():
        if target is fn and isinstance(getattr(np, alias, None), np.ufunc):
            return getattr(np, alias)
    return None


def _ops(n_inputs):
    out = []
    for name, op in sorted(REGISTRY.items()):
        fn = getattr(en, name, None)
        if op.elementwise and op.n_inputs == n_inputs and fn is not None:
            ref = _numpy_ufunc(fn, name)
            if ref is not None:
                out.append(pytest.param(fn, ref, id=name))
    return out


def _sample(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([True, False, True])
    if dtype.kind in "iu":
        return np.array([1, 2, 3], dtype)
    if dtype.kind == "c":
        return np.array([0.5 + 1j, 2.0, -1.5j], dtype)
    return np.array([0.5, 2.0, -1.5], dtype)


def _outcome(call):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return call()
        except (TypeError, ValueError, en.EngineError) as err:
            return err


def _check(name, fn, ref, a, b):
    """Engine and numpy agree on ``fn(a, b)``: both raise, or equal dtypes and values.
    ``a`` and ``b`` are dtype names (a tensor of that dtype) or Python numbers."""
    arrays = [_sample(v) if isinstance(v, str) else v for v in (a, b)]
    want = _outcome(lambda: ref(*arrays))
    got = _outcome(lambda: fn(*[en.tensor(x) if isinstance(v, str) else x
                                for v, x in zip((a, b), arrays)]))
    where = f"{name}({a!r}, {b!r})"
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"{where}: numpy raises {want!r}, the engine gives {got!r}"
        assert isinstance(got, en.EngineError), f"{where}: not an engine error: {got!r}"
        return
    assert not isinstance(got, Exception), f"{where}: numpy computes {want!r}, the engine raises {got!r}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, numpy's {want.dtype}"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-3, equal_nan=True, err_msg=where)


@pytest.mark.parametrize("fn, ref", _ops(2))
def test_binary_ops_follow_numpy_on_every_dtype_pair_and_python_number(fn, ref):
    pairs = [(a, b) for a in DTYPES for b in DTYPES]
    pairs += [(a, s) for a in DTYPES for s in SCALARS] + [(s, a) for a in DTYPES for s in SCALARS]
    for a, b in pairs:
        _check(fn.__name__, fn, ref, a, b)


@pytest.mark.parametrize("fn, ref", _ops(1))
def test_unary_ops_follow_numpy_on_every_dtype(fn, ref):
    for dtype in DTYPES:
        x = _sample(dtype)
        want = _outcome(lambda x=x: ref(x))
        got = _outcome(lambda x=x: fn(en.tensor(x)))
        where = f"{fn.__name__}({dtype})"
        kind = "int" if np.dtype(dtype).kind in "iub" else np.dtype(dtype).kind
        if (fn.__name__, kind) in REFUSED and isinstance(got, en.DTypeError):
            continue
        if isinstance(want, Exception):
            assert isinstance(got, en.EngineError), f"{where}: numpy raises {want!r}, engine {got!r}"
            continue
        assert not isinstance(got, Exception), f"{where}: numpy computes, the engine raises {got!r}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype}, numpy's {want.dtype}"
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-3, equal_nan=True, err_msg=where)


def test_the_operators_follow_numpy_with_bools():
    f = np.array([1.5, -2.0, 0.25], np.float32)
    b = np.array([True, False, True])
    tf, tb = en.tensor(f), en.tensor(b)
    i = np.array([1, 2])
    with np.errstate(divide="ignore"):     # False // False: 0, with numpy's warning
        pairs = [(tf - tb, f - b), (tb - tf, b - f), (tb - 2.5, b - 2.5), (3 - tb, 3 - b),
                 (tb // tb, b // b), (tb % 2, b % 2), (en.tensor(i) << tb[:2], i << b[:2]),
                 (np.subtract(tf, tb), np.subtract(f, b))]
    for got, want in pairs:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(en.DTypeError, match="sub: not defined for two bool inputs"):
        tb - tb
    with pytest.raises(en.DTypeError, match="sub"):
        np.subtract(tb, tb)


def test_float_minus_bool_has_the_float_gradient():
    x = en.tensor([1.5, -2.0])
    g = en.grad(lambda x: en.sum((x - en.tensor([True, False])) * x))(x)
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy() - np.array([1.0, 0.0]))


# ---- where ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cond", [
    np.array([0, 3, -1, 0]), np.array([0.0, np.nan, -0.0, 0.5]), np.array([0j, 1j, 0j, 2]),
    np.array([0, 1, 0, 255], np.uint8), np.array([True, False, False, True])])
def test_where_reads_a_condition_by_its_truth(cond):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    want = np.where(cond, x, -x)
    for got in (en.where(en.tensor(cond), en.tensor(x), en.tensor(-x)),
                np.where(en.tensor(cond), en.tensor(x), en.tensor(-x)),
                en.function(lambda c, a: en.where(c, a, -a))(en.tensor(cond), en.tensor(x))):
        np.testing.assert_array_equal(got.numpy(), want)


def test_where_with_a_python_condition_and_a_gradient():
    x = en.tensor([1.0, 2.0])
    np.testing.assert_array_equal(en.where(1, x, 0.0).numpy(), np.where(1, x.numpy(), 0.0))
    np.testing.assert_array_equal(en.where(0.0, x, -1).numpy(), np.where(0.0, x.numpy(), -1))
    np.testing.assert_array_equal(en.where([0, 3], x, -1).numpy(), np.where([0, 3], x.numpy(), -1))
    np.testing.assert_array_equal(en.where([[True], [False]], x, -1).numpy(),
                                  np.where([[True], [False]], x.numpy(), -1))
    g = en.grad(lambda x: en.sum(en.where(en.tensor([0, 2]), x * 3.0, x)))(x)
    np.testing.assert_array_equal(g.numpy(), [1.0, 3.0])


# ---- round ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_round_of_complex_rounds_both_parts(dtype, decimals):
    z = np.array([1.5 + 2.5j, -0.25 - 0.75j, 2.675 + 1.005j, 12.5 - 17.5j], dtype)
    for got in (en.round(en.tensor(z), decimals), np.round(en.tensor(z), decimals)):
        assert got.dtype == z.dtype
        np.testing.assert_array_equal(got.numpy(), np.round(z, decimals))
    np.testing.assert_array_equal(en.rint(en.tensor(z)).numpy(), np.rint(z))


def test_round_of_bools_is_numpys():
    b = np.array([True, False])
    got = en.round(en.tensor(b))
    assert got.dtype == np.round(b).dtype
    np.testing.assert_array_equal(got.numpy(), np.round(b))
    with pytest.raises(en.DTypeError, match="round"):
        en.round(en.tensor(b), 1)   # numpy cannot cast the scaled value back either


# ---- 0-d tensors where numpy takes an integer --------------------------------------------------------
N = np.int64(5)
_INDEX_CASES = [
    ("arange(1, n + 1)", lambda m, n: m.arange(1, n + 1)),
    ("arange(n)", lambda m, n: m.arange(n)),
    ("arange floats", lambda m, n: m.arange(n * 0.5, 4.0, n / 10)),
    ("linspace", lambda m, n: m.linspace(n - 5.0, n * 1.0, n)),
    ("full", lambda m, n: m.full((2, n), n * 1.5)),
    ("full of n", lambda m, n: m.full(n, 2.0)),
    ("zeros", lambda m, n: m.zeros(n)),
    ("zeros tuple", lambda m, n: m.zeros((n, 2))),
    ("ones", lambda m, n: m.ones((2, n))),
    ("eye", lambda m, n: m.eye(n, n + 1, k=n - 4)),
    ("reshape", lambda m, n: m.reshape(m.arange(10), (2, n))),
    ("reshape method", lambda m, n: m.arange(10).reshape(n, -1)),
    ("sum axis", lambda m, n: m.sum(m.ones((2, 3)), axis=n - 4)),
    ("mean axes", lambda m, n: m.mean(m.ones((2, 3)), axis=(n - 5, n - 4))),
    ("argmax axis", lambda m, n: m.argmax(m.arange(6).reshape(2, 3), axis=n - 4)),
    ("cumsum axis", lambda m, n: m.cumsum(m.ones((2, 3)), axis=n - 4)),
    ("squeeze axis", lambda m, n: m.squeeze(m.ones((1, 3)), axis=n - 5)),
    ("flip axis", lambda m, n: m.flip(m.arange(6).reshape(2, 3), axis=n - 4)),
    ("roll", lambda m, n: m.roll(m.arange(5), n - 3)),
    ("roll axis", lambda m, n: m.roll(m.arange(6).reshape(2, 3), n - 4, axis=n - 4)),
    ("moveaxis", lambda m, n: m.moveaxis(m.ones((2, 3, 4)), n - 5, -1)),
    ("expand_dims", lambda m, n: m.expand_dims(m.ones(3), n - 5)),
    ("concatenate axis", lambda m, n: m.concatenate([m.ones((2, 1)), m.ones((2, 2))], axis=n - 4)),
    ("stack axis", lambda m, n: m.stack([m.ones(2), m.zeros(2)], axis=n - 4)),
    ("tile", lambda m, n: m.tile(m.arange(2), n)),
    ("repeat", lambda m, n: m.repeat(m.arange(2), n)),
    ("tril k", lambda m, n: m.tril(m.ones((3, 3)), k=n - 4)),
    ("swapaxes", lambda m, n: m.swapaxes(m.ones((2, 3)), n - 5, n - 4)),
    ("norm axis", lambda m, n: m.linalg.norm(m.arange(6.0).reshape(2, 3), axis=n - 4)),
    ("var ddof", lambda m, n: m.var(m.arange(4.0), ddof=n - 4)),
    ("index", lambda m, n: m.arange(12).reshape(3, 4)[n - 4]),
    ("slice", lambda m, n: m.arange(8)[n - 4:n]),
]


@pytest.mark.parametrize("what, call", _INDEX_CASES, ids=[c[0] for c in _INDEX_CASES])
def test_0d_integer_tensors_are_taken_where_numpy_takes_an_integer(what, call):
    want = call(np, N)
    got = call(en, en.tensor(N))
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want)


def test_a_traced_0d_tensor_as_an_integer_says_why_it_cannot_be():
    f = en.function(lambda x, a: en.sum(x, axis=a))
    with pytest.raises(en.TracingError, match="concrete"):
        f(en.ones((2, 3)), en.tensor(1))


@pytest.mark.parametrize("bad", [en.tensor(1.0), en.tensor(True), en.tensor([1])])
def test_only_integer_0d_tensors_are_integers(bad):
    with pytest.raises((en.ShapeError, en.ShapeTypeError, en.ArgumentTypeError), match="sum|axis"):
        en.sum(en.ones((2, 3)), axis=bad)


# ---- complex numbers in numpy's order ------------------------------------------------------------------
_Z = np.array([1 + 5j, 2 + 0j, np.nan + 1j, 1 + 1j, 3 - 1j, 2 + 2j])
_W = np.array([2 + 0j, 2 + 1j, 1 + 0j, 1 + np.nan * 1j, 3 - 1j, 2 + 2j])
_ORDER_FNS = ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "fmax",
              "fmin"]


@pytest.mark.parametrize("name", _ORDER_FNS)
@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
def test_complex_numbers_order_as_in_numpy(name, backend):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)   # NaN compared
        got = getattr(en, name)(en.tensor(_Z, backend=backend), en.tensor(_W, backend=backend))
        want = getattr(np, name)(_Z, _W)
    assert got.backend.name == backend
    np.testing.assert_array_equal(np.asarray(got.numpy()), want)


@pytest.mark.parametrize("mode", ["numpy", "numba_ufunc", "c"])
def test_complex_order_traced_and_fused_keeps_numpys_kernels(mode, monkeypatch):
    import_numba()
    monkeypatch.setattr(en.config, "lowering", en.config.lowering)
    monkeypatch.setattr(en.config, "fusion_threads", en.config.fusion_threads)
    from support.fused_lowering import run_lowered

    def fn(z, w):
        return en.where(en.less(z, w), en.maximum(z, w) * 2.0, en.fmin(z, w) + 1.0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        (got,), _ = run_lowered(fn, [_Z, _W], mode)
        want = np.where(_Z < _W, np.maximum(_Z, _W) * 2.0, np.fmin(_Z, _W) + 1.0)
    np.testing.assert_array_equal(got, want)
