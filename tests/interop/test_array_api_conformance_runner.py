"""The conformance runner (tests/interop/array_api_conformance.py) and its xfails file: every
listed failure has its reason, the docs' count agrees with the list, and the runner
fails loudly, never silently, when it cannot get the suite. (The suite itself runs in
CI, from .ci/run: a few minutes, too long for this suite.)"""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

ROOT = Path(REPO)
RUNNER = ROOT / "tests" / "interop" / "array_api_conformance.py"


def _runner():
    spec = importlib.util.spec_from_file_location("array_api_conformance", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_expected_failure_has_a_reason_and_is_listed_once():
    runner = _runner()
    lines = [line for line in runner.XFAILS.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(lines) == len(set(lines)), "an id is listed twice"
    xfails = runner.read_xfails()
    assert set(xfails) == {line.strip() for line in lines}
    for test_id, reason in xfails.items():
        assert test_id.startswith("array_api_tests/test_"), test_id
        assert len(reason) > 20, f"{test_id}: no reason above it"


def test_the_readme_count_agrees_with_the_xfails_file():
    # The count is stated in the user guide's Array API section (moved there from the README).
    text = (ROOT / "docs" / "guide" / "eager.md").read_text(encoding="utf-8")
    words = (r"(\d+) of (\d+) test items pass \((\d+\.\d)%\); the (\d+) that fail are listed"
             r" .*?, and (\d+) are skipped")
    m = re.search(words.replace(" ", r"\s+"), text, flags=re.S)
    assert m, "docs/guide/eager.md: the array-api-tests count is missing"
    passed, total, percent, failing, skipped = (m.group(1), m.group(2), m.group(3),
                                                m.group(4), m.group(5))
    assert int(passed) + int(failing) + int(skipped) == int(total)
    assert f"{100 * int(passed) / int(total):.1f}" == percent
    assert int(failing) == len(_runner().read_xfails())


def test_a_missing_suite_fails_loudly(tmp_path):
    env = dict(os.environ, ARRAY_API_TESTS_DIR=str(tmp_path / "nowhere"))
    done = subprocess.run([sys.executable, str(RUNNER)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert "holds no array_api_tests" in done.stderr


def test_if_available_says_not_run_when_there_is_no_suite(tmp_path, monkeypatch):
    runner = _runner()
    monkeypatch.setenv("ARRAY_API_TESTS_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setattr(sys, "argv", [str(RUNNER), "--if-available"])
    assert runner.main() == 0
    monkeypatch.setattr(sys, "argv", [str(RUNNER)])
    assert runner.main() == 2


def test_a_failed_clone_raises_and_leaves_nothing_behind(tmp_path, monkeypatch):
    runner = _runner()
    monkeypatch.setattr(runner, "SUITE_URL", str(tmp_path / "no-such-repository"))
    target = tmp_path / "cache" / "suite"
    with pytest.raises(runner.SuiteUnavailable, match="git clone"):
        runner.clone_suite(target)
    assert not target.exists()
    assert list((tmp_path / "cache").iterdir()) == []   # no half-made clone
