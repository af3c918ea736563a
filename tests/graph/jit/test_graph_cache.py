"""The trace cache: one trace per signature, retracing with a reason, input signatures, threads."""
import logging
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import engine as en


def _affine(x, w):
    return en.tanh(x @ w) + 1.0


def _x(*shape, dtype="float64", seed=0):
    return en.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


# ---- one trace per signature -------------------------------------------------------------
def test_ten_thousand_calls_with_one_signature_trace_once():
    f = en.function(lambda x, y: x * y + 1.0)
    x, y = _x(4), _x(4, seed=1)
    want = (x * y + 1.0).numpy()
    for _ in range(10_000):
        out = f(x, y)
    assert f.trace_count == 1
    np.testing.assert_array_equal(out.numpy(), want)


def test_numpy_arrays_and_tensors_of_one_signature_share_a_trace():
    f = en.function(_affine)
    x, w = np.ones((2, 3)), np.ones((3, 4))
    np.testing.assert_array_equal(f(x, w).numpy(), f(en.tensor(x), en.tensor(w)).numpy())
    np.testing.assert_array_equal(f(x, en.tensor(w)).numpy(), _affine(en.tensor(x), w).numpy())
    assert f.trace_count == 1


def test_alternating_signatures_and_argument_kinds_give_eager_results():
    """Each call first tries the signature called last (a generated check of every
    argument): any other call must still find its own trace and never run another's."""
    f = en.function(_affine)
    w4, w3 = _x(3, 4), _x(3, 3, dtype="float32")
    calls = [(_x(2, 3), w4), (_x(5, 3), w4), (_x(2, 3, dtype="float32"), w3),
             (np.ones((2, 3)), w4), (_x(2, 3), en.Variable(np.ones((3, 4)))),
             (_x(2, 3), w4), (_x(2, 3, dtype="float32"), w3), (_x(5, 3), w4)]
    for x, w in calls * 2:
        got, want = f(x, w), _affine(en.tensor(np.asarray(x)) if isinstance(x, np.ndarray)
                                     else x, w)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(TypeError):
        f(_x(2, 3), w4, _x(1))    # one argument too many: no trace takes it silently
    assert f.trace_count == 4
    leaked = []
    en.function(lambda x: leaked.append(x) or x)(_x(2, 3))
    f(_x(2, 3), w4)
    with pytest.raises(en.EngineError, match="traced tensor"):
        f(leaked[0], w4)          # the shape and dtype of the last call, but no value


def test_new_shapes_dtypes_and_python_values_retrace():
    calls = []

    @en.function
    def f(x, scale, mode="add"):
        calls.append(1)
        return x * scale + 1.0 if mode == "add" else x * scale - 1.0

    x = _x(3)
    f(x, 2.0)
    f(x, 2.0)
    assert f.trace_count == 1
    f(_x(4), 2.0)                       # new shape
    assert f.trace_count == 2
    f(_x(3, dtype="float32"), 2.0)      # new dtype
    assert f.trace_count == 3
    f(x, 3.0)                           # new Python value
    assert f.trace_count == 4
    assert float(f(x, 3.0, mode="sub")[0]) == pytest.approx(float(x[0]) * 3.0 - 1.0)
    assert f.trace_count == 5           # new keyword value
    f(x, 2)                             # int 2 is not float 2.0: another trace
    assert f.trace_count == 6
    for args in [(x, 2.0), (_x(4), 2.0), (x, 3.0)]:
        f(*args)
    assert f.trace_count == 6 and len(calls) == 6, "old signatures stay cached"


def test_variables_are_read_not_baked_in_and_distinct_variables_retrace():
    f = en.function(lambda v, x: v * x)
    a, b = en.Variable([1.0, 2.0]), en.Variable([3.0, 4.0])
    x = en.tensor([1.0, 1.0])
    assert f(a, x).numpy().tolist() == [1.0, 2.0]
    a.assign([5.0, 6.0])
    assert f(a, x).numpy().tolist() == [5.0, 6.0] and f.trace_count == 1
    assert f(b, x).numpy().tolist() == [3.0, 4.0] and f.trace_count == 2


# ---- retrace logging and the max_traces warning ---------------------------------------------
def test_retrace_log_names_what_changed_and_the_callers_line(caplog):
    f = en.function(_affine)
    w = _x(3, 4)
    caplog.set_level(logging.INFO, logger="engine.graph")
    f(_x(2, 3), w)
    assert not [r for r in caplog.records if "retrac" in r.getMessage()], \
        "the first trace is not a retrace"
    line = sys._getframe().f_lineno + 1
    f(_x(5, 3), w)
    messages = [r.getMessage() for r in caplog.records if r.name == "engine.graph"]
    assert len(messages) == 1, messages
    msg = messages[0]
    assert "_affine" in msg, msg
    assert "float64[2, 3]" in msg and "float64[5, 3]" in msg, f"says what changed: {msg}"
    assert f"test_graph_cache.py:{line}" in msg, f"names the caller's line: {msg}"

    caplog.clear()
    line = sys._getframe().f_lineno + 1
    f(_x(5, 3, dtype="float32"), w)
    msg = caplog.records[-1].getMessage()
    assert "float32" in msg and f"test_graph_cache.py:{line}" in msg, msg


def test_retrace_log_for_a_python_value():
    g = en.function(lambda x, n: x * n)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("engine.graph")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        g(_x(2), 3)
        g(_x(2), 4)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert len(records) == 1
    msg = records[0].getMessage()
    assert "3" in msg and "4" in msg and "int" in msg, msg


