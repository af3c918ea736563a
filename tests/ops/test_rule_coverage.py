"""Per-op rules (``Op.rules``, declared with ``engine.op.declare`` beside each op): which
ops lack which kind of rule, and that every rule is well formed and true.

Run ``python -m pytest -s tests/ops/test_rule_coverage.py`` to see the table: per rule kind,
the ops that have none. A new op must be classified: every op declares an ``onnx``
rule (None: no ONNX equivalent) and every fusable elementwise op a ``scalar_form``
(None: numba cannot lower it), or this file fails naming it.
"""
import ast
import pathlib
import warnings

import numpy as np
import pytest

import engine as en
from engine import scalar_forms
from engine.op import REGISTRY, RULE_KINDS, Op
from engine.graph.ir.graph_ops import STRUCTURAL
from engine.graph.export.onnx_export import PATTERNS, not_exported
from op_db import OPS_BY_NAME, seeded_rng
from support.paths import REPO

ALL_OPS = {**REGISTRY, **STRUCTURAL}
ROOT = pathlib.Path(REPO)


def _fusable(op):
    return op.elementwise and op.out_impl is not None


def test_print_ops_lacking_each_rule_kind():
    """The table: per exporter or lowering, the ops it cannot handle; per optional
    property, the ops that declare it; per back end, how each op's kernel is found."""
    lines = ["ops lacking a rule, per kind (numba and positional out: fusable ops only):"]
    for kind in ("onnx", "scalar_form", "positional_out"):
        lacking = sorted(n for n, op in ALL_OPS.items() if op.rules.get(kind) is None
                         and (kind == "onnx" or _fusable(op)))
        lines.append(f"  {kind}: {', '.join(lacking) or '(none)'}")
    lines.append("ops declaring a property:")
    for kind in ("shape_only", "fold_cost", "side_effects_of", "load_check"):
        having = sorted(n for n, op in ALL_OPS.items() if op.rules.get(kind) is not None)
        lines.append(f"  {kind}: {', '.join(having)}")
    report = en.backend.kernel_report()
    lines.append("kernels per back end (ops with no kernel there are listed as missing):")
    lines.extend("  " + line for line in en.backend.format_kernel_report(report).splitlines())
    print("\n".join(lines))
    assert sorted(n for n in ALL_OPS if ALL_OPS[n].rules.get("onnx") is None) == not_exported()
    assert all(not rows["missing"] for rows in report.values()), report
    assert set(RULE_KINDS) >= {k for op in ALL_OPS.values() for k in op.rules}


def test_every_op_is_classified_for_onnx():
    unclassified = sorted(n for n, op in ALL_OPS.items() if "onnx" not in op.rules)
    assert not unclassified, (
        f"ops without an onnx rule: {unclassified}; declare(op, onnx=(pattern, ...)) with a "
        f"pattern of graph.export.onnx_export.PATTERNS, or onnx=None when ONNX has no equivalent "
        "(then list it in docs/guide/export.md, the ONNX section)")


def test_onnx_rules_name_real_patterns_and_every_pattern_is_used():
    used = set()
    for name, op in ALL_OPS.items():
        rule = op.rules.get("onnx")
        if rule is None:
            continue
        assert isinstance(rule, tuple) and rule and rule[0] in PATTERNS, \
            f"{name}: onnx rule {rule!r} names no pattern of onnx_export.PATTERNS"
        used.add(rule[0])
    assert not set(PATTERNS) - used, f"patterns no op uses: {sorted(set(PATTERNS) - used)}"


def test_fold_cost_rules_name_real_patterns_and_every_pattern_is_used():
    from engine.graph.passes.fold_cost import PATTERNS as COST_PATTERNS
    used = {op.rules["fold_cost"] for op in ALL_OPS.values() if "fold_cost" in op.rules}
    assert used == set(COST_PATTERNS), (sorted(used), sorted(COST_PATTERNS))


def test_every_fusable_elementwise_op_is_classified_for_numba():
    unclassified = sorted(n for n, op in ALL_OPS.items()
                          if _fusable(op) and "scalar_form" not in op.rules)
    assert not unclassified, f"fusable elementwise ops without a scalar_form rule: {unclassified}"
    for name, op in ALL_OPS.items():
        form = op.rules.get("scalar_form")
        if form is not None:
            assert _fusable(op), f"{name}: a scalar_form on an op fusion never lowers"
            n = op.n_inputs
            avals, f64 = [((2, 3), np.dtype("float64"))] * n, np.dtype("float64")
            # A form chosen by the input types (float64 ones here) and, where it takes
            # them, the params (each sample's of the op database that names them).
            params = [None]
            if callable(form) and scalar_forms.takes_params(form):
                params = [s.kwargs for s in OPS_BY_NAME[name].sample_inputs(
                    f64, seeded_rng(name)) if s.kwargs]
                assert params, f"{name}: no sample names the params its scalar form reads"
            for p in params:
                text = scalar_forms.resolve(op, avals, f64, p)
                assert text is not None, f"{name}: no scalar form for the params {p}"
                text.format(*[f"x{i}" for i in range(n)])   # names only inputs the op has


