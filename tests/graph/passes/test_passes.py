"""Unit tests for each optimization pass and for the pipeline that runs them.

Each test builds a small function with ``en.function``, looks at its
``unoptimized_graph``, its optimized ``graph`` and its ``report``, or calls a
pass directly on ``graph.copy()``; and checks that the optimized function
computes what the unoptimized one computes: bit for bit for the rewrites that
claim to be exact, within ``rtol=1e-6`` (float64) for fused kernels.
``tests/conftest.py`` makes ``graph.lint()`` run after every pass.
"""
import io

import numpy as np
import pytest

import engine as en
from engine.graph.lowering.pipeline import CLEANUP, PASSES, optimize
from engine.graph.passes.constant_folding import constant_folding
from engine.graph.passes.cse import cse
from engine.graph.passes.dce import dce
from engine.graph.passes.simplify import simplify
from support.bitwise import numerics
from support.pass_helpers import (S64, SPECIAL, assert_matches, assert_same_bits, concrete, count,
                                  fused_nodes, isomorphic, node_label, op_names, run_pass, tensors)


# ---- constant folding ----------------------------------------------------------------------
def test_constant_subgraph_folds_into_one_constant():
    f, c = concrete(lambda: en.ones((3,)) * 2.0 + 1.0)
    assert op_names(c.unoptimized_graph) == ["ones", "constant", "mul", "constant", "add"]
    assert op_names(c.graph) == ["constant"], str(c.graph)
    (node,) = c.graph.outputs
    np.testing.assert_array_equal(node.params["value"], [3.0, 3.0, 3.0])
    assert_same_bits(f(), en.function(lambda: en.ones((3,)) * 2.0 + 1.0, optimize=False)(),
                     "folded constant")
    g, changed = run_pass(constant_folding, c.unoptimized_graph)
    assert changed and count(g, "ones") == count(g, "mul") == count(g, "add") == 0
    assert "folded 3 nodes" in " ".join(g.notes)


def test_constant_subgraph_next_to_graph_inputs_folds():
    fn = lambda x: x * (en.ones((3,)) * 2.0 + 1.0) - en.full((3,), 0.5)   # noqa: E731
    (x,) = tensors((3,))
    f, c = concrete(fn, x)
    assert count(c.graph, "constant") == 2 and count(c.graph, "ones") == 0
    assert count(c.graph, "full") == 0
    assert_same_bits(f(x), en.function(fn, optimize=False)(x), "partly constant")


def test_size_cap_keeps_a_big_constant_an_op():
    limit = en.config.fold_size_limit_bytes
    assert 1000 * 1000 * 8 > limit
    f, c = concrete(lambda: en.zeros((1000, 1000)) + 1.0)
    assert count(c.graph, "zeros") == 1, str(c.graph)
    for n in c.graph.nodes:
        if n.op.name == "constant":
            assert n.params["value"].nbytes <= limit, f"{n.name} is a {n.params['value'].nbytes} B constant"
    out = f().numpy()
    assert out.shape == (1000, 1000) and np.all(out == 1.0)


def test_size_cap_is_read_from_config(monkeypatch):
    fn = lambda x: x + en.ones((4,)) * 3.0   # noqa: E731
    (x,) = tensors((4,))
    monkeypatch.setattr(en.config, "fold_size_limit_bytes", 16)   # 4 float64 = 32 bytes
    _, c = concrete(fn, x)
    assert count(c.graph, "ones") == 1, "a 32-byte constant is over a 16-byte cap"
    monkeypatch.setattr(en.config, "fold_size_limit_bytes", 32)
    f, c = concrete(fn, x)
    assert count(c.graph, "ones") == 0 and count(c.graph, "constant") == 1
    assert_same_bits(f(x), en.function(fn, optimize=False)(x), "folded at the cap")


def test_random_ops_never_fold():
    fn = lambda: en.random.normal((3,), seed=1, dtype="float64") * 2.0   # noqa: E731
    f, c = concrete(fn)
    assert count(c.graph, "random_normal") == 1, str(c.graph)
    g, _ = run_pass(constant_folding, c.unoptimized_graph)
    assert count(g, "random_normal") == 1
    first = f().numpy().copy()
    assert_same_bits(f(), first, "seeded draw, second call")
    assert_same_bits(f(), en.function(fn, optimize=False)(), "seeded draw")
    # Without a seed the default generator moves on: two calls draw different numbers.
    h = en.function(lambda: en.random.normal((4,), dtype="float64") + 0.0)
    assert not np.array_equal(h().numpy(), h().numpy())


