"""Doctests of the package's own modules (``--doctest-modules engine eager graph``).

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


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    """Point the doctest collector of a ``graph/`` or ``eager/`` file at its real module."""
    collected = yield
    name = module_name(file_path)
    if name is None:
        return collected
    for collector in collected:
        if type(collector).__name__ == "DoctestModule":
            # A collector's module is what its ``_getobj`` returns (read once, through
            # ``collector.obj``); the module is imported by name, as the engine imports it.
            collector._getobj = lambda name=name: importlib.import_module(name)
    return collected
