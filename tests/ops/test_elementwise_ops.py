"""The elementwise math of ``math_unary``, ``math_binary`` and ``bitwise`` beyond the op
database: the Tensor operators in both modes and under tapes, the defects they
fixed (bitwise ``&`` ``|`` ``~`` on integers, reflected operators, pow's gradients
and errors), ``erf`` against ``math.erf`` over a wide range, and each op's numba
scalar form against its numpy kernel.
"""
import math
import operator

import numpy as np
import pytest

import engine as en
from op_db import OPS_BY_NAME, seeded_rng
from support.compilers import import_numba

I = np.array([12, -7, 5, 0, -1])


def _eager_and_graph(fn, *args):
    """``fn(*args)`` eagerly and inside ``en.function``, as numpy arrays."""
    eager = fn(*args)
    graph = en.function(fn)(*args)
    return np.asarray(eager), np.asarray(graph)


# ---- operators ---------------------------------------------------------------------------------
BINARY_OPERATORS = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
                    operator.floordiv, operator.mod]


@pytest.mark.parametrize("op", BINARY_OPERATORS, ids=lambda o: o.__name__)
def test_binary_operators_match_numpy_both_ways_round(op):
    t = en.tensor(I)
    counts = np.array([1, 2, 0, 3, 1])
    other = counts if op in (operator.lshift, operator.rshift) else np.array([3, 5, -2, 7, 2])
    u = en.tensor(other)
    for got in _eager_and_graph(lambda a, b: op(a, b), t, u):
        np.testing.assert_array_equal(got, op(I, other))
    # A Python int on either side (the reflected forms), in both modes.
    if op not in (operator.lshift, operator.rshift):
        for got in _eager_and_graph(lambda a: op(5, a), u):
            np.testing.assert_array_equal(got, op(5, other))
    for got in _eager_and_graph(lambda a: op(a, 3), t):
        np.testing.assert_array_equal(got, op(I, 3))
    if op in (operator.lshift, operator.rshift):
        np.testing.assert_array_equal(np.asarray(op(100, en.tensor(counts))), op(100, counts))


def test_bitwise_operators_on_integers_are_bitwise():
    # Regression: & | ~ on integer tensors were logical (bool results).
    t = en.tensor(I)
    for expr, want in [(lambda a: a & 6, I & 6), (lambda a: a | 6, I | 6), (lambda a: ~a, ~I),
                       (lambda a: a ^ 6, I ^ 6)]:
        for got in _eager_and_graph(expr, t):
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, want)


def test_python_int_on_the_left_of_and_or():
    # Regression: int & tensor and int | tensor raised TypeError (no reflected forms).
    t = en.tensor(I)
    np.testing.assert_array_equal(np.asarray(6 & t), 6 & I)
    np.testing.assert_array_equal(np.asarray(6 | t), 6 | I)
    np.testing.assert_array_equal(np.asarray(6 ^ t), 6 ^ I)


def test_bool_operators_stay_logical():
    a, b = np.array([True, False, True]), np.array([True, True, False])
    ta, tb = en.tensor(a), en.tensor(b)
    for got, want in [(ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b), (~ta, ~a),
                      (True & tb, True & b), (False | ta, False | a)]:
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(np.asarray(got), want)


def test_bitwise_operators_refuse_floats():
    x = en.tensor([1.0, 2.0])
    for expr in [lambda: x & 1, lambda: ~x, lambda: 1 | x, lambda: x << 1]:
        with pytest.raises(en.DTypeError, match="expected integer"):
            expr()


def test_unary_plus_is_an_op_and_reads_variables():
    v = en.Variable(np.array([1.0, -2.0]))
    p = +v
    assert isinstance(p, en.Tensor) and not isinstance(p, en.Variable)
    np.testing.assert_array_equal(np.asarray(p), [1.0, -2.0])
    g = en.grad(lambda x: en.sum(+x * 3.0))(en.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(g), [3.0, 3.0])


