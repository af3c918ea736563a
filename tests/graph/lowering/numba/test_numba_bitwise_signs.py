"""numba's kernels under ``en.config.numerics = "bitwise"`` keep the signs numpy gives
NaNs and zeros (graph/lowering/numba/numba_math.py ``neg_``).

numpy's ``negative`` flips a NaN's sign bit; LLVM takes a float negation for a sign it
may move (``(-x) * 2`` as ``x * -2``, ``(-x) * (-x)`` as ``x * x``), so a compiled
kernel wrote the other NaN. Each program runs over 4099 values with NaNs of both signs,
infinities and signed zeros, in a numba fused kernel (checked), against eager mode and
against numpy itself. Where numpy's own loops give a result by the element's place
(``fmax(+0.0, -0.0)``: their vector body and scalar tail differ) the op stays with
numpy's kernel under "bitwise".
"""
import numpy as np
import pytest

import engine as en
from engine.graph.lowering.numba.numba_emitter import scalar_form_text
from engine.op import REGISTRY
from support.bitwise import assert_same_bits, compiled_backends, fused_backends, numerics
from support.compilers import import_numba, skip_without_c_compiler

import_numba()

SIZE = 4099     # a vector body and a scalar tail in every loop


def values(dtype, seed):
    """Normal values with NaNs of both signs, infinities and signed zeros among them."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(SIZE) * 3).astype(dtype)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], dtype)
    x[seed % 5::7] = np.resize(special, x[seed % 5::7].shape)
    return x


# (program, numpy's own computation of it) over one input or two; a NaN meets a number
# in each op (two NaNs meeting pick one by the element's place in numpy's loops).
ONE = {
    "negative": (lambda x: -x * 2.0, lambda x: np.negative(x) * 2.0),
    "square_of_negative": (lambda x: en.square(-x) * 2.0, lambda x: np.square(-x) * 2.0),
    "reciprocal_of_negative": (lambda x: en.reciprocal(-x) * 2.0,
                               lambda x: np.reciprocal(-x) * 2.0),
    "deg2rad_of_negative": (lambda x: en.deg2rad(-x) * 2.0, lambda x: np.deg2rad(-x) * 2.0),
    "abs_of_negative": (lambda x: en.abs(-x) * -2.0, lambda x: np.abs(-x) * -2.0),
    "negative_of_abs": (lambda x: -en.abs(x) * 3.0, lambda x: -np.abs(x) * 3.0),
}
TWO = {
    "sum_with_negative": (lambda x, y: (-x + y) * 2.0, lambda x, y: (np.negative(x) + y) * 2.0),
    "product_with_negative": (lambda x, y: (y * -x) * 2.0,
                              lambda x, y: (y * np.negative(x)) * 2.0),
    "copysign_of_negative": (lambda x, y: en.copysign(-x, y) * 2.0,
                             lambda x, y: np.copysign(-x, y) * 2.0),
    "maximum_of_negative": (lambda x, y: en.maximum(-x, y) * 2.0,
                            lambda x, y: np.maximum(-x, y) * 2.0),
    "minimum_of_negative": (lambda x, y: en.minimum(y, -x) * -2.0,
                            lambda x, y: np.minimum(y, -x) * -2.0),
}


def _check(program, reference, arrays, lowering="numba"):
    tensors = [en.tensor(a) for a in arrays]
    with np.errstate(all="ignore"):
        want = program(*tensors)
        with numerics("bitwise", lowering):
            f = en.function(program)
            got = f(*tensors)
            where = fused_backends(f, tensors) + compiled_backends(f, tensors)
        expected = reference(*arrays)
    assert_same_bits(got, want, "against eager")
    assert_same_bits(got, expected, "against numpy")
    return where


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ONE))
def test_negations_keep_numpys_nan_signs(name, dtype):
    program, reference = ONE[name]
    assert _check(program, reference, [values(dtype, 1)]) == ["numba"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(TWO))
def test_negations_beside_another_input_keep_numpys_signs(name, dtype):
    program, reference = TWO[name]
    x, y = values(dtype, 1), values(dtype, 2)
    y[np.isnan(x)] = 1.5      # one NaN at a time
    assert _check(program, reference, [x, y]) == ["numba"]


def test_a_negation_outside_bitwise_mode_is_numbas_own():
    """(the sign flip that LLVM cannot see through is written under "bitwise" only)"""
    avals = [((3,), np.dtype("float32"))]
    assert scalar_form_text(REGISTRY["neg"], avals, np.dtype("float32")) == "-{0}"
    with numerics("bitwise"):
        assert scalar_form_text(REGISTRY["neg"], avals, np.dtype("float32")) == "neg_({0})"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_heaviside_of_a_negative_nan_is_numpys_nan(dtype):
    """numpy's heaviside returns its own NaN for a NaN x (its sign bit clear)."""
    x = values(dtype, 3)
    h = np.full(SIZE, 0.5, dtype)
    where = _check(lambda x, h: en.heaviside(-x, h) * 2.0,
                   lambda x, h: np.heaviside(-x, h) * 2.0, [x, h])
    assert where == ["numba"]


@pytest.mark.parametrize("lowering", ["numba", "c"])
@pytest.mark.parametrize("op", ["fmax", "fmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fmax_of_signed_zeros_stays_numpys(op, dtype, lowering):
    """numpy's fmax(+0.0, -0.0) is -0.0 in its vector body, +0.0 in its scalar tail."""
    if lowering == "c":
        skip_without_c_compiler()   # the numba case runs
    x = np.zeros(SIZE, dtype)
    y = -np.zeros(SIZE, dtype)
    x[::5], y[1::7] = np.nan, -np.nan
    fn = getattr(en, op)
    ufunc = getattr(np, op)
    where = _check(lambda x, y: fn(x, y) * 2.0, lambda x, y: ufunc(x, y) * 2.0, [x, y],
                   lowering)
    # numba leaves the op to numpy's kernel; a whole C graph calls numpy's own loop
    assert "numba" not in where if lowering == "numba" else where == ["c"]
