"""Smoke tests for the benchmark workloads autoencoder, big_ops, rnn and gc.

Each workload runs one tiny configuration through its ``configs``/``run``
interface, in all of its modes (PyTorch and JAX are skipped cleanly when
missing), and the result records must be well formed with every mode's
numbers agreeing with the float64 reference.
"""
import argparse

import numpy as np
import pytest

pytest.importorskip("bench.common")

from bench import workloads  # noqa: E402
from bench.workloads import autoencoder, big_ops, gc_pauses, rnn  # noqa: E402

TINY = {
    autoencoder: [{"batch": 8, "repeats": 2}],
    big_ops: [{"op": "matmul", "m": 16, "k": 8, "n": 12, "repeats": 1},
              {"op": "conv2d", "n": 2, "h": 6, "w": 5, "c": 3, "o": 4, "k": 3, "repeats": 1},
              {"op": "conv2d_vjp", "n": 2, "h": 6, "w": 5, "c": 3, "o": 4, "k": 3,
               "repeats": 1}],
    rnn: [{"steps": 4, "batch": 3, "hidden": 5, "features": 2, "repeats": 1}],
    gc_pauses: [{"batch": 8, "iterations": 3}],
}


def _args(**kw):
    ns = argparse.Namespace(quick=False, repeats=None, batch=None)
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def _check_records(module, config, records, ticks):
    assert [r["mode"] for r in records] == list(module.MODES)
    ran = 0
    for r in records:
        assert r["workload"] == module.NAME
        assert r["config"] == config
        if r["skipped"]:
            assert isinstance(r["skipped"], str)
            assert r["median_ms"] is None and r["n"] == 0 and r["times"] == []
            continue
        ran += 1
        n = config.get("repeats", config.get("iterations"))
        assert r["n"] == n == len(r["times"])
        assert all(t > 0 for t in r["times"])
        assert 0 < r["min_ms"] <= r["median_ms"]
        if module is not gc_pauses:
            assert r["agree"], (r["mode"], r.get("note"), r["max_rel_err"])
            assert r["max_rel_err"] <= autoencoder.RTOL
    assert ran >= 3          # the engine's modes always run
    assert ticks[0] == sum(r["n"] for r in records)


@pytest.mark.parametrize("module", list(TINY), ids=lambda m: m.NAME)
def test_tiny_config_runs_and_agrees(module):
    for config in TINY[module]:
        ticks = [0]

        def tick():
            ticks[0] += 1
        records = module.run(dict(config), module.MODES, _args(), tick)
        _check_records(module, config, records, ticks)


@pytest.mark.parametrize("module", list(TINY), ids=lambda m: m.NAME)
def test_interface(module):
    assert module.NAME and module.DESCRIPTION and module.MODES
    assert workloads.load()[module.NAME] is module
    for quick in (True, False):
        configs = module.configs(_args(quick=quick))
        assert configs and all(isinstance(c, dict) for c in configs)
    assert all(c.get("repeats", c.get("iterations")) == 2
               for c in module.configs(_args(quick=True, repeats=2)))


def test_autoencoder_batches_and_memory_report():
    assert [c["batch"] for c in autoencoder.configs(_args(quick=True))] == [100, 1000]
    assert [c["batch"] for c in autoencoder.configs(_args())] == [100, 1000, 10000]
    assert [c["batch"] for c in autoencoder.configs(_args(full=True))] == [100, 1000, 10000, 60000]
    assert [c["batch"] for c in autoencoder.configs(_args(batch=[50]))] == [50]
    records = autoencoder.run({"batch": 4, "repeats": 1}, ["graph"], _args(), lambda: None)
    report = records[0]["memory_report"]
    assert report["buffer_bytes"] > 0 and "unplanned_peak_bytes" in report


def test_autoencoder_first_call_is_measured_in_a_fresh_process():
    records = autoencoder.run({"batch": 4, "repeats": 1}, ["graph"], _args(), lambda: None)
    first = records[0]["first_call"]
    assert "error" not in first, first
    parts = first["trace_s"] + first["passes_s"] + first["lower_s"]
    assert first["trace_s"] > 0 and first["passes_s"] > 0 and first["lower_s"] > 0
    assert 0 < parts <= first["first_s"] and first["import_s"] > 0
    text = autoencoder.summary(records)
    assert "batch=4 first call of graph in a fresh process" in text
    assert "first call of graph (trace, compile, run)" in text    # the verdict, batch <= 1000


def test_autoencoder_matmul_floor_products_give_the_weight_gradient():
    problem = autoencoder.Problem(6)
    args = problem.arrays(np.float64)
    floor = autoencoder.MatmulFloor(*args)
    (dw,) = floor.weight_gradient(floor.step())
    np.testing.assert_allclose(dw, autoencoder.numpy_loss_and_grad(*args)[1], rtol=1e-9,
                               atol=1e-15)


def test_autoencoder_floor_ceiling_judges_batch_1000_up():
    from bench import common

    rows = [dict(common.result("autoencoder", {"batch": b}, m, [t]))
            for b, m, t in ((100, "graph", 3.0), (100, autoencoder.FLOOR, 1.0),
                            (1000, "graph", 1.3), (1000, autoencoder.FLOOR, 1.0))]
    text = autoencoder.summary(rows)
    assert "target MISSED: graph at most 1.2x the five matrix products alone" in text
    assert "(1000: 1.30x)" in text
    assert "100: 3.00x, 1000: 1.30x" in text    # the plain ratio line has every batch


def test_autoencoder_prealloc_matches_allocating_numpy():
    problem = autoencoder.Problem(5)
    args = problem.arrays(np.float64)
    fresh = autoencoder.numpy_loss_and_grad(*args)
    kept = autoencoder.PreallocatedNumpy(*args).step()
    for a, b in zip(fresh, kept):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-15)


def test_agreement_flags_a_wrong_gradient():
    ref = (np.float64(1.0), np.array([1.0, -2.0]))
    assert autoencoder.agreement(ref, (1.0, [1.0, -2.0 + 1e-6]))["agree"]
    bad = autoencoder.agreement(ref, (1.0, [1.0, -2.1]))
    assert not bad["agree"] and "DISAGREES" in bad["note"]


def test_big_ops_spread_is_shared():
    records = big_ops.run({"op": "matmul", "m": 8, "k": 8, "n": 8, "repeats": 1},
                          ["eager", "numpy"], _args(), lambda: None)
    assert records[0]["spread"] == records[1]["spread"] >= 1.0


def test_gc_watch_sees_a_collection():
    import gc

    with gc_pauses.GCWatch() as watch:
        gc.collect()
    assert watch.events and watch.events[-1][0] == 2
