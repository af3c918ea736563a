"""Run scikit-learn's, SciPy's and array-api-extra's own Array API tests on engine.array_api.

    python tests/interop/third_party_suites.py                 # run, compare with the xfails
    python tests/interop/third_party_suites.py --suite scipy   # one suite (repeatable)
    python tests/interop/third_party_suites.py --write-xfails  # rewrite the xfails files
    python tests/interop/third_party_suites.py --write-docs    # also run array-api-strict and
                                                               # write the counts page

Each suite runs in its own pytest process with ``-p third_party_plugin``
(tests/interop/third_party_plugin.py), which makes the suite parametrize its
tests by one namespace: ``engine.array_api``, or ``array_api_strict`` for the
baseline that ``--write-docs`` measures beside it. The selections (``SUITES``)
are chosen to fit CI's time (measured on two cores: the seconds are in the docs
page). A suite's expected failures are ``tests/interop/third_party_xfails/<suite>.txt``:
test ids under ``#`` comments that say why (one reason per group of failures
with the same cause). The run fails (status 1) on a failure not listed there, and
prints the listed tests that passed, so the lists only shrink; it fails with
status 2 when a suite could not run (with ``--if-available``, a suite whose
packages are missing is reported NOT RUN instead). ``--write-xfails`` makes the
lists from a run, grouped by cause, in one command.

array-api-extra ships its tests only in its source distribution: it is fetched
with pip at the pinned version into ``.cache/`` (or taken from
``$ARRAY_API_EXTRA_DIR``).
"""
import argparse
import collections
import importlib.metadata
import json
import os
import re
import resource
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
XFAILS_DIR = HERE / "third_party_xfails"
DOCS_PAGE = ROOT / "docs" / "interop" / "third-party-suites.md"
SITE = Path(sysconfig.get_paths()["purelib"])
# The versions the expected failures were made with (.ci/run installs these).
PINS = {"scikit-learn": "1.9.1", "scipy": "1.17.1", "array-api-extra": "0.11.5",
        "array-api-strict": "2.6.1", "array-api-compat": "1.16.0"}

# name -> (distribution, pytest arguments, environment). The selections keep the three
# under CI's budget (docs page: seconds per suite); the ids are relative to site-packages
# (or to array-api-extra's source folder), so they are the same on every machine.
SUITES = {
    "sklearn": ("scikit-learn", ["--pyargs", "sklearn", "-k", "array_api"],
                {"SCIPY_ARRAY_API": "1"}),
    "scipy": ("scipy", [
        "--pyargs", "scipy.special", "scipy.stats", "scipy.fft", "scipy.signal",
        "scipy.ndimage", "scipy.integrate", "scipy.cluster", "scipy.spatial",
        "scipy.linalg", "scipy.interpolate", "-m", "array_api_backends"],
        {"SCIPY_ARRAY_API": "1"}),
    "array_api_extra": ("array-api-extra", ["tests/main"], {}),
}

