"""The C graph writer under ``en.config.numerics = "bitwise"`` (graph/lowering/c/c_bitwise.py):
whole graphs and scans in C give eager mode's bits.

The recurrent cells (GRU, LSTM, tanh RNN), forward and gradient, forward and reversed
scans, float32 and float64, run their scans as C functions (checked: ``compiled_region``
nodes of the C lowering) that call numpy's own ``exp``/``tanh`` loops and ``cblas_?gemm``,
and equal eager mode bit for bit. Each writer is checked alone too: products of every
transposition, sums over the rows (signed zeros included), the elementwise forms that
call numpy's loops; and what it must leave to numpy (a product ``np.dot`` gives to
``gemv`` or ``syrk``, a pairwise sum, numpy's loop over a broadcast value) still gives
eager's bits, on the numpy kernels. The op database's elementwise ops in whole C graphs
are checked in tests/graph/lowering/test_bitwise_op_db.py.
"""
import numpy as np
import pytest

import engine as en
from bench import bitwise_cost
from bench.workloads import rnn
from support.bitwise import assert_same_bits, compiled_backends, numerics
from support.compilers import needs_c_compiler

pytestmark = needs_c_compiler

CELLS = {"gru": (rnn.gru_cell, 9), "lstm": (rnn.lstm_cell, 12), "tanh": (rnn.tanh_cell, 3)}
STEPS, BATCH, HIDDEN, FEATURES = 6, 5, 7, 3


def _problem(cell, dtype, reverse):
    fn, n_params = CELLS[cell]
    rng = np.random.default_rng(len(cell) * 2 + reverse)
    params = tuple(en.tensor(rng.uniform(-0.8, 0.8, (HIDDEN,) if k % 3 == 2 else
                                         (FEATURES if k % 3 == 0 else HIDDEN, HIDDEN))
                             .astype(dtype)) for k in range(n_params))
    xs = en.tensor(rng.standard_normal((STEPS, BATCH, FEATURES)).astype(dtype))
    targets = en.tensor(rng.standard_normal((STEPS, BATCH, HIDDEN)).astype(dtype))
    h0 = en.tensor(rng.standard_normal((BATCH, HIDDEN)).astype(dtype))
    if cell == "lstm":
        h0 = (h0, en.tensor(rng.standard_normal((BATCH, HIDDEN)).astype(dtype)))

    def step(carry, x, p):
        carry = fn(carry, x, p)
        return carry, carry[0] if isinstance(carry, tuple) else carry

    def forward(p, xs, targets, h0):
        last, hs = en.scan(lambda c, x: step(c, x, p), h0, xs, reverse=reverse)
        return last, hs

    def loss_and_grads(p, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch(list(p) + [xs])
            _, hs = en.scan(lambda c, x: step(c, x, p), h0, xs, reverse=reverse)
            loss = en.mean((hs - targets) ** 2.0)
        return loss, tape.gradient(loss, list(p) + [xs])
    return forward, loss_and_grads, (params, xs, targets, h0)


def _compiled_in_c(f, args):
    return compiled_backends(f, args)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reversed"])
@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_recurrent_cells_in_c_give_eager_bits(cell, dtype, reverse):
    forward, loss_and_grads, args = _problem(cell, dtype, reverse)
    with numerics("bitwise", "c"):
        for fn, scans in ((forward, 1), (loss_and_grads, 2)):
            want = fn(*args)
            f = en.function(fn)
            assert_same_bits(f(*args), want, f"{cell} {fn.__name__} in C")
            assert _compiled_in_c(f, args).count("c") >= scans, f.graph_for(*args)


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_the_bench_recurrent_steps_run_their_scans_in_c_under_auto(cell):
    step, args = bitwise_cost.recurrent_step(cell)
    with numerics("bitwise", "auto"):
        f = en.function(step)
        assert_same_bits(f(*args), step(*args), f"the bench's {cell} step")
        assert compiled_backends(f, args) == ["c", "c"]
        # the weights' gradients are summed over the steps inside the loop
        assert not [n for n in f.graph_for(*args).nodes if n.op.name == "sum"]


def _in_c(fn, *arrays):
    """``fn`` traced under "bitwise" with the C lowering forced: ``(its results, eager's,
    the lowerings that wrote it whole)``."""
    tensors = [en.tensor(a) for a in arrays]
    with numerics("bitwise", "c"):
        f = en.function(fn)
        return f(*tensors), fn(*tensors), compiled_backends(f, tensors)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_products_call_numpys_blas_with_np_dots_arguments(dtype, ta, tb):
    rng = np.random.default_rng(3)
    m, k, n = 9, 70, 6
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)

    def product(a, b):
        return en.tanh((a.T if ta else a) @ (b.T if tb else b)) * 2.0
    got, want, written = _in_c(product, a, b)
    assert written == ["c"]
    assert_same_bits(got, want, f"product, transposed {ta, tb}")
    # the independent reference: numpy's own dot and tanh
    ref = np.tanh(np.dot(a.T if ta else a, b.T if tb else b)) * 2.0
    assert_same_bits(got, ref, "against numpy")


