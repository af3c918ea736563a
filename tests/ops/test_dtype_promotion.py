"""Every Array API dtype (and float16), promoted as numpy promotes them; the
defects of issue 16 part 5 about dtypes; no gradient through complex values."""
import itertools

import numpy as np
import pytest

import engine as en

ALL = [np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                              "uint32", "uint64", "float16", "float32", "float64",
                              "complex64", "complex128")]
NUMBERS = [d for d in ALL if d != np.bool_]


def values(dtype, n=4):
    if dtype == np.bool_:
        return np.array([True, False, True, True][:n])
    return np.arange(1, n + 1).astype(dtype)


@pytest.mark.parametrize("a, b", list(itertools.product(ALL, ALL)),
                         ids=lambda d: str(d))
def test_add_and_multiply_promote_as_numpy(a, b):
    x, y = values(a), values(b)
    for fn, ref in ((en.add, np.add), (en.mul, np.multiply)):
        out = fn(en.tensor(x), en.tensor(y))
        expected = ref(x, y)
        assert out.dtype == expected.dtype, (fn.__name__, a, b)
        np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("dtype", NUMBERS, ids=str)
def test_python_scalars_are_weak(dtype):
    x = values(dtype)
    for scalar in (2, 2.0, 2j):
        if isinstance(scalar, float) and dtype.kind in "iu":
            continue   # int tensor * float scalar: float64 in numpy, tested below
        if isinstance(scalar, complex) and dtype.kind != "c":
            continue
        out = en.tensor(x) * scalar
        assert out.dtype == (x * scalar).dtype == dtype
    assert (en.tensor(values(np.dtype("int8"))) * 2.5).dtype == np.float64


def test_bool_operands_follow_numpy():
    """Regression (issue 16 part 5): comparisons, maximum/minimum and arithmetic
    refused bool tensors; numpy accepts them."""
    p, q = np.array([True, False, True]), np.array([True, True, False])
    tp, tq = en.tensor(p), en.tensor(q)
    cases = [(en.less, np.less), (en.greater_equal, np.greater_equal),
             (en.maximum, np.maximum), (en.minimum, np.minimum), (en.add, np.add),
             (en.mul, np.multiply), (en.div, np.divide), (en.pow, np.power)]
    for fn, ref in cases:
        out = fn(tp, tq)
        assert out.dtype == ref(p, q).dtype, fn.__name__
        np.testing.assert_array_equal(out.numpy(), ref(p, q))
    np.testing.assert_array_equal((tp + 1).numpy(), p + 1)
    assert (tp < tq).dtype == np.bool_
    with pytest.raises(en.DTypeError, match="sub"):
        en.sub(tp, tq)        # numpy refuses bool - bool too


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint64"])
def test_int_tensors_in_floating_functions(dtype):
    """Regression (issue 16 part 5): exp, cos, ... refused integer tensors; numpy
    computes them in its floating dtype (float64 for int32/int64)."""
    x = values(np.dtype(dtype))
    for fn in (en.exp, en.cos, en.sin, en.tanh, en.log, en.sqrt, en.log1p, en.expm1):
        out = fn(en.tensor(x))
        expected = getattr(np, fn.__name__)(x)
        assert out.dtype == expected.dtype, (fn.__name__, dtype)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-3)
    assert en.exp(en.tensor([1, 2])).dtype == np.float64


def test_int_tensor_in_a_traced_floating_function():
    f = en.function(lambda x: en.exp(x) + en.cos(x))
    x = np.array([0, 1, 2], dtype=np.int32)
    out = f(en.tensor(x))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), np.exp(x) + np.cos(x))


def test_arange_out_of_range_for_its_dtype_raises():
    """Regression (issue 16 part 5): the values wrapped silently past 2**31."""
    with pytest.raises(OverflowError, match="int32") as info:
        en.arange(2 ** 31, 2 ** 31 + 3, dtype="int32")
    assert isinstance(info.value, en.EngineError) and "arange" in str(info.value)
    with pytest.raises(OverflowError, match="uint8"):
        en.arange(-1, 3, dtype="uint8")
    np.testing.assert_array_equal(en.arange(2 ** 31 - 2, 2 ** 31, dtype="int32").numpy(),
                                  np.arange(2 ** 31 - 2, 2 ** 31, dtype=np.int32))


