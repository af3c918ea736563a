"""Every error the engine raises derives from ``en.EngineError``.

The engine's sources (``engine/``, ``graph/``, ``eager/``) are parsed with
``ast``; each ``raise X(...)`` whose ``X`` names a class (a builtin, or a name
the module defines or imports) must raise an ``EngineError`` subclass. Where
Python code expects a builtin class, the engine's class has it as a second base
(``en.InvalidArgumentError`` is a ``ValueError``, ``en.ArgumentTypeError`` a
``TypeError``, ``en.MissingFileError`` a ``FileNotFoundError``). ``assert`` is
not used for checks (``python -O`` drops it). Then the cases users met: the
errors themselves, with their builtin bases.
"""
import ast
import builtins
import importlib
import os

import pytest

import engine as en
from support.paths import REPO

ROOT = REPO
FOLDERS = {"engine": "engine", "engine.eager": "eager", "engine.graph": "graph"}

# (module, class name): why a raise of it is not an EngineError.
ALLOWED = {
    ("engine", "AttributeError"): "module __getattr__ (PEP 562) must raise AttributeError",
    ("engine.transforms.checkpoint", "AttributeError"): "__getattr__ must raise AttributeError",
    ("engine.cost_model", "AttributeError"): "en.config.cost.<unknown name> is a missing "
                                             "attribute, as Python's own protocol says",
}
# Internal signals, caught inside the engine, never seen by users.
SIGNALS = {
    "OnOtherBackend": "caught by eager/mode.py: the op runs on the tensors' back end instead",
    "_Retry": "caught in graph/jit/autograph/tensor_control.py: the loop is traced again",
    "Unconvertible": "caught by graph/jit/autograph/__init__.py: the function is traced unconverted",
    "ForeignLibrary": "caught in graph/lowering/c/c_cache.py: a library that is not its key's is "
                      "rebuilt, never run",
}


def engine_sources():
    """``(module name, path)`` of every engine source file."""
    for package, folder in FOLDERS.items():
        top = os.path.join(ROOT, folder)
        for here, _, names in os.walk(top):
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(here, name)
                    rel = os.path.relpath(path, top)[:-3].replace(os.sep, ".")
                    module = package if rel == "__init__" else f"{package}.{rel}"
                    yield module.removesuffix(".__init__"), path


