"""The public namespace of ``engine`` is pinned: ``import engine as en`` gives the public
API and nothing else (no ``en.np``, registry entries ``en.NAME_op``, op-family modules
such as ``en.ops.reduce``, or helpers), and the list is the one in tests/project/public_api.txt.

Adding a public function? Add its name to tests/project/public_api.txt (sorted, one a line).
"""
import json
import os
import subprocess
import sys
import types

import pytest

import engine as en
from support.paths import REPO

ROOT = REPO
PINNED = os.path.join(ROOT, "tests", "project", "public_api.txt")

# A fresh interpreter: other tests import submodules lazily, which binds them on the package.
_PROBE = """
import json, types, engine
names = [n for n in dir(engine) if not n.startswith("_")]
print(json.dumps({"all": list(engine.__all__), "dir": names,
                  "modules": {n: getattr(engine, n).__name__ for n in names
                              if isinstance(getattr(engine, n), types.ModuleType)}}))
"""


@pytest.fixture(scope="module")
def fresh():
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def pinned_names():
    with open(PINNED, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def test_pinned_file_is_sorted_and_unique():
    names = pinned_names()
    assert names == sorted(set(names)), (
        "tests/project/public_api.txt must hold one name a line, sorted, no repeats; "
        f"out of order or repeated: {[n for i, n in enumerate(names) if i and n <= names[i - 1]]}")


def test_public_names_match_the_pinned_list(fresh):
    have, want = set(fresh["all"]), set(pinned_names())
    new, missing = sorted(have - want), sorted(want - have)
    assert not new and not missing, (
        f"engine.__all__ differs from tests/project/public_api.txt.\n"
        f"  new in engine (public now, not in the file): {new}\n"
        f"  in the file, missing from engine: {missing}\n"
        "If a new name is public API, add it to tests/project/public_api.txt (sorted); if it is a "
        "helper, keep it out of the namespace (engine/__init__.py: _NOT_PUBLIC, or an "
        "__all__ in its op family). A name missing from engine that should be there: an op "
        "function must be bound in engine.ops; other objects go in _PUBLIC_FACADE.")


def test_the_module_holds_nothing_beyond_all(fresh):
    stray = sorted(set(fresh["dir"]) - set(fresh["all"]))
    assert not stray, f"names bound on engine but not in engine.__all__: {stray}"
    assert sorted(fresh["all"]) == fresh["all"]


def test_internals_are_not_public(fresh):
    names = set(fresh["all"])
    for internal in ("np", "builtins", "operator", "register", "declare", "unbroadcast",
                     "reduce", "compare", "elementwise", "shape_ops", "modes", "op"):
        assert internal not in names, internal
    assert not [n for n in names if n.endswith("_op")]
    ops_modules = {n: m for n, m in fresh["modules"].items() if m.startswith("engine.ops.")}
    assert not ops_modules, f"op-family modules on the public namespace: {ops_modules}"


def test_en_nn_is_the_layers_package():
    assert en.nn.__name__ == "engine.nn"
    assert issubclass(en.nn.Linear, en.nn.Module)


def test_every_public_name_resolves_and_internals_stay_reachable_in_ops():
    for name in en.__all__:
        assert getattr(en, name) is not None, name
    # The registry entries and the VJP-only ops are still there for passes and tests.
    assert isinstance(en.ops.exp_op, en.Op) and en.REGISTRY["exp"] is en.ops.exp_op
    assert callable(en.ops.sigmoid_grad) and callable(en.ops.conv2d_backprop_input)
    assert isinstance(en.ops, types.ModuleType)


def test_star_import_gives_the_public_api():
    scope = {}
    exec("from engine import *", scope)
    assert set(scope) - {"__builtins__"} == set(en.__all__)


def test_en_random_shows_its_own_names_only():
    """``dir(en.random)``: its public functions and its ops' registry entries, none of the
    names it imports (numpy, the error classes, ``apply``...)."""
    shown = {n for n in dir(en.random) if not n.startswith("_")}
    ops = {n for n in shown if isinstance(getattr(en.random, n), en.Op)}
    assert ops == {"random_normal_op", "random_uniform_op", "random_uniform_like_op"}
    assert shown - ops == set(en.random.__all__)
    assert all(callable(getattr(en.random, n)) for n in en.random.__all__)
