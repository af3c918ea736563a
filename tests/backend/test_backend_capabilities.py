"""Back ends by capability: outside ``engine/backend/`` no code asks which back end
it has (``is NUMPY``, ``.name == "numpy"``, ``isinstance(b, NumpyBackend)``); fast
paths ask the capabilities a back end declares, and every declared capability is
read somewhere. A back end carries its device, and tensors report it.
"""
import ast
import pathlib

import numpy as np
import pytest

import engine as en
from engine.backend.base import Backend
from engine.backend.strict import ArrayAPIStrictBackend
from engine.devices import Device

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "graph", "eager")
BACKEND_CLASSES = {"Backend", "NumpyBackend", "ArrayAPIStrictBackend", "DaskBackend"}
CAPABILITIES = ("numpy_arrays", "out_kernels", "buffer_reuse", "in_place", "fused_loops",
                "compiled_lowerings", "numpy_promotion", "joins_numpy", "chunked", "lazy")


def _names_a_backend(node):
    """Whether ``node`` is a back end's name or the registered numpy back end: ``NUMPY``,
    ``backends.NUMPY``, ``x.name``, ``getattr(x, "name", ...)`` or a name ``backend``.
    (``kernel.backend`` of a fused kernel names a lowering, not an array back end.)"""
    if isinstance(node, ast.Name):
        return node.id in ("NUMPY", "backend")
    if isinstance(node, ast.Attribute):
        return node.attr in ("NUMPY", "name")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
            node.func.id == "getattr" and len(node.args) >= 2 and
            isinstance(node.args[1], ast.Constant) and node.args[1].value == "name")


def _is_numpy_word(node):
    if isinstance(node, ast.Constant) and node.value == "numpy":
        return True
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(map(_is_numpy_word, node.elts))


def identity_checks(source, filename="<source>"):
    """``(line, text)`` of each back-end identity check in ``source``: a comparison
    with the numpy back end (``is`` / ``==`` / ``in``) or an isinstance test against a
    back-end class."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Name) and s.id == "NUMPY" or
                   isinstance(s, ast.Attribute) and s.attr == "NUMPY" for s in sides) or \
                    (any(map(_is_numpy_word, sides)) and any(map(_names_a_backend, sides))):
                found.append((node.lineno, ast.get_source_segment(source, node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "isinstance" and len(node.args) == 2:
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if any(getattr(k, "id", getattr(k, "attr", None)) in BACKEND_CLASSES for k in kinds):
                found.append((node.lineno, ast.get_source_segment(source, node)))
    return found


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith("engine/backend/"):
                yield rel, path.read_text()


@pytest.mark.parametrize("source", [
    "if backend is NUMPY: pass",
    "if b is not backends.NUMPY: pass",
    "ok = t.backend.name == 'numpy'",
    "ok = getattr(backend, 'name', 'numpy') != 'numpy'",
    "ok = backend == 'numpy'",
    "ok = x.backend.name in ('numpy', 'dask')",
    "ok = isinstance(b, NumpyBackend)",
    "ok = isinstance(b, (int, engine.backend.strict.ArrayAPIStrictBackend))",
])
def test_the_scan_finds_each_kind_of_identity_check(source):
    assert [line for line, _ in identity_checks(source)] == [1]


@pytest.mark.parametrize("source", [
    "ok = backend.numpy_arrays",
    "ok = kernel.backend == 'numpy'",          # a fused kernel's lowering
    "ok = module == 'numpy'",                  # a Python module's name
    "ok = config.compiled_lowering == 'numpy'",
    "default = getattr(graph, 'backend', NUMPY)",
    "ok = isinstance(x, np.ndarray)",
])
def test_the_scan_leaves_capability_questions_and_other_names_alone(source):
    assert identity_checks(source) == []


def test_no_backend_identity_checks_outside_engine_backend():
    offenders = [f"{path}:{line}: {text}" for path, source in _sources()
                 for line, text in identity_checks(source, path)]
    assert not offenders, ("fast paths must ask the back end's capabilities (engine/backend/"
                           "base.py), not which back end it is:\n" + "\n".join(offenders))


def test_every_declared_capability_is_read():
    # Read anywhere (numpy_promotion by the Backend's own kernel helpers), never only
    # declared: an attribute loaded, or a name given to getattr.
    read = set()
    for path in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in CAPABILITIES and \
                    isinstance(node.ctx, ast.Load):
                read.add(node.attr)
            elif isinstance(node, ast.Constant) and node.value in CAPABILITIES:
                read.add(node.value)     # asked by name: getattr(backend, need)
    assert set(CAPABILITIES) - read == set(), "declared but never read"
    for capability in CAPABILITIES:
        assert capability in Backend.__dict__, f"Backend does not declare {capability}"
        assert Backend.__dict__[capability] is False, f"{capability} must default to off"


def test_numpy_declares_every_fast_path_and_strict_none():
    numpy, strict = en.backend.get("numpy"), en.backend.get("array_api_strict")
    fast = ("numpy_arrays", "out_kernels", "buffer_reuse", "in_place", "fused_loops",
            "compiled_lowerings")
    assert all(getattr(numpy, c) for c in fast)
    assert not any(getattr(strict, c) for c in fast)


class _ElsewhereStrict(ArrayAPIStrictBackend):
    """array_api_strict under another name, claiming another device."""
    name = "strict_elsewhere"
    device = Device("elsewhere")
    array_types = ()    # its arrays are array_api_strict's: owned by that back end


def test_a_tensor_and_a_variable_report_their_backends_device():
    assert en.tensor([1.0]).device == en.backend.get("numpy").device == Device("cpu")
    backend = en.backend.register_backend(_ElsewhereStrict())
    try:
        t = en.tensor([1.0, 2.0], backend=backend)
        assert t.backend is backend and t.device == Device("elsewhere")
        assert (t * 2.0).device == Device("elsewhere")
        assert en.Variable(t).device == Device("elsewhere")
        assert t.to_device(Device("elsewhere")) is t
        with pytest.raises(en.InvalidArgumentError, match="unknown device Device\\('cpu'\\)"):
            t.to_device(Device("cpu"))
        np.testing.assert_array_equal((t * 2.0).to("numpy").numpy(), [2.0, 4.0])
    finally:
        en.backend.BACKENDS.pop(backend.name)