@pytest.mark.parametrize("name", sorted(n for n, op in REGISTRY.items()
                                        if op.rules.get("positional_out")))
def test_positional_out_is_taken_positionally(name):
    """The claim holds on the op database's samples: ``out_impl(*arrays, out)`` writes
    numpy's reference result into ``out``, without a deprecation warning."""
    op, info = REGISTRY[name], OPS_BY_NAME[name]
    checked = 0
    for dtype in info.dtypes:
        for sample in info.sample_inputs(dtype, seeded_rng(name)):
            if sample.kwargs or not all(isinstance(a, np.ndarray) for a in sample.args):
                continue
            want = np.asarray(info.ref(*sample.args))
            out = np.empty(want.shape, want.dtype)
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)
                with np.errstate(all="ignore"):
                    got = op.out_impl(*sample.args, out)
            assert got is out
            np.testing.assert_array_equal(out, want)
            checked += 1
    assert checked, f"{name}: no sample checked"


@pytest.mark.parametrize("name", sorted(n for n, op in REGISTRY.items()
                                        if op.rules.get("shape_only")))
def test_shape_only_ops_read_nothing_but_shapes(name):
    """Constant folding evaluates these on a zero-stride stand-in of the input: the
    result must equal the one on the real values."""
    op, info = REGISTRY[name], OPS_BY_NAME.get(name)
    rng = np.random.default_rng(0)
    for shape in [(), (3,), (2, 5)]:
        for dtype in ("float64", "int32", "bool"):
            x = (rng.standard_normal(shape) * 5).astype(dtype)
            stand_in = np.broadcast_to(np.zeros((), dtype), shape)
            params = {"axes": tuple(range(len(shape))), "dtype": np.dtype("float64")} \
                if name == "count" else {}
            np.testing.assert_array_equal(op.impl(stand_in, **params), op.impl(x, **params))
    assert info is None or info.name == name


def test_side_effect_rules_and_load_checks_are_callables():
    for name, op in ALL_OPS.items():
        for kind in ("side_effects_of", "load_check"):
            rule = op.rules.get(kind)
            assert rule is None or callable(rule), f"{name}: {kind} rule is not callable"


def test_load_checks_bound_lengths_as_the_file_format_does():
    from engine.graph.control import control_flow_checks
    from engine.graph.export import native as export
    assert control_flow_checks.MAX_LENGTH == export.MAX_DIM


def test_op_objects_in_op_modules_are_registered():
    """Every Op object an op module defines is a registered one, so a rule can
    never be declared on an op that consumers do not see."""
    import engine.random
    import engine.graph.control.control_flow
    import engine.graph.control.effects
    import engine.graph.ir.graph_ops
    registered = {id(op) for op in ALL_OPS.values()}
    modules = [en.ops, engine.random, engine.graph.control.control_flow, engine.graph.control.effects, engine.graph.ir.graph_ops]
    stray = [f"{m.__name__}.{k}" for m in modules for k, v in vars(m).items()
             if isinstance(v, Op) and id(v) not in registered]
    assert not stray, f"Op objects that are not registered: {stray}"


def _op_name_tables(path):
    """Dict and set literals in ``path`` keyed by two or more registered op names."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        keys = node.keys if isinstance(node, ast.Dict) else \
            node.elts if isinstance(node, ast.Set) else []
        names = [k.value for k in keys if isinstance(k, ast.Constant) and k.value in ALL_OPS]
        if len(names) >= 2:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {names[:4]}")
    return found


def test_no_consumer_keeps_a_table_keyed_by_op_names():
    """Per-op knowledge lives on the Op (declared beside it), not in the passes,
    exporters or modes that read it."""
    consumers = sorted((ROOT / "graph").rglob("*.py")) + sorted((ROOT / "eager").rglob("*.py"))
    tables = [t for p in consumers for t in _op_name_tables(p)]
    assert not tables, f"tables keyed by op names (declare a rule on the op instead): {tables}"
