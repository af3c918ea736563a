"""Errors: the class hierarchy, validation before kernels run, messages naming the op,
the inputs and the user's line, clean tracebacks, and check_numerics."""
import os
import sys
import traceback
import warnings

import numpy as np
import pytest

import engine as en

REPO = os.path.dirname(os.path.dirname(os.path.abspath(en.__file__)))
ENGINE_DIRS = tuple(os.path.join(REPO, d) + os.sep for d in ("engine", "eager", "graph"))


def here():
    """The caller's current line number."""
    return sys._getframe(1).f_lineno


def innermost_user_frame(tb):
    """The innermost traceback frame whose file is outside the engine's packages."""
    frames = [f for f in traceback.extract_tb(tb)
              if not os.path.abspath(f.filename).startswith(ENGINE_DIRS)]
    return frames[-1]


def assert_names_user_line(info, line):
    msg = str(info.value)
    assert f"{__file__}:{line}" in msg, f"expected {os.path.basename(__file__)}:{line} in: {msg}"
    frame = innermost_user_frame(info.tb)
    assert os.path.abspath(frame.filename) == os.path.abspath(__file__)
    assert frame.lineno == line, f"innermost user frame is line {frame.lineno}, not {line}"


# ---- the hierarchy -----------------------------------------------------------------
@pytest.mark.parametrize("cls", [en.ShapeError, en.DTypeError, en.NumericsError,
                                 en.NotDifferentiableError, en.TracingError, en.LoadError])
def test_every_error_derives_from_engine_error(cls):
    assert issubclass(cls, en.EngineError)
    assert issubclass(en.EngineError, Exception)


def test_builtin_bases():
    assert issubclass(en.ShapeError, ValueError)
    assert issubclass(en.DTypeError, TypeError)
    assert issubclass(en.NumericsError, FloatingPointError)


def test_every_public_error_class_is_an_engine_error():
    public = [getattr(en, n) for n in dir(en) if n.endswith("Error")]
    assert public, "no error classes exported"
    for cls in public:
        assert issubclass(cls, en.EngineError), cls


def test_numpy_style_except_clauses_still_catch_engine_errors():
    with pytest.raises(ValueError):
        en.add(en.zeros((2, 3)), en.zeros((4,)))
    with pytest.raises(TypeError):
        en.bitwise_and(en.tensor([1.5]), en.tensor([2.5]))   # floats have no bits to combine