def test_divmod_operator():
    t = en.tensor(np.array([7.5, -7.5, 3.0]))
    q, r = divmod(t, 2.0)
    np.testing.assert_array_equal(np.asarray(q), np.floor_divide([7.5, -7.5, 3.0], 2.0))
    np.testing.assert_array_equal(np.asarray(r), np.remainder([7.5, -7.5, 3.0], 2.0))
    q, r = divmod(7, en.tensor([2, -2, 3]))
    np.testing.assert_array_equal(np.asarray(q), [3, -4, 2])
    np.testing.assert_array_equal(np.asarray(r), [1, -1, 1])


def test_floordiv_and_mod_operators_under_tapes_and_traced():
    x0, y0 = np.array([7.3, -7.3, 2.2]), np.array([2.0, 2.0, -0.7])

    def loss(x, y):
        return en.sum((x % y) * 3.0 + (x // y) + (10.0 % x))

    gx, gy = en.grad(loss, argnums=(0, 1))(en.tensor(x0), en.tensor(y0))
    # d/dx: 3 (mod) + 0 (floor division) + d/dx (10 mod x) = -floor(10 / x).
    np.testing.assert_allclose(np.asarray(gx), 3.0 - np.floor(10.0 / x0))
    np.testing.assert_allclose(np.asarray(gy), -3.0 * np.floor(x0 / y0))
    tgx, tgy = en.function(en.grad(loss, argnums=(0, 1)))(en.tensor(x0), en.tensor(y0))
    np.testing.assert_allclose(np.asarray(tgx), np.asarray(gx))
    np.testing.assert_allclose(np.asarray(tgy), np.asarray(gy))


# ---- pow -----------------------------------------------------------------------------------------
def _grad(f, *args):
    return float(en.grad(f)(*args))


def test_pow_gradient_of_x_to_the_zero_at_zero_is_zero():
    # Regression: 0 * 0**-1 = NaN.
    f = lambda x: x ** 0.0   # noqa: E731
    assert _grad(f, 0.0) == 0.0
    assert _grad(en.grad(f), 0.0) == 0.0
    assert float(en.function(en.grad(f))(en.tensor(0.0))) == 0.0


def test_pow_exponent_gradient_at_base_zero():
    # Regression: d/dy 0**y was NaN for y < 0; PyTorch gives -inf there, and 0 for y >= 0.
    f = lambda y: en.tensor(0.0) ** y   # noqa: E731
    assert _grad(f, -0.3) == -np.inf
    assert _grad(f, 0.3) == 0.0
    assert _grad(f, 0.0) == 0.0
    g = en.function(en.grad(lambda x, y: en.sum(x ** y), argnums=1))
    np.testing.assert_array_equal(np.asarray(g(en.tensor([0.0, 0.0, 0.0]),
                                               en.tensor([-0.3, 0.3, 2.0]))), [-np.inf, 0, 0])


def test_pow_gradients_elsewhere_are_the_closed_forms():
    x, y = 1.7, -0.6
    gx, gy = en.grad(lambda a, b: a ** b, argnums=(0, 1))(x, y)
    assert math.isclose(float(gx), y * x ** (y - 1), rel_tol=1e-14)
    assert math.isclose(float(gy), math.log(x) * x ** y, rel_tol=1e-14)
    assert _grad(lambda a: a ** 2.0, 0.0) == 0.0
    assert _grad(en.grad(lambda a: a ** 2.0), 0.0) == 2.0
    assert _grad(lambda a: a ** 3.0, -2.0) == 12.0
    # x**y at (0, 0) with y varying: the mixed derivative away from y = 0 is untouched.
    h = en.grad(en.grad(lambda a, b: a ** b, argnums=0), argnums=1)
    assert math.isclose(float(h(2.0, 0.0)), 0.5, rel_tol=1e-14)   # d2/dxdy at y=0: 1/x


@pytest.mark.parametrize("exponent", [-2, np.int64(-2), np.array([-2, 1]), "tensor"],
                         ids=["int", "numpy int", "numpy array", "tensor"])
def test_integer_to_negative_integer_power_is_a_domain_error(exponent):
    # Regression: numpy's ValueError escaped without the op, dtypes or user's line.
    if isinstance(exponent, str):
        exponent = en.tensor([-2, 1])
    t = en.tensor([1, 2])
    with pytest.raises(en.DomainError) as caught:
        t ** exponent
    msg = str(caught.value)
    assert "pow" in msg and "int64[2]" in msg and "test_elementwise_ops.py" in msg


def test_integer_negative_power_known_only_at_run_time_in_a_graph():
    f = en.function(lambda a, b: a ** b)
    with pytest.raises(en.DomainError) as caught:
        f(en.tensor([1, 2]), en.tensor([-1, 1]))
    msg = str(caught.value)
    assert "pow" in msg and "int64[2], int64[2]" in msg and "test_elementwise_ops.py" in msg
    np.testing.assert_array_equal(np.asarray(f(en.tensor([3, 2]), en.tensor([2, 1]))), [9, 2])


# ---- erf ---------------------------------------------------------------------------------------
def _erf_points():
    return np.concatenate([np.linspace(-30, 30, 60001), np.geomspace(1e-300, 30, 3001),
                           -np.geomspace(1e-300, 30, 3001),
                           [0.0, -0.0, 0.46875, -0.46875, 4.0, -4.0, 26.5, 27.2, 27.3, 40.0]])


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_matches_math_to_a_few_ulps(name, backend):
    x = _erf_points()
    got = np.asarray(getattr(en, name)(en.tensor(x, backend=backend)).numpy())
    want = np.array([getattr(math, name)(v) for v in x])
    normal = np.abs(want) > 1e-300
    rel = np.abs(got[normal] - want[normal]) / np.abs(want[normal])
    assert rel.max() < 2e-15, f"{name}: relative error {rel.max()} at x = {x[normal][rel.argmax()]}"
    # erfc underflows into subnormals beyond x = 26.5: absolute error there.
    assert np.max(np.abs(got[~normal] - want[~normal]), initial=0.0) < 1e-300


@pytest.mark.parametrize("name", ["erf", "erfc"])
def test_erf_special_values_and_float32(name):
    f = getattr(en, name)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    got = np.asarray(f(en.tensor(special)))
    want = np.array([getattr(math, name)(v) for v in special])
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[4]) == np.signbit(want[4])
    x32 = np.linspace(-5, 5, 1001, dtype=np.float32)
    got32 = f(en.tensor(x32))
    assert got32.dtype == np.float32
    want32 = np.array([getattr(math, name)(float(v)) for v in x32])
    # erfc goes through float64 (correctly rounded); float32 erf is computed in float32,
    # within 2 ulps (tests/ops/test_erf_float32.py).
    ulps = np.abs(np.asarray(got32, np.float64) - want32) / \
        np.spacing(np.abs(want32).astype(np.float32)).astype(np.float64)
    assert ulps.max() <= (2.0 if name == "erf" else 0.5)


def test_erf_gradient_is_the_gaussian():
    x = np.linspace(-3, 3, 13)
    g = en.grad(lambda t: en.sum(en.erf(t)))(en.tensor(x))
    np.testing.assert_allclose(np.asarray(g), 2 / np.sqrt(np.pi) * np.exp(-x * x), rtol=1e-15)


# ---- the smaller public functions ----------------------------------------------------------------
def test_round_with_decimals_matches_numpy():
    x = np.array([2.675, -2.675, 1234.5678, 0.125, 0.135, -0.5, 1.5, 25.0, 35.0, 1e300])
    for d in [0, 1, 2, 3, -1, -2]:
        np.testing.assert_array_equal(np.asarray(en.round(en.tensor(x), d)), np.round(x, d))
        x32 = x[:-1].astype(np.float32)
        np.testing.assert_array_equal(np.asarray(en.round(en.tensor(x32), d)), np.round(x32, d))
    ints = np.array([15, 25, -15, 149, 151, 7])
    for d in [0, 2, -1, -2]:
        got = en.round(en.tensor(ints), d)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(np.asarray(got), np.round(ints, d))


def test_clip_without_bounds_and_with_python_bounds():
    x = np.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(np.asarray(en.clip(en.tensor(x))), x)
    np.testing.assert_array_equal(np.asarray(en.clip(en.tensor(x), max=1)), np.clip(x, None, 1))
    i = np.array([-5, 3, 200], dtype=np.int32)
    got = en.clip(en.tensor(i), 0)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.clip(i, 0, None))
    # The gradient at a bound goes to x (PyTorch's clamp).
    g = en.grad(lambda t: en.sum(en.clip(t, 0.0, 1.0)))(en.tensor([0.0, 1.0, 2.0, 0.5]))
    np.testing.assert_array_equal(np.asarray(g), [1.0, 1.0, 0.0, 1.0])