# Known causes: a pattern of the failure's message -> the reason written above its group.
CAUSES = [
    (r"tensors are immutable",
     "Writes into a tensor (x[idx] = v, at(x, idx).set(v), out= buffers): tensors are "
     "immutable until writable tensors land (issue #48)."),
    (r"zero-dimensional boolean mask|a false 0-d boolean",
     "A 0-d boolean mask (x[xp.asarray(True)], x[..., False]) is refused with a ShapeError "
     "(issue #48)."),
    (r"has no attribute 'diag'",
     "SciPy calls xp.diag (numpy's name, not the standard's) on namespaces it does not "
     "special-case; engine.array_api keeps to the standard's names (en.diag exists)."),
    (r"has no attribute",
     "An attribute or function the suite calls is missing on tensors or in "
     "engine.array_api (issue #48: ndarray's surface)."),
    (r"is not implemented by the engine for tensors",
     "A numpy function the suite calls on tensors has no engine version yet (issue #48: "
     "numpy's dispatching functions); the engine refuses it by name."),
    (r"is a view of (a broadcast|read-only memory)",
     "at(x, idx).set(v) writes in place into a broadcast_to result: array-api-compat's "
     "is_writeable_array cannot see that a tensor is read-only (it can for numpy, whose "
     "read-only arrays at() copies), and the engine refuses the write, as numpy would."),
    (r"read-only",
     "A write into memory numpy shares with a tensor: np.asarray(tensor) is read-only, so "
     "compiled SciPy code and numpy writes refuse it (issue #48 decides)."),
    (r"the condition must be bool",
     "numpy's type rules where the standard is silent: where() with a non-boolean "
     "condition is refused (issue #48)."),
    (r"Tensor\.__format__",
     "A 0-d tensor refuses a format spec (f'{t:.3g}'), which numpy's scalars take: the "
     "library formats a result into a message or a warning (issue #48: ndarray's surface)."),
    (r"Tensor\.view",
     "Tensor.view(dtype), a reinterpretation of memory, is refused on purpose; the test "
     "views a result as another dtype."),
    (r"Regex pattern did not match",
     "The test matches the words of an error: the engine raises its own error (a string "
     "where a number belongs: an unsupported dtype) with other words."),
    (r"DID NOT WARN",
     "The test expects a warning (a singular case) that the library emits only on a path "
     "the engine does not take: the call fails first with a refused format spec."),
    (r"array-agnostic fallback should not be used",
     "The test checks that nunique delegates to the library's own function; "
     "array-api-extra delegates only for the libraries it knows, so a new library takes the "
     "array-agnostic fallback (the test skips array-api-strict for the same reason)."),
]


class SuiteUnavailable(Exception):
    """A suite's packages or sources could not be had."""


def suite_dir(name):
    """The folder pytest runs in: site-packages, or array-api-extra's source folder."""
    dist = SUITES[name][0]
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise SuiteUnavailable(f"{dist} is not installed") from None
    if name != "array_api_extra":
        return SITE
    given = os.environ.get("ARRAY_API_EXTRA_DIR")
    if given:
        if not (Path(given) / "tests" / "main").is_dir():
            raise SuiteUnavailable(f"ARRAY_API_EXTRA_DIR={given} holds no tests/main")
        return Path(given)
    folder = ROOT / ".cache" / f"array_api_extra-{version}"
    if not (folder / "tests" / "main").is_dir():
        fetch_sdist(dist, version, folder)
    return folder


def fetch_sdist(dist, version, folder):
    """Unpack ``dist``'s source distribution (its tests) at ``version`` into ``folder``."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--no-build-isolation", f"{dist}=={version}",
             "--dest", scratch], capture_output=True, text=True)
        archives = list(Path(scratch).glob("*.tar.gz"))
        if done.returncode or not archives:
            raise SuiteUnavailable(f"pip download {dist}=={version}: "
                                   f"{done.stderr.strip()[-300:]}")
        with tarfile.open(archives[0]) as tar:
            tar.extractall(scratch, filter="data")
        unpacked = next(p for p in Path(scratch).iterdir() if p.is_dir())
        unpacked.rename(folder)


def run_suite(name, namespace, report_path, extra=()):
    """Run one suite on ``namespace``; the pytest exit status (report in ``report_path``)."""
    _, args, env_add = SUITES[name]
    cwd = suite_dir(name)
    env = dict(os.environ, **env_add, THIRD_PARTY_NAMESPACE=namespace,
               PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT),
                                           os.environ.get("PYTHONPATH", "")]))
    if name == "scipy" and namespace != "engine.array_api":
        env["SCIPY_ARRAY_API"] = json.dumps([namespace])   # SciPy's own fixture, one library
    cmd = [sys.executable, "-m", "pytest", *args, "-p", "third_party_plugin",
           "-p", "no:cacheprovider", "-n", "0", "-q", "--tb=no", "-rN",
           f"--rootdir={cwd}",
           # hypothesis' plugin imports libcst, which warns; array-api-extra's settings make
           # warnings errors (its deprecation tests expect them), so only that one is ignored
           "-W", "ignore:mypy_extensions.TypedDict:DeprecationWarning",
           "--hypothesis-seed=0",   # the same examples every run: the xfails stay stable
           "--json-report", f"--json-report-file={report_path}", *extra]
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL).returncode


def first_line(test):
    """The first line of a test's failure message."""
    for phase in ("setup", "call", "teardown"):
        crash = (test.get(phase) or {}).get("crash") or {}
        if crash.get("message"):
            return crash["message"].strip().splitlines()[0][:200]
    return ""


