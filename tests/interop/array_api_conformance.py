"""Run the Array API standard's conformance suite (array-api-tests) on engine.array_api.

    python tests/interop/array_api_conformance.py            # run, compare with the xfails
    python tests/interop/array_api_conformance.py --report   # also list every failure's reason
    python tests/interop/array_api_conformance.py -k has_names   # further arguments go to pytest

The suite is ``../shared/array-api-tests`` when present (or ``$ARRAY_API_TESTS_DIR``),
else a clone of data-apis/array-api-tests at the pinned commit, with its
``array-api`` submodule at its pinned commit, made once under ``.cache/``.
It runs with ``--max-examples 20``, a fixed seed (``--derandomize``: the same
examples every run, so the expected failures are stable) and no deadline (a
loaded machine must not turn into failures), from a scratch folder so that
hypothesis writes nothing into the suite's folder.

The expected failures are ``tests/interop/array_api_xfails.txt``: one test id a line,
each under a ``#`` comment that says why. The run fails (exit status 1) on any
other failure; it prints the tests that are listed but passed, so the list can
shrink. It fails with status 2, saying why, when the suite can be neither found
nor cloned or pytest could not run it: CI never passes without having run it.
The last line is the count docs/guide/eager.md quotes.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
XFAILS = ROOT / "tests" / "interop" / "array_api_xfails.txt"
SUITE_URL = "https://github.com/data-apis/array-api-tests.git"
SUITE_COMMIT = "55fcc601"
SPEC_URL = "https://github.com/data-apis/array-api.git"
SPEC_COMMIT = "5f847a38"


def find_suite():
    """The folder holding the suite: the environment's, the shared copy, or a clone."""
    given = os.environ.get("ARRAY_API_TESTS_DIR")
    if given:   # asked for by name: that one or none
        if not (Path(given) / "array_api_tests").is_dir():
            raise SuiteUnavailable(f"ARRAY_API_TESTS_DIR={given} holds no array_api_tests/")
        return Path(given)
    shared = ROOT.parent / "shared" / "array-api-tests"
    if (shared / "array_api_tests").is_dir():
        return shared
    return clone_suite(ROOT / ".cache" / f"array-api-tests-{SUITE_COMMIT}")


class SuiteUnavailable(Exception):
    """Neither a copy of the suite nor a clone of it could be had."""


def clone_suite(path):
    """A clone of the suite (and of the standard's text it reads) at the pinned commits,
    made in a scratch folder and moved to ``path`` only when complete, so a failed
    clone leaves nothing half made behind."""
    if (path / "array_api_tests").is_dir() and (path / "array-api" / "spec").is_dir():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)

    def git(*args, cwd=None):
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
        if done.returncode:
            raise SuiteUnavailable(f"git {' '.join(args)}: {done.stderr.strip()}")
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        work = Path(scratch) / "suite"
        git("clone", "--quiet", SUITE_URL, str(work))
        git("checkout", "--quiet", SUITE_COMMIT, cwd=work)
        spec = work / "array-api"
        if spec.exists() and not any(spec.iterdir()):
            spec.rmdir()
        if not spec.exists():
            git("clone", "--quiet", SPEC_URL, str(spec))
        git("checkout", "--quiet", SPEC_COMMIT, cwd=spec)
        if path.exists():
            shutil.rmtree(path)
        work.rename(path)
    return path


def read_xfails():
    """``{test id: reason}``: each id's reason is the comment block above it."""
    out, reason = {}, []
    for line in XFAILS.read_text().splitlines():
        if line.startswith("#"):
            reason.append(line.lstrip("# ").strip())
        elif line.strip():
            out[line.strip()] = " ".join(reason)
        else:
            reason = []
    return out


def run(suite, report_path, extra):
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="engine.array_api",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    # A test file or id of the suite (array_api_tests/test_x.py::test_y) selects part of it.
    chosen = [str(suite / a) for a in extra if a.startswith("array_api_tests")]
    extra = [a for a in extra if not a.startswith("array_api_tests")]
    cmd = [sys.executable, "-m", "pytest", *(chosen or [str(suite / "array_api_tests")]),
           "--max-examples", "20", "--derandomize", "--disable-deadline",
           "--xfails-file", str(XFAILS), "-p", "no:cacheprovider", "-q", "--tb=no",
           "-rN", "--json-report", f"--json-report-file={report_path}", *extra]
    with tempfile.TemporaryDirectory() as scratch:
        return subprocess.run(cmd, cwd=scratch, env=env).returncode


def first_line(test):
    """The first line of a test's failure message, or of its skip reason."""
    for phase in ("setup", "call"):
        crash = (test.get(phase) or {}).get("crash") or {}
        if crash.get("message"):
            return crash["message"].splitlines()[0][:160]
        longrepr = (test.get(phase) or {}).get("longrepr")
        if test["outcome"] == "skipped" and longrepr:
            return str(longrepr).splitlines()[-1][:160]
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="list every failure's message")
    parser.add_argument("--if-available", action="store_true",
                        help="where no copy of the suite can be found or cloned (a machine "
                             "without ../shared and without network), say so loudly and exit "
                             "0 instead of 2; failures of the suite itself still fail")
    args, pytest_args = parser.parse_known_args()   # the rest goes to pytest (-k ...)
    try:
        suite = find_suite()
    except SuiteUnavailable as err:   # never pass silently without having run the suite
        print(f"array-api-tests: no copy at {ROOT.parent / 'shared' / 'array-api-tests'} "
              f"(or $ARRAY_API_TESTS_DIR), and cloning {SUITE_URL} failed: {err}",
              file=sys.stderr)
        if args.if_available:
            print("array-api-tests: NOT RUN on this machine (no copy of the suite); "
                  "nothing was checked", file=sys.stderr)
            return 0
        return 2
    if not XFAILS.is_file():
        print(f"array-api-tests: {XFAILS} is missing", file=sys.stderr)
        return 2
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        code = run(suite, report_path, pytest_args)
        if code not in (0, 1) or not report_path.is_file():   # 1: some test failed
            print(f"array-api-tests: pytest exited with status {code} (collection or usage "
                  "error, or no test ran)", file=sys.stderr)
            return 2
        tests = json.loads(report_path.read_text())["tests"]
    seconds = time.perf_counter() - start
    outcomes = collections.Counter(t["outcome"] for t in tests)
    failed = [t for t in tests if t["outcome"] in ("failed", "error")]
    stale = [t["nodeid"] for t in tests if t["outcome"] == "xpassed"]
    if args.report:
        for t in tests:
            if t["outcome"] in ("failed", "error", "xfailed", "skipped"):
                print(f"{t['outcome']:8} {t['nodeid']}\n         {first_line(t)}")
    for t in failed:
        print(f"UNEXPECTED FAILURE {t['nodeid']}: {first_line(t)}")
    for nodeid in stale:
        print(f"listed in {XFAILS.name} but passed: {nodeid}")
    total = len(tests)
    passed = outcomes["passed"] + outcomes["xpassed"]
    print(f"array-api-tests on engine.array_api: {passed} of {total} test items passed "
          f"({100 * passed / max(total, 1):.1f}%), {outcomes['xfailed']} expected failures, "
          f"{len(failed)} unexpected failures, {outcomes['skipped']} skipped, "
          f"in {seconds:.0f} s")
    return 1 if failed or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
