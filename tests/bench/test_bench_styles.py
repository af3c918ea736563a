"""The ``styles`` workload family (bench/workloads/styles*.py): the engine's models against
hand-written numpy backpropagation (bench/workloads/rnn.py), one another with repacked
weights, and finite differences; the runner's records and summary."""
import argparse

import numpy as np
import pytest

pytest.importorskip("bench.common")

from bench.workloads import rnn, styles, styles_data, styles_engine  # noqa: E402
from support.finite_diff import central_difference  # noqa: E402

NUMPY_BPTT = {"lstm_eight": rnn.numpy_lstm_loss_and_grad, "gru_gates": rnn.numpy_loss_and_grad,
              "tanh_unrolled": rnn.numpy_tanh_loss_and_grad}


def _run(model, mode, params, inputs):
    return styles_engine.to_numpy(styles_engine.make_step(model, mode, params, inputs)())


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize("model", sorted(NUMPY_BPTT))
def test_recurrent_models_match_numpy_backpropagation_through_time(model, mode):
    params, (xs, targets) = styles_data.make(model, quick=True)
    loss, grads = _run(model, mode, params, [xs, targets])
    want = NUMPY_BPTT[model]([p.astype(np.float64) for p in params], xs.astype(np.float64),
                             targets.astype(np.float64))
    np.testing.assert_allclose(loss, want[0], rtol=1e-5)
    for got, ref in zip(grads, want[1:]):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6)


def _eight_from_concat(w, b):
    """lstm_concat's (F+H, 4H) matrix (gates i, f, g, o) as lstm_eight's twelve weights."""
    f = styles_data.FEATURES
    cols = np.split(w, 4, axis=1)
    biases = np.split(b, 4)
    order = (0, 1, 3, 2)                     # lstm_eight's gates are i, f, o, g
    return [a for k in order for a in (cols[k][:f], cols[k][f:], biases[k])]


@pytest.mark.parametrize("model", ["lstm_concat", "lstm_module"])
def test_the_other_lstm_styles_compute_the_eight_product_lstm(model):
    params, inputs = styles_data.make(model, quick=True)
    if model == "lstm_concat":
        w, b = params
    else:
        w_ih, w_hh, b_ih, b_hh = params
        w, b = np.concatenate([w_ih, w_hh]), b_ih + b_hh
    loss, grads = _run(model, "graph", params, inputs)
    loss8, grads8 = _run("lstm_eight", "eager", _eight_from_concat(w, b), inputs)
    np.testing.assert_allclose(loss, loss8, rtol=1e-5)
    gw, gb = (grads if model == "lstm_concat" else
              (np.concatenate(grads[:2]), grads[2]))
    for got, want in zip(_eight_from_concat(gw, gb), grads8):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    if model == "lstm_module":                # both biases get the summed bias's gradient
        np.testing.assert_allclose(grads[3], grads[2], rtol=1e-6)


@pytest.mark.parametrize("model,index", [("cnn", 5), ("cnn", 3), ("transformer", 11),
                                         ("transformer", 0), ("tanh_ln", 3)])
def test_gradients_match_finite_differences(model, index):
    params, inputs = styles_data.make(model, quick=True)
    params = [p.astype(np.float64) for p in params]
    inputs = [a.astype(np.float64) if a.dtype == np.float32 else a for a in inputs]
    _, grads = _run(model, "graph", params, inputs)

    def loss_at(value):
        trial = list(params)
        trial[index] = value
        return _run(model, "eager", trial, inputs)[0]
    want = central_difference(loss_at, params[index], eps=1e-5)
    np.testing.assert_allclose(grads[index], want, rtol=1e-5, atol=1e-8)


def test_run_times_each_mode_in_its_own_process_and_compares_gradients():
    config = styles.configs(argparse.Namespace(quick=True, repeats=2,
                                               styles_models="tanh_ln"))[0]
    ticks = []
    records = styles.run(config, ["graph", "eager"], None, lambda: ticks.append(1))
    assert [r["mode"] for r in records] == ["graph", "eager"] and len(ticks) == 2
    for r in records:
        assert r["n"] == 2 and 0 < r["min_ms"] <= r["median_ms"]
        assert r["first_call_s"] > 0 and r["reference"] == "eager" and r["agree"]
    assert records[1]["max_rel_err"] == 0.0 and records[0]["max_rel_err"] < 1e-5


def test_summary_states_each_target_and_the_table():
    def rec(model, mode, ms):
        return {"workload": "styles", "config": {"model": model}, "mode": mode,
                "median_ms": ms, "first_call_s": 0.5, "max_rel_err": 1e-7, "agree": True}
    results = [rec("cnn", "graph", 12.0), rec("cnn", "torch", 10.0),
               rec("gru_gates", "graph", 4.0), rec("gru_gates", "jax", 5.0)]
    text = styles.summary(results)
    assert ("styles cnn target met: the CNN step at most 1.2x PyTorch eager (graph 12.00 vs "
            "torch 10.00 ms)") in text
    assert "styles gru_gates target met: each recurrent cell at most JAX's" in text
    assert "styles gru_gates target met: its first call at most 1.5x JAX's" in text
    results[0] = rec("cnn", "graph", 12.5)
    assert "styles cnn target MISSED" in styles.summary(results)
    assert "| cnn | 12.50 | - | - | 10.00 | - | 1.25 |" in styles.summary(results)


def test_unknown_models_are_refused():
    with pytest.raises(ValueError, match="unknown model"):
        styles.configs(argparse.Namespace(quick=True, repeats=None, styles_models="lstm,cnn"))
