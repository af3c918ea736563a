"""The Lowering plug-in interface and the policy: a lowering registered from outside the
engine is chosen when forced (and by "auto" when its cost model says it pays), refused
regions fall back to numpy, and the one switch ``en.config.lowering`` replaces the two
deprecated ones."""
import ast
import pathlib
import re
import warnings

import numpy as np
import pytest

import engine as en
from engine.graph.lowering import loop_nest, plugin, policy
from engine.graph.lowering.c.c_source import CDialect
from engine.graph.lowering.numba.numba_fused import NumbaDialect


class PythonLoop(plugin.Lowering):
    """Every element in a Python loop, each op's numpy kernel on scalars: slow, simple,
    and independent of the engine's own writers."""

    name = "python_loop"
    auto = False
    groups_regions = False

    def region_source(self, region):
        if not region.one_value:
            raise plugin.Unsupported("a reduction")
        args = [f"x{k}" for k in range(len(region.inputs))]
        names = {i: f"b[{k}][idx]" for k, i in enumerate(region.inputs)}
        lines = [f"def kernel({', '.join(args)}, out):",
                 f"    b = np.broadcast_arrays({', '.join(args)}, out)",
                 "    for idx in np.ndindex(out.shape):"]
        for k, m in enumerate(region.members):
            lines.append(f"        t{k} = k{k}({', '.join(names[i] for i in m.inputs)}, **p{k})")
            names[m] = f"t{k}"
        lines += [f"        out[idx] = t{len(region.members) - 1}", "    return out"]
        return "\n".join(lines) + "\n"

    def build_region(self, region, source):
        namespace = {"np": np}
        for k, m in enumerate(region.members):
            namespace[f"k{k}"], namespace[f"p{k}"] = m.op.impl, m.params
        exec(source, namespace)
        kernel = type("Kernel", (), {})()
        kernel.out_impl, kernel.source, kernel.backend = namespace["kernel"], source, self.name
        return kernel


class EagerPythonLoop(PythonLoop):
    """The same lowering, offered to "auto" first and claiming to save a second a call."""

    name = "python_loop_auto"
    auto = True
    priority = 1

    def saved_per_call(self, region):
        return 1.0


@pytest.fixture
def lowering(request, monkeypatch):
    """Registers the lowering class given as the test's parameter; unregisters it after."""
    instance = plugin.register(request.param())
    monkeypatch.setattr(en.config, "lowering", en.config.lowering)
    yield instance
    plugin.unregister(instance.name)


def _fused(fn, *args):
    return [n for n in fn.graph_for(*args).nodes if "kernel_source" in n.meta]


def _layer(x, y):
    return en.tanh(x) * y + en.exp(-x)


def _reference(x, y):
    return np.tanh(x) * y + np.exp(-x)


@pytest.mark.parametrize("lowering", [PythonLoop], indirect=True)
def test_a_forced_lowering_writes_the_region_and_agrees_with_numpy(lowering):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal(4)
    en.config.lowering = "python_loop"
    f = en.function(_layer)
    (node,) = _fused(f, en.tensor(a), en.tensor(b))
    assert node.meta["backend"] == "python_loop"
    assert "for idx in np.ndindex(out.shape):" in node.meta["kernel_source"]
    np.testing.assert_allclose(f(en.tensor(a), en.tensor(b)).numpy(), _reference(a, b),
                               rtol=1e-14)


@pytest.mark.parametrize("lowering", [PythonLoop], indirect=True)
def test_a_region_the_lowering_refuses_runs_on_numpy(lowering):
    a = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
    en.config.lowering = "python_loop"
    f = en.function(lambda x: en.sum(en.tanh(x) * 2.0))   # a reduction: refused
    nodes = _fused(f, en.tensor(a))
    assert nodes and all(n.meta["backend"] == "numpy" for n in nodes)
    np.testing.assert_allclose(float(f(en.tensor(a))), np.sum(np.tanh(a) * 2.0), rtol=1e-14)


