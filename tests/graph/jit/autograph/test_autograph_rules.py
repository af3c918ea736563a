"""Converted control flow (issue 17): the errors (each naming the variable and the user's
line), gradients, side effects, the unroll warning, and the en.autograph API."""
import logging
import re
import warnings

import numpy as np
import pytest

import engine as en
from engine.errors import DTypeError, NotDifferentiableError, ShapeError, TracingError

from support.finite_diff import numeric_grad
from support.paths import REPO

HERE = __file__


def t(x, dtype="float64"):
    return en.tensor(np.asarray(x, dtype=dtype))


def line_of(fn, text):
    """The file line number of the first line of ``fn``'s source containing ``text``."""
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(text)


def where(fn, text):
    return re.escape(f"{HERE}:{line_of(fn, text)} in {fn.__name__}")


# ---- errors ----------------------------------------------------------------------------------
def test_name_assigned_in_one_branch_and_used_after():
    def model(x):
        if en.sum(x) > 0:
            y = x * 2.0
        return y
    f = en.function(model)
    with pytest.raises(TracingError, match=r"'y' is assigned only in the true branch of the if at "
                       + where(model, "if en.sum") + r".*assign it before the if or in both"):
        f(t([1.0]))

    def other(x):
        if en.sum(x) > 0:
            pass
        else:
            z = x
        return z
    with pytest.raises(TracingError, match="'z' is assigned only in the false branch"):
        en.function(other)(t([1.0]))


def test_branch_outputs_that_disagree():
    def model(x):
        if en.sum(x) > 0:
            y = x
        else:
            y = en.cast(x, "float32")
        return y
    with pytest.raises(DTypeError, match=r"'y' is float64\[2\] in the true branch of the if at "
                       + where(model, "if en.sum") + r" but float32\[2\] in the false branch"):
        en.function(model)(t([1.0, 2.0]))

    def shapes(x):
        y = x[0] if en.sum(x) > 0 else x
        return y
    with pytest.raises(ShapeError, match="conditional expression at " + where(shapes, "y = x[0]")):
        en.function(shapes)(t([1.0, 2.0]))


def test_loop_variable_changing_dtype_or_shape():
    def dtype_change(x, n):
        i = en.tensor(0)
        while i < n:
            x = en.cast(x, "float32")
            i = i + 1
        return x
    with pytest.raises(DTypeError, match=r"loop variable 'x' of the while loop at " +
                       where(dtype_change, "while i < n") + r" is float64\[1\] before the loop "
                       r"and float32\[1\] after one iteration"):
        en.function(dtype_change)(t([1.0]), en.tensor(3))

    def shape_change(xs):
        acc = en.zeros((1,))
        for row in xs:
            acc = en.concat([acc, row[:1]], axis=0) if hasattr(en, "concat") else acc * row
        return acc
    with pytest.raises(ShapeError, match=r"loop variable 'acc' of the for loop at " +
                       where(shape_change, "for row in xs") + r" is float64\[1\] before the loop "
                       r"and float64\[(2|3)\]"):
        en.function(shape_change)(t(np.ones((4, 3))))


def test_loop_variable_undefined_before_a_tensor_loop():
    def model(n, i):
        while i < n:
            last = i * 2
            i = i + 1
        return last
    with pytest.raises(TracingError, match=r"'last' is assigned in the while loop at " +
                       where(model, "while i < n") + r" and used after it.*assign 'last' before"):
        en.function(model)(en.tensor(3), 0)
    # The same loop on Python values is plain Python and fine.
    assert int(en.function(model)(3, 0)) == 4


def test_a_branch_that_returns_and_one_that_does_not():
    def model(x):
        if en.sum(x) > 0:
            return x * 2.0
    with pytest.raises(TracingError, match=r"the true branch of the if at " +
                       where(model, "if en.sum") + r" returns a value and the false branch does "
                       r"not"):
        en.function(model)(t([1.0]))


def test_appending_to_a_python_list_in_a_tensor_loop():
    def model(xs):
        outs = []
        for row in xs:
            outs.append(row * 2.0)
        return outs
    with pytest.raises(TracingError, match=r"the Python list 'outs' grows inside the for loop at "
                       + where(model, "for row in xs") + r".*en.scan"):
        en.function(model)(t(np.ones((3, 2))))

    def model2(n):
        outs = []
        i = en.tensor(0)
        while i < n:
            outs.append(i)
            i = i + 1
        return i
    with pytest.raises(TracingError, match="the Python list 'outs' grows inside the while loop"):
        en.function(model2)(en.tensor(3))
    # Over a Python range the list is fine (the loop unrolls).
    assert len(en.function(lambda xs: model(list(xs)))(t(np.ones((3, 2))))) == 3


def test_no_source_falls_back_with_one_warning():
    namespace = {"en": en}
    exec("def made(x):\n    return x * 2.0\n", namespace)
    f = en.function(namespace["made"])
    with pytest.warns(UserWarning, match="made was not converted.*source is not available"):
        assert float(f(t(2.0))) == 4.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(en.function(namespace["made"])(t(3.0))) == 6.0   # warned once


