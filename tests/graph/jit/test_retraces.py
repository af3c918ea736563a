"""Explainable, budgeted retracing: why each trace happened (by parameter name), what it
cost, where it was called from, and eager calls past the budget with one warning."""
import sys
import warnings

import numpy as np
import pytest

import engine as en


def _model(x, w, scale):
    return en.tanh(x @ w) * scale


def _w():
    return en.tensor(np.arange(12.0).reshape(3, 4) / 10)


def test_each_retrace_names_the_parameter_and_the_dimension_that_changed():
    f = en.function(_model)
    f(en.ones((2, 3)), _w(), 1.0)
    line = sys._getframe().f_lineno + 1
    f(en.ones((5, 3)), _w(), 1.0)
    f(en.ones((5, 3), dtype="float32"), _w(), 1.0)
    f(en.ones((5, 3), dtype="float32"), _w(), 2.0)
    records = f.retraces().records
    assert [r.number for r in records] == [1, 2, 3, 4]
    assert records[0].reason == "first call"
    assert records[1].reason == "x: dimension 0 changed from 2 to 5 (float64[2, 3] -> float64[5, 3])"
    assert records[2].reason.startswith("x: dtype changed from float64 to float32")
    assert records[3].reason == "scale: Python value changed from float 1.0 to float 2.0"
    # The caller's line, never the engine's.
    assert records[1].location.startswith(f"{__file__}:{line} ")
    assert all(r.location.startswith(__file__) for r in records)
    assert all(r.cost_ms > 0 and not r.ran_eagerly for r in records)


def test_names_inside_structures_and_keyword_arguments():
    f = en.function(lambda params, *, bias: params["w"] * en.sum(params["v"][1]) + bias)
    f({"w": en.ones(2), "v": (en.ones(2), en.ones(2))}, bias=en.ones(2))
    f({"w": en.ones(2), "v": (en.ones(2), en.ones(3))}, bias=en.ones(2, dtype="float32"))
    reason = f.retraces().records[1].reason
    assert "params['v'][1]: dimension 0 changed from 2 to 3" in reason, reason
    assert "bias: dtype changed from float64 to float32" in reason, reason
    assert "params['w']" not in reason and "params['v'][0]" not in reason, reason


def test_the_fix_is_an_input_signature_with_none_where_a_dimension_varies():
    f = en.function(_model)
    for n in (2, 3, 4):
        f(en.ones((n, 3)), _w(), 1.0)
    fix = f.retraces().fix
    assert "x: en.TensorSpec(shape=(None, 3), dtype='float64')" in fix, fix
    assert "w:" not in fix, fix
    # Tensors only: the whole input_signature, ready to paste.
    g = en.function(lambda x, w: x @ w)
    for n in (2, 3):
        g(en.ones((n, 3)), _w())
    assert g.retraces().fix.startswith(
        "input_signature=[en.TensorSpec(shape=(None, 3), dtype='float64'), "
        "en.TensorSpec(shape=(3, 4), dtype='float64')]"), g.retraces().fix


def test_the_fix_for_changing_python_numbers_is_a_tensor():
    f = en.function(_model)
    for s in (1.0, 2.0, 3.0):
        f(en.ones((2, 3)), _w(), s)
    fix = f.retraces().fix
    assert "pass scale as tensors" in fix, fix


def test_past_the_budget_new_signatures_run_eagerly_with_one_warning_at_the_users_line():
    f = en.function(_model, max_traces=2)
    w = _w()
    f(en.ones((1, 3)), w, 1.0)
    f(en.ones((2, 3)), w, 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        got = f(en.ones((3, 3)), w, 1.0)
        again = f(en.ones((4, 3)), w, 1.0)
    budget = [c for c in caught if "max_traces" in str(c.message)]
    assert len(budget) == 1, [str(c.message) for c in caught]
    assert budget[0].filename == __file__ and budget[0].lineno == line
    message = str(budget[0].message)
    assert "x: dimension 0 changed from 2 to 3" in message            # the cause
    assert "en.TensorSpec(shape=(None, 3)" in message                 # the fix
    want = np.tanh(np.ones((3, 3)) @ w.numpy())
    np.testing.assert_allclose(got.numpy(), want)                     # eager, right
    np.testing.assert_allclose(again.numpy(), np.tanh(np.ones((4, 3)) @ w.numpy()))
    assert f.trace_count == 2
    records = f.retraces().records
    assert [r.ran_eagerly for r in records] == [False, False, True, True]
    # The traces made keep running compiled: no new trace, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(f(en.ones((2, 3)), w, 1.0).numpy(),
                                   np.tanh(np.ones((2, 3)) @ w.numpy()))
    assert f.trace_count == 2
    assert "ran eagerly (over budget)" in str(f.retraces())


def test_the_budget_counts_signatures_so_an_evicted_trace_comes_back():
    f = en.function(_model, max_traces=2, max_cached_traces=1)
    w = _w()
    f(en.ones((1, 3)), w, 1.0)
    f(en.ones((2, 3)), w, 1.0)      # evicts the first
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(en.ones((1, 3)), w, 1.0)  # seen before: traced again, within budget
    assert f.trace_count == 3


def test_a_settings_change_is_named():
    layer = en.nn.Dropout(0.5)
    f = en.function(lambda x: layer(x))
    f(en.ones(4))
    layer.eval()
    f(en.ones(4))
    reason = f.retraces().records[1].reason
    assert "training" in reason, reason


@pytest.mark.parametrize("report_type", [str, repr])
def test_the_report_prints_as_a_table(report_type):
    f = en.function(_model)
    f(en.ones((2, 3)), _w(), 1.0)
    f(en.ones((5, 3)), _w(), 1.0)
    text = report_type(f.retraces())
    assert text.startswith("_model: 2 traces") and "#2" in text and " ms" in text