def raised_names(tree):
    """``[(line, dotted name)]`` of each ``raise Name(...)`` / ``raise a.b.Name``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        parts = []
        while isinstance(exc, ast.Attribute):
            parts.append(exc.attr)
            exc = exc.value
        if isinstance(exc, ast.Name):
            found.append((node.lineno, ".".join([exc.id] + parts[::-1])))
    return found


def resolve(module, dotted):
    """The object ``dotted`` names in ``module`` (or a builtin), or None: a local
    variable (``raise err``) names nothing at module level."""
    head, *rest = dotted.split(".")
    obj = vars(module).get(head, getattr(builtins, head, None))
    for part in rest:
        obj = getattr(obj, part, None)
    return obj


def bad_raises(module_name, source, module):
    bad = []
    for line, dotted in raised_names(ast.parse(source)):
        cls = resolve(module, dotted)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            continue
        if issubclass(cls, en.EngineError) or (module_name, dotted) in ALLOWED or \
                cls.__name__ in SIGNALS:
            continue
        bad.append(f"{module_name}:{line} raises {dotted}")
    return bad


def test_every_raise_in_the_engine_is_an_engine_error():
    bad = []
    for module_name, path in engine_sources():
        with open(path, encoding="utf-8") as f:
            source = f.read()
        bad += bad_raises(module_name, source, importlib.import_module(module_name))
    assert not bad, ("raise an engine.errors class (with the builtin as a second base where "
                     "callers expect one):\n  " + "\n  ".join(bad))


def test_no_assert_statements_check_anything_in_the_engine():
    bad = []
    for module_name, path in engine_sources():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        bad += [f"{module_name}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    assert not bad, "assert is dropped by python -O; raise an engine error:\n  " + "\n  ".join(bad)


def test_the_scan_finds_builtin_and_imported_classes():
    import types
    fake = types.ModuleType("fake")
    fake.json = __import__("json")
    fake.ShapeError = en.ShapeError
    source = ("def f(err):\n    raise ValueError('x')\n"
              "def g():\n    raise json.JSONDecodeError('m', 'd', 0)\n"
              "def h():\n    raise ShapeError('fine')\n"
              "def i(err):\n    raise err\n"
              "def j():\n    raise TypeError\n")
    assert bad_raises("fake", source, fake) == [
        "fake:2 raises ValueError", "fake:4 raises json.JSONDecodeError", "fake:10 raises TypeError"]


# ---- the cases users met ----------------------------------------------------------
def test_while_loop_with_a_tensor_for_the_loop_variables():
    with pytest.raises(en.ArgumentTypeError, match=r"loop_vars must be a tuple or list .*"
                       r"got a tensor int64\[\].*\(x,\)") as info:
        en.while_loop(lambda x: x < 3, lambda x: x + 1, en.tensor(0))
    assert isinstance(info.value, TypeError) and isinstance(info.value, en.EngineError)
    assert __file__ in str(info.value)   # the user's line


@pytest.mark.parametrize("call, match", [
    (lambda: en.cond(en.tensor(True), 1, 2), "cond: true_fn must be a function, got int 1"),
    (lambda: en.cond(en.tensor(True), lambda: 1, 2), "cond: false_fn must be a function"),
    (lambda: en.while_loop(1, lambda x: x, (en.tensor(0),)), "while_loop: cond_fn must be"),
    (lambda: en.scan(None, en.tensor(0.0), en.ones(3)), "scan: fn must be a function, got None"),
    (lambda: en.function(3), "en.function: fn must be a function, got int 3"),
    (lambda: en.grad(3), "grad: f must be a function"),
    (lambda: en.value_and_grad("f"), "value_and_grad: f must be a function, got str 'f'"),
    (lambda: en.custom_gradient(3), "custom_gradient: f must be a function"),
    (lambda: en.random.Generator("x"), "Generator: seed must be an int, got str 'x'"),
    (lambda: en.random.Generator(1.5), "Generator: seed must be an int, got float 1.5"),
    (lambda: len(en.tensor(1.0)), r"len\(\) of a 0-d tensor"),
])
def test_a_wrong_kind_of_argument_is_an_engine_type_error(call, match):
    with pytest.raises(en.ArgumentTypeError, match=match) as info:
        call()
    assert isinstance(info.value, TypeError)


def test_cond_in_a_traced_function_also_checks_its_branches():
    f = en.function(lambda x: en.cond(x > 0, 1, 2), autograph=False)
    with pytest.raises(en.ArgumentTypeError, match="cond: true_fn must be a function"):
        f(en.tensor(1.0))


@pytest.mark.parametrize("call, match", [
    (lambda: en.optim.SGD(lr=0.1, momentum=-1.0), "SGD: momentum must be >= 0"),
    (lambda: en.optim.Adam(lr=0.1, beta1=1.5), r"Adam: beta1 must be in \[0, 1\)"),
    (lambda: en.nn.Linear(0, 2), "Linear: in_features must be a positive int, got 0"),
    (lambda: en.nn.Dropout(1.0), r"Dropout: rate must be in \[0, 1\)"),
    (lambda: en.random.Generator(2 ** 64), "does not fit in int64"),
])
def test_a_bad_argument_value_is_an_engine_value_error(call, match):
    with pytest.raises(en.InvalidArgumentError, match=match) as info:
        call()
    assert isinstance(info.value, ValueError)


def test_load_mnist_of_a_missing_folder_is_an_engine_file_not_found_error(tmp_path):
    with pytest.raises(en.MissingFileError, match="is not a directory") as info:
        en.data.load_mnist(tmp_path / "nowhere")
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(en.MissingFileError, match="no train-images") as info:
        en.data.load_mnist(tmp_path)
    assert isinstance(info.value, FileNotFoundError)


def test_a_module_without_forward_is_an_engine_error():
    class Empty(en.nn.Module):
        pass
    with pytest.raises(en.UnimplementedError, match="Empty must define forward") as info:
        Empty()(en.ones(2))
    assert isinstance(info.value, NotImplementedError)