def test_assign_never_folds():
    v = en.Variable(np.zeros(3), name="acc")

    def fn():
        v.assign_add(en.ones((3,)) * 2.0)
        return v.read()

    f, c = concrete(fn)
    assert count(c.graph, "assign_variable") == 1
    g, _ = run_pass(constant_folding, c.unoptimized_graph)
    assert count(g, "assign_variable") == 1
    np.testing.assert_array_equal(f().numpy(), [2.0] * 3)
    np.testing.assert_array_equal(f().numpy(), [4.0] * 3)
    np.testing.assert_array_equal(v.numpy(), [4.0] * 3)


def test_print_never_folds():
    buf = io.StringIO()
    f, c = concrete(lambda: en.print("value", en.ones((2,)) * 3.0, file=buf))
    assert count(c.graph, "print") == 1
    g, _ = run_pass(constant_folding, c.unoptimized_graph)
    assert count(g, "print") == 1
    f()
    f()
    assert buf.getvalue() == "value [3. 3.]\n" * 2


def test_py_function_never_folds():
    calls = []

    def double(t):
        calls.append(1)
        return t * 2.0

    f, c = concrete(lambda: en.py_function(double, [en.ones((3,))], en.TensorSpec((3,), "float64")))
    assert count(c.graph, "py_function") == 1
    g, _ = run_pass(constant_folding, c.unoptimized_graph)
    assert count(g, "py_function") == 1
    np.testing.assert_array_equal(f().numpy(), [2.0] * 3)
    f()
    assert len(calls) == 2, "the Python function runs at every call, not once at compile time"


# ---- common subexpression elimination ---------------------------------------------------------
def test_cse_merges_duplicate_subexpressions():
    def fn(x, y):
        return en.tanh(en.exp(x) * y) + en.tanh(en.exp(x) * y)

    x, y = tensors((2, 3), (2, 3))
    f, c = concrete(fn, x, y, passes=["cse", "dce"])
    assert [count(c.unoptimized_graph, k) for k in ("exp", "mul", "tanh")] == [2, 2, 2]
    assert [count(c.graph, k) for k in ("exp", "mul", "tanh", "add")] == [1, 1, 1, 1]
    add = next(n for n in c.graph.nodes if n.op.name == "add")
    assert add.inputs[0] is add.inputs[1]
    assert_same_bits(f(x, y), en.function(fn, optimize=False)(x, y), "cse")
    g, changed = run_pass(cse, c.unoptimized_graph)
    assert changed and "merged 3 duplicate nodes" in " ".join(g.notes)


def test_cse_merges_a_symmetric_ops_operands_in_either_order():
    def fn(x, y):     # the tangent of x * y where dx = y and dy = x: y * y + x * x
        return x * y + y * x, en.maximum(x, y), en.maximum(y, x), (x == y) & (y == x)

    x = en.tensor(np.array([0.0, -0.0, 1.5, np.nan, 2.0]))
    y = en.tensor(np.array([-0.0, 0.0, -2.0, 1.0, 2.0]))
    f, c = concrete(fn, x, y, passes=["cse", "dce"])
    # x * y and y * x are one product, as are the two equalities; maximum keeps its
    # order (maximum(0.0, -0.0) is 0.0, maximum(-0.0, 0.0) is -0.0)
    assert [count(c.graph, k) for k in ("mul", "equal", "maximum")] == [1, 1, 2]
    got = f(x, y)
    a, b = x.numpy(), y.numpy()
    want = (a * b + b * a, np.maximum(a, b), np.maximum(b, a), (a == b) & (b == a))
    for g, w in zip(got, want):
        assert g.numpy().tobytes() == w.tobytes()
    with numerics("bitwise"):
        _, c = concrete(fn, x, y, passes=["cse", "dce"])
    assert count(c.graph, "mul") == 2      # a NaN's payload may follow the first operand


def test_cse_merges_constants_with_equal_values():
    def fn(x):
        a = np.array([1.0, 2.0, 3.0])
        return x * 2.0 + x * 2.0 - x * a * np.array([1.0, 2.0, 3.0])

    (x,) = tensors((3,))
    _, c = concrete(fn, x)
    values = [n.params["value"] for n in c.unoptimized_graph.nodes if n.op.name == "constant"]
    assert len(values) == 4
    g, changed = run_pass(cse, c.unoptimized_graph)
    assert changed and count(g, "constant") == 2
    assert count(g, "mul") == 3, "the two x * 2.0 merge once their constants have"
    # Equal numbers of different dtypes or shapes stay apart.
    _, c = concrete(lambda x: (x * 2.0, en.cast(x, "int64") * 2, x * np.array([2.0, 2.0, 2.0])), x)
    g, _ = run_pass(cse, c.unoptimized_graph)
    assert count(g, "constant") == 3


def test_cse_keeps_ops_with_different_params():
    def fn(x):
        return (en.sum(x, axis=0) + en.sum(x, axis=1), en.reshape(x, (9,)),
                en.reshape(x, (1, 9)), en.transpose(x), en.transpose(x, (0, 1)))

    (x,) = tensors((3, 3))
    _, c = concrete(fn, x)
    g, _ = run_pass(cse, c.unoptimized_graph)
    assert count(g, "sum") == 2 and count(g, "reshape") == 2 and count(g, "transpose") == 2