def test_warning_past_max_traces_suggests_input_signature():
    f = en.function(lambda x: x + 1.0, max_traces=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no warning up to max_traces
        for n in (1, 2, 3):
            f(en.zeros(n))
    with pytest.warns(UserWarning, match="input_signature") as caught:
        f(en.zeros(4))
    assert "TensorSpec" in str(caught[0].message) and "None" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # said once, not on every later retrace
        f(en.zeros(5))
    # Past the budget new signatures run eagerly (right values, no trace) ...
    assert f.trace_count == 3
    np.testing.assert_array_equal(f(en.zeros(5)).numpy(), np.ones(5))
    # ... and the traces made keep running compiled.
    assert f.trace_count == 3 and f(en.zeros(2)).numpy().tolist() == [1.0, 1.0]


# ---- input signatures ---------------------------------------------------------------------
def _classifier(x, w):
    return en.softmax(x @ w, axis=-1)


def test_input_signature_with_none_dims_traces_once_for_every_batch_size():
    spec = [en.TensorSpec(shape=(None, 6), dtype="float32"),
            en.TensorSpec(shape=(6, 3), dtype="float32")]
    f = en.function(_classifier, input_signature=spec)
    w = _x(6, 3, dtype="float32", seed=9)
    for batch in (1, 5, 17):
        x = _x(batch, 6, dtype="float32", seed=batch)
        got = f(x, w)
        want = _classifier(x, w)
        assert got.shape == (batch, 3) and got.dtype == np.float32
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert f.trace_count == 1
    graph = f.graph_for(x, w)
    assert graph.inputs[0].shape == (None, 6), "the graph is traced for any batch size"
    assert graph.lint()


def test_input_signature_accepts_numpy_arrays_and_optimized_graphs_agree():
    spec = [en.TensorSpec((None,), "float64")]
    for optimize in (False, True):
        f = en.function(lambda x: en.mean(en.exp(x) * 2.0), input_signature=spec,
                        optimize=optimize)
        for n in (1, 5, 17):
            x = np.linspace(-1.0, 1.0, n)
            np.testing.assert_allclose(float(f(x)), np.mean(np.exp(x) * 2.0), rtol=1e-12)
        assert f.trace_count == 1


@pytest.mark.parametrize("args,error,match", [
    ((_x(4, 5, dtype="float32"), _x(6, 3, dtype="float32")), en.ShapeError,
     r"argument 0 has shape \(4, 5\)"),
    ((_x(4, 6), _x(6, 3, dtype="float32")), en.DTypeError, "argument 0 has dtype float64"),
    ((_x(6, dtype="float32"), _x(6, 3, dtype="float32")), en.ShapeError, "argument 0"),
    ((_x(4, 6, dtype="float32"),), en.EngineError, "expected 2 arguments"),
], ids=["shape", "dtype", "rank", "count"])
def test_non_matching_call_raises_a_clear_error(args, error, match):
    spec = [en.TensorSpec(shape=(None, 6), dtype="float32"),
            en.TensorSpec(shape=(6, 3), dtype="float32")]
    f = en.function(_classifier, input_signature=spec)
    with pytest.raises(error, match=match) as info:
        f(*args)
    assert "_classifier" in str(info.value) and "TensorSpec" in str(info.value)
    assert f.trace_count == 0


def test_input_signature_refuses_keyword_arguments():
    f = en.function(lambda x: x, input_signature=[en.TensorSpec((2,), "float64")])
    with pytest.raises(en.EngineError, match="keyword"):
        f(x=en.zeros(2))


# ---- threads ------------------------------------------------------------------------------
def test_eight_threads_four_signatures_give_four_traces_and_eager_results():
    def body(x):
        time.sleep(0.02)   # runs only while tracing: widens the window for racing traces
        return en.sum(en.tanh(x) * 3.0, axis=0) + x[0]

    f = en.function(body)
    signatures = [(2, 3, "float64"), (4, 3, "float64"), (2, 3, "float32"), (5, "float32")]
    inputs = [en.tensor(np.arange(np.prod(s[:-1])).reshape(s[:-1]) - 3, dtype=s[-1])
              for s in signatures]
    want = [(en.sum(en.tanh(x) * 3.0, axis=0) + x[0]).numpy() for x in inputs]
    barrier = threading.Barrier(8)
    failures = []

    def worker(k):
        try:
            barrier.wait()
            for i in range(40):
                j = (k + i) % 4
                got = f(inputs[j]).numpy()
                if got.dtype != want[j].dtype or not np.array_equal(got, want[j]):
                    failures.append((k, j, got))
        except Exception as err:   # pragma: no cover - reported below
            failures.append((k, repr(err)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not failures, failures[:3]
    assert f.trace_count == 4


def test_run_functions_eagerly_context_is_per_thread():
    calls = []
    f = en.function(lambda x: (calls.append(threading.current_thread().name), x * 2.0)[1])
    x = en.tensor(1.0)
    f(x)                               # traced once (one Python call)
    started, release = threading.Event(), threading.Event()

    def eager_thread():
        with en.run_functions_eagerly():
            started.set()
            release.wait(10)
            f(x)

    t = threading.Thread(target=eager_thread, name="eager-thread")
    t.start()
    started.wait(10)
    f(x)                               # this thread still runs the graph
    release.set()
    t.join(10)
    assert calls == ["MainThread", "eager-thread"]