def cause(test):
    """The reason a failure is grouped under: a known cause, else its error, generalized."""
    message = first_line(test)
    for pattern, reason in CAUSES:
        if re.search(pattern, message):
            return reason
    message = re.sub(r",? ?\(?at /\S+.*$", "", message)   # the user's line: a path
    general = re.sub(r"\d+(\.\d+)?", "N", re.sub(r"'[^']*'|\([^)]*\)", "...", message))
    return f"Fails with: {general[:150]}" if general else "Fails without a message."


def read_xfails(name):
    """``{test id: reason}`` of a suite's file: the comment block above each id."""
    path = XFAILS_DIR / f"{name}.txt"
    out, reason = {}, []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            reason.append(line.lstrip("# ").strip())
        elif line.strip():
            out[line.strip()] = " ".join(reason)
        else:
            reason = []
    return out


def write_xfails(name, failed):
    """A suite's file from a run's failures, grouped by cause, largest group first."""
    groups = collections.defaultdict(list)
    for t in failed:
        groups[cause(t)].append(t["nodeid"])
    lines = [f"# Expected failures of {SUITES[name][0]}'s Array API tests on engine.array_api,",
             "# run by tests/interop/third_party_suites.py; made by its --write-xfails.",
             "# One test id a line, under the reason for its group; a blank line ends a reason.",
             ""]
    for reason, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        words, line = reason.split(), "#"
        for word in words:   # wrap the reason at 92 columns
            if len(line) + len(word) > 92:
                lines.append(line)
                line = "#"
            line += " " + word
        lines += [line, *sorted(ids), ""]
    XFAILS_DIR.mkdir(exist_ok=True)
    (XFAILS_DIR / f"{name}.txt").write_text("\n".join(lines))


def module_of(nodeid):
    return nodeid.split("::")[0]


def outcomes_by_module(tests):
    """``{module: Counter(outcome)}`` of a run."""
    out = collections.defaultdict(collections.Counter)
    for t in tests:
        out[module_of(t["nodeid"])][t["outcome"]] += 1
    return out


def run_and_read(name, namespace, extra=()):
    """(tests of the json report, (wall seconds, CPU seconds)). The CPU seconds do not
    depend on what else the machine runs: CI's time on two free cores is about that."""
    start, cpu_start = time.perf_counter(), _children_cpu()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        code = run_suite(name, namespace, report, extra)
        if code not in (0, 1) or not report.is_file():
            raise SuiteUnavailable(f"pytest exited with status {code} on {namespace} "
                                   "(collection or usage error, or no test ran)")
        tests = json.loads(report.read_text())["tests"]
    return tests, (time.perf_counter() - start, _children_cpu() - cpu_start)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check(name, tests, timing, write):
    """Compare a run on the engine with the suite's xfails file (or rewrite it); the
    number of unexpected failures."""
    failed = [t for t in tests if t["outcome"] in ("failed", "error")]
    if write:
        write_xfails(name, failed)
    listed = read_xfails(name)
    unexpected = [t for t in failed if t["nodeid"] not in listed]
    stale = [t["nodeid"] for t in tests if t["outcome"] == "passed" and t["nodeid"] in listed]
    for t in unexpected:
        print(f"UNEXPECTED FAILURE {t['nodeid']}: {first_line(t)}")
    for nodeid in stale:
        print(f"listed in {name}.txt but passed: {nodeid}")
    passed = sum(t["outcome"] == "passed" for t in tests)
    print(f"{name} on engine.array_api: {passed} of {len(tests)} passed, "
          f"{len(failed) - len(unexpected)} expected failures, {len(unexpected)} unexpected, "
          f"{sum(t['outcome'] == 'skipped' for t in tests)} skipped, in {timing[0]:.0f} s "
          f"({timing[1]:.0f} s of CPU)")
    return len(unexpected)


