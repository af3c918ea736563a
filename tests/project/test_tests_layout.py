"""tests/ mirrors the source and stays so: test files live in subject folders, never at
the top; their names are unique (test folders are not packages); helpers come from
tests/support/ or tests/op_db/, never from another test module, a star import or an
edit of sys.path."""
import ast
import os
import re

from support.paths import TESTS

# What may sit at the top of tests/ besides folders.
TOP_LEVEL_FILES = {"conftest.py"}


def _python_files():
    for folder, dirs, files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if d != "__pycache__" and not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def _test_modules():
    return [p for p in _python_files() if os.path.basename(p).startswith("test_")]


def test_no_test_file_at_the_top_of_tests():
    stray = sorted(name for name in os.listdir(TESTS)
                   if os.path.isfile(os.path.join(TESTS, name)) and name not in TOP_LEVEL_FILES)
    assert not stray, (f"files at the top of tests/: {stray}; put each in the folder that mirrors "
                       "what it tests (docs/design.md, section Tests)")


def test_test_file_names_are_unique():
    seen = {}
    for path in _test_modules():
        seen.setdefault(os.path.basename(path), []).append(os.path.relpath(path, TESTS))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, (f"test files with the same name (pytest imports them by name): "
                         f"{clashes}")


def test_test_folders_are_not_packages():
    # An __init__.py would change the module names pytest gives every test below it.
    inits = sorted(os.path.relpath(p, TESTS) for p in _python_files()
                   if os.path.basename(p) == "__init__.py"
                   and os.path.relpath(p, TESTS).split(os.sep)[0] not in ("support", "op_db"))
    assert not inits, f"test folders holding __init__.py: {inits}"


def _problems(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if any(alias.name == "*" for alias in node.names):
                yield f"line {node.lineno}: star import from {node.module}"
            if re.match(r"test_", node.module):
                yield f"line {node.lineno}: imports the test module {node.module}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("test_"):
                    yield f"line {node.lineno}: imports the test module {alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "insert" and isinstance(node.func.value, ast.Attribute)
              and node.func.value.attr == "path"
              and isinstance(node.func.value.value, ast.Name)
              and node.func.value.value.id == "sys"
              and "__file__" in ast.unparse(node)):
            yield f"line {node.lineno}: puts its own folder on sys.path"


def test_helpers_come_from_support_not_from_other_tests():
    found = {os.path.relpath(p, TESTS): list(_problems(p)) for p in _python_files()}
    found = {p: problems for p, problems in found.items() if problems}
    assert not found, ("shared helpers belong in tests/support/ (the op database in "
                       f"tests/op_db/), imported by name: {found}")


def test_the_checks_see_what_they_look_for(tmp_path):
    bad = tmp_path / "test_bad.py"
    bad.write_text("import sys, os\nfrom test_other import helper\nfrom op_db.core import *\n"
                   "sys.path.insert(0, os.path.dirname(__file__))\n")
    assert len(list(_problems(str(bad)))) == 3
    good = tmp_path / "test_good.py"
    good.write_text("import sys\nfrom support.finite_diff import central_difference\n"
                    "sys.path.insert(0, '/elsewhere')\n")
    assert list(_problems(str(good))) == []
