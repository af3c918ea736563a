"""The import layering: no import cycles between files, and a core that knows no mode.

Every module of ``engine/``, ``eager/`` and ``graph/`` is parsed with ``ast``
(nothing is imported) and each import, at module level or inside a function,
becomes an edge to the file it loads:

* ``import engine.x`` and ``from engine.x import y`` depend on ``engine/x.py``
  (or ``engine/x/__init__.py``), and ``from engine.x import y`` on
  ``engine/x/y.py`` instead when ``y`` is a submodule;
* ``import engine`` and ``from engine import y`` (a name of the facade)
  depend on the facade ``engine/__init__.py``.

The parent packages Python runs first are not edges: a package's
``__init__`` importing its own submodules would otherwise always be a cycle.
The modes live in the folders ``graph/`` and ``eager/`` but are the
subpackages ``engine.graph`` and ``engine.eager`` (``engine/_layout.py``); the
names the facade imports lazily (its ``_GRAPH_NAMES``) are edges too, and no
file in the repository may import the folders under the top-level names
``graph`` or ``eager`` (which would load a second copy of each module).
"""
import ast
import json
import os
import re

import pytest
from support.paths import REPO

ROOT = REPO
# {package name: its folder in the repository}
PACKAGES = {"engine": "engine", "engine.eager": "eager", "engine.graph": "graph"}
MODES = ("engine.eager", "engine.graph")
FACADE = "engine"
# Top-level names that must never be imported: the mode folders outside their package.
FORBIDDEN_TOP_LEVEL = ("graph", "eager")


def discover(root, packages):
    """``{module name: path}`` for every ``.py`` file of ``packages`` under ``root``;
    ``packages`` is a tuple of folder names or a ``{package name: folder}`` dict."""
    if not isinstance(packages, dict):
        packages = {p: p for p in packages}
    files = {}
    for package, top in packages.items():
        top = os.path.join(root, top)
        for folder, _, names in os.walk(top):
            for name in names:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
                module = package if rel == "__init__" else f"{package}.{rel}"
                if module.endswith(".__init__"):
                    module = module[:-len(".__init__")]
                files[module] = path
    return files


def _lazy_edges(files):
    """The facade's lazy imports: ``{(module, name, line)}`` from its ``_GRAPH_NAMES`` and
    ``_GRAPH_MODULES`` dicts (module attribute -> submodule of ``engine.graph``)."""
    path = files.get(FACADE)
    if path is None:
        return set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
                getattr(t, "id", None) in ("_GRAPH_NAMES", "_GRAPH_MODULES") for t in node.targets):
            for key, value in zip(node.value.keys, node.value.values):
                target = f"{FACADE}.graph.{value.value}"
                if target in files:
                    found.add((target, None, node.lineno))
    return found


def _imports(tree):
    """Every import statement in ``tree``, at any depth, except those under
    ``if TYPE_CHECKING:``: read by the type checker only, they never run, so they make
    no import order (``engine/ops/creation.py`` names ``Tensor`` in its annotations)."""
    type_only = {id(n) for block in ast.walk(tree)
                 if isinstance(block, ast.If) and _is_type_checking(block.test)
                 for stmt in block.body for n in ast.walk(stmt)}
    return [n for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in type_only]


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def test_type_only_imports_make_no_edge():
    tree = ast.parse("import a\nif TYPE_CHECKING:\n    import b\nelse:\n    import c\n"
                     "if typing.TYPE_CHECKING:\n    from d import e\n")
    assert sorted(n.names[0].name for n in _imports(tree)) == ["a", "c"]


def _late_imports(tree):
    """``[(module name, line)]`` of each ``import_module("literal")`` call in ``tree``."""
    return [(n.args[0].value, n.lineno) for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None))
            == "import_module" and n.args and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)]


def import_edges(files):
    """``{module: {(imported module, imported name or None, line)}}`` within ``files``."""
    edges = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        found = set()
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name
                    while target and target not in files:
                        target = target.rpartition(".")[0]
                    if target:
                        found.add((target, None, node.lineno))
                continue
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in files:                  # a submodule: that file
                    found.add((sub, None, node.lineno))
                elif _c_extension(files, source, alias.name):
                    continue                      # a C extension imports nothing of ours
                elif source in files:             # a name: the module defining it
                    found.add((source, alias.name, node.lineno))
        if module == FACADE:
            found |= _lazy_edges(files)
        edges[module] = {e for e in found if e[0] != module}
    return edges


