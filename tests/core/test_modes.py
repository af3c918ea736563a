"""The mode protocol (engine/modes.py): a mode implements it and gets tapes for free.

A third mode, written here with no tape code at all, must be differentiable:
``apply`` and the op functions record each op call, ``read_variable`` each
variable read. Gradients are checked against closed forms.
"""
import numpy as np
import pytest

import engine as en
from engine.modes import Mode, current_mode, default_mode, set_default_mode, use_mode
from engine.eager import EagerMode
from engine.graph.jit.tracer import TraceMode


class CountingMode(Mode):
    """Eager execution that counts what it is asked to do (and knows nothing of tapes)."""

    name = "counting"
    is_concrete = True

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def lift(self, args):
        return self.inner.lift(args)

    def apply(self, op, args, params):
        self.calls.append(op.name)
        return self.inner.apply(op, args, params)

    def read_variable(self, var):
        self.calls.append("read")
        return self.inner.read_variable(var)

    def assign_variable(self, var, value, kind, indices=None):
        return self.inner.assign_variable(var, value, kind, indices)

    def cond(self, pred, true_fn, false_fn, *operands):
        self.calls.append("cond")
        return self.inner.cond(pred, true_fn, false_fn, *operands)


def test_both_modes_implement_the_protocol():
    assert issubclass(EagerMode, Mode) and issubclass(TraceMode, Mode)
    assert isinstance(default_mode(), EagerMode) and current_mode() is default_mode()
    assert EagerMode.is_concrete is True and TraceMode.is_concrete is False


def test_a_new_mode_is_differentiated_without_recording_anything_itself():
    xv = np.array([0.5, 1.0, 2.0])
    mode = CountingMode(default_mode())
    x = en.tensor(xv)
    with use_mode(mode), en.GradientTape() as tape:
        tape.watch(x)
        y = en.sum(en.sin(x) * x)
    assert {"sin", "mul", "sum"} <= set(mode.calls)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.cos(xv) * xv + np.sin(xv))


def test_a_new_mode_records_variable_reads_and_second_order():
    mode = CountingMode(default_mode())
    w = en.Variable([1.0, -2.0])
    with use_mode(mode):
        with en.GradientTape() as outer:
            with en.GradientTape() as inner:
                loss = en.sum(w * w * w)
            (g,) = [inner.gradient(loss, w)]       # 3 w^2, recorded by the outer tape
            gsum = en.sum(g)
        h = outer.gradient(gsum, w)                # 6 w
    assert "mul" in mode.calls
    np.testing.assert_allclose(g.numpy(), [3.0, 12.0])
    np.testing.assert_allclose(h.numpy(), [6.0, -12.0])


def test_control_flow_and_is_tracing_ask_the_mode():
    mode = CountingMode(default_mode())
    with use_mode(mode):
        out = en.cond(en.tensor(True), lambda v: v * 2.0, lambda v: -v, en.tensor(3.0))
        assert not en.is_tracing()
    assert float(out) == 6.0 and "cond" in mode.calls


def test_set_default_mode_takes_only_modes():
    with pytest.raises(TypeError, match="engine.modes.Mode"):
        set_default_mode(object())