@pytest.mark.parametrize("lowering", [PythonLoop], indirect=True)
def test_auto_never_picks_a_lowering_that_asks_not_to_be(lowering):
    en.config.lowering = "auto"
    f = en.function(_layer)
    x, y = en.ones((5, 4)), en.ones(4)
    assert all(n.meta["backend"] != "python_loop" for n in _fused(f, x, y))


@pytest.mark.parametrize("lowering", [EagerPythonLoop], indirect=True)
def test_auto_picks_the_first_lowering_whose_cost_model_says_it_pays(lowering):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal(3)
    en.config.lowering = "auto"
    assert list(plugin.registered())[:2] == ["numpy", "python_loop_auto"]
    f = en.function(_layer)
    (node,) = _fused(f, en.tensor(a), en.tensor(b))
    assert node.meta["backend"] == "python_loop_auto"
    np.testing.assert_allclose(f(en.tensor(a), en.tensor(b)).numpy(), _reference(a, b),
                               rtol=1e-14)


@pytest.mark.parametrize("lowering", [EagerPythonLoop], indirect=True)
def test_a_lowering_that_writes_one_result_keeps_regions_apart(lowering, monkeypatch):
    # Two regions, one feeding the other's sum and the other read outside: under
    # "auto" the numpy lowering groups them into one kernel of several results; a
    # lowering that writes one result a kernel gets them one by one.
    en.config.lowering = "auto"

    def two(x):
        h = en.tanh(x) * 2.0
        return h, en.sum(h * h)

    assert policy.groups_regions() is False
    f = en.function(two)
    x = en.tensor(np.linspace(-1.0, 1.0, 8).reshape(2, 4))
    assert not any(n.op.multiple_results for n in _fused(f, x))
    h, s = f(x)
    ref = np.tanh(x.numpy()) * 2.0
    np.testing.assert_allclose(h.numpy(), ref, rtol=1e-14)
    np.testing.assert_allclose(float(s), np.sum(ref * ref), rtol=1e-14)


def test_the_shipped_lowerings_are_registered_in_the_order_auto_tries_them():
    names = list(plugin.registered())
    assert names[:4] == ["numpy", "c", "numba", "numba_ufunc"]
    assert plugin.get("numpy").cost(None, 10 ** 6) == 0.0
    assert [n for n, lw in plugin.registered().items() if lw.auto] == ["c", "numba"]


def test_an_unknown_lowering_name_is_refused_naming_the_registered_ones(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "fortran")
    with pytest.raises(en.InvalidArgumentError, match=re.escape("numpy, c, numba")):
        en.function(_layer).graph_for(en.ones((2, 3)), en.ones(3))


def test_register_takes_only_named_lowerings_and_never_auto():
    with pytest.raises(en.InvalidArgumentError, match="named Lowering"):
        plugin.register(object())

    class Auto(plugin.Lowering):
        name = "auto"

    with pytest.raises(en.InvalidArgumentError, match="policy"):
        plugin.register(Auto())


def test_the_cost_is_a_lower_bound_without_the_source():
    class Costly(plugin.Lowering):
        name = "costly"

        def saved_per_call(self, region):
            return 1e-3

        def build_seconds(self, region, source):
            return 0.5

    lw = Costly()
    assert lw.cost(None, 100) == pytest.approx(-0.1)          # build left out: pays
    assert lw.cost(None, 100, "source") == pytest.approx(0.4)  # build counted: does not
    assert lw.cost(None, 1000, "source") == pytest.approx(-0.5)


def test_the_deprecated_switches_warn_and_set_the_one_switch(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "auto")
    with pytest.warns(DeprecationWarning, match="en.config.lowering"):
        en.config.compiled_lowering = "numpy"
    assert en.config.lowering == "numpy"
    with pytest.warns(DeprecationWarning):
        assert en.config.compiled_lowering == "numpy"
    with pytest.warns(DeprecationWarning, match="numba_ufunc"):
        en.config.fusion_backend = "numba"
    assert en.config.lowering == "numba_ufunc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert en.config.fusion_backend == "numba"
        en.config.fusion_backend = "numpy"
        assert en.config.lowering == "auto" and en.config.fusion_backend == "numpy"
        with pytest.raises(en.InvalidArgumentError, match="fusion_backend"):
            en.config.fusion_backend = "cuda"


