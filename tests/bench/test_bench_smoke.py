"""Smoke tests of the benchmark runner: ``python -m bench --quick`` and ``--list``.

The quick suite is what CI runs; it must leave a table on stdout and
``results.json`` in the output folder. Its duration (under a minute on an
idle 2-core machine) is printed by the runner, not asserted here: a busy
machine would make such an assertion fail for nothing. The timeout only
catches a hang.
"""
import json
import os
import subprocess
import sys

import pytest
from support.paths import REPO

ROOT = REPO
HANG_LIMIT_S = 600


def _run(args, timeout):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_list_shows_workloads_and_modes():
    proc = _run(["--list"], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "lbfgs" in proc.stdout and "least_squares" in proc.stdout
    assert "modes: eager" in proc.stdout
    assert "optional:" in proc.stdout


def test_quick_suite_writes_a_table_and_json(tmp_path):
    try:
        proc = _run(["--quick", "--out", str(tmp_path)], timeout=HANG_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"python -m bench --quick did not finish in {HANG_LIMIT_S} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "median ms" in out and "/eager" in out and "/torch" in out
    assert "lbfgs" in out and "least_squares" in out
    with open(tmp_path / "results.json") as f:
        payload = json.load(f)
    assert payload["quick"] is True and not payload["errors"]
    assert payload["facts"]["cores"] and payload["facts"]["numpy"]
    assert payload["facts"]["malloc"] and "malloc: " in out
    results = payload["results"]
    assert {r["workload"] for r in results} >= {"lbfgs", "least_squares"}
    for r in results:
        assert {"workload", "config", "mode", "median_ms", "min_ms", "n", "times"} <= set(r)
        if not r.get("skipped"):
            assert r["median_ms"] is None or r["median_ms"] >= 0
    lbfgs = [r for r in results if r["workload"] == "lbfgs" and not r.get("skipped")]
    assert {r["mode"] for r in lbfgs} >= {"eager", "graph", "numpy"}
    assert all(r["check_ok"] for r in lbfgs)
    if payload["plots"]:
        assert all(os.path.exists(p) for p in payload["plots"])
    else:
        assert "plots skipped" in out
    assert "done in" in out
    with open(tmp_path / "results.md") as f:     # the same table, in Markdown, with spreads
        md = f.read()
    assert md.startswith("# python -m bench --quick") and "| min-max ms (calls) |" in md


def test_kernel_threads_reach_graph_mode_and_its_losses_still_agree(tmp_path):
    # Batch 1000: the autoencoder's loss kernel has 784,000 elements, so it
    # walks its row blocks on two threads; the runner asserts the losses agree.
    proc = _run(["lbfgs", "--quick", "--batch", "1000", "--modes", "eager,graph",
                 "--kernel-threads", "2", "--no-plots", "--no-progress", "--out", str(tmp_path)],
                timeout=HANG_LIMIT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(tmp_path / "results.json") as f:
        payload = json.load(f)
    assert payload["facts"]["kernel_threads"] == 2
    assert all(r["check_ok"] for r in payload["results"] if r["mode"] == "graph")


def test_kernel_threads_below_one_is_refused():
    proc = _run(["lbfgs", "--kernel-threads", "0"], timeout=60)
    assert proc.returncode == 2
    assert "--kernel-threads must be at least 1, got 0" in proc.stderr


def test_trace_scaling_prints_a_row_per_program_and_size(capsys):
    from bench import trace_scaling
    rows = trace_scaling.main(["--ops", "100,200"])
    assert [(r["program"], r["ops"]) for r in rows] == [("chain", 100), ("chain", 200),
                                                       ("grad", 100), ("grad", 200)]
    assert all(r["traced_ops"] >= r["ops"] * 0.8 for r in rows)
    assert "us/op" in capsys.readouterr().out