def _c_extension(files, package, name):
    """Whether ``package.name`` is a C extension built from ``name.c`` in the package's
    folder (setup.py's ext_modules: engine/_fast_writes.c)."""
    init = files.get(package, "")
    return init.endswith("__init__.py") and os.path.exists(
        os.path.join(os.path.dirname(init), f"{name}.c"))


def cycles(edges):
    """The strongly connected sets of more than one module (import cycles), sorted."""
    graph = {m: {t for t, _, _ in deps} for m, deps in edges.items()}
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):   # Tarjan's algorithm, iteratively (no recursion limit)
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    scc = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        scc.add(w)
                        if w == node:
                            break
                    if len(scc) > 1:
                        out.append(frozenset(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out, key=sorted)


def _describe(scc, edges):
    lines = [f"import cycle among {sorted(scc)}:"]
    for m in sorted(scc):
        for target, _, line in sorted(edges[m], key=lambda e: (e[0], e[2])):
            if target in scc:
                lines.append(f"  {m} (line {line}) -> {target}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def edges():
    return import_edges(discover(ROOT, PACKAGES))


def test_no_import_cycles(edges):
    bad = cycles(edges)
    assert not bad, "\n".join(_describe(scc, edges) for scc in bad)


def test_no_project_imports_inside_functions():
    # An import inside a function is how a cycle hides; only optional third-party
    # packages (numba, onnx) are imported late, when a feature needs them.
    files = discover(ROOT, PACKAGES)
    bad = []
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in _imports(fn):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
                if (isinstance(node, ast.ImportFrom) and node.level) or any(
                        n.split(".")[0] in ("engine", *FORBIDDEN_TOP_LEVEL) for n in names):
                    bad.append(f"{module} (line {node.lineno}, in {fn.name})")
    assert not bad, "imports of the engine's own modules inside functions:\n  " + "\n  ".join(bad)


def _package_of(module):
    """The layer a module belongs to: ``engine.graph``, ``engine.eager`` or ``engine``."""
    return next((m for m in MODES if module == m or module.startswith(m + ".")),
                module.split(".")[0])


def test_the_core_imports_no_mode(edges):
    bad = [f"{m} (line {line}) imports {target}"
           for m, deps in edges.items()
           if _package_of(m) == FACADE and m != FACADE
           for target, _, line in deps if _package_of(target) in MODES]
    assert not bad, ("the core must not import eager or graph (the facade "
                     "engine/__init__.py wires the modes):\n  " + "\n  ".join(bad))


def test_private_names_stay_in_their_package(edges):
    bad = [f"{m} (line {line}) imports {name} from {target}"
           for m, deps in edges.items()
           for target, name, line in deps
           if name and name.startswith("_") and not name.startswith("__")
           and _package_of(target) != _package_of(m)]
    assert not bad, "private names imported across packages:\n  " + "\n  ".join(bad)


def _top_level_mode_imports(source, filename):
    """``[(line, name)]`` of each import of ``graph``/``eager`` (or below) as a top-level name."""
    bad = []
    for node in _imports(ast.parse(source, filename=filename)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [] if node.level else [node.module or ""])
        bad += [(node.lineno, n) for n in names if n.split(".")[0] in FORBIDDEN_TOP_LEVEL]
    return bad


def _code_blocks(path):
    """The Python code of a Markdown file's fenced blocks (doctest prompts stripped) or of a
    notebook's code cells, as ``[(first line or cell number, source)]``."""
    if path.endswith(".ipynb"):
        with open(path, encoding="utf-8") as f:
            cells = json.load(f)["cells"]
        return [(i, "".join(c["source"])) for i, c in enumerate(cells)
                if c["cell_type"] == "code"]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    blocks = []
    for match in re.finditer(r"^```(?:python|pycon|py)\n(.*?)^```", text, re.M | re.S):
        lines = [re.sub(r"^(>>> |\.\.\. )", "", line) for line in match.group(1).splitlines()
                 if line.startswith((">>> ", "... ")) or not match.group(0).startswith("```pycon")]
        blocks.append((text.count("\n", 0, match.start()) + 2, "\n".join(lines)))
    return blocks


def _repository_sources():
    """Every Python file, Markdown file and notebook the repository ships (not caches)."""
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in
                   ("__pycache__", "build", "bench_results") and not d.endswith(".egg-info")]
        for name in names:
            if name.endswith((".py", ".md", ".ipynb")):
                yield os.path.join(folder, name)


def test_nothing_imports_the_mode_folders_as_top_level_packages():
    # ``import graph`` beside ``import engine.graph`` would load every graph module twice (two
    # registries of passes, two TraceMode classes), and an installed engine has no ``graph``.
    bad = []
    for path in _repository_sources():
        rel = os.path.relpath(path, ROOT)
        if path.endswith(".py"):
            with open(path, encoding="utf-8") as f:
                found = _top_level_mode_imports(f.read(), path)
        else:
            found = []
            for where, code in _code_blocks(path):
                try:
                    found += [(where, n) for _, n in _top_level_mode_imports(code, path)]
                except SyntaxError:   # console output or a fragment: scan it by lines
                    found += [(where, m.group(2)) for m in re.finditer(
                        r"^\s*(from|import)\s+((?:graph|eager)\b[\w.]*)", code, re.M)]
        bad += [f"{rel}:{line} imports {name}" for line, name in found]
    assert not bad, ("import engine.graph / engine.eager, never the folders by their own names:"
                     "\n  " + "\n  ".join(bad))


def test_the_top_level_import_finder_finds_them(tmp_path):
    found = _top_level_mode_imports(
        "import graph\nfrom eager.mode import EAGER\nimport engine.graph\n"
        "from . import graph\ndef f():\n    import graph.passes as p\n", "<test>")
    assert found == [(1, "graph"), (2, "eager.mode"), (6, "graph.passes")]
    doc = tmp_path / "doc.md"
    doc.write_text("text\n```pycon\n>>> from graph.ir.graph import Graph\n>>> 1\n1\n```\n")
    assert [n for _, code in _code_blocks(str(doc))
            for _, n in _top_level_mode_imports(code, "doc")] == ["graph.ir.graph"]


MODE_CLASSES = ("EagerMode", "TraceMode")
MODE_MODULES = ("engine.eager.mode", "engine.graph.jit.tracer")


def _mode_tests(tree):
    """``isinstance(x, EagerMode/TraceMode)``, ``type(x) is ...Mode`` and ``.name == "..."``
    comparisons of a mode: the places that test which mode runs instead of asking it."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" \
                and len(node.args) == 2:
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(getattr(c, "id", getattr(c, "attr", None)) in MODE_CLASSES for c in classes):
                found.append(node.lineno)
        elif isinstance(node, ast.Compare):
            sides = [node.left] + list(node.comparators)
            if any(getattr(s, "id", getattr(s, "attr", None)) in MODE_CLASSES for s in sides):
                found.append(node.lineno)
            elif any(isinstance(s, ast.Attribute) and s.attr == "name"
                     and isinstance(s.value, ast.Call)
                     and getattr(s.value.func, "id", None) == "current_mode" for s in sides):
                found.append(node.lineno)
    return found


def test_nothing_outside_a_mode_tests_which_mode_runs():
    bad = []
    for module, path in discover(ROOT, PACKAGES).items():
        if module in MODE_MODULES:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        bad += [f"{module} (line {line})" for line in _mode_tests(tree)]
    assert not bad, ("ask the mode (current_mode().is_concrete, .cond, .lift) instead of "
                     "testing its type or name:\n  " + "\n  ".join(bad))


def test_the_mode_test_finder_finds_them():
    tree = ast.parse("isinstance(m, TraceMode)\ntype(m) is EagerMode\n"
                     "current_mode().name == 'eager'\nisinstance(m, (int, graph.TraceMode))\n"
                     "current_mode().is_concrete\n")
    assert _mode_tests(tree) == [1, 2, 3, 4]


# ---- the checks above can fail: a small package with the faults they look for ----------------
def _write(root, files):
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def test_a_cycle_is_found_also_through_a_function_level_import(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from . import a\n",
        "pkg/a.py": "from .b import f\n",
        "pkg/b.py": "def f():\n    from .c import g\n    return g\n",
        "pkg/c.py": "import pkg.a\n",
        "pkg/d.py": "from pkg import a\n",      # a submodule: no edge to the package
    })
    edges = import_edges(discover(str(tmp_path), ("pkg",)))
    assert cycles(edges) == [frozenset({"pkg.a", "pkg.b", "pkg.c"})]
    assert ("pkg.a", None, 1) in edges["pkg.d"]


def test_a_name_imported_from_a_facade_depends_on_the_facade(tmp_path):
    _write(tmp_path, {
        "core/__init__.py": "from .x import thing\nfrom .y import other\n",
        "core/x.py": "thing = 1\n",
        "core/y.py": "from core import thing\nother = thing\n",
    })
    edges = import_edges(discover(str(tmp_path), ("core",)))
    assert cycles(edges) == [frozenset({"core", "core.y"})]


# ---- graph/ by stage ------------------------------------------------------------------------
# The stages of graph mode, in the order the imports flow: a stage imports only itself and
# the stages before it. The order is what the code needs: the structural passes come before
# the lowering stage, whose pipeline runs them and then the steps that pick a lowering;
# control flow compiles its bodies through the lowering stage; the chunked (Dask) stage runs a
# graph traced for it, chunk by chunk; the jit (en.function, the tracer, AutoGraph) builds on
# all of those; export saves and loads what the jit made.
GRAPH_PACKAGE = "engine.graph"
GRAPH_STAGES = ("ir", "passes", "lowering", "control", "chunked", "jit", "export")


def late_edges(files):
    """``{module: {(target, None, line)}}`` for ``importlib.import_module("literal")`` calls:
    modules loaded on first use (the notebook display) still follow the stage order."""
    found = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        for target, line in _late_imports(tree):
            while target and target not in files:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.setdefault(module, set()).add((target, None, line))
    return found


def stage_of(module, package=GRAPH_PACKAGE, stages=GRAPH_STAGES):
    """The index of the stage ``module`` belongs to; None for the package itself or a
    module outside it, and ``-1`` for a module of the package in no stage."""
    if not module.startswith(package + "."):
        return None
    first = module[len(package) + 1:].split(".")[0]
    return stages.index(first) if first in stages else -1


def stage_violations(edges, package=GRAPH_PACKAGE, stages=GRAPH_STAGES):
    """``["a (line n) imports b"]`` for each import of a later stage."""
    bad = []
    for module, deps in sorted(edges.items()):
        here = stage_of(module, package, stages)
        if here is None or here < 0:
            continue
        for target, _, line in sorted(deps, key=lambda e: (e[0], e[2])):
            there = stage_of(target, package, stages)
            if there is not None and there > here:
                bad.append(f"{module} (line {line}) imports {target} "
                           f"(stage {stages[there]!r} comes after {stages[here]!r})")
    return bad


def test_every_graph_module_lives_in_a_stage():
    files = discover(ROOT, PACKAGES)
    loose = [m for m in files if stage_of(m) == -1]
    assert not loose, (f"modules of graph/ outside the stage folders {GRAPH_STAGES}; move "
                       "each into the stage it belongs to:\n  " + "\n  ".join(sorted(loose)))


def test_a_graph_stage_imports_only_the_stages_before_it(edges):
    late = late_edges(discover(ROOT, PACKAGES))   # once: it parses every file
    everything = {m: set(d) | late.get(m, set()) for m, d in edges.items()}
    bad = stage_violations(everything)
    assert not bad, (f"graph/ stages must import only earlier stages (order: "
                     f"{' -> '.join(GRAPH_STAGES)}):\n  " + "\n  ".join(bad))


def test_the_stage_check_finds_a_later_stage_imported(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from .late import b\n",          # the package may wire any stage
        "pkg/early/__init__.py": "",
        "pkg/early/a.py": "from ..late import b\n",
        "pkg/early/c.py": "import importlib\ndef d():\n"
                          "    return importlib.import_module('pkg.late.b')\n",
        "pkg/early/ok.py": "from . import a\n",
        "pkg/late/__init__.py": "",
        "pkg/late/b.py": "from ..early import a\n",          # an earlier stage: allowed
    })
    files = discover(str(tmp_path), ("pkg",))
    edges = import_edges(files)
    for module, deps in late_edges(files).items():
        edges[module] |= deps
    assert stage_violations(edges, "pkg", ("early", "late")) == [
        "pkg.early.a (line 1) imports pkg.late.b (stage 'late' comes after 'early')",
        "pkg.early.c (line 3) imports pkg.late.b (stage 'late' comes after 'early')"]