def test_run_time_errors_point_to_the_users_line():
    def model(x):
        if en.sum(x) > 0:
            y = x @ en.ones((3, 3))
        else:
            y = x
        return y
    with pytest.raises(ShapeError) as info:
        en.function(model)(t([1.0, 2.0]))
    assert f"{HERE}:{line_of(model, 'y = x @')}" in str(info.value)
    frames = [(f.filename, f.lineno) for f in __import__("traceback").extract_tb(
        info.value.__traceback__)]
    assert (HERE, line_of(model, "y = x @")) in frames


def test_graph_nodes_remember_the_users_lines():
    def model(x):
        if en.sum(x) > 0:
            y = en.tanh(x)
        else:
            y = x
        return y
    g = en.function(model, optimize=False).graph_for(t([1.0]))
    (cond,) = [n for n in g.nodes if n.op.name == "cond"]
    assert cond.source[:2] == (HERE, line_of(model, "if en.sum"))
    (tanh,) = [n for n in cond.params["true"].graph.nodes if n.op.name == "tanh"]
    assert tanh.source[:2] == (HERE, line_of(model, "en.tanh"))


def test_autograph_false_traces_as_written():
    def model(x):
        if en.sum(x) > 0:
            return x
        return -x
    with pytest.raises(TracingError, match="en.cond"):
        en.function(model, autograph=False)(t([1.0]))
    assert float(en.function(model)(t([-1.0]))[0]) == 1.0


def test_do_not_convert():
    @en.autograph.do_not_convert
    def helper(x):
        if en.sum(x) > 0:
            return x
        return -x

    def model(x):
        return helper(x) + 1.0
    with pytest.raises(TracingError, match="en.cond"):
        en.function(model)(t([1.0]))
    assert en.autograph.to_code(helper) is None


def test_to_code_shows_the_operators():
    def model(x):
        while en.sum(x) < 10.0:
            x = x * 2.0
        return x
    code = en.autograph.to_code(model)
    assert "ag__.while_stmt(" in code and "nonlocal x" in code
    assert en.autograph.to_code(en.function(model)) == code
    assert en.autograph.to_code(np.sum) is None       # not user code


# ---- gradients ----------------------------------------------------------------------------------
def piecewise(x):
    if en.sum(x) > 0:
        y = en.sum(en.sin(x) * x)
    else:
        y = en.sum(x ** 3.0)
    return y


def rows_rnn(x, w):
    h = en.zeros((2,))
    for row in x:
        h = en.tanh(row * w + h * 0.5)
    return en.sum(h * h)


@pytest.mark.parametrize("x0", [[0.3, 0.9], [-0.7, 0.2]])
def test_gradient_of_converted_if_to_second_order(x0):
    x = np.array(x0)
    f = en.function(piecewise)

    def grad(v):
        with en.GradientTape() as tape:
            tape.watch(v)
            y = f(v)
        return tape.gradient(y, v)
    g = en.function(grad)(en.tensor(x))
    np.testing.assert_allclose(g.numpy(), numeric_grad(piecewise, [x]), rtol=1e-6, atol=1e-8)
    # Second order: d/dx sum(grad) against finite differences of the first gradient.
    h = en.function(lambda v: (lambda tape_fn: tape_fn(v))(_second(grad)))(en.tensor(x))
    ref = numeric_grad(lambda v: en.sum(grad(v)), [x], eps=1e-5)
    np.testing.assert_allclose(h.numpy(), ref, rtol=1e-5, atol=1e-6)


def _second(grad):
    def run(v):
        with en.GradientTape() as tape:
            tape.watch(v)
            s = en.sum(grad(v))
        return tape.gradient(s, v)
    return run


def test_gradient_of_for_over_rows_to_second_order():
    x = np.array([[0.1, -0.4], [0.5, 0.3], [-0.2, 0.8]])
    w = np.array([0.7, -1.1])
    f = en.function(rows_rnn)

    def grad_w(xv, wv):
        with en.GradientTape() as tape:
            tape.watch(wv)
            y = f(xv, wv)
        return tape.gradient(y, wv)
    g = en.function(grad_w)(en.tensor(x), en.tensor(w))
    np.testing.assert_allclose(g.numpy(), numeric_grad(rows_rnn, [x, w], i=1), rtol=1e-6,
                               atol=1e-9)

    def second(xv, wv):
        with en.GradientTape() as tape:
            tape.watch(wv)
            s = en.sum(grad_w(xv, wv))
        return tape.gradient(s, wv)
    h = en.function(second)(en.tensor(x), en.tensor(w))
    ref = numeric_grad(lambda xv, wv: en.sum(grad_w(xv, wv)), [x, w], i=1, eps=1e-5)
    np.testing.assert_allclose(h.numpy(), ref, rtol=1e-5, atol=1e-7)