# ---- bad calls: raised before the kernel, naming op, inputs and line ----------------
def _spy_on(monkeypatch, op):
    calls = []
    real = op.impl

    def spy(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(op, "impl", spy)
    return calls


def test_matmul_shape_error(monkeypatch):
    calls = _spy_on(monkeypatch, en.ops.matmul_op)
    a, b = en.zeros((2, 3)), en.zeros((4, 5), dtype="float32")
    line = here() + 2  # the call two lines below
    with pytest.raises(en.ShapeError) as info:
        en.matmul(a, b)
    assert calls == [], "the kernel ran before the shapes were checked"
    msg = str(info.value)
    assert "matmul" in msg
    assert "float64[2,3]" in msg and "float32[4,5]" in msg
    assert_names_user_line(info, line)


def test_add_broadcast_error(monkeypatch):
    calls = _spy_on(monkeypatch, en.ops.add_op)
    a, b = en.ones((2, 3)), en.ones((4,), dtype="int32")
    line = here() + 2  # the call two lines below
    with pytest.raises(en.ShapeError) as info:
        en.add(a, b)
    assert calls == []
    msg = str(info.value)
    assert "add" in msg
    assert "float64[2,3]" in msg and "int32[4]" in msg
    assert_names_user_line(info, line)


def test_bitwise_of_floats(monkeypatch):
    calls = _spy_on(monkeypatch, en.REGISTRY["bitwise_and"])
    x = en.tensor([1.5, 2.5, 3.5])
    line = here() + 2  # the call two lines below
    with pytest.raises(en.DTypeError) as info:
        en.bitwise_and(x, x)
    assert calls == []
    msg = str(info.value)
    assert "bitwise_and" in msg and "float64[3]" in msg
    assert "integer" in msg  # says what it wanted
    assert_names_user_line(info, line)


def test_reshape_to_a_wrong_size(monkeypatch):
    calls = _spy_on(monkeypatch, en.ops.reshape_op)
    x = en.zeros((2, 3), dtype="float32")
    line = here() + 2  # the call two lines below
    with pytest.raises(en.ShapeError) as info:
        en.reshape(x, (4, 2))
    assert calls == []
    msg = str(info.value)
    assert "reshape" in msg and "float32[2,3]" in msg and "(4, 2)" in msg
    assert_names_user_line(info, line)


def test_operator_syntax_names_the_user_line(monkeypatch):
    calls = _spy_on(monkeypatch, en.ops.matmul_op)
    a, b = en.ones((3, 2)), en.ones((3, 2))
    line = here() + 2  # the call two lines below
    with pytest.raises(en.ShapeError) as info:
        a @ b
    assert calls == []
    assert "matmul" in str(info.value) and "float64[3,2]" in str(info.value)
    assert_names_user_line(info, line)


def _layer(x, w):
    return en.tanh(en.matmul(x, w))  # the line an error must point at


def test_error_points_at_the_innermost_user_line_not_the_caller():
    line = _layer.__code__.co_firstlineno + 1
    with pytest.raises(en.ShapeError) as info:
        _layer(en.ones((2, 3)), en.ones((2, 3)))
    assert_names_user_line(info, line)


def test_dtype_error_names_both_inputs():
    line = here() + 2  # the call two lines below
    with pytest.raises(en.DTypeError) as info:
        en.matmul(en.ones((2, 2)), en.tensor([[True, False], [False, True]]))
    msg = str(info.value)
    assert "matmul" in msg and "float64[2,2]" in msg and "bool[2,2]" in msg
    assert_names_user_line(info, line)


def test_where_needs_broadcastable_inputs():
    # (a condition that is not bool counts by its truth, as in numpy)
    with pytest.raises(en.ShapeError, match="where"):
        en.where(en.ones(2), en.ones(3), en.zeros(2))


def test_reduction_axis_out_of_range():
    line = here() + 2  # the call two lines below
    with pytest.raises(en.ShapeError) as info:
        en.sum(en.ones((2, 3)), axis=2)
    assert "sum" in str(info.value) and "axis" in str(info.value)
    assert_names_user_line(info, line)


def test_repeated_bad_call_still_raises():
    # Shape rules are cached per signature; a cached failure must not become a pass.
    for _ in range(3):
        with pytest.raises(en.ShapeError):
            en.matmul(en.zeros((2, 3)), en.zeros((4, 5)))


def test_good_call_after_a_bad_one():
    with pytest.raises(en.ShapeError):
        en.matmul(en.zeros((2, 3)), en.zeros((4, 5)))
    np.testing.assert_array_equal(en.matmul(en.ones((2, 3)), en.ones((3, 1))).numpy(),
                                  np.full((2, 1), 3.0))


def test_no_kernel_runs_for_a_bad_call_inside_a_tape(monkeypatch):
    calls = _spy_on(monkeypatch, en.ops.mul_op)
    x = en.ones((2, 3))
    with en.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(en.ShapeError):
            x * en.ones((3, 2))
    assert calls == []


# ---- check_numerics ------------------------------------------------------------------
def test_nan_is_silent_without_check_numerics():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = en.log(en.tensor(-1.0))
    assert np.isnan(float(y))


def test_check_numerics_forward_names_the_op_and_line():
    x = en.tensor([1.0, -1.0])
    with en.debug.check_numerics(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = en.exp(x)  # fine
        line = here() + 2  # the call two lines below
        with pytest.raises(en.NumericsError) as info:
            en.log(x)
    msg = str(info.value)
    assert "'log'" in msg and "NaN" in msg and "float64[2]" in msg
    assert_names_user_line(info, line)
    np.testing.assert_allclose(y.numpy(), np.exp([1.0, -1.0]))


def test_check_numerics_reports_the_first_bad_op():
    x = en.tensor(0.0)
    with en.debug.check_numerics(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(en.NumericsError) as info:
            en.exp(en.reciprocal(x) * 0.0 + 1.0)  # 1/0 = inf is first; inf*0 NaN never happens
    assert "'reciprocal'" in str(info.value) and "Inf" in str(info.value)


def test_check_numerics_backward():
    x = en.tensor(0.0)
    with en.debug.check_numerics(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with en.GradientTape() as tape:
            tape.watch(x)
            y = en.sqrt(x)  # sqrt(0) = 0 is fine going forward
        line = here() + 2  # the call two lines below
        with pytest.raises(en.NumericsError) as info:
            tape.gradient(y, x)  # d sqrt / dx at 0 is inf
    msg = str(info.value)
    assert "Inf" in msg
    assert "op '" in msg  # names the backward op that made the Inf...
    assert "sqrt" in msg  # ...and whose gradient rule it belongs to
    assert_names_user_line(info, line)


def test_check_numerics_backward_through_grad():
    with en.debug.check_numerics(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(en.NumericsError, match="sqrt"):
            en.grad(lambda x: en.sqrt(x) * 2.0)(0.0)


def test_check_numerics_passes_finite_gradients():
    # The gradient of (x - 1) ** 2 must not trip over log(x - 1) in the unused
    # exponent gradient, with x - 1 < 0.
    with en.debug.check_numerics(), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        g = en.grad(lambda x: en.sum((x - 1.0) ** 2))(np.array([0.0, 0.5, 3.0]))
    np.testing.assert_allclose(g.numpy(), 2 * (np.array([0.0, 0.5, 3.0]) - 1.0))


def test_check_numerics_can_be_switched_off_inside():
    with en.debug.check_numerics():
        with en.debug.check_numerics(False), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            y = en.log(en.tensor(-1.0))
        assert np.isnan(float(y))
        with pytest.raises(en.NumericsError):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                en.log(en.tensor(-1.0))
    assert en.config.check_numerics is False


def test_check_numerics_ignores_int_and_bool_results():
    with en.debug.check_numerics():
        en.tensor([1, 2]) + 1
        en.tensor([1.0]) > 0.0


# ---- other messages ------------------------------------------------------------------
def test_unsupported_dtype_messages_give_a_hint():
    with pytest.raises(en.DTypeError) as info:
        en.tensor(np.zeros(2, dtype=np.longdouble))
    assert "float128" in str(info.value) and "dtype='float64'" in str(info.value)
    with pytest.raises(en.DTypeError) as info:
        en.tensor(np.zeros(2, dtype=np.clongdouble))
    assert "complex256" in str(info.value) and "dtype=" in str(info.value)


def test_non_persistent_tape_message_says_what_to_do():
    x = en.tensor(1.0)
    with en.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(en.EngineError) as info:
        tape.gradient(y, x)
    assert "persistent=True" in str(info.value)


def test_list_and_tuple_params_are_checked_alike_every_time():
    # Eager validation is cached per params in call order; a list (unhashable)
    # takes the frozen key. Both must still raise, and give numpy's values.
    x = en.tensor(np.arange(12.0).reshape(3, 4))
    for shape in ([4, 3], (4, 3), [4, 3]):
        np.testing.assert_array_equal(en.reshape(x, shape).numpy(),
                                      np.arange(12.0).reshape(4, 3))
    for bad in ([5, 3], (5, 3), [5, 3]):
        with pytest.raises(en.ShapeError) as info:
            en.reshape(x, bad)
        assert "reshape" in str(info.value) and "[3,4]" in str(info.value)
    np.testing.assert_array_equal(en.transpose(x, [1, 0]).numpy(), np.arange(12.0).reshape(3, 4).T)
    np.testing.assert_array_equal(en.sum(x, axis=[0]).numpy(), np.arange(12.0).reshape(3, 4).sum(0))
