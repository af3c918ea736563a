"""The ``dask`` benchmark workload on a tiny problem: every mode runs on a cluster, the
Dask modes reach numpy's loss, and the summary reports tasks, bytes, the targets and
the projection to N machines."""
import argparse

import numpy as np
import pytest

pytest.importorskip("bench.common")
pytest.importorskip("distributed")

from bench.workloads import dask_lbfgs  # noqa: E402


def test_tiny_run_reports_every_mode_and_projects(monkeypatch):
    monkeypatch.setattr(dask_lbfgs, "CHUNK_ROWS", 100)
    config = {"rows": 300, "iterations": 2, "data": "memory"}
    ticks = [0]
    records = dask_lbfgs.run(config, dask_lbfgs.MODES, argparse.Namespace(),
                             lambda: ticks.__setitem__(0, ticks[0] + 1))
    by_mode = {r["mode"]: r for r in records}
    assert list(by_mode) == dask_lbfgs.MODES
    assert ticks[0] == 2 * len(dask_lbfgs.MODES)
    loss = by_mode["numpy"]["last_loss"]
    for mode in ("dask1", "dask2", "dask_array"):
        r = by_mode[mode]
        assert r["n"] == 2 and r["chunks"] == 3
        np.testing.assert_allclose(r["last_loss"], loss, rtol=1e-5)
        assert r["tasks_per_iteration"] >= 3                 # at least a task per chunk
        assert r["bytes_to_workers_per_iteration"] > 0
        assert r["task_overhead_ms"] > 0
    # The engine's chunked call: a task per chunk and a combine, far fewer than by hand.
    assert by_mode["dask2"]["tasks_per_iteration"] < by_mode["dask_array"]["tasks_per_iteration"]
    text = dask_lbfgs.summary(records)
    assert "tasks/iter" in text and "bytes to workers/iter" in text
    assert "Dask with 2 workers faster than hand-written dask.array" in text
    for n in dask_lbfgs.PROJECT_WORKERS:
        assert f"N={n:<3}" in text
    assert "dominates" in text


def test_projection_terms_follow_the_model():
    rec = {"chunks": 80, "chunk_ms": 10.0, "tasks_per_iteration": 92, "task_overhead_ms": 0.5,
           "bytes_to_workers_per_iteration": 2_500_000, "workers": 2}
    compute, scheduler, client, network = dask_lbfgs.projection(rec, 900.0, 16)
    assert compute == 5 * 10.0                  # 80 chunks over 16 machines
    assert scheduler == 92 * 0.5
    assert client == 900.0 - 800.0
    assert network == pytest.approx(1_250_000 * 16 / dask_lbfgs.LINK_BYTES_PER_S * 1e3)
