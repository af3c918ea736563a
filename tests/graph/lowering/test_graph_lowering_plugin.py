"""Whole graphs and loops through the Lowering interface: a lowering registered from
outside the engine that writes graphs replaces the whole graph (or, where it declines
that, each scan; or the graph in pieces) when forced, and under "auto" when its cost
model says it pays; lowerings that write no graphs (C, the default) are never asked."""
import numpy as np
import pytest

import engine as en
from engine.graph.lowering import plugin
from engine.graph.lowering.graph_part import GraphPart


class PythonGraph(plugin.Lowering):
    """A graph part as one Python function calling each op's numpy kernel in turn:
    independent of the engine's own writers."""

    name = "python_graph"
    auto = False
    groups_regions = False
    writes_graphs = True

    def loop_members(self, graph):
        scans = [n for n in graph.topo_order() if n.op.name == "scan"]
        return [[s] + [u for u in graph.users(s) if u.op.name == "unpack"] for s in scans]

    def graph_source(self, part):
        names = {i: f"x{k}" for k, i in enumerate(part.inputs)}
        lines = [f"def run({', '.join(names.values())}):"]
        for k, m in enumerate(part.members):
            names[m] = f"t{k}"
            args = [names[i] for i in m.inputs] + [f"**p{k}"]
            lines.append(f"    t{k} = k{k}({', '.join(args)})")
        lines.append(f"    return ({''.join(names[o] + ', ' for o in part.outputs)})")
        part.meta["python_lines"] = len(lines)
        return "\n".join(lines) + "\n"

    def build_graph(self, part, source):
        namespace = {}
        for k, m in enumerate(part.members):
            namespace[f"k{k}"], namespace[f"p{k}"] = m.op.impl, m.params
        exec(source, namespace)
        return namespace["run"]


class PaysUnderAuto(PythonGraph):
    """Offered to "auto" before numba, claiming to save a second a call."""

    name = "python_graph_auto"
    auto = True
    priority = 1

    def graph_cost(self, part, calls, source=None):
        return -1.0 * calls


class ScansOnly(PythonGraph):
    """Declines whole graphs (saying why, and to be warned about when forced)."""

    name = "python_scans"

    def graph_source(self, part):
        if part.kind == "graph":
            raise plugin.Declined("python_scans: whole graphs are declined", warn=True)
        return super().graph_source(part)


class InTwo(PythonGraph):
    """Writes a whole graph as two consecutive pieces."""

    name = "python_in_two"

    def graph_pieces(self, part, source):
        if part.kind != "graph":
            return None
        half = len(part.members) // 2
        return [part.members[:half], part.members[half:]]


@pytest.fixture
def lowering(request, monkeypatch):
    """Registers the lowering class given as the test's parameter; unregisters it after."""
    instance = plugin.register(request.param())
    monkeypatch.setattr(en.config, "lowering", en.config.lowering)
    yield instance
    plugin.unregister(instance.name)


def _layer(x, w):
    h = en.tanh(x @ w) * 2.0

    def step(c, xs):
        c = en.tanh(c + xs)
        return c, c * 0.5

    c, ys = en.scan(step, en.zeros(3), h)
    return en.sum(ys) + 1.0, c


def _reference(x, w):
    h = np.tanh(x @ w) * 2.0
    c, ys = np.zeros(3), []
    for row in h:
        c = np.tanh(c + row)
        ys.append(c * 0.5)
    return np.sum(ys) + 1.0, c


def _args():
    rng = np.random.default_rng(3)
    return rng.standard_normal((5, 3)), rng.standard_normal((3, 3))


def _compiled(fn, *args):
    return [n for n in fn.graph_for(*args).nodes if n.op.name == "compiled_region"]


def _check(fn, x, w):
    total, c = fn(en.tensor(x), en.tensor(w))
    want_total, want_c = _reference(x, w)
    np.testing.assert_allclose(float(total), want_total, rtol=1e-13)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-13)


def _note(fn, *args):
    (note,) = [r.note for r in fn.optimization_report(*args) if r.name == "compile_numba"]
    return note


@pytest.mark.parametrize("lowering", [PythonGraph], indirect=True)
def test_a_forced_lowering_writes_the_whole_graph_as_one_node(lowering):
    x, w = _args()
    en.config.lowering = "python_graph"
    fn = en.function(_layer)
    args = en.tensor(x), en.tensor(w)
    (node,) = _compiled(fn, *args)
    assert node.meta["backend"] == "python_graph"
    assert node.meta["kernel_source"].startswith("def run(")
    assert node.meta["python_lines"] == node.meta["kernel_source"].count("\n")   # part.meta
    assert _note(fn, *args) == "compiled 1 region with python_graph"
    _check(fn, x, w)


@pytest.mark.parametrize("lowering", [PythonGraph], indirect=True)
def test_auto_never_asks_a_lowering_that_asks_not_to_be(lowering, monkeypatch):
    monkeypatch.setattr(plugin.get("numba"), "available", lambda: False)
    en.config.lowering = "auto"
    fn = en.function(_layer)
    x, w = _args()
    assert not _compiled(fn, en.tensor(x), en.tensor(w))


