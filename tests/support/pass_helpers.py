"""Helpers shared by the optimizer tests (test_passes, test_memory_planning)."""
import threading

import networkx as nx
import numpy as np
import pytest

import engine as en
from support.programs import flat

S64 = en.TensorSpec((), "float64")
# Values that catch inexact rewrites: signed zeros, infinities, NaN.
SPECIAL = np.array([-0.0, 0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-300])


# ---- helpers ---------------------------------------------------------------------------


def as_arrays(value):
    return [np.asarray(t.numpy() if hasattr(t, "numpy") else t) for t in flat(value)]


def assert_same_bits(got, want, what):
    """Same number of outputs, dtypes, shapes and bytes (NaNs and signed zeros included)."""
    got, want = as_arrays(got), as_arrays(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, unoptimized gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"{what}: output {k} dtype {g.dtype}, unoptimized {w.dtype}"
        assert g.shape == w.shape, f"{what}: output {k} shape {g.shape}, unoptimized {w.shape}"
        assert np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(w).tobytes(), (
            f"{what}: output {k} differs from the unoptimized graph\n"
            f"optimized:   {g!r}\nunoptimized: {w!r}")


def assert_matches(got, want, what, rtol=1e-6):
    """Optimized vs unoptimized: same dtypes and shapes; floats within ``rtol``, the rest exact."""
    got, want = as_arrays(got), as_arrays(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, unoptimized gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, f"{what}: output {k} dtype {g.dtype}, unoptimized {w.dtype}"
        assert g.shape == w.shape, f"{what}: output {k} shape {g.shape}, unoptimized {w.shape}"
        if w.dtype.kind in "fc":
            finite = np.abs(w[np.isfinite(w)])
            atol = 1e-12 * (1.0 + (finite.max() if finite.size else 0.0))
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=f"{what}: output {k} (optimized vs unoptimized)")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: output {k} (exact dtype)")


def op_names(graph):
    """Op names in run order, graph inputs left out."""
    return [n.op.name for n in graph.topo_order() if n.op.name != "placeholder"]


def count(graph, name):
    return sum(n.op.name == name for n in graph.nodes)


def fused_nodes(graph):
    return [n for n in graph.nodes if n.op.name.startswith("fused")]


def concrete(fn, *args, **options):
    """``(en.function, its ConcreteFunction for args)``."""
    f = en.function(fn, **options)
    return f, f.get_concrete_function(*args)


def run_pass(pass_fn, graph):
    """Run one pass on a copy of ``graph``; return ``(copy, changed)``; the copy must lint."""
    g = graph.copy()
    g.notes = []
    changed = pass_fn(g)
    g.lint()
    return g, changed


def tensors(*shapes, seed=0, low=-2.0, high=2.0):
    rng = np.random.default_rng(seed)
    return [en.tensor(rng.uniform(low, high, size=s)) for s in shapes]


def _lowering(mode):
    previous = en.config.lowering
    en.config.lowering = mode
    yield
    en.config.lowering = previous


@pytest.fixture
def numpy_lowering():
    """The numpy lowering for the test (passes for its scans; a compiled scan is a region)."""
    yield from _lowering("numpy")


@pytest.fixture
def numba_lowering():
    """The compiled lowering wherever it can write a graph (numba must be installed)."""
    yield from _lowering("numba")


def concurrent_mismatches(call, inputs, wants, calls, rtol, atol):
    """Run ``call(inputs[k])`` ``calls`` times in thread ``k``, all threads at once; the
    threads whose result ever differs from ``wants[k]`` (an empty list: none did)."""
    errors = []

    def worker(k):
        for _ in range(calls):
            if not np.allclose(call(inputs[k]), wants[k], rtol=rtol, atol=atol):
                errors.append(k)
                return

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _edge_kinds(edges):
    return sorted(d["kind"] for d in edges.values())


def isomorphic(a, b):
    return nx.is_isomorphic(as_networkx(a), as_networkx(b),
                            node_match=lambda p, q: p["label"] == q["label"],
                            edge_match=lambda p, q: _edge_kinds(p) == _edge_kinds(q))


def node_label(graph, node):
    """What must match between isomorphic graphs: op (fused: its member ops), shape, dtype,
    input position and output positions."""
    op = ("fused",) + tuple(node.meta["fused_ops"]) if node.op.name.startswith("fused") \
        else node.op.name
    shape = None if node.shape is None else tuple(node.shape)
    return (op, shape, None if node.dtype is None else str(node.dtype),
            graph.inputs.index(node) if node in graph.inputs else None,
            tuple(k for k, o in enumerate(graph.outputs) if o is node))


def as_networkx(graph):
    g = nx.MultiDiGraph()
    for node in graph.nodes:
        g.add_node(node.id, label=node_label(graph, node))
    for node in graph.nodes:
        for k, inp in enumerate(node.inputs):
            g.add_edge(inp.id, node.id, kind=f"arg{k}")
        for dep in node.control_deps:
            g.add_edge(dep.id, node.id, kind="control")
    return g