def test_isclose_to_python_specials_and_allclose():
    x = en.tensor([np.nan, np.inf, 1.0])
    np.testing.assert_array_equal(np.asarray(en.isclose(x, np.nan)), np.isclose(x.numpy(), np.nan))
    np.testing.assert_array_equal(np.asarray(en.isclose(x, np.nan, equal_nan=True)),
                                  np.isclose(x.numpy(), np.nan, equal_nan=True))
    np.testing.assert_array_equal(np.asarray(en.isclose(x, np.inf)), np.isclose(x.numpy(), np.inf))
    np.testing.assert_array_equal(np.asarray(en.isclose(x, 1)), np.isclose(x.numpy(), 1))
    assert bool(en.allclose(en.tensor([1.0, 2.0]), [1.0, 2.0 + 1e-9]))
    assert not bool(en.allclose(en.tensor([1.0, 2.0]), en.tensor([1.0, 2.1])))
    assert bool(en.function(en.allclose)(en.tensor([1.0]), en.tensor([1.0 + 1e-12])))


def test_standard_spellings_name_the_same_functions():
    for numpy_name, standard in [("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"),
                                 ("arccosh", "acosh"), ("arcsinh", "asinh"), ("arctanh", "atanh"),
                                 ("arctan2", "atan2"), ("mod", "remainder"),
                                 ("invert", "bitwise_invert"), ("left_shift", "bitwise_left_shift"),
                                 ("right_shift", "bitwise_right_shift")]:
        assert getattr(en, numpy_name) is getattr(en, standard), standard