@pytest.mark.parametrize("lowering", [PaysUnderAuto], indirect=True)
def test_auto_picks_the_first_graph_lowering_whose_cost_model_says_it_pays(lowering):
    en.config.lowering = "auto"
    assert list(plugin.registered())[:2] == ["numpy", "python_graph_auto"]
    fn = en.function(_layer)
    x, w = _args()
    (node,) = _compiled(fn, en.tensor(x), en.tensor(w))
    assert node.meta["backend"] == "python_graph_auto"   # before numba, which comes later
    _check(fn, x, w)


@pytest.mark.parametrize("lowering", [ScansOnly], indirect=True)
def test_a_declined_graph_is_noted_and_warned_of_and_its_scans_are_written(lowering):
    x, w = _args()
    en.config.lowering = "python_scans"
    fn = en.function(_layer)
    args = en.tensor(x), en.tensor(w)
    with pytest.warns(UserWarning, match="whole graphs are declined"):
        (node,) = _compiled(fn, *args)
    # def, the scan, its two unpacks, the return
    assert node.meta["kernel_source"].count("\n") == 5
    assert _note(fn, *args) == ("python_scans: whole graphs are declined; "
                                "compiled 1 region with python_scans")
    assert any(n.op.name == "matmul" for n in fn.graph_for(*args).nodes)   # left to numpy
    _check(fn, x, w)


@pytest.mark.parametrize("lowering", [InTwo], indirect=True)
def test_a_graph_written_in_pieces_reads_what_the_earlier_piece_became(lowering):
    x, w = _args()
    en.config.lowering = "python_in_two"
    fn = en.function(_layer)
    args = en.tensor(x), en.tensor(w)
    first, second = _compiled(fn, *args)
    # The second piece was made after the first was replaced: it reads its results.
    assert any(i.op.name == "unpack" and i.inputs[0] is first for i in second.inputs)
    assert _note(fn, *args) == "compiled 2 regions with python_in_two"
    _check(fn, x, w)


class NoGraphs(plugin.Lowering):
    """Writes neither regions nor graphs: the base class's answers."""
    name = "no_graphs"


def test_lowerings_that_write_no_graphs_are_never_asked(monkeypatch):
    c = plugin.register(NoGraphs())
    monkeypatch.setattr(en.config, "lowering", "no_graphs")
    assert not c.writes_graphs
    fn = en.function(_layer)
    x, w = _args()
    graph = fn.graph_for(en.tensor(x), en.tensor(w))
    assert not [n for n in graph.nodes if n.op.name == "compiled_region"]
    part = GraphPart.whole(en.function(_layer, passes=["cleanup"]).graph_for(en.tensor(x),
                                                                            en.tensor(w)))
    with pytest.raises(plugin.Unsupported, match="the no_graphs lowering writes no whole graphs"):
        c.graph_source(part)
    assert c.graph_cost(part, 10 ** 9) == float("inf")
    _check(fn, x, w)
    plugin.unregister("no_graphs")


def test_a_part_reads_array_constants_as_inputs_and_refuses_effects():
    x = en.tensor(np.arange(6.0).reshape(2, 3))
    table = np.array([1.0, -2.0, 3.0])
    graph = en.function(lambda t: en.tanh(t) * table, passes=["cleanup"]).graph_for(x)
    part = GraphPart.whole(graph)
    assert [m.op.name for m in part.members] == ["tanh", "mul"]
    assert sorted(i.op.name for i in part.inputs) == ["constant", "placeholder"]
    v = en.Variable(np.zeros(3))

    def writes(t):
        v.assign(t[0])
        return t * 2.0

    assert GraphPart.whole(en.function(writes, passes=["cleanup"]).graph_for(x)) is None


def test_the_numba_lowerings_graph_cost_is_the_cost_models(monkeypatch):
    from engine.graph.lowering.numba import numba_cache
    numba = plugin.get("numba")
    c = en.config.cost
    graph = en.function(lambda x: en.tanh(x) * 2.0 + 1.0,
                        passes=["cleanup"]).graph_for(en.ones((4, 4)))
    part = GraphPart.whole(graph)
    source = numba.graph_source(part)   # writing needs no numba; nothing is compiled
    assert part.meta["compiled_ops"] == 3   # tanh, mul, add: constants cost no call
    monkeypatch.setattr(numba_cache, "is_cached", lambda s: False)
    build = c.numba_compile_seconds + c.numba_compile_seconds_per_line * source.count("\n")
    for calls in (1, 100, 10 ** 6):
        assert numba.graph_cost(part, calls, source) == pytest.approx(
            build - 3 * c.numpy_call_seconds * calls)
    assert numba.graph_cost(part, 100) == pytest.approx(-3 * c.numpy_call_seconds * 100)
    monkeypatch.setattr(numba_cache, "is_cached", lambda s: True)
    assert numba.graph_cost(part, 1, source) < 0   # on disk: taken
    monkeypatch.setattr(c, "whole_graph_small_elements", 8)
    monkeypatch.setattr(c, "whole_graph_max_elements", 8)
    assert numba.graph_cost(part, 10 ** 6, source) == float("inf")   # values too large
    with pytest.raises(plugin.Declined, match="not written whole: a value of 16 elements"):
        numba.graph_source(part)