@pytest.mark.parametrize("case", ["vector_column", "row", "with_itself"])
def test_products_numpy_gives_to_other_blas_routines_stay_with_numpy(case):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 5)).astype("float32")
    b = rng.standard_normal((5, 1) if case == "vector_column" else (5, 6)).astype("float32")
    if case == "row":
        a = a[:1]

    def product(a, b):
        return (a @ a.T if case == "with_itself" else a @ b) * 2.0
    got, want, written = _in_c(product, a, b)
    assert written == []
    assert_same_bits(got, want, case)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 4), (3, 2, 5), (40, 2)])
def test_sums_over_the_rows_add_them_as_numpy_does(dtype, shape):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, shape)).astype(dtype)
    x[:, 0] = -0.0           # a column of negative zeros sums to +0.0 in numpy
    got, want, written = _in_c(lambda x: en.sum(x * 1.0, axis=0), x)
    assert written == ["c"]
    assert_same_bits(got, want, f"sum over the rows of {shape}")
    assert_same_bits(got, np.add.reduce(x, axis=0), "against numpy")


@pytest.mark.parametrize("shape, axis", [((30, 1), 0), ((4, 30), 1), ((30,), 0)])
def test_pairwise_sums_stay_with_numpy(shape, axis):
    x = np.random.default_rng(6).standard_normal(shape).astype("float32")
    got, want, written = _in_c(lambda x: en.sum(x * 1.0, axis=axis), x)
    assert written == []
    assert_same_bits(got, want, f"sum over axis {axis} of {shape}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forms_that_call_ufuncs_call_numpys_loops(dtype):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((33, 17)) * 30).astype(dtype)
    x[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 100.0]
    y = np.abs(rng.standard_normal((33, 17))).astype(dtype) + 0.5

    def forms(x, y):
        return (en.sigmoid(x) * 3.0, en.tanh(x + y), en.exp(-en.abs(x)), en.log(y) - x,
                en.sin(x) * en.cos(y), y ** (x * 0.01), en.arctan2(x, y))
    with np.errstate(all="ignore"):
        got, want, written = _in_c(forms, x, y)
        ref = (1 / (1 + np.exp(-x)) * 3.0, np.tanh(x + y), np.exp(-np.abs(x)), np.log(y) - x,
               np.sin(x) * np.cos(y), y ** (x * 0.01), np.arctan2(x, y))
    assert written == ["c"]
    assert_same_bits(got, want, "forms calling numpy's loops")
    assert_same_bits(got, tuple(r.astype(dtype) for r in ref), "against numpy")


def test_a_ufunc_over_a_broadcast_value_stays_with_numpy():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((6, 5)).astype("float32")
    y = rng.standard_normal(5).astype("float32")
    got, want, written = _in_c(lambda x, y: en.arctan2(x, y) * 2.0, x, y)
    assert written == []
    assert_same_bits(got, want, "arctan2 of a broadcast row")


@pytest.mark.parametrize("whole", [True, False], ids=["whole_graph", "fused_kernel"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_minus_flips_a_nans_sign_as_numpy_does(whole, dtype):
    # (vectorized, a compiler turns (-x) * 2 into x * -2, which keeps a NaN's sign)
    x = np.full(4099, np.nan, dtype)
    x[1::2] = np.linspace(-3.0, 3.0, 2049)
    limit = {} if whole else {"whole_graph_small_elements": 0, "whole_graph_max_elements": 0}
    with en.config.cost.override(**limit):
        got, want, written = _in_c(lambda x: -x * 2.0, x)
    assert written == (["c"] if whole else [])
    assert_same_bits(got, want, "(-x) * 2")
    assert_same_bits(got, np.negative(x) * 2.0, "against numpy")


def test_an_op_whose_kernel_is_a_ufunc_calls_that_ufuncs_loop():
    # float_power's scalar form says np.power; eager calls np.float_power, whose loop
    # differs from np.power's (SVML's) in float64
    rng = np.random.default_rng(9)
    x = np.abs(rng.standard_normal(4099)) * 4
    y = rng.standard_normal(4099) * 4
    with np.errstate(all="ignore"):
        got, want, written = _in_c(lambda x, y: en.float_power(x, y) * 2.0, x, y)
        ref = np.float_power(x, y) * 2.0
    assert written == ["c"]
    assert_same_bits(got, want, "float_power")
    assert_same_bits(got, ref, "against numpy")