def test_cse_never_merges_variable_reads_separated_by_an_assign():
    v = en.Variable(np.array([1.0, 2.0]), name="state")

    def fn(x):
        a, b = v.read() * 1.5, v.read() * 1.5       # same value: may merge
        v.assign(x)
        c = v.read() * 1.5                          # the new value: must not merge
        return a + b, c

    x = en.tensor([10.0, 20.0])
    f, c = concrete(fn, x)
    assert count(c.unoptimized_graph, "read_variable") == 3
    g, _ = run_pass(cse, c.unoptimized_graph)
    assert count(g, "read_variable") == 2
    assert count(c.graph, "read_variable") == 2
    first, second = f(x)
    np.testing.assert_array_equal(first.numpy(), [3.0, 6.0])
    np.testing.assert_array_equal(second.numpy(), [15.0, 30.0])
    v.assign([1.0, 2.0])
    got = f(x)
    v.assign([1.0, 2.0])
    assert_same_bits(got, en.function(fn, optimize=False)(x), "reads around an assign")


def test_cse_never_merges_side_effects():
    buf = io.StringIO()
    calls = []
    v = en.Variable(0.0, name="counter")

    def bump(t):
        calls.append(float(t))
        return t

    def fn(x):
        en.print("x", x, file=buf)
        en.print("x", x, file=buf)
        en.py_function(bump, [x], S64)
        en.py_function(bump, [x], S64)
        v.assign_add(1.0)
        v.assign_add(1.0)
        return x + 1.0

    x = en.tensor(5.0)
    f, c = concrete(fn, x)
    g, _ = run_pass(cse, c.unoptimized_graph)
    for graph_ in (g, c.graph):
        assert count(graph_, "print") == 2 and count(graph_, "py_function") == 2
        assert count(graph_, "assign_variable") == 2
    f(x)
    assert buf.getvalue() == "x 5.0\n" * 2 and calls == [5.0, 5.0] and float(v.numpy()) == 2.0


# ---- dead code elimination -----------------------------------------------------------------
def test_dce_removes_unused_nodes():
    def fn(x, w):
        unused = en.tanh(x @ w)            # noqa: F841
        also_unused = en.sum(en.exp(x))   # noqa: F841
        return x + 1.0

    x, w = tensors((2, 3), (3, 3))
    f, c = concrete(fn, x, w, passes=["dce"])
    assert op_names(c.graph) == ["constant", "add"]
    g, changed = run_pass(dce, c.unoptimized_graph)
    assert changed and op_names(g) == ["constant", "add"]
    assert len(g.inputs) == 2, "unused graph inputs stay: they are the call signature"
    assert_same_bits(f(x, w), en.function(fn, optimize=False)(x, w), "dce")
    _, changed = run_pass(dce, g)
    assert not changed


class _Sink:
    """A file-like object that logs what ``en.print`` writes into the shared event list."""

    def __init__(self, events):
        self.events = events

    def write(self, s):
        if s:
            self.events.append(("print", s))

    def flush(self):
        pass


def _effects_program(events):
    v = en.Variable(0.0, name="effect_var")

    def tap(tag):
        def record(t):
            events.append((tag, float(t)))
            return t
        record.__name__ = f"tap_{tag}"
        return record

    def fn(x):
        unused = en.exp(x) * 3.0                          # noqa: F841  dead: must go
        en.py_function(tap("a"), [x], S64)                # result unused: must stay
        v.assign(x * 2.0)
        en.py_function(tap("b"), [v.read()], S64)         # sees the assign above
        en.print("mid", x + 1.0, file=_Sink(events))
        en.py_function(tap("c"), [x + 1.0], S64)
        v.assign_add(1.0)
        en.py_function(tap("d"), [v.read()], S64)         # sees both assigns
        return x * 3.0

    return v, fn


def _printed(events):
    """Merge the pieces of each print into one event."""
    out = []
    for kind, value in events:
        if kind == "print" and out and out[-1][0] == "print" and not out[-1][1].endswith("\n"):
            out[-1] = ("print", out[-1][1] + value)
        else:
            out.append((kind, value))
    return out


@pytest.mark.parametrize("options", [dict(), dict(passes=["dce"]), dict(optimize=False)],
                         ids=["default", "dce only", "unoptimized"])