def test_gradient_of_tensor_while_is_not_differentiable():
    def model(x, n):
        i = en.tensor(0)
        while i < n:
            x = x * 1.5
            i = i + 1
        return en.sum(x)
    f = en.function(model)
    x = en.tensor([1.0])
    assert float(f(x, en.tensor(2))) == 2.25
    with pytest.raises(NotDifferentiableError, match="max_steps=N"):
        with en.GradientTape() as tape:
            tape.watch(x)
            y = f(x, en.tensor(2))
        tape.gradient(y, x)


# ---- side effects ---------------------------------------------------------------------------------
def test_print_in_branches_and_loops_runs_as_often_as_eagerly(capsys):
    def model(x, n):
        if en.sum(x) > 0:
            en.print("positive", x)
        else:
            en.print("not positive")
        i = en.tensor(0)
        while i < n:
            en.print("step", i)
            i = i + 1
        for row in x:
            if row > 1.0:
                en.print("big", row)
        return i

    f = en.function(model)
    for args in [(t([2.0, 0.5]), en.tensor(3)), (t([-2.0, 0.5]), en.tensor(0))]:
        capsys.readouterr()
        model(*args)
        eager = capsys.readouterr().out
        f(*args)
        assert capsys.readouterr().out == eager
    assert f.trace_count == 1


def test_variable_assign_and_py_function_in_branches_and_loops():
    calls = []

    def record(v):
        calls.append(float(v.numpy()))
        return v.numpy() * 2.0

    def model(x, n, v):
        if x > 0:
            v.assign_add(x)
        i = en.tensor(0)
        while i < n:
            v.assign(v * 2.0)
            en.py_function(record, [x], en.TensorSpec((), "float64"))
            i = i + 1
        return v.read()

    f = en.function(model)
    for x, n in [(1.0, 2), (-1.0, 0), (0.5, 1)]:
        ve, vg = en.Variable(1.0), en.Variable(1.0)
        calls.clear()
        eager = model(t(x), en.tensor(n), ve)
        eager_calls = list(calls)
        calls.clear()
        traced = f(t(x), en.tensor(n), vg)
        assert float(traced) == float(eager) and float(vg.numpy()) == float(ve.numpy())
        assert calls == eager_calls


# ---- the unroll warning ---------------------------------------------------------------------------
def test_long_python_unroll_warns_with_the_line(caplog):
    def model(x):
        for k in range(3005):
            x = x + 1.0
        return x
    with caplog.at_level(logging.WARNING, logger="engine.autograph"):
        f = en.function(model, optimize=False)
        assert float(f(t(0.0))) == 3005.0
    messages = [r.getMessage() for r in caplog.records if r.name == "engine.autograph"]
    assert len(messages) == 1
    assert f"{HERE}:{line_of(model, 'for k in range')}" in messages[0]
    assert "tensor bound" in messages[0]

    def short(x):
        for k in range(2000):
            x = x + 1.0
        return x
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="engine.autograph"):
        en.function(short, optimize=False)(t(0.0))
    assert not [r for r in caplog.records if r.name == "engine.autograph"]


def test_effect_only_cond_keeps_its_print(capsys):
    # en.cond whose branches only print had no outputs and was dropped from the graph.
    f = en.function(lambda x: en.cond(x > 0, lambda: en.print("yes"), lambda: None))
    f(t(1.0))
    assert capsys.readouterr().out == "yes\n"
    f(t(-1.0))
    assert capsys.readouterr().out == ""


def test_example_with_a_data_dependent_loop_trains_and_traces_once(capsys):
    import importlib.util
    import os
    path = os.path.join(REPO, "examples", "data_dependent_loop.py")
    spec = importlib.util.spec_from_file_location("data_dependent_loop", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    history, loss_traces, settle_traces = module.main(epochs=8)
    assert history[-1] < history[0]
    assert (loss_traces, settle_traces) == (1, 1)


COUNTER = 0


def test_assigning_a_python_global_in_tensor_code():
    def model(x):
        global COUNTER
        if en.sum(x) > 0:
            COUNTER += 1
        return x
    with pytest.raises(TracingError, match=r"the Python global 'COUNTER' is assigned in the if at "
                       + where(model, "if en.sum") + r".*en.Variable"):
        en.function(model)(t([1.0]))
    assert COUNTER == 0


def test_appending_to_a_python_list_in_a_tensor_if():
    def model(x):
        outs = []
        if en.sum(x) > 0:
            outs.append(x)
        return x
    with pytest.raises(TracingError, match=r"the Python list 'outs' grows inside the if at "
                       + where(model, "if en.sum") + r".*append after the if"):
        en.function(model)(t([1.0]))


def test_bench_models_agree_with_their_hand_written_versions():
    # bench/autograph.py times converted code against en.cond/en.while_loop/en.scan by hand;
    # measure() first checks that both spellings compute the same values.
    from bench.autograph import measure
    results = measure(rounds=1, number=1)
    assert set(results) == {"newton", "rnn", "branches"}
    assert all(r["trace_ratio"] > 0 and r["run_ratio"] > 0 for r in results.values())
