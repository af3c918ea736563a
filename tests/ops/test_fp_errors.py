"""Kernels that expect float overflow (sigmoid, silu) ignore it without np.errstate:
no warning, the caller's other error settings kept inside, its state back after."""
import threading
import warnings

import numpy as np
import pytest

import engine as en
from engine.ops import fp_errors

X = np.array([-200.0, -100.0, -88.5, -20.0, 0.0, 3.0, 90.0], np.float32)


def _sigmoid_reference(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_and_silu_overflow_silently_to_their_limits(dtype):
    x = X.astype(dtype) * (10.0 if dtype == "float64" else 1.0)   # past exp's range
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = en.sigmoid(en.tensor(x)).numpy()
        q = en.silu(en.tensor(x)).numpy()
    np.testing.assert_allclose(s, _sigmoid_reference(x), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(q, x * _sigmoid_reference(x), rtol=1e-6, atol=1e-30)


def test_the_callers_error_state_holds_inside_and_comes_back():
    with np.errstate(divide="raise"):
        en.sigmoid(en.tensor(X))
        with pytest.raises(FloatingPointError):
            np.divide(1.0, np.zeros(1))
        token = fp_errors.ignore_overflow()
        try:
            assert np.geterr()["over"] == "ignore" and np.geterr()["divide"] == "raise"
        finally:
            fp_errors.restore(token)
        assert np.geterr()["over"] != "ignore"
    with pytest.warns(RuntimeWarning, match="overflow"):
        np.exp(np.float32(100))


def test_overflow_is_ignored_even_where_the_caller_raises_on_it():
    """The kernels' overflow is part of their definition, as with np.errstate before."""
    with np.errstate(over="raise"):
        np.testing.assert_allclose(en.sigmoid(en.tensor(X)).numpy(), _sigmoid_reference(X),
                                   rtol=1e-6, atol=1e-30)
        with pytest.raises(FloatingPointError):
            np.exp(np.float32(100))


def test_the_state_comes_back_when_the_kernel_raises():
    from engine.ops.elementwise import _sigmoid_out
    with pytest.raises(ValueError):
        _sigmoid_out(X, np.empty(3, np.float32))    # numpy refuses the out array
    assert np.geterr()["over"] == "warn"


def test_threads_keep_their_own_error_states():
    errors = []

    def worker(raise_divide):
        try:
            with np.errstate(divide="raise" if raise_divide else "ignore"):
                for _ in range(200):
                    en.sigmoid(en.tensor(X))
                    if raise_divide:
                        try:
                            np.divide(1.0, np.zeros(1))
                            errors.append("divide did not raise")
                        except FloatingPointError:
                            pass
                    else:
                        np.divide(1.0, np.zeros(1))   # ignored: must not raise
        except Exception as e:   # noqa: BLE001 - collected for the assertion below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k % 2 == 0,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_numpy_2_takes_the_context_variable_path():
    """Where numpy keeps its error state in a context variable, the kernels use it (a
    numpy that moved it would fall back to np.errstate: right, but 2 us a call slower)."""
    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip("numpy 1.x keeps no error-state context variable")
    assert fp_errors._extobj_contextvar is not None
    token = fp_errors.ignore_overflow()
    try:
        assert not isinstance(token, np.errstate)
    finally:
        fp_errors.restore(token)