def test_dce_keeps_effects_in_program_order(options):
    events = []
    v, fn = _effects_program(events)
    x = en.tensor(2.0)
    f, c = concrete(fn, x, **options)
    for name, n in [("py_function", 4), ("assign_variable", 2), ("print", 1)]:
        assert count(c.graph, name) == n, f"{name}: {str(c.graph)}"
    if options.get("optimize", True):
        assert count(c.graph, "exp") == 0, "the unused exp is dead"
    want = [("a", 2.0), ("b", 4.0), ("print", "mid 3.0\n"), ("c", 3.0), ("d", 5.0)]
    for call in range(2):
        events.clear()
        assert float(f(x)) == 6.0
        assert _printed(events) == want, f"call {call}: effects ran as {_printed(events)}"
    assert float(v.numpy()) == 5.0


def test_dce_pass_alone_keeps_every_effect_node():
    events = []
    _, fn = _effects_program(events)
    _, c = concrete(fn, en.tensor(1.0), optimize=False)
    g, changed = run_pass(dce, c.unoptimized_graph)
    assert changed
    for name in ("py_function", "assign_variable", "print"):
        assert count(g, name) == count(c.unoptimized_graph, name), name
    assert count(g, "exp") == 0


# ---- algebraic simplification ------------------------------------------------------------------
def _check_simplified(fn, args, want_ops, what):
    """Simplify + DCE give exactly ``want_ops``, and the values are bit-equal to unoptimized."""
    f, c = concrete(fn, *args, passes=["simplify", "dce"])
    assert op_names(c.graph) == want_ops, f"{what}: {op_names(c.graph)}\n{c.graph}"
    assert_same_bits(f(*args), en.function(fn, optimize=False)(*args), what)
    # The whole default pipeline computes the same bits for these one-op leftovers too.
    assert_same_bits(en.function(fn)(*args), en.function(fn, optimize=False)(*args),
                     f"{what} (default pipeline)")
    return c


SPECIAL_X = en.tensor(SPECIAL)
INT_X = en.tensor(np.array([-3, 0, 7], dtype=np.int64))
F32_X = en.tensor(SPECIAL.astype(np.float32))


IDENTITIES = [
    (lambda x: x * 1.0, SPECIAL_X, "x*1"),
    (lambda x: x * 1.0, F32_X, "float32 x*1.0 stays float32"),
    (lambda x: 1.0 * x, SPECIAL_X, "1*x"),
    (lambda x: x / 1.0, SPECIAL_X, "x/1"),
    (lambda x: x - 0.0, SPECIAL_X, "x-0"),
    (lambda x: x + (-0.0), SPECIAL_X, "x+(-0.0)"),
    (lambda x: (-0.0) + x, SPECIAL_X, "(-0.0)+x"),
    (lambda x: -(-x), SPECIAL_X, "-(-x)"),
    (lambda x: x + 0, INT_X, "int x+0"),
    (lambda x: 0 + x, INT_X, "int 0+x"),
    (lambda x: x - 0, INT_X, "int x-0"),
    (lambda x: x * 1, INT_X, "int x*1"),
    (lambda x: en.cast(x, "float64"), SPECIAL_X, "cast to own dtype"),
    (lambda x: en.broadcast_to(x, (8,)), SPECIAL_X, "broadcast to own shape"),
    (lambda x: en.reshape(x, (8,)), SPECIAL_X, "reshape to own shape"),
    (lambda x: en.stop_gradient(x), SPECIAL_X, "stop_gradient"),
    (lambda x: x * np.ones(8), SPECIAL_X, "x*ones"),
]


@pytest.mark.parametrize("fn, x, what", IDENTITIES, ids=[c[2] for c in IDENTITIES])
def test_simplify_removes_identities_exactly(fn, x, what):
    c = _check_simplified(fn, (x,), [], what)
    assert c.graph.outputs[0] is c.graph.inputs[0]


@pytest.mark.parametrize("fn, op", [(lambda x: x + 0.0, "add"), (lambda x: 0.0 + x, "add"),
                                   (lambda x: x - (-0.0), "sub")], ids=["x+0", "0+x", "x-(-0)"])
def test_simplify_keeps_x_plus_positive_zero_on_floats(fn, op):
    """-0.0 + 0.0 is +0.0: ``x + 0.0`` is not the identity on floats, so it must stay."""
    _check_simplified(fn, (SPECIAL_X,), ["constant", op], "x + (+0.0)")


def test_simplify_transpose_of_transpose():
    (x,) = tensors((2, 3, 4))
    _check_simplified(lambda x: en.transpose(en.transpose(x)), (x,), [], "T(T(x))")
    _check_simplified(lambda x: en.transpose(en.transpose(x, (1, 2, 0)), (2, 0, 1)), (x,), [],
                      "inverse permutations")
    _check_simplified(lambda x: en.transpose(x, (0, 1, 2)), (x,), [], "identity permutation")
    c = _check_simplified(lambda x: en.transpose(en.transpose(x, (1, 0, 2)), (0, 2, 1)), (x,),
                          ["transpose"], "composed permutation")
    (t,) = [n for n in c.graph.nodes if n.op.name == "transpose"]
    assert t.inputs[0] is c.graph.inputs[0] and tuple(t.params["axes"]) == (1, 2, 0)
    assert t.shape == (3, 4, 2)
    # An inner transpose that is used elsewhere stays for that use only.
    c = _check_simplified(lambda x: (en.transpose(en.transpose(x)), en.transpose(x) * 2.0), (x,),
                          ["transpose", "constant", "mul"], "shared inner transpose")