def test_c_and_numba_write_one_loop_nest():
    # The same region in both dialects: the same temporaries in the same order, the same
    # loops, the same stores and partial sums, only spelled apart.
    f = en.function(lambda x, y: en.sigmoid(x) * y, passes=["cleanup"])
    g = f.graph_for(en.ones((4, 3), dtype="float32"), en.ones(3, dtype="float32"))
    x, y, sig, mul = g.topo_order()
    region = ([sig, mul], [x, y], [(mul, None), (sig, "sum")])
    c = loop_nest.write(CDialect(), "k", *region, aliases=((0, 0),))
    nb = loop_nest.write(NumbaDialect(), "k", *region, aliases=((0, 0),))

    def outline(source):
        # What each line of the function does, in order: loops opened, temporaries
        # defined, results stored, partial sums added.
        steps = []
        for line in source.splitlines():
            for pattern, step in ((r"\bfor \(?(?:int64_t )?(i\d)\b", "loop {}"),
                                  (r"\b(t\d) = ", "define {}"),
                                  (r"^\s*(out\d)\[.*\] = ", "store {}"),
                                  (r"^\s*(part\d)\[i\d\] \+= ", "add {}")):
                m = re.search(pattern, line)
                if m:
                    steps.append(step.format(m.group(1)))
        return steps

    assert outline(c) == outline(nb) == ["loop i0", "loop i1", "define t0", "define t1",
                                         "store out0", "add part0"]
    assert "out0[i0 * 3 + i1]" in c and "out0[i0, i1]" in nb    # the alias, read in place
    assert c.count(f"% {loop_nest.FLUSH_ROWS} ==") == nb.count(f"% {loop_nest.FLUSH_ROWS} ==") == 1



def _imports_of_other_folders(folder, source, folders):
    """The modules of ``folders`` other than ``folder`` that ``source`` (a module in
    ``graph/lowering/<folder>/``) imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            sep = "" if base.endswith(".") else "."
            names = [base] + [base + sep + a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            for other in folders - {folder}:
                if re.match(rf"^(\.\.{other}|engine\.graph\.lowering\.{other})(\.|$)", name):
                    found.append(name)
    return found


def test_the_folder_check_finds_an_import_of_another_lowering():
    folders = {"c", "numba"}
    assert _imports_of_other_folders(
        "c", "from ..numba.numba_emitter import loop_dtype\n", folders) == [
            "..numba.numba_emitter", "..numba.numba_emitter.loop_dtype"]
    assert _imports_of_other_folders("c", "from ..numba import numba_cache\n", folders)
    assert _imports_of_other_folders(
        "numba", "import engine.graph.lowering.c.c_source\n", folders)
    assert not _imports_of_other_folders(
        "c", "from .. import loop_nest\nfrom ..plugin import Lowering\n", folders)


def test_a_compiled_lowering_folder_imports_no_other_lowering_folder():
    # A new lowering is one folder: what two lowerings share (the loop nest, the row
    # kernel, the plug-in interface) lives beside them in graph/lowering/, never in one
    # of them.
    lowering_dir = pathlib.Path(plugin.__file__).parent
    folders = {p.name for p in lowering_dir.iterdir() if (p / "__init__.py").exists()}
    assert {"c", "numba"} <= folders
    crossings = [f"{folder}/{path.name} imports {name}"
                 for folder in sorted(folders)
                 for path in sorted((lowering_dir / folder).glob("*.py"))
                 for name in _imports_of_other_folders(folder, path.read_text(), folders)]
    assert not crossings, crossings
