"""The package's docstring examples are collected as the engine's own modules.

``python -m pytest`` runs them (``--doctest-modules`` over engine/, eager/ and graph/,
pyproject.toml); the root conftest.py imports ``graph/`` and ``eager/`` files as
``engine.graph.*`` and ``engine.eager.*``, never as a second top-level ``graph``.
"""
import doctest
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def collected(*paths):
    # pyproject's options, less its -q (one -q lists every test id; two count them per file)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0",
                           "-o", "addopts=--doctest-modules", "-p", "no:cacheprovider", *paths],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_mode_folders_are_doctested_under_their_engine_names():
    ids = collected("graph/ir/graph.py", "eager/buffer_cache.py", "engine/op.py")
    assert "graph/ir/graph.py::engine.graph.ir.graph" in ids
    assert "eager/buffer_cache.py::engine.eager.buffer_cache" in ids
    assert "engine/op.py::engine.op.declare" in ids
    assert not [i for i in ids if "::graph." in i or "::eager." in i], ids


def test_files_under_tests_are_collected_as_tests_only():
    ids = collected("tests/project/test_contracts.py")
    assert ids and all("::test_" in i for i in ids), ids


def test_the_default_run_includes_the_package_doctests():
    ids = collected()
    assert "graph/lowering/numba/whole_graph.py::engine.graph.lowering.numba.whole_graph" in ids
    assert any(i.startswith("engine/") for i in ids) and any(i.startswith("tests/") for i in ids)


def test_the_root_conftest_examples():
    # conftest.py is not a package module, so its own examples run here.
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failures, tried = doctest.testmod(module)
    assert tried >= 4 and failures == 0