def test_simplify_reshape_chains():
    (x,) = tensors((2, 3, 4))
    c = _check_simplified(lambda x: en.reshape(en.reshape(en.reshape(x, (6, 4)), (4, 6)), (24,)),
                          (x,), ["reshape"], "reshape chain")
    (r,) = [n for n in c.graph.nodes if n.op.name == "reshape"]
    assert r.inputs[0] is c.graph.inputs[0] and r.shape == (24,)
    _check_simplified(lambda x: en.reshape(en.reshape(x, (6, 4)), (2, 3, 4)), (x,), [],
                      "reshape back")


def test_simplify_folds_broadcast_into_an_elementwise_consumer():
    x, y = tensors((4,), (3, 4))
    c = _check_simplified(lambda x, y: en.broadcast_to(x, (3, 4)) + y, (x, y), ["add"],
                          "broadcast into add")
    (add,) = [n for n in c.graph.nodes if n.op.name == "add"]
    assert add.inputs[0] is c.graph.inputs[0]


KEPT = [
    (lambda x: x + en.zeros((3, 4)), (tensors((4,))[0],), "x + zeros((3,4)) broadcasts x"),
    (lambda x: x * en.ones((2, 4)), (tensors((4,))[0],), "x * ones((2,4)) broadcasts x"),
    (lambda x: en.zeros((3, 4)) + x, (tensors((1, 4))[0],), "zeros + x broadcasts x"),
    (lambda x: x * 1.0, (INT_X,), "int x * 1.0 promotes to float"),
    (lambda x: x + 0.0, (en.tensor(np.array([1, -2], np.int32)),), "int32 x + 0.0 promotes"),
    (lambda x: x * np.ones(3, np.float64), (en.tensor(np.ones(3, np.float32)),),
     "float32 x * float64 ones promotes"),
    (lambda x: x / 1, (INT_X,), "int x / 1 is a float"),
    (lambda x: en.cast(x, "float32"), (SPECIAL_X,), "a real cast"),
    (lambda x: en.broadcast_to(x, (2, 8)), (SPECIAL_X,), "a real broadcast"),
    (lambda x: en.broadcast_to(x, (2, 8)) + 1.0, (SPECIAL_X,), "broadcast sets the shape"),
]


@pytest.mark.parametrize("fn, args, what", KEPT, ids=[c[2] for c in KEPT])
def test_simplify_never_changes_shape_or_dtype(fn, args, what):
    f, c = concrete(fn, *args, passes=["simplify", "dce"])
    want = en.function(fn, optimize=False)(*args)
    got = f(*args)
    assert_same_bits(got, want, what)
    out, = c.graph.outputs
    ref, = c.unoptimized_graph.outputs
    assert (tuple(out.shape), out.dtype) == (tuple(ref.shape), ref.dtype), what
    assert out is not c.graph.inputs[0], f"{what}: the op was removed\n{c.graph}"
    assert_same_bits(en.function(fn)(*args), want, f"{what} (default pipeline)")


def test_simplify_pass_reports_and_converges():
    (x,) = tensors((2, 3))
    fn = lambda x: en.transpose(en.transpose(-(-(x * 1.0)))) + (-0.0)   # noqa: E731
    _, c = concrete(fn, x, optimize=False)
    g, changed = run_pass(simplify, c.unoptimized_graph)
    assert changed and "rewrites" in " ".join(g.notes)
    g, _ = run_pass(dce, g)
    assert op_names(g) == []
    _, changed = run_pass(simplify, g)
    assert not changed


# ---- fusion ----------------------------------------------------------------------------------
def test_fusion_makes_one_node_of_an_elementwise_chain():
    def fn(x, y):
        return en.tanh(en.exp(x) * 2.0 + y) - en.sigmoid(x)

    x, y = tensors((4, 5), (4, 5))
    f, c = concrete(fn, x, y)
    (node,) = fused_nodes(c.graph)
    assert node.op.name.startswith("fused")
    assert sorted(node.meta["fused_ops"]) == sorted(["exp", "mul", "add", "tanh", "sigmoid", "sub"])
    assert "def " in node.meta["kernel_source"]
    for name in ("exp", "mul", "add", "tanh", "sigmoid", "sub"):
        assert count(c.graph, name) == 0, name
    assert c.graph.outputs == [node]
    assert_matches(f(x, y), en.function(fn, optimize=False)(x, y), "fused chain")
    assert "fused" in " ".join(r.note for r in c.report if r.name == "fusion")