def docs_section(name, engine_tests, strict_tests, timing):
    """The docs page's table for one suite: passes module by module, engine vs strict."""
    dist, args, _ = SUITES[name]
    ours, theirs = outcomes_by_module(engine_tests), outcomes_by_module(strict_tests)
    rows = [f"## {dist} {importlib.metadata.version(dist)}", "",
            f"Selection: `pytest {' '.join(args)}`; on the engine {timing[1]:.0f} s of CPU "
            f"({timing[0]:.0f} s of wall time on the measuring machine).", "",
            "| module | engine passed | array-api-strict passed | engine failed | "
            "engine skipped |", "|---|---:|---:|---:|---:|"]
    totals = collections.Counter()
    for module in sorted(set(ours) | set(theirs)):
        e, s = ours[module], theirs[module]
        if not (e["passed"] or s["passed"] or e["failed"] or e["error"]):
            continue   # skipped on both: nothing measured
        failed = e["failed"] + e["error"]
        mark = "" if e["passed"] >= s["passed"] else " (below)"
        shown = module if module.startswith(("sklearn/", "scipy/")) else f"{dist}: {module}"
        rows.append(f"| `{shown}` | {e['passed']}{mark} | {s['passed']} | {failed} | "
                    f"{e['skipped']} |")
        totals.update(engine=e["passed"], strict=s["passed"], failed=failed,
                      skipped=e["skipped"])
    rows += [f"| **all** | **{totals['engine']}** | **{totals['strict']}** | "
             f"**{totals['failed']}** | **{totals['skipped']}** |", ""]
    return rows


def write_docs(sections, timings):
    versions = ", ".join(f"{d} {importlib.metadata.version(d)}" for d in PINS)
    text = ["# Third-party Array API suites", "",
            "<!-- Generated by `python tests/interop/third_party_suites.py --write-docs`; "
            "do not edit by hand. -->", "",
            "scikit-learn's, SciPy's and array-api-extra's own Array API tests, run on "
            "`engine.array_api` and, for comparison, on array-api-strict (the standard's "
            "reference implementation), by `tests/interop/third_party_suites.py` (CI runs it "
            "after the conformance suite). Each suite runs with the one namespace as its only "
            "array library; a failure on the engine that is not listed in "
            "`tests/interop/third_party_xfails/<suite>.txt` (each entry under its reason) "
            "fails CI. A module marked *(below)* passes fewer tests on the engine than on "
            "array-api-strict.", "",
            f"Versions: {versions}. Time for the selections on the engine, one process: "
            f"{sum(cpu for _, cpu in timings.values()):.0f} s of CPU "
            f"({', '.join(f'{k} {cpu:.0f} s' for k, (_, cpu) in timings.items())}); "
            f"{sum(wall for wall, _ in timings.values()):.0f} s of wall time on the "
            "measuring machine, which other jobs shared.", ""]
    for rows in sections:
        text += rows
    DOCS_PAGE.parent.mkdir(parents=True, exist_ok=True)
    DOCS_PAGE.write_text("\n".join(text))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=sorted(SUITES),
                        help="run this suite only (repeatable); all three by default")
    parser.add_argument("--write-xfails", action="store_true",
                        help="rewrite each suite's expected failures from this run")
    parser.add_argument("--write-docs", action="store_true",
                        help="also run array-api-strict and write " + str(DOCS_PAGE.name))
    parser.add_argument("--if-available", action="store_true",
                        help="a suite whose packages cannot be had is reported NOT RUN "
                             "(exit 0) instead of failing with status 2")
    args, pytest_args = parser.parse_known_args()   # the rest goes to pytest (-k ...)
    if args.write_docs and (args.suite or pytest_args):
        parser.error("--write-docs measures every suite in full: no --suite, no pytest arguments")
    unexpected, sections, timings = 0, [], {}
    for name in args.suite or SUITES:
        try:
            tests, timings[name] = run_and_read(name, "engine.array_api", pytest_args)
            unexpected += check(name, tests, timings[name], args.write_xfails)
            if args.write_docs:
                strict, _ = run_and_read(name, "array_api_strict", pytest_args)
                sections.append(docs_section(name, tests, strict, timings[name]))
        except SuiteUnavailable as err:
            print(f"{name}: {err}", file=sys.stderr)
            if not args.if_available:
                return 2
            print(f"{name}: NOT RUN on this machine; nothing was checked", file=sys.stderr)
    if args.write_docs and sections:
        write_docs(sections, timings)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
