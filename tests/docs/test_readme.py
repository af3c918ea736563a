"""Keep README.md true: its two commands first, its example run, its links and its
headline figures found in the measurements log (the user guide's examples: test_docs.py)."""
import doctest
import os
import re
import subprocess
import sys
import warnings

import pytest
from support.paths import REPO

README = os.path.join(REPO, "README.md")


def readme():
    with open(README, encoding="utf-8") as f:
        return f.read()


def fenced_blocks(text):
    """``(language, body)`` of every fenced code block, in order."""
    return [(m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)]


def test_readme_opens_with_the_two_setup_commands():
    text = readme()
    lang, body = fenced_blocks(text)[0]
    assert lang == "bash"
    lines = [line.split("#")[0].strip() for line in body.strip().splitlines()]
    assert lines == ["pip install -e '.[bench]' && python -m bench",
                     "pip install -e '.[test]' && python -m pytest"]
    # Nothing but the title and one sentence come before them.
    assert text.index("```bash") < 400


def test_the_test_extra_exists():
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as f:
        pyproject = f.read()
    assert re.search(r"^test\s*=", pyproject, flags=re.M), "no [test] extra in pyproject.toml"


def test_pycon_examples():
    """The README's example, run as a doctest."""
    blocks = [body for lang, body in fenced_blocks(readme()) if lang == "pycon"]
    assert len(blocks) >= 1
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, "README.md", README, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
    assert runner.tries >= 8


def test_the_readme_is_a_front_door():
    """At most 200 lines, and every section a newcomer looks for."""
    text = readme()
    assert len(text.splitlines()) <= 200
    for heading in ("## Why pick it over TensorFlow, PyTorch or JAX", "## Install", "## Example",
                    "## Documentation", "## Limits"):
        assert heading in text, heading


def test_the_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme())
    assert len(links) >= 15
    missing = [link for link in links if not os.path.exists(os.path.join(REPO, link))]
    assert not missing, missing


def test_the_headline_figures_come_from_the_measurements_log():
    """Each figure of the headline table is one the measurements log (or, for Dask, its
    guide page, which keeps its own dated table) states."""
    text = readme()
    table = text.split("| workload (machine, date) |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 4
    log = ""
    for page in ("measurements.md", os.path.join("guide", "dask.md")):
        with open(os.path.join(REPO, "docs", page), encoding="utf-8") as f:
            log += f.read()
    for row in rows:
        figures = re.findall(r"(\d+(?:\.\d+)?) (?:ms|µs)", row)
        assert figures, row
        for figure in figures:
            assert re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", log), (figure, row)


def test_overhead_benchmark_runs(capsys):
    from bench import overhead

    results = overhead.main(["--quick", "--repeats", "1", "--case", "add", "--case", "matmul 4x4"])
    out = capsys.readouterr().out
    assert set(results) == {"add", "matmul 4x4"}
    for variants in results.values():
        for v in ("numpy", "engine", "engine_tape"):
            assert variants[v] > 0
    assert "engine+tape" in out and "matmul 4x4" in out
    if overhead.torch is None:
        assert "PyTorch is not importable" in out
    else:
        assert "engine/torch" in out


def test_overhead_benchmark_runs_as_a_script(tmp_path):
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "bench", "overhead.py"), "--quick",
         "--repeats", "1", "--case", "exp"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "exp" in proc.stdout and "engine" in proc.stdout


def test_every_case_has_the_engine_variant():
    from bench import overhead

    inputs = overhead.Inputs()
    for name, make in overhead.CASES.items():
        variants = make(inputs)
        assert "engine" in variants, name
        assert set(variants) <= set(overhead.VARIANTS), name
        for runner in variants.values():
            assert runner(3) >= 0.0


@pytest.mark.parametrize("results, expected", [
    ({"add": {"engine": 2.0, "torch": 1.0}}, "2.00"),
    ({"add": {"engine": 3.0}}, "3.00"),
])
def test_overhead_table_format(results, expected):
    from bench.overhead import format_table

    table = format_table(results)
    assert "add" in table and "engine" in table
    if "torch" in results["add"]:
        assert "engine/torch" in table
    else:
        assert "torch" not in table
    assert expected in table