def test_fusion_leaves_values_used_outside_the_region():
    def fn(x):
        a = en.exp(x)                      # also read by sum: must stay a value of its own
        b = en.tanh(a * 2.0 + 1.0)
        return b, en.sum(a)

    (x,) = tensors((4, 5))
    f, c = concrete(fn, x)
    assert count(c.graph, "exp") == 1
    (node,) = fused_nodes(c.graph)
    assert "exp" not in node.meta["fused_ops"]
    assert_matches(f(x), en.function(fn, optimize=False)(x), "shared value")

    def returns_it(x):
        a = en.exp(x)                      # an output: must stay a value of its own
        return a, en.tanh(a * 2.0 + 1.0)

    f, c = concrete(returns_it, x)
    assert count(c.graph, "exp") == 1
    assert all("exp" not in n.meta["fused_ops"] for n in fused_nodes(c.graph))
    assert_matches(f(x), en.function(returns_it, optimize=False)(x), "output value")


def test_fusion_stops_at_non_elementwise_ops():
    def fn(x, w):
        h = en.tanh(x * 2.0 + 1.0)
        return en.exp(h @ w) * 3.0 - 1.0

    x, w = tensors((4, 5), (5, 6))
    f, c = concrete(fn, x, w)
    assert count(c.graph, "matmul") == 1 and len(fused_nodes(c.graph)) == 2
    assert_matches(f(x, w), en.function(fn, optimize=False)(x, w), "two regions")


def _fusion_case(x, r, c, s):
    """Every intermediate has x's shape; r, c and s broadcast against it."""
    t = en.tanh(x * r + c)
    return en.maximum(t * s - x, en.sigmoid(x) * c) / (1.0 + t * t)


def _broadcast_args(n, m, seed=0):
    rng = np.random.default_rng(seed)
    return [en.tensor(rng.uniform(-2.0, 2.0, size=shape)) for shape in [(n, m), (m,), (n, 1), ()]]


WHOLE = en.config.cost.fused_whole_array_elements   # the one-pass size
BLOCK = en.config.cost.fused_block_elements


# 300x700 and the shapes just past the one-pass size run the blocked loop over several
# blocks (the last with a short remainder); one row longer than a block is a block alone.
@pytest.mark.parametrize("n, m", [(300, 700), (300, 7), (1, 5000), (3, 1), (1, 1), (0, 5),
                                  (5, 0), (WHOLE // 7 + 1, 7), (WHOLE // BLOCK + 1, BLOCK),
                                  (1, WHOLE + 1)])
def test_fusion_matches_unoptimized_with_broadcast_inputs(n, m):
    args = _broadcast_args(n, m)
    f, c = concrete(_fusion_case, *args)
    (node,) = fused_nodes(c.graph)
    assert len(node.meta["fused_ops"]) >= 8
    assert_matches(f(*args), en.function(_fusion_case, optimize=False)(*args),
                   f"fused kernel {n}x{m}")


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (0,), (2, 0, 3), (7,), (300, 700),
                                   (2, 150, 700)])
def test_fusion_matches_unoptimized_for_any_shape(shape):
    def fn(x):
        return en.tanh(en.exp(x) * 2.0 + x) - x * x

    (x,) = tensors(shape)
    f, c = concrete(fn, x)
    assert len(fused_nodes(c.graph)) == 1
    assert_matches(f(x), en.function(fn, optimize=False)(x), f"shape {shape}")


@pytest.mark.parametrize("n", [0, 1, 5, 300])
def test_fusion_with_unknown_dimensions(n):
    """With an input_signature the fused kernel learns the shape at run time."""
    spec = [en.TensorSpec((None, 700), "float64"), en.TensorSpec((700,), "float64"),
            en.TensorSpec((None, 1), "float64"), en.TensorSpec((), "float64")]
    args = _broadcast_args(n, 700, seed=n)
    f = en.function(_fusion_case, input_signature=spec)
    assert len(fused_nodes(f.graph_for(*args))) == 1
    u = en.function(_fusion_case, input_signature=spec, optimize=False)
    assert_matches(f(*args), u(*args), f"unknown leading dimension, {n} rows")


def test_fused_kernel_in_float32_and_mixed_dtypes():
    rng = np.random.default_rng(3)
    x = en.tensor(rng.uniform(-1, 1, (300, 700)).astype(np.float32))
    k = en.tensor(rng.integers(-3, 3, (700,)))

    def fn(x, k):
        return en.tanh(x * 2.0 + 1.0) * en.cast(k, "float32") - x

    f, c = concrete(fn, x, k)
    assert len(fused_nodes(c.graph)) == 1
    got, want = f(x, k), en.function(fn, optimize=False)(x, k)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# ---- the pipeline -----------------------------------------------------------------------------
