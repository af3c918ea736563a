"""The ``transforms`` benchmark workload: a tiny configuration of each case runs through
``configs``/``run``, every variant agrees with its reference, and the summary names the
targets."""
import argparse

import pytest

pytest.importorskip("bench.common")

from bench import workloads  # noqa: E402
from bench.workloads import transforms  # noqa: E402


def _args(**kw):
    ns = argparse.Namespace(quick=False, repeats=None, batch=None)
    ns.__dict__.update(kw)
    return ns


def test_interface():
    assert workloads.load()["transforms"] is transforms
    assert {c["case"] for c in transforms.configs(_args(quick=True))} == \
        {"jvp", "per_example", "hvp", "jvp_scan", "hvp_scan", "per_example_scan",
         "vmap_scan_compile"}
    assert all(c["repeats"] == 2 for c in transforms.configs(_args(quick=True, repeats=2)))


@pytest.mark.parametrize("case", ["jvp", "per_example", "hvp", "jvp_scan", "hvp_scan",
                                  "per_example_scan", "vmap_scan_compile"])
def test_tiny_case_runs_and_agrees(case):
    config = {"case": case, "batch": 4, "repeats": 1}
    ticks = []
    records = transforms.run(dict(config), transforms.MODES, _args(), lambda: ticks.append(1))
    ran = [r for r in records if not r["skipped"]]
    assert len(ran) >= 3 and len(ticks) == sum(r["n"] for r in records)
    for r in ran:
        assert r["n"] == 1 and r["min_ms"] > 0
        if "agree" in r:
            assert r["agree"], r
    assert any("agree" in r for r in ran)
    text = transforms.summary(records)
    assert "transforms target" in text and "agreement FAILED" not in text