# ---- fusion: each scalar form agrees with its numpy kernel -----------------------------------------
def _new_elementwise_ops():
    from engine.ops import bitwise, math_binary, math_unary
    return sorted(v.name for m in (math_unary, math_binary, bitwise) for v in vars(m).values()
                  if isinstance(v, en.Op) and v.rules.get("scalar_form"))


@pytest.fixture
def numba_fusion():
    import_numba()
    previous = en.config.lowering
    en.config.lowering = "numba_ufunc"
    yield
    en.config.lowering = previous


def _prepared(a):
    # One elementwise op before the op under test (exact: a logical not of bools, a
    # max of a with itself), so fusion makes a region of two.
    if a.dtype == np.bool_:
        return en.logical_not(a)
    return en.maximum(a, a)


@pytest.mark.parametrize("name", _new_elementwise_ops())
def test_scalar_forms_agree_with_the_numpy_kernels(name, numba_fusion):
    info = OPS_BY_NAME[name]
    checked = 0
    # Integer inputs of the floating-point functions are converted by the numpy kernel
    # before any loop runs; the scalar forms are checked on the dtypes they compute in.
    op = en.REGISTRY[name]
    for dtype in info.dtypes:
        out = op.abstract_eval(((2, 3), dtype), *[((2, 3), dtype)] * (op.n_inputs - 1))[1]
        if out.kind == "f" and dtype.kind != "f":
            continue
        for sample in info.sample_inputs(dtype, seeded_rng(name, "numba")):
            arrays = sample.args
            if sample.kwargs or not all(isinstance(a, np.ndarray) and a.size for a in arrays):
                continue
            if len({a.shape for a in arrays}) != 1 or arrays[0].ndim < 2:
                continue      # fusion lowers same-shape regions; a 2-d one has every case
            ref = [a.copy() for a in arrays]
            if arrays[0].dtype == np.bool_:
                ref[0] = ~ref[0]
            with np.errstate(all="ignore"):
                want = np.asarray(info.ref(*ref))
            f = en.function(lambda *ts: info.op(_prepared(ts[0]), *ts[1:]))
            ts = [en.tensor(a) for a in arrays]
            fused = [n for n in f.graph_for(*ts).nodes if n.op.name.startswith("fused")]
            assert fused and fused[0].meta["backend"] == "numba", (name, sample, fused)
            got = np.asarray(f(*ts))
            assert got.dtype == want.dtype, (name, sample)
            np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13,
                                       atol=1e-300, equal_nan=True, err_msg=f"{name} {sample}")
            checked += 1
            break         # one sample per dtype: each compiles a numba kernel
    assert checked, name


