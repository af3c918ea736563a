"""Keep the documentation true: run every example of docs/*.md, and check what the pages
state against the code (the API reference names every public name, the site's
navigation lists every page, the generated pages come from their generators)."""
import doctest
import json
import os
import re
import subprocess
import sys
import warnings

import pytest

import engine as en
from support.paths import REPO

DOCS = os.path.join(REPO, "docs")
# A block that is not meant to run says so on the line before it, with the reason.
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


def pages():
    """Every Markdown page of docs/, as paths relative to docs/."""
    found = []
    for folder, _, names in os.walk(DOCS):
        found += [os.path.relpath(os.path.join(folder, n), DOCS) for n in names if n.endswith(".md")]
    return sorted(found)


def read(page):
    with open(os.path.join(DOCS, page), encoding="utf-8") as f:
        return f.read()


def fenced_blocks(text):
    """``(language, body, reason not to run or None)`` of every fenced block, in order."""
    blocks = []
    for m in re.finditer(r"^```(\w*)[^\n]*\n(.*?)^```", text, flags=re.S | re.M):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = NOT_RUN.match(before)
        blocks.append((m.group(1), m.group(2), skip.group(1) if skip else None))
    return blocks


def run_pycon(text, name):
    """Run the page's ``pycon`` blocks in order in one namespace, as one doctest;
    returns ``(failures, tries, report)``."""
    source = "\n".join(body for lang, body, skip in fenced_blocks(text)
                       if lang == "pycon" and skip is None)
    test = doctest.DocTestParser().get_doctest(source, {}, name, name, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    # Pages set en.config switches and restore them; a failed example must not leave one
    # changed for the tests that run after it in this process.
    settings = {k: v for k, v in vars(en.config).items() if not k.startswith("_")}
    costs = dict(vars(en.config.cost))   # the thresholds inside en.config.cost too
    with warnings.catch_warnings():   # pages change warning filters; keep that local
        warnings.simplefilter("ignore", RuntimeWarning)   # numpy's overflow in exp(100)
        try:
            runner.run(test, out=report.append)
        finally:
            en.set_default_dtype(None)
            vars(en.config).update(settings)
            vars(en.config.cost).update(costs)
    return runner.failures, runner.tries, "".join(report)


PAGES = pages()
PYCON_PAGES = [p for p in PAGES if any(lang == "pycon" for lang, _, _ in fenced_blocks(read(p)))]
SCRIPTS = [(p, i) for p in PAGES for i, (lang, _, skip) in enumerate(fenced_blocks(read(p)))
           if lang == "python" and skip is None]


def test_the_pages_have_examples():
    assert len(PYCON_PAGES) >= 15, PYCON_PAGES
    assert len(SCRIPTS) >= 2, SCRIPTS


@pytest.mark.parametrize("page", PYCON_PAGES)
def test_pycon_examples(page):
    failures, tries, report = run_pycon(read(page), page)
    assert failures == 0, report
    assert tries >= 3, f"{page}: only {tries} examples ran"


def test_blocks_not_run_are_few_and_say_why():
    skipped = [(p, skip) for p in PAGES for _, _, skip in fenced_blocks(read(p)) if skip]
    assert len(skipped) <= 4, skipped
    assert all(len(reason) > 20 for _, reason in skipped), skipped


@pytest.mark.parametrize("page, index", SCRIPTS)
def test_python_blocks_run_as_scripts(page, index, tmp_path):
    """A ``python`` block runs as a script of its own (its first line, ``# name.py``,
    names it); a ``console`` block after it shows the end of what it prints."""
    blocks = fenced_blocks(read(page))
    script = blocks[index][1]
    first = script.splitlines()[0]
    name = first[2:].strip() if re.fullmatch(r"# [\w-]+\.py", first) else "example.py"
    (tmp_path / name).write_text(script, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, name], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    shown = blocks[index + 1] if index + 1 < len(blocks) else None
    if not (shown and shown[0] == "console"):
        assert proc.returncode == 0, proc.stderr
        return
    lines = shown[1].strip().splitlines()
    assert lines[0] == f"$ python {name}"
    expected = [line.replace("/path/to/", str(tmp_path) + os.sep)
                for line in lines[1:] if line != "..."]
    # A traceback goes to stderr with status 1; a script that ends well prints to stdout.
    out = proc.stdout if proc.returncode == 0 else proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    assert out.rstrip().splitlines()[-len(expected):] == expected, proc.stdout + proc.stderr


def test_the_error_example_fails_as_shown():
    """The debugging page's ``model.py`` exits with the ShapeError it shows."""
    blocks = fenced_blocks(read("guide/debugging.md"))
    index = next(i for i, (lang, body, _) in enumerate(blocks)
                 if lang == "python" and body.startswith("# model.py"))
    assert "ShapeError" in blocks[index + 1][1]
    assert (os.path.join("guide", "debugging.md"), index) in SCRIPTS


def _nav_pages(config_text):
    return set(re.findall(r":\s*([\w/.-]+\.md)\s*$", config_text, flags=re.M))


def test_every_page_is_in_the_navigation():
    with open(os.path.join(REPO, "mkdocs.yml"), encoding="utf-8") as f:
        nav = _nav_pages(f.read())
    assert nav == set(PAGES), (set(PAGES) - nav, nav - set(PAGES))


def test_the_api_reference_names_every_public_name():
    with open(os.path.join(REPO, "tests", "project", "public_api.txt"), encoding="utf-8") as f:
        public = f.read().split()
    text = read("api.md")
    documented = set(re.findall(r"^::: engine\.(\w+)", text, flags=re.M))
    documented |= set(re.findall(r"^### en\.(\w+)$", text, flags=re.M))   # a module's heading
    missing = [n for n in public if n not in documented]
    assert not missing, f"api.md does not document en.{', en.'.join(missing)}"


def test_the_performance_page_renders_the_runners_results(tmp_path):
    sys.path.insert(0, DOCS)
    try:
        import gen_performance
    finally:
        sys.path.remove(DOCS)
    record = {"workload": "overhead", "config": {"op": "add"}, "mode": "eager",
              "median_ms": 1.5, "min_ms": 1.0, "max_ms": 2.0, "n": 3, "skipped": None}
    payload = {"facts": {"cpu": "Test CPU 9000", "cores": 7, "python": "3.11", "numpy": "2.4",
                         "torch": None, "jax": None}, "argv": ["--quick"], "elapsed_s": 12.0,
               "results": [record], "errors": [{"workload": "lbfgs", "error": "boom"}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(payload))
    text = gen_performance.render_file(str(path))
    assert "Test CPU 9000, 7 cores" in text and "`python -m bench --quick`" in text
    assert "### overhead" in text and "| eager | 1.50 |" in text
    assert "- lbfgs: boom" in text
    assert gen_performance.find_results({"BENCH_RESULTS": str(path)}) == str(path)
    # The page itself carries the marker the hook replaces with that rendering.
    assert "<!-- bench-results -->" in read("performance.md")
    # The snapshot kept in the repository is a real runner's output, with its facts.
    with open(os.path.join(DOCS, "bench", "results.json"), encoding="utf-8") as f:
        snapshot = json.load(f)
    assert snapshot["facts"]["cores"] >= 1 and snapshot["results"] and snapshot["recorded"]


def test_the_changelog_is_the_generators_output_for_its_commits():
    sys.path.insert(0, DOCS)
    try:
        import gen_changelog
    finally:
        sys.path.remove(DOCS)
    text = read("changelog.md")
    entries = re.findall(r"^- .* \(`([0-9a-f]{7,})`\)$", text, flags=re.M)
    assert len(entries) >= 500
    assert gen_changelog.area("bench: the peak memory in GiB") == "Benchmarks"
    assert gen_changelog.area("interpolate: the nearest modes take any dtype") == \
        gen_changelog.OTHER
    rendered = gen_changelog.render([("2026-12-01", "abc1234", "dask: one chunk read"),
                                     ("2026-12-01", "def5678", "tests: argwhere of a 0-d")])
    assert rendered.index("### Tests") < rendered.index("### Dask")
    assert "- dask: one chunk read (`abc1234`)" in rendered


def test_the_files_the_pages_name_exist():
    """A source path in backquotes (``graph/passes/dce.py``) names a file of the repository;
    a module that moves takes the pages that name it along."""
    pattern = r"`((?:engine|graph|eager|bench|tests|examples)/[\w/.-]+)`"
    named = {(page, path) for page in PAGES if page != "changelog.md"   # history: old paths
             for path in re.findall(pattern, read(page))}
    named |= {("README.md", path) for path in re.findall(pattern, open(
        os.path.join(REPO, "README.md"), encoding="utf-8").read())}
    assert len(named) >= 30
    # engine/graph/... and engine/eager/... are the installed names of graph/ and eager/.
    missing = sorted((page, path) for page, path in named
                     if not os.path.exists(os.path.join(REPO, re.sub(r"^engine/(graph|eager)/",
                                                                     r"\1/", path))))
    assert not missing, missing
