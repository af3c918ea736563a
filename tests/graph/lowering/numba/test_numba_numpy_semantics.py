"""The compiled (numba) lowering at the edges of numpy's semantics: each case is compiled
(the test checks a numba region ran) and compared with numpy itself, bit for bit where
numpy's result is exact (signed zeros included).

Each case was a silent wrong answer (or, for ``%`` by -1, a crash of the process) before
the scalar forms wrote numpy's rules: NaN through ``relu`` and ``maximum``, numpy's
corrected float floor division, ``x ** 0.5`` as numpy's ``sqrt``, integer rounding,
shifts by counts outside the width, the smallest integer divided by -1, mixed
unsigned and signed inputs, and a scan whose 0-d start came as a numpy scalar.
"""
import numpy as np
import pytest

import engine as en
from support.compilers import import_numba
from support.pass_helpers import numba_lowering  # noqa: F401 (a fixture)

import_numba()

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64


def _run_compiled(fn, *arrays):
    """``fn`` as an ``en.function`` on ``arrays``: its result, after checking that numba
    compiled part of its graph."""
    f = en.function(fn)
    ts = [en.tensor(a) for a in arrays]
    graph = f.graph_for(*ts)
    assert any(n.meta.get("backend") == "numba" for n in graph.nodes), \
        f"nothing was compiled: {[n.op.name for n in graph.nodes]}"
    return f(*ts).numpy()


def _assert_same(got, want):
    """Equal values with equal dtypes, NaN where NaN, and the sign of every zero."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    same = (got == want) | (np.isnan(got) & np.isnan(want)) if want.dtype.kind == "f" \
        else got == want
    if want.dtype.kind == "f":
        same &= np.signbit(got) == np.signbit(want)
    assert same.all(), f"\ngot  {got}\nwant {want}"


SPECIAL = [np.nan, -np.inf, -2.5, -1.0, -0.0, 0.0, 1e-30, 0.7, 3.0, np.inf]


@pytest.mark.parametrize("dtype", [F32, F64])
def test_relu_maximum_minimum_keep_nan_and_numpys_zero(numba_lowering, dtype):
    a = np.repeat(np.array(SPECIAL, dtype), len(SPECIAL))
    b = np.tile(np.array(SPECIAL, dtype), len(SPECIAL))
    with np.errstate(all="ignore"):
        _assert_same(_run_compiled(lambda x: en.relu(x * 1.0), a),
                     np.maximum(a * dtype(1.0), dtype(0)))
        _assert_same(_run_compiled(lambda x, y: en.maximum(x * 1.0, y), a, b),
                     np.maximum(a * dtype(1.0), b))
        _assert_same(_run_compiled(lambda x, y: en.minimum(x * 1.0, y), a, b),
                     np.minimum(a * dtype(1.0), b))
        _assert_same(_run_compiled(lambda x: en.sign(x * 1.0), a), np.sign(a * dtype(1.0)))


@pytest.mark.parametrize("dtype", [F32, F64])
def test_float_floor_division_and_remainder_are_numpys(numba_lowering, dtype):
    vals = SPECIAL + [0.1, -0.1, 4.0, -2.0, 1e30, -1e-30, 5.5]
    a = np.repeat(np.array(vals, dtype), len(vals))
    b = np.tile(np.array(vals, dtype), len(vals))
    with np.errstate(all="ignore"):
        want_div = np.floor_divide(a, b)
        # The engine's floor division of a non-finite operand is floor(x / y) (the Array
        # API standard's value) where numpy's differs.
        finite = np.isfinite(a) & np.isfinite(b)
        want_div = np.where(finite, want_div, np.floor(a / b)).astype(dtype)
        _assert_same(_run_compiled(lambda x, y: en.floor_divide(x * 1.0, y), a, b), want_div)
        _assert_same(_run_compiled(lambda x, y: (x * 1.0) % y, a, b), np.remainder(a, b))


@pytest.mark.parametrize("dtype", [np.int8, I32, I64, np.uint8, np.uint64])
def test_integer_division_shifts_and_rounding_are_numpys(numba_lowering, dtype):
    info = np.iinfo(dtype)
    vals = [0, 1, 2, 3, 7, int(info.max)] + ([-1, -2, -7, int(info.min)] if info.min else [])
    a = np.repeat(np.array(vals, dtype), len(vals))
    b = np.tile(np.array(vals, dtype), len(vals))
    with np.errstate(all="ignore"):
        # The smallest value % -1 ended the process (SIGFPE); its // -1 gave 0.
        _assert_same(_run_compiled(lambda x, y: en.floor_divide(x + 0, y), a, b),
                     np.floor_divide(a, b))
        _assert_same(_run_compiled(lambda x, y: (x + 0) % y, a, b), np.remainder(a, b))
    counts = [0, 1, 7, 8, 31, 32, 33, 63, 64, 100] + ([-1, -5] if info.min else [])
    x = np.repeat(np.array(vals, dtype), len(counts))
    n = np.tile(np.array(counts, np.int64).astype(dtype), len(vals))
    _assert_same(_run_compiled(lambda x, n: en.left_shift(x + 0, n), x, n), np.left_shift(x, n))
    _assert_same(_run_compiled(lambda x, n: en.right_shift(x + 0, n), x, n),
                 np.right_shift(x, n))
    _assert_same(_run_compiled(lambda x: en.round(x + 0), a), a)   # not through float64


@pytest.mark.parametrize("dtype", [F32, F64])
def test_powers_are_numpys(numba_lowering, dtype):
    base = np.array(SPECIAL, dtype)
    with np.errstate(all="ignore"):
        # A single exponent of 0.5 is numpy's sqrt: sqrt(-inf) is nan, sqrt(-0.0) -0.0.
        _assert_same(_run_compiled(lambda x: (x * 1.0) ** 0.5, base),
                     np.power(base, np.array(0.5, dtype)))
        # An integer exponent array: numpy converts it to the float dtype (0 ** -1 is inf).
        ints = np.array([-1, 2, -2, 3, 0, -1, 1, 2, -3, 1], I32)
        want = np.power(base, ints)
        got = _run_compiled(lambda x, e: (x * 1.0) ** e, base, ints)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-15 if want.dtype == F64 else 1e-6)


def test_an_integer_power_keeps_numpys_kernel_and_its_error(numba_lowering):
    # A compiled loop cannot raise DomainError for a negative exponent: not compiled.
    f = en.function(lambda a, e: (a + 0) ** e)
    a, e = en.tensor(np.array([2, 3], I32)), en.tensor(np.array([-1, 2], I32))
    assert not any(n.meta.get("backend") == "numba" for n in f.graph_for(a, e).nodes)
    with pytest.raises(en.DomainError):
        f(a, e)
    np.testing.assert_array_equal(f(a, en.tensor(np.array([3, 2], I32))).numpy(), [8, 9])


def test_unsigned_and_signed_inputs_convert_as_numpy_does(numba_lowering):
    a = np.array([2 ** 63, 2 ** 64 - 1, 5], np.uint64)
    b = np.array([5, -1, -7], I64)
    _assert_same(_run_compiled(lambda x, y: (x + 0) + y, a, b), np.add(a, b))
    _assert_same(_run_compiled(lambda x, y: (x + 0) - y, a, b), np.subtract(a, b))


def test_a_scan_started_from_an_indexed_scalar(numba_lowering):
    xs = np.arange(6.0).reshape(2, 3)
    got = _run_compiled(lambda xs: en.scan(lambda c, x: (c + en.sum(x), c), xs[0, 0], xs)[1], xs)
    _assert_same(got, np.array([0.0, 3.0]))
