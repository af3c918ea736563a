"""A non-persistent tape after its gradient: it has dropped its record, so watching
on it or recording on it again is a clear error (it was a bare TypeError from deep
inside the tape), and a fresh tape still gives the right gradient."""
import pytest

import engine as en


def _spent_tape(x):
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == pytest.approx(2 * float(x.numpy()))
    return tape


def test_watch_on_a_spent_tape_is_a_clear_error():
    x = en.tensor(3.0)
    tape = _spent_tape(x)
    with pytest.raises(en.EngineError, match=r"GradientTape\.watch: .*persistent=True"):
        tape.watch(x)


def test_recording_again_on_a_spent_tape_is_a_clear_error():
    x = en.tensor(3.0)
    tape = _spent_tape(x)
    with pytest.raises(en.EngineError, match=r"GradientTape\.__enter__: .*new tape"):
        with tape:
            pass
    # The refused tape did not stay on the tape stack: a new one records as usual.
    with en.GradientTape() as fresh:
        fresh.watch(x)
        z = x * x * x
    assert float(fresh.gradient(z, x)) == pytest.approx(3 * 3.0 ** 2)


def test_a_persistent_tape_watches_after_its_gradient():
    x = en.tensor(3.0)
    with en.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == pytest.approx(6.0)
    tape.watch(x)    # its record is kept: no error
    assert float(tape.gradient(y, x)) == pytest.approx(6.0)