def _pipeline_fn(x):
    a = en.exp(x * 1.0) + en.exp(x * 1.0)
    unused = en.sin(x)   # noqa: F841
    return en.tanh(a + en.ones(x.shape) * 2.0)


def test_optimize_false_runs_no_pass():
    (x,) = tensors((3, 4))
    f, c = concrete(_pipeline_fn, x, optimize=False)
    assert len(c.report) == 0 and c.report.as_data() == []
    assert op_names(c.graph) == op_names(c.unoptimized_graph)
    assert count(c.graph, "sin") == 1
    assert f.memory_report(x)["buffers"] == 0


def test_passes_option_runs_exactly_those_in_order():
    (x,) = tensors((3, 4))
    f, c = concrete(_pipeline_fn, x, passes=["cse", "dce"])
    assert [r.name for r in c.report] == ["cse", "dce"]
    assert count(c.graph, "exp") == 1 and count(c.graph, "sin") == 0
    assert count(c.graph, "ones") == 1 and count(c.graph, "mul") >= 1, "no folding or simplify"
    assert_same_bits(f(x), en.function(_pipeline_fn, optimize=False)(x), "cse+dce")
    f, c = concrete(_pipeline_fn, x, passes=["dce", dce, "cse"])
    assert [r.name for r in c.report] == ["dce", "dce", "cse"]


def test_config_default_passes_changes_the_default(monkeypatch):
    (x,) = tensors((3, 4))
    monkeypatch.setattr(en.config, "default_passes", ["simplify", "dce"])
    _, c = concrete(_pipeline_fn, x)
    assert [r.name for r in c.report] == ["simplify", "dce"]
    assert count(c.graph, "exp") == 2, "no cse in this default"
    # An explicit passes= wins over the default.
    _, c = concrete(_pipeline_fn, x, passes=["cse"])
    assert [r.name for r in c.report] == ["cse"]
    monkeypatch.setattr(en.config, "default_passes", None)
    _, c = concrete(_pipeline_fn, x)
    names = [r.name for r in c.report]
    assert names[:len(CLEANUP)] == list(CLEANUP) and names[-1] == "memory_planning" and "fusion" in names


def test_unknown_pass_name_is_a_clear_error(monkeypatch):
    (x,) = tensors((3,))
    with pytest.raises(ValueError, match=r"unknown pass 'fuse_everything'.*known:.*cse"):
        en.function(_pipeline_fn, passes=["fuse_everything"])(x)
    monkeypatch.setattr(en.config, "default_passes", ["dce", "nope"])
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        en.function(_pipeline_fn)(x)


def test_optimization_report_table_and_data():
    (x,) = tensors((3, 4))
    f = en.function(_pipeline_fn)
    report = f.optimization_report(x)
    assert report is f.get_concrete_function(x).report
    data = report.as_data()
    assert data and all(set(d) == {"name", "nodes_before", "nodes_after", "note", "seconds"}
                        for d in data)
    for d in data:
        assert d["name"] in PASSES and isinstance(d["note"], str)
        assert isinstance(d["nodes_before"], int) and isinstance(d["nodes_after"], int)
        assert d["seconds"] >= 0.0
    for before, after in zip(data, data[1:]):
        assert after["nodes_before"] == before["nodes_after"], "each pass starts where the last ended"
    unopt = f.get_concrete_function(x).unoptimized_graph
    assert data[0]["nodes_before"] == unopt.node_count()
    assert data[-1]["nodes_after"] == f.graph_for(x).node_count()
    assert any("merged" in d["note"] for d in data) and any("fused" in d["note"] for d in data)
    text = str(report)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["pass", "nodes"]
    assert len(lines) == len(data) + 1
    for line, d in zip(lines[1:], data):
        assert line.split()[0] == d["name"] and str(d["nodes_after"]) in line
    assert "ms" in text


# ---- idempotence ------------------------------------------------------------------------------


def _idempotence_programs():
    v = en.Variable(np.ones(4), name="idem")

    def mlp(x, w, b):
        h = en.tanh(x @ w + b)
        return en.sum(en.maximum(h, 0.0) ** 2.0, axis=1) * 1.0

    def effects(x, w, b):
        v.assign_add(en.sum(x, axis=0) * 0.0)
        en.print("s", en.sum(x), file=io.StringIO())
        return en.transpose(en.transpose(x @ w)) + b + v.read()[0]

    def grad_mlp(x, w, b):
        return en.grad(lambda w_, b_: en.sum(mlp(x, w_, b_)), argnums=(0, 1))(w, b)

    return [mlp, effects, grad_mlp, _pipeline_fn_3, _fusion_case_3]


def _pipeline_fn_3(x, w, b):
    return _pipeline_fn(x) @ w + b