@pytest.mark.parametrize("dtype", ["float16", "complex64", "complex128", "int8", "uint32"])
def test_new_dtypes_are_tensors(dtype):
    a = values(np.dtype(dtype))
    t = en.tensor(a)
    assert t.dtype == a.dtype
    np.testing.assert_array_equal(en.sum(t).numpy(), np.sum(a))
    assert en.sum(t).dtype == np.sum(a).dtype
    np.testing.assert_array_equal(en.cast(t, "float64").numpy(), a.astype(np.float64)
                                  if a.dtype.kind != "c" else a.real)


def test_complex_functions_match_numpy():
    z = np.array([1 + 2j, -0.5 + 0.25j], dtype=np.complex64)
    for fn in (en.exp, en.log, en.sqrt, en.sin, en.cos, en.tanh, en.square, en.neg):
        ref = {"neg": np.negative}.get(fn.__name__, getattr(np, fn.__name__, None))
        out = fn(en.tensor(z))
        assert out.dtype == np.complex64
        np.testing.assert_allclose(out.numpy(), ref(z), rtol=1e-5)
    assert en.abs(en.tensor(z)).dtype == np.float32
    np.testing.assert_allclose(en.abs(en.tensor(z)).numpy(), np.abs(z), rtol=1e-6)
    # complex numbers compare in numpy's (lexicographic) order
    np.testing.assert_array_equal(en.less(en.tensor(z), en.tensor(z[::-1])).numpy(), z < z[::-1])


def test_float16_gradients():
    x = en.tensor(np.array([0.5, 1.5], dtype=np.float16))
    g = en.grad(lambda x: en.sum(x * x))(x)
    assert g.dtype == np.float16
    np.testing.assert_allclose(g.numpy(), [1.0, 3.0])


def test_gradient_through_a_complex_value_follows_jax_or_raises_naming_the_op():
    # cast, mul and abs hold for complex values: |x * 1j| = |x|, so the gradient is sign(x).
    def f(x):
        z = en.cast(x, "complex128") * 1j
        return en.sum(en.abs(z))
    np.testing.assert_allclose(en.grad(f)(en.tensor([1.0, -2.0])).numpy(), [1.0, -1.0])
    # An op whose VJP is real-only is refused, naming it, even on a path that would
    # carry a zero gradient: the engine cannot tell.
    with pytest.raises(en.NotDifferentiableError, match="^sin: "):
        en.grad(lambda x: en.sum(en.real(en.sin(en.cast(x, "complex128")))))(en.tensor([1.0]))
    g = en.grad(lambda x: en.sum(x * 2.0)
                + 0.0 * en.sum(en.real(en.tanh(en.cast(x, "complex64")))))
    with pytest.raises(en.NotDifferentiableError, match="tanh"):
        g(en.tensor([1.0]))
    # A complex value off the gradient's path changes nothing.
    def h(x):
        en.exp(en.cast(x, "complex64"))
        return en.sum(x * 3.0)
    assert float(en.grad(h)(en.tensor([1.0]))[0]) == 3.0


@pytest.mark.parametrize("dtype", ["int64", "int8", "complex128", "bool"])
def test_differentiating_a_non_float_input_raises(dtype):
    with pytest.raises(en.NotDifferentiableError, match=dtype):
        en.grad(lambda x: en.sum(x))(en.tensor(values(np.dtype(dtype))))
    with pytest.raises(en.NotDifferentiableError, match=dtype):
        with en.GradientTape() as tape:
            tape.watch(en.tensor(values(np.dtype(dtype))))


def test_onnx_knows_the_new_dtypes():
    from engine.graph.export import onnx_export
    for d in ALL:
        assert d.name in onnx_export._ONNX_TYPES
