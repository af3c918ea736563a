"""Skipping the tests of a compiled lowering where its compiler is missing, said once.

CI has gcc and numba, so nothing here skips there; a checkout without them still runs
every other test. ``needs_c_compiler`` marks a test (or, as ``pytestmark``, a module);
``skip_without_c_compiler()`` skips one case of a parametrized test; ``import_numba()``
returns numba or skips (at module level: the whole module). ``record_c_builds`` gives a
test a fresh C cache and the flags of each library compiled from then on.

Example:
    >>> from support.compilers import has_c_compiler, needs_c_compiler
    >>> isinstance(has_c_compiler(), bool) and needs_c_compiler.name == "skipif"
    True
"""
import importlib

import pytest

from engine.graph.lowering import hot_swap
from engine.graph.lowering.c import c_compiler

C_REASON = "the C lowering needs a C compiler (gcc or cc)"
NUMBA_REASON = "the compiled lowering needs numba (pip install '.[jit]')"


def has_c_compiler():
    """Whether a C compiler runs here (``$CC``, Python's own, ``cc`` or ``gcc``)."""
    return c_compiler.available()


def has_numba():
    """Whether numba imports here."""
    try:
        importlib.import_module("numba")
    except ImportError:
        return False
    return True


needs_c_compiler = pytest.mark.skipif(not has_c_compiler(), reason=C_REASON)


def skip_without_c_compiler():
    """Skip the calling test where no C compiler runs (its numpy or numba cases still run)."""
    if not has_c_compiler():
        pytest.skip(C_REASON)


def import_numba():
    """numba, or skip the calling test (called at module level: the whole module)."""
    return pytest.importorskip("numba", reason=NUMBA_REASON)


def unbuilt(monkeypatch, library):
    """Make a per-dtype C library (``c_dtype_library.DtypeLibraries``) look never built in
    this process: its next look starts a build (from the disk cache, or in the
    background)."""
    monkeypatch.setattr(library, "built", {})
    monkeypatch.setattr(library, "pending", {})


def record_c_builds(monkeypatch, tmp_path):
    """A fresh C cache folder with nothing loaded; returns the list to which the flags of
    each library compiled from now on are appended, in order. Earlier tests' background
    builds are waited for first: they would run the recording compiler."""
    hot_swap.wait_for_compiles()
    monkeypatch.setenv("ENGINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(c_compiler, "_LOADED", {})
    flags: list = []
    real = c_compiler._compile

    def compile_(command, settings, c_name, so_name, where):
        flags.append(tuple(settings[0]))
        return real(command, settings, c_name, so_name, where)
    monkeypatch.setattr(c_compiler, "_compile", compile_)
    return flags
