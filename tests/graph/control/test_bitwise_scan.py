"""A scan's gradient under ``en.config.numerics = "bitwise"``: the staged loop's backward
adds its cotangents in eager mode's order (eager runs the loop in Python, its tape adding
each step's result cotangent first and the last step's weight gradient first), so the
compiled gradient of an RNN has eager's bits: GRU, LSTM and tanh cells, forward and
reversed scans, float32 and float64, under the numpy lowering and the default one.
"""
import numpy as np
import pytest

import engine as en
from bench.workloads import rnn
from support.bitwise import assert_same_bits, numerics

CELLS = {"gru": (rnn.gru_cell, 9), "lstm": (rnn.lstm_cell, 12), "tanh": (rnn.tanh_cell, 3)}
STEPS, BATCH, HIDDEN = 7, 3, 4


def _problem(cell, dtype, reverse):
    fn, n_params = CELLS[cell]
    rng = np.random.default_rng(len(cell) + reverse)
    params = tuple(en.tensor(rng.uniform(-0.5, 0.5, (HIDDEN,) if k % 3 == 2 else
                                         (HIDDEN, HIDDEN)).astype(dtype))
                   for k in range(n_params))
    xs = en.tensor(rng.standard_normal((STEPS, BATCH, HIDDEN)).astype(dtype))
    targets = en.tensor(rng.standard_normal((STEPS, BATCH, HIDDEN)).astype(dtype))
    h0 = en.tensor(rng.standard_normal((BATCH, HIDDEN)).astype(dtype))
    if cell == "lstm":
        h0 = (h0, en.zeros((BATCH, HIDDEN), dtype=dtype))

    def step(carry, x, p):
        carry = fn(carry, x, p)
        return carry, carry[0] if isinstance(carry, tuple) else carry

    def loss_and_grads(p, xs, targets, h0):
        with en.GradientTape() as tape:
            tape.watch(list(p) + [xs])
            _, hs = en.scan(lambda c, x: step(c, x, p), h0, xs, reverse=reverse)
            loss = en.mean((hs - targets) ** 2.0)
        return loss, tape.gradient(loss, list(p) + [xs])
    return loss_and_grads, (params, xs, targets, h0)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reversed"])
@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rnn_gradient_through_a_scan_gives_eager_bits(cell, dtype, reverse):
    fn, args = _problem(cell, dtype, reverse)
    with numerics("bitwise"):
        want = fn(*args)
        for lowering in ("numpy", "auto"):
            en.config.lowering = lowering
            assert_same_bits(en.function(fn)(*args), want, f"{cell} under {lowering}")