def test_pow_forward_mode_takes_the_same_closed_forms():
    # The jvp rule shares the VJP's derivatives: no NaN at x**0, x = 0, nor at 0**y, y < 0.
    _, t = en.jvp(lambda x: x ** 0.0, (en.tensor(0.0),), (en.tensor(1.0),))
    assert float(t) == 0.0
    _, t = en.jvp(lambda y: en.tensor(0.0) ** y, (en.tensor(-0.3),), (en.tensor(1.0),))
    assert float(t) == -np.inf
    _, t = en.jvp(lambda x, y: x ** y, (en.tensor(1.7), en.tensor(-0.6)),
                  (en.tensor(1.0), en.tensor(2.0)))
    assert math.isclose(float(t), -0.6 * 1.7 ** -1.6 + 2.0 * math.log(1.7) * 1.7 ** -0.6,
                        rel_tol=1e-14)


def _standard_floor_divide(x, y):
    # The Array API standard's floor(x / y) where an operand is not finite, else numpy's.
    with np.errstate(all="ignore"):
        bad = ~(np.isfinite(x) & np.isfinite(y))
        return np.where(bad, np.floor(np.true_divide(x, y)), np.floor_divide(x, y))


@pytest.mark.parametrize("lowering", ["numpy", "auto"])
def test_floor_divide_after_another_op_in_a_graph_keeps_infinite_quotients(lowering):
    # In a fused kernel the quotient may be written over its dividend's buffer, and
    # the infinite-operand fix must not read the dividend back from there.
    a = np.array([np.inf, 4.0, 1.0, -np.inf, 6.0])
    b = np.array([2.0, 2.0, -np.inf, 3.0, np.inf])
    previous = en.config.lowering
    en.config.lowering = lowering
    try:
        for f, ref in [(lambda x, y: (x * 2.0) // y, lambda x, y: (x * 2.0, y)),
                       (lambda x, y: x // (y * 1.0), lambda x, y: (x, y * 1.0)),
                       (lambda x, y: (x + 0.0) // (y + 0.0), lambda x, y: (x, y))]:
            want = _standard_floor_divide(*ref(a, b))
            for got in (f(en.tensor(a), en.tensor(b)),
                        en.function(f)(en.tensor(a), en.tensor(b))):
                np.testing.assert_array_equal(np.asarray(got), want)
    finally:
        en.config.lowering = previous