def _fusion_case_3(x, w, b):
    return _fusion_case(x @ w, b, en.sum(x, axis=1, keepdims=True), en.sum(b))


IDEM_ARGS = tensors((3, 4), (4, 4), (4,), seed=9)


@pytest.mark.parametrize("fn", _idempotence_programs(), ids=lambda f: f.__name__)
def test_optimizing_twice_gives_isomorphic_graphs(fn):
    _, c = concrete(fn, *IDEM_ARGS)
    first, _ = optimize(c.unoptimized_graph)
    second, _ = optimize(c.unoptimized_graph)
    assert sorted(map(str, (node_label(first, n)[0] for n in first.nodes))) == \
        sorted(map(str, (node_label(second, n)[0] for n in second.nodes)))
    assert isomorphic(first, second), f"\n{first}\n---\n{second}"
    _, c2 = concrete(fn, *IDEM_ARGS)   # a fresh trace optimizes to the same graph
    assert isomorphic(c.graph, c2.graph), f"\n{c.graph}\n---\n{c2.graph}"


@pytest.mark.parametrize("fn", _idempotence_programs(), ids=lambda f: f.__name__)
def test_cleanup_passes_change_nothing_on_an_optimized_graph(fn):
    _, c = concrete(fn, *IDEM_ARGS)
    for name in CLEANUP:
        g, changed = run_pass(PASSES[name], c.graph)
        assert not changed, f"{name} changed an optimized graph: {g.notes}\n{c.graph}\n---\n{g}"
        assert isomorphic(g, c.graph), name
    again, report = optimize(c.graph, passes=["cleanup"])
    assert isomorphic(again, c.graph)
    assert all(r.nodes_before == r.nodes_after and not r.note for r in report)


# ---- reductions fused into elementwise kernels ------------------------------------------------
@pytest.mark.parametrize("shape", [(), (7,), (300, 700), (5, 0)])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_full_reduction_fuses_into_its_elementwise_producer(shape, reduce):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape)
    fn = getattr(en, reduce)
    f = en.function(lambda x: fn(en.square(x - 0.5) * 2.0))
    got = f(en.tensor(a))
    kinds = [n.meta.get("fused_ops") for n in f.graph_for(en.tensor(a)).nodes
             if n.op.name.startswith("fused")]
    assert kinds and kinds[0][-1] == reduce, kinds
    want = getattr(np, reduce)(np.square(a - 0.5) * 2.0) if a.size or reduce == "sum" else np.nan
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_a_reduction_over_some_axes_or_of_a_shared_value_is_not_fused():
    x = en.tensor(np.ones((4, 5)))
    f = en.function(lambda v: en.sum(en.exp(v) * 2.0, axis=1))
    assert all("sum" not in (n.meta.get("fused_ops") or ()) for n in f.graph_for(x).nodes)
    g = en.function(lambda v: (en.sum(en.exp(v) * 2.0), en.exp(v) * 2.0))
    assert all("sum" not in (n.meta.get("fused_ops") or ()) for n in g.graph_for(x).nodes)
    np.testing.assert_allclose(g(x)[0].numpy(), 40 * np.e, rtol=1e-12)


@pytest.mark.parametrize("shape", [(7, 5), (3000, 300)], ids=["small", "blocks"])
def test_a_sum_over_the_rows_is_computed_in_the_kernel_that_writes_its_value(shape,
                                                                            monkeypatch):
    # A dense layer's bias gradient: sum(dz, axis=0) beside dz itself, one pass.
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    f = en.function(lambda v: (en.sum(en.exp(v) * 2.0, axis=0), en.exp(v) * 2.0 + v))
    graph = f.graph_for(en.tensor(x))
    assert not [n for n in graph.nodes if n.op.name == "sum"]
    total, value = f(en.tensor(x))
    np.testing.assert_allclose(total.numpy(), np.sum(np.exp(x) * 2.0, axis=0), rtol=1e-12)
    np.testing.assert_allclose(value.numpy(), np.exp(x) * 2.0 + x, rtol=1e-12)
    alone = en.function(lambda v: en.sum(en.exp(v) * 2.0, axis=0))   # only the sum is read
    np.testing.assert_allclose(alone(en.tensor(x)).numpy(), np.sum(np.exp(x) * 2.0, axis=0),
                               rtol=1e-12)
    fused = [n for n in alone.graph_for(en.tensor(x)).nodes if n.op.name.startswith("fused")]
    assert len(fused) == 1 and fused[0].shape == (shape[1],)
    # Block sums are added in block order: the same bits on one thread or two.
    sums = []
    for threads in (1, 2):
        monkeypatch.setattr(en.config, "fusion_threads", threads)
        sums.append(en.function(lambda v: en.sum(en.exp(v) * 2.0, axis=0))(
            en.tensor(x)).numpy())
    np.testing.assert_array_equal(sums[0], sums[1])
