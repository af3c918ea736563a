"""numpy's and the Array API standard's names, declared once beside each engine function
(``engine/names.py``): numpy dispatch and ``engine.array_api`` find every name they
found when their alias tables were written by hand (tests/interop/names_reference.txt), and
those tables are gone."""
import importlib
import pathlib

import numpy as np
import pytest

import engine as en
import engine.array_api as xp
from engine import names, numpy_dispatch
from engine.array_api._lookup import standard_function
from support.paths import REPO

_HERE = pathlib.Path(__file__).parent
_ENGINE = pathlib.Path(REPO) / "engine"


def _reference():
    numpy_rows, standard_rows = [], []
    for line in (_HERE / "names_reference.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        key, target = line.split()
        namespace, name = key.split(":")
        row = (namespace, name, target)
        (standard_rows if namespace == "array_api" else numpy_rows).append(row)
    return numpy_rows, standard_rows


NUMPY_ROWS, STANDARD_ROWS = _reference()


def _engine_object(path):
    """``"en.linalg.norm"`` -> the object."""
    obj = en
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def test_the_reference_is_not_empty():
    assert len(NUMPY_ROWS) > 200 and len(STANDARD_ROWS) > 100


@pytest.mark.parametrize("module, name, target", NUMPY_ROWS,
                         ids=[f"{m}.{n}" for m, n, _ in NUMPY_ROWS])
def test_every_numpy_name_reaches_the_same_engine_function(module, name, target):
    numpy_dispatch._FOUND.clear()       # look it up afresh, through the generated lookup
    assert numpy_dispatch.engine_function(module, name) is _engine_object(target)


@pytest.mark.parametrize("namespace, name, target", STANDARD_ROWS,
                         ids=[n for _, n, _ in STANDARD_ROWS])
def test_every_standard_name_reaches_the_same_engine_function(namespace, name, target):
    assert standard_function(name) is _engine_object(target)
    space, _, own = name.rpartition(".")
    assert own in getattr(xp, space, xp).__all__ if space else name in xp.__all__


def test_a_differing_name_is_found_through_the_generated_tables():
    """Where numpy's or the standard's name is not the function's own, only a
    declaration can find it."""
    numpy_table, standard_table = names.numpy_aliases(), names.array_api_aliases()
    assert numpy_table["radians"] is en.deg2rad and numpy_table["amax"] is en.max
    assert numpy_table["astype"] is en.cast and numpy_table["permute_dims"] is en.transpose
    assert standard_table["permute_dims"] is en.transpose
    assert standard_table["linalg.matrix_norm"] is en.linalg.norm
    assert standard_table["linalg.trace"] is en.trace       # over axis1/axis2, not en.linalg's
    for namespace, name, target in NUMPY_ROWS:
        qualified = name if namespace == "numpy" else namespace[len("numpy."):] + "." + name
        if _engine_object(target).__name__ != name and not _bound(qualified, target):
            assert numpy_table[qualified] is _engine_object(target), qualified
    for _, name, target in STANDARD_ROWS:
        if _engine_object(target).__name__ != name.rpartition(".")[2] \
                and not _bound(name, target):
            assert standard_table[name] is _engine_object(target), name


def _bound(qualified, target):
    """Whether the engine binds ``qualified`` to ``target`` under that very name."""
    space, _, own = qualified.rpartition(".")
    namespace = getattr(en, space) if space else en
    return own in namespace.__all__ and getattr(namespace, own) is _engine_object(target)


def _public_functions():
    """``(qualified name, function)`` for every public function of en, en.linalg, en.fft
    (graph mode's lazily imported names left out: reading them would import it)."""
    lazy = set(en._GRAPH_NAMES) | set(en._GRAPH_MODULES)
    for space, namespace in (("", en), ("linalg.", en.linalg), ("fft.", en.fft)):
        for name in namespace.__all__:
            if namespace is en and name in lazy:
                continue
            fn = getattr(namespace, name)
            if callable(fn) and not isinstance(fn, type):
                yield space, name, namespace, fn


def test_every_second_name_the_engine_binds_is_declared():
    """``en.subtract`` is ``en.sub``: the second name is numpy's or the standard's, and
    the function says so where it is defined."""
    declared = names.declared()
    seen = 0
    for space, name, namespace, fn in _public_functions():
        own = getattr(fn, "__name__", name)
        if own == name or getattr(namespace, own, None) is not fn:
            continue
        seen += 1
        numpy_names, standard_names = declared.get(fn, ((), ()))
        assert space + name in numpy_names + standard_names, (
            f"en.{space}{name} is en.{space}{own}: declare it with also_named({own}, "
            f"numpy=..., array_api=...) beside {own}'s definition")
    assert seen >= 20


def test_a_declared_numpy_name_the_engine_binds_is_the_declared_function():
    """A declared standard name may differ: it wins over the engine's own function of that
    name (``xp.linalg.trace`` adapts ``en.trace``, not ``en.linalg.trace``)."""
    for fn, (numpy_names, _) in names.declared().items():
        for qualified in numpy_names:
            space, _, own = qualified.rpartition(".")
            namespace = getattr(en, space) if space else en
            if own in namespace.__all__:
                assert getattr(namespace, own) is fn, qualified


def test_declared_names_are_numpy_and_standard_functions():
    """An independent check of each declaration: numpy has the function, and the
    standard's namespace defines the name."""
    declared = names.declared()
    assert len(declared) >= 20
    for fn, (numpy_names, standard_names) in declared.items():
        for qualified in numpy_names:
            space, _, own = qualified.rpartition(".")
            assert callable(getattr(getattr(np, space) if space else np, own, None)), qualified
        for qualified in standard_names:
            space, _, own = qualified.rpartition(".")
            assert own in (getattr(xp, space) if space else xp).__all__, qualified


def test_not_numpy_keeps_a_function_from_numpy_calls():
    assert not names.is_numpy(en.split) and names.is_numpy(en.concat)
    numpy_dispatch._FOUND.clear()
    assert numpy_dispatch.engine_function("numpy", "split") is None   # a handler converts it
    assert numpy_dispatch.engine_function("numpy", "save") is None    # graph mode's en.save


def test_one_name_for_two_functions_is_an_error(monkeypatch):
    monkeypatch.setattr(names, "_DECLARED", {})
    names.also_named(en.sub, numpy="subtract")
    names.also_named(en.add, numpy="subtract")
    with pytest.raises(en.EngineError, match="'subtract' is declared for both sub and add"):
        names.numpy_aliases()
    with pytest.raises(en.EngineError, match="non-empty string"):
        names.also_named(en.add, array_api=("",))


def test_declarations_merge_and_keep_their_order(monkeypatch):
    monkeypatch.setattr(names, "_DECLARED", {})
    names.also_named(en.div, numpy="divide")
    names.also_named(en.div, numpy=("true_divide", "divide"), array_api="divide")
    assert names.declared()[en.div] == (("divide", "true_divide"), ("divide",))


def test_the_hand_written_tables_are_gone():
    for attr in ("ALIASES", "NOT_NUMPY"):
        assert not hasattr(numpy_dispatch, attr), attr
    for path in sorted((_ENGINE / "ops").glob("*.py")):
        module = importlib.import_module(f"engine.ops.{path.stem}")
        assert not hasattr(module, "STANDARD_NAMES"), path.name
    elementwise = importlib.import_module("engine.array_api._elementwise")
    for table in (elementwise.UNARY, elementwise.BINARY):   # names only, no candidates
        assert all(isinstance(name, str) for name in table)
    sources = [p.read_text() for p in (_ENGINE / "array_api").glob("*.py")]
    sources.append((_ENGINE / "numpy_dispatch.py").read_text())
    assert not any("STANDARD_NAMES" in s or "engine_function(*" in s for s in sources)
