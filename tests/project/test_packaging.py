"""The package: one import name, ``engine``, that a user's own files cannot break.

Each check runs a fresh interpreter (``subprocess``) from a temporary folder
that holds a user's own ``graph.py``, ``eager.py`` and ``bench.py`` (each
raising when imported), so they shadow nothing of the engine:

* from the source checkout (the repository on ``PYTHONPATH``, nothing installed);
* from a wheel built from a copy of the repository and installed into a folder:
  the wheel holds ``engine/`` and its metadata only (``graph/`` and ``eager/``
  become ``engine/graph/`` and ``engine/eager/``; ``bench/`` is not installed).

``import engine`` loads neither networkx nor the graph compiler; the first
traced function does.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import engine as en
from support.paths import REPO

ROOT = REPO

# Run from the user's folder: the engine imports lightly, then a traced function works.
USER_SCRIPT = r"""
import sys
import engine as en
heavy = sorted(m for m in sys.modules if m == "networkx" or m.startswith(("networkx.", "engine.graph")))
assert not heavy, f"import engine loaded {heavy[:5]}"
f = en.function(lambda x, w: en.sum(en.tanh(x @ w)))
x, w = en.ones((2, 3)), en.full((3, 4), 0.5)
assert abs(float(f(x, w)) - 8 * __import__("math").tanh(1.5)) < 1e-12
assert f.trace_count == 1 and "networkx" in sys.modules
copies = sorted(m for m in sys.modules if m.split(".")[0] in ("graph", "eager", "bench"))
assert not copies, f"top-level copies of engine modules: {copies}"
print("ok", en.__file__, sys.modules["engine.graph"].__file__)
"""


def _user_folder(tmp_path):
    folder = tmp_path / "user"
    folder.mkdir()
    for name in ("graph", "eager", "bench"):
        (folder / f"{name}.py").write_text(
            f"raise RuntimeError('the engine imported the user\\'s own {name}.py')\n")
    (folder / "script.py").write_text(USER_SCRIPT)
    return folder


def _run(folder, pythonpath):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([sys.executable, "-W", "ignore", "script.py"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split()


def test_a_users_own_graph_eager_and_bench_files_break_nothing(tmp_path):
    ok, engine_file, graph_file = _run(_user_folder(tmp_path), ROOT)
    assert ok == "ok"
    assert engine_file == os.path.join(ROOT, "engine", "__init__.py")
    assert graph_file == os.path.join(ROOT, "graph", "__init__.py")   # the folder, mapped


# Another checkout installed in editable mode: setuptools puts a finder on sys.meta_path at
# start-up that maps engine.graph and engine.eager to that checkout's folders (here decoys
# that raise). Importing engine from this checkout must still give this checkout's modes.
OTHER_CHECKOUT_PRELUDE = r"""
import importlib.util, sys
class OtherCheckoutFinder:
    def find_spec(self, fullname, path=None, target=None):
        if fullname in ("engine.graph", "engine.eager"):
            return importlib.util.spec_from_file_location(
                fullname, DECOY, submodule_search_locations=[])
sys.meta_path.append(OtherCheckoutFinder())
"""


def test_a_checkout_uses_its_own_modes_when_another_is_installed_editable(tmp_path):
    folder = _user_folder(tmp_path)
    decoy = tmp_path / "other_checkout_mode.py"
    decoy.write_text("raise RuntimeError('imported the other checkout')\n")
    script = folder / "script.py"
    script.write_text(f"DECOY = {str(decoy)!r}\n" + OTHER_CHECKOUT_PRELUDE + USER_SCRIPT)
    ok, engine_file, graph_file = _run(folder, ROOT)
    assert (ok, engine_file) == ("ok", os.path.join(ROOT, "engine", "__init__.py"))
    assert graph_file == os.path.join(ROOT, "graph", "__init__.py")


def _setuptools_builds_wheels():
    spec = importlib.util.find_spec("setuptools")
    if spec is None:
        return False
    import setuptools
    return int(setuptools.__version__.split(".")[0]) >= 77   # license = "SPDX expression"


@pytest.mark.skipif(not _setuptools_builds_wheels(), reason="needs setuptools>=77 to build")
def test_the_wheel_installs_one_import_name_that_works(tmp_path):
    src = tmp_path / "src"   # a copy: building writes build/ and *.egg-info next to the sources
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(os.path.join(ROOT, name), src)
    for name in ("engine", "graph", "eager", "bench"):
        shutil.copytree(os.path.join(ROOT, name), src / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"),
                          str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        metadata = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert {n.split("/")[0] for n in names} == {"engine", info}
    assert "engine/graph/lowering/pipeline.py" in names and "engine/eager/mode.py" in names
    assert not [n for n in names if "bench" in n.split("/")[0:2]]
    assert re.search(rf"^Version: {re.escape(en.__version__)}$", metadata, re.M)
    assert re.search(r"^License-Expression: \S+", metadata, re.M)
    assert re.search(r"^Classifier: Programming Language :: Python :: 3$", metadata, re.M)

    site = tmp_path / "site"
    subprocess.run(pip + ["install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    assert sorted(os.listdir(site)) == sorted(["engine", info])
    ok, engine_file, graph_file = _run(_user_folder(tmp_path), str(site))
    assert ok == "ok"
    assert engine_file == str(site / "engine" / "__init__.py")
    assert graph_file == str(site / "engine" / "graph" / "__init__.py")


def test_import_engine_loads_no_graph_mode_until_a_name_needs_it():
    code = ("import sys, engine as en\n"
            "assert 'networkx' not in sys.modules and 'engine.graph' not in sys.modules\n"
            "assert 'function' in dir(en) and 'function' in en.__all__\n"
            "x = en.exp(en.ones(3)) @ en.ones(3)\n"       # eager ops need no graph mode
            "assert 'networkx' not in sys.modules\n"
            "spec = en.TensorSpec((None, 3))\n"
            "assert 'networkx' in sys.modules\n"
            "import engine.graph.ir.signature as s\n"
            "assert en.TensorSpec is s.TensorSpec and en.__dict__['TensorSpec'] is s.TensorSpec\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_lazy_names_are_the_graph_modules_own_objects():
    import engine.graph as g
    for name in ("function", "Function", "run_functions_eagerly", "TensorSpec", "is_tracing",
                 "cond", "scan", "while_loop", "print", "py_function"):
        assert getattr(en, name) is getattr(g, name), name
    assert en.autograph is sys.modules["engine.graph.jit.autograph"]
    assert en.save is sys.modules["engine.graph.export.native"].save
    assert en.load is sys.modules["engine.graph.export.load"].load
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        en.no_such_name   # noqa: B018


def test_version_is_a_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", en.__version__)
