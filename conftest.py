"""Doctests of the package's own modules (``--doctest-modules``, on in pyproject.toml).

Doctests are collected from the package's folders only (``engine/``, ``eager/``,
``graph/``): the files under ``tests/`` are tests and their helpers, collected
as tests, not imported a second time for examples.

In the repository ``graph/`` and ``eager/`` are the subpackages ``engine.graph``
and ``engine.eager`` (``engine/_layout.py``). pytest names a module by its
folders, so left alone it would import ``graph/ir/graph.py`` a second time as a
top-level ``graph.ir.graph``: a copy whose classes are not the engine's, which
the layering test forbids. Each doctest file under those folders is imported
under its real name instead.

Compiled regions made by doctests are cached in a fresh folder for the session,
as the test suite's are (``tests/conftest.py``), never in the user's cache.
"""
import importlib
import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
# The folders mapped into the package, and their names inside it.
SUBPACKAGES = {"graph": "engine.graph", "eager": "engine.eager"}
# The folders whose modules' examples run as doctests.
PACKAGE_FOLDERS = ("engine", *SUBPACKAGES)

os.environ.setdefault("ENGINE_CACHE_DIR", tempfile.mkdtemp(prefix="engine-doctest-cache-"))


def module_name(path):
    """The importable name of a source file under ``graph/`` or ``eager/``, else None.

    >>> module_name(ROOT / "graph" / "ir" / "graph.py")
    'engine.graph.ir.graph'
    >>> module_name(ROOT / "eager" / "__init__.py")
    'engine.eager'
    >>> module_name(ROOT / "engine" / "op.py") is None
    True
    """
    try:
        parts = Path(path).resolve().relative_to(ROOT).with_suffix("").parts
    except ValueError:
        return None
    if not parts or parts[0] not in SUBPACKAGES:
        return None
    parts = (SUBPACKAGES[parts[0]],) + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def in_package(path):
    """Whether a file lies in one of the package's folders.

    >>> in_package(ROOT / "graph" / "ir" / "graph.py"), in_package(ROOT / "tests" / "x.py")
    (True, False)
    """
    try:
        parts = Path(path).resolve().relative_to(ROOT).parts
    except ValueError:
        return False
    return len(parts) > 1 and parts[0] in PACKAGE_FOLDERS


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Put back every ``en.config`` setting a doctest changed, so no example (nor a failed
    one's half-run setting) changes what the tests that run after it in the process see."""
    if type(item).__name__ != "DoctestItem":
        return (yield)
    from engine import config
    settings = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    try:
        return (yield)
    finally:
        vars(config).update(settings)


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    """Keep doctest collectors for the package's files only, each pointed at its real module."""
    collected = yield
    doctests = [c for c in collected if type(c).__name__ == "DoctestModule"]
    if not doctests:
        return collected
    if not in_package(file_path):
        return [c for c in collected if c not in doctests]
    name = module_name(file_path)
    if name is not None:
        for collector in doctests:
            # A collector's module is what its ``_getobj`` returns (read once, through
            # ``collector.obj``); the module is imported by name, as the engine imports it.
            collector._getobj = lambda name=name: importlib.import_module(name)
    return collected
