"""The third-party suites' runner (tests/interop/third_party_suites.py), its plugin and
its expected-failures files: every entry has a reason, the comparison fails on an
unlisted failure and reports listed tests that pass, regeneration groups by cause, the
plugin puts the engine where each suite looks for its libraries, and the docs page is
the runner's. (The suites themselves run in CI, from .ci/run: minutes, too long here.)"""
import enum
import importlib.util
import re
from pathlib import Path

import pytest
from support.paths import REPO



def _load(name):
    path = Path(REPO) / "tests" / "interop" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load("third_party_suites")
plugin = _load("third_party_plugin")


def _test(nodeid, outcome, message=""):
    test = {"nodeid": nodeid, "outcome": outcome}
    if message:
        test["call"] = {"crash": {"message": message}}
    return test


@pytest.mark.parametrize("suite", sorted(runner.SUITES))
def test_every_expected_failure_has_a_reason_and_is_listed_once(suite):
    path = runner.XFAILS_DIR / f"{suite}.txt"
    ids = [line for line in path.read_text().splitlines()
           if line.strip() and not line.startswith("#")]
    assert len(ids) == len(set(ids)), "an id is listed twice"
    listed = runner.read_xfails(suite)
    assert set(listed) == set(ids)
    for test_id, reason in listed.items():
        assert "::" in test_id, test_id
        assert len(reason) > 20, f"{test_id}: no reason above it"


def test_check_fails_on_unlisted_failures_and_names_listed_passes(tmp_path, monkeypatch,
                                                                  capsys):
    monkeypatch.setattr(runner, "XFAILS_DIR", tmp_path)
    (tmp_path / "scipy.txt").write_text(
        "# Writes into a tensor: immutable until writes land.\n"
        "m.py::test_a[engine]\nm.py::test_b[engine]\n")
    tests = [_test("m.py::test_a[engine]", "failed", "tensors are immutable"),
             _test("m.py::test_b[engine]", "passed"),
             _test("m.py::test_c[engine]", "failed", "ValueError: shapes (2,) and (3,)"),
             _test("m.py::test_d[engine]", "skipped")]
    assert runner.check("scipy", tests, (1.0, 1.0), write=False) == 1
    out = capsys.readouterr().out
    assert "UNEXPECTED FAILURE m.py::test_c[engine]: ValueError" in out
    assert "listed in scipy.txt but passed: m.py::test_b[engine]" in out
    assert "1 of 4 passed, 1 expected failures, 1 unexpected, 1 skipped" in out


def test_write_xfails_groups_failures_by_cause(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "XFAILS_DIR", tmp_path)
    tests = [_test("m.py::test_a", "failed", "ArgumentTypeError: tensors are immutable: x"),
             _test("m.py::test_b", "failed", "ArgumentTypeError: tensors are immutable: y"),
             _test("n.py::test_c", "error", "ValueError: shape (2, 3) against 7"),
             _test("n.py::test_d", "passed")]
    assert runner.check("sklearn", tests, (1.0, 1.0), write=True) == 0   # now all listed
    listed = runner.read_xfails("sklearn")
    assert set(listed) == {"m.py::test_a", "m.py::test_b", "n.py::test_c"}
    assert listed["m.py::test_a"] == listed["m.py::test_b"]
    assert "immutable" in listed["m.py::test_a"]
    assert listed["n.py::test_c"].startswith("Fails with: ValueError")
    assert listed["n.py::test_c"] != listed["m.py::test_a"]


def test_a_suite_that_is_not_installed_is_not_run_silently(monkeypatch):
    monkeypatch.setitem(runner.SUITES, "nowhere", ("no-such-distribution-xyz", [], {}))
    with pytest.raises(runner.SuiteUnavailable, match="not installed"):
        runner.suite_dir("nowhere")


def test_array_api_extra_from_a_folder_that_holds_no_tests_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ARRAY_API_EXTRA_DIR", str(tmp_path))
    try:
        runner.suite_dir("array_api_extra")
    except runner.SuiteUnavailable as err:
        assert "holds no tests/main" in str(err) or "not installed" in str(err)
    else:
        raise AssertionError("an empty folder was taken for array-api-extra's tests")


def test_the_plugin_adds_the_engine_to_an_enum_of_backends():
    class Backend(enum.Enum):
        NUMPY = "numpy"
        STRICT = "array_api_strict"

        @property
        def modname(self):
            return self.value.split(":")[0]

    member = plugin._add_engine_backend(Backend)
    assert Backend.ENGINE is member and Backend("engine.array_api") is member
    assert member.modname == "engine.array_api" and member.name == "ENGINE"
    assert list(Backend)[-1] is member and member != Backend.NUMPY
    assert plugin._add_engine_backend(Backend) is member   # once only


def test_the_plugin_makes_sklearn_yield_the_one_namespace(monkeypatch):
    from sklearn.utils import _array_api
    for name in ("yield_namespaces", "yield_namespace_device_dtype_combinations"):
        monkeypatch.setattr(_array_api, name, getattr(_array_api, name))   # restored after
    monkeypatch.setattr(plugin, "NAMESPACE", "engine.array_api")
    monkeypatch.setattr(plugin, "ENGINE", True)
    plugin._patch_sklearn()
    assert list(_array_api.yield_namespaces()) == ["engine.array_api"]
    assert list(_array_api.yield_namespace_device_dtype_combinations()) == [
        ("engine.array_api", None, "float64"), ("engine.array_api", None, "float32")]


def test_the_docs_page_is_the_runners_and_covers_every_suite():
    text = runner.DOCS_PAGE.read_text(encoding="utf-8")
    assert "Generated by `python tests/interop/third_party_suites.py --write-docs`" in text
    for dist, _, _ in runner.SUITES.values():
        assert re.search(rf"^## {re.escape(dist)} \d", text, flags=re.M), dist
    totals = re.findall(r"^\| \*\*all\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\*", text,
                        flags=re.M)
    assert len(totals) == len(runner.SUITES)
    assert all(int(strict) > 0 for _, strict in totals)   # the baseline ran
