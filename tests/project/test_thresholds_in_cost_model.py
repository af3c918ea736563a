"""Every measured threshold lives in engine/cost_model.py, and each one there is read.

The source of engine/, eager/ and graph/ is parsed (nothing imported). A module-level
constant bound to a number (``BLOCK = 1 << 16``) outside the cost model must be one of
the constants below that are not costs: mathematical constants, file-format facts and
safety limits, display settings, bounds on the engine's own searches. A new size, call
count or time that chooses between kernels, lowerings or passes belongs in
``engine/cost_model.py``, where it names its machine and date and
``en.config.cost`` can override it.
"""
import ast
import os

from engine import cost_model
from support.paths import REPO

FOLDERS = ("engine", "eager", "graph")
MODEL = os.path.join("engine", "cost_model.py")

# (file name, constant): why it is not a threshold of the cost model.
NOT_COSTS = {
    ("writes.py", "_HOLDER_REFS"): "a reference count the write path measures, not a cost",
    ("concrete.py", "_INLINE_WRITES"): "a bound on generated code's size (the entry tests "
                                       "every pair of written arrays), not a kernel choice",
    ("machine_load.py", "REFRESH_SECONDS"): "how long a load-average reading is reused, not "
                                            "a choice between kernels",
    ("tensor.py", "HTML_EDGE"): "display: entries shown at each end of a long side",
    ("activations.py", "_GELU_CUBIC"): "mathematics: GELU's tanh approximation",
    ("erf_kernel.py", "_SQRPI"): "mathematics: 1 / sqrt(pi)",
    ("erf_kernel.py", "SMALL"): "mathematics: the erf approximation's first interval",
    ("erf_kernel.py", "_MIDDLE"): "mathematics: its second interval",
    ("erf_kernel.py", "_BIG"): "mathematics: where erfc underflows float64",
    ("einsum_parse.py", "_UNKNOWN_SIZE"): "a stand-in for a dimension unknown at trace time",
    ("reduce.py", "_BLOCK_ROWS"): "numerics: float32 sums add blocks of rows (accuracy)",
    ("loop_nest.py", "FLUSH_ROWS"): "numerics: float32 partial sums move to float64",
    ("c_source.py", "MAX_FLAT_SUM"): "a limit of the written C loop (its flush is quadratic)",
    ("c_graph_emit.py", "ALIGN"): "memory layout: workspace slots start on cache lines",
    ("c_graph_emit.py", "MAX_CONSTANT_ELEMENTS"): "a limit of the written C source (array "
                                                  "constants written into it)",
    ("c_graph_ops.py", "MAX_INLINED_CHARS"): "a limit of the written C source (keeps writing "
                                            "a long chain linear in its length)",
    ("c_graph_ops.py", "LANES"): "the shape of the written C reduction (its final adds "
                                 "are written for eight partial sums), not a kernel choice",
    ("serialization.py", "VERSION"): "file format version",
    ("serialization.py", "_MAX_META_BYTES"): "safety limit on a loaded file",
    ("safetensors_io.py", "_MAX_HEADER_BYTES"): "safety limit on a loaded file",
    ("training_checkpoint.py", "VERSION"): "file format version",
    ("mnist.py", "IMAGES_MAGIC"): "file format",
    ("mnist.py", "LABELS_MAGIC"): "file format",
    ("mnist.py", "MAX_INFLATION"): "safety limit on a compressed file",
    ("mnist.py", "_STYLES"): "data: styles of the synthetic digits",
    ("mode.py", "_CACHE_LIMIT"): "memory bound of a cache",
    ("mode.py", "_SCALARS_LIMIT"): "memory bound of a cache",
    ("load.py", "_ATTEMPTS"): "retries of a read that concurrent saves replace",
    ("load_arrays.py", "CHUNK"): "bytes read at a time from a file",
    ("native.py", "VERSION"): "file format version",
    ("native.py", "INLINE_ELEMENTS"): "file format: arrays written inline",
    ("native.py", "INT_LIMIT"): "file format: integer range",
    ("native.py", "MAX_JSON_BYTES"): "safety limit on a loaded file",
    ("native.py", "MAX_ARRAY_BYTES"): "safety limit on a loaded file",
    ("native.py", "MAX_TOTAL_BYTES"): "safety limit on a loaded file",
    ("native.py", "MAX_NODES"): "safety limit on a loaded file",
    ("native.py", "MAX_RANK"): "safety limit on a loaded file",
    ("native.py", "MAX_DEPTH"): "safety limit on a loaded file",
    ("native.py", "MAX_ITEMS"): "safety limit on a loaded file",
    ("native.py", "MAX_DIM"): "safety limit on a loaded file",
    ("native.py", "LINE"): "display: width of the written JSON",
    ("onnx_export.py", "OPSET"): "file format: the ONNX opset written",
    ("notebook.py", "MAX_SVG_NODES"): "display: graphs drawn up to this size",
    ("notebook.py", "DOT_TIMEOUT_S"): "display: time given to Graphviz",
    ("control_flow_checks.py", "MAX_LENGTH"): "validity: longest loop length accepted",
    ("judge.py", "FACTOR"): "numerics: en.debug.compare's criterion, documented in the guide",
    ("judge.py", "ULPS"): "numerics: en.debug.compare's criterion, documented in the guide",
    ("vjp_check.py", "STEP"): "numerics: the finite-difference step of the VJP-rule check",
    ("vjp_check.py", "RTOL"): "numerics: the VJP-rule check's tolerance",
    ("vjp_check.py", "ATOL"): "numerics: the VJP-rule check's absolute floor",
    ("checks.py", "VALIDATE_EVERY"): "checking: the documented sample of validated calls",
    ("localize.py", "MAX_BODY_CALLS"): "a bound on the loop-body calls a diverging loop replays",
    ("fusion_groups.py", "SEARCH_BUDGET"): "bounds the fusion pass's own search",
    ("numba_emitter.py", "MAX_INLINED_CHARS"): "bounds the emitter's own string building",
    ("pipeline.py", "MAX_ROUNDS"): "bounds the passes' rounds to a fixed point",
    ("c_compiler.py", "TIMEOUT_SECONDS"): "time given to the C compiler before it fails",
    ("cse.py", "_CONST_BYTES"): "bounds the bytes CSE hashes to merge constants",
    ("scan_residuals.py", "_CONST_BYTES"): "bounds the bytes hashed to match constants, as CSE's",
    ("simplify.py", "_SMALL"): "bounds the constants simplify reads element by element",
    ("operators.py", "UNROLL_WARNING"): "a warning: Python loop iterations while tracing",
    ("batching_loops.py", "_MAX_TRIES"): "a safety bound on vmap's restaging of a loop (each "
                                         "try batches one more carry), not a cost",
    ("rnn_layers.py", "_MAX_LAYERS"): "the layers load_torch_state_dict's name table lists",
}


def _numeric(value):
    """Whether ``value`` is a number written in the source: ``64``, ``1 << 16``, ``-1.5``."""
    if isinstance(value, ast.Constant):
        return type(value.value) in (int, float)
    if isinstance(value, ast.BinOp):
        return _numeric(value.left) and _numeric(value.right)
    if isinstance(value, ast.UnaryOp):
        return _numeric(value.operand)
    return False


def numeric_constants(root=REPO):
    """``{(relative path, NAME)}`` of every module-level ``NAME = <number>`` in FOLDERS."""
    found = set()
    for top in FOLDERS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), filename=path)
                for node in tree.body:
                    if isinstance(node, ast.Assign):
                        targets, value = node.targets, node.value
                    elif isinstance(node, ast.AnnAssign) and node.value is not None:
                        targets, value = [node.target], node.value
                    else:
                        continue
                    for t in targets:
                        if isinstance(t, ast.Name) and t.id.isupper() and _numeric(value):
                            found.add((os.path.relpath(path, root), t.id))
    return found


def test_no_numeric_constant_outside_the_cost_model_is_a_threshold():
    found = {(p, n) for p, n in numeric_constants() if p != MODEL}
    offenders = sorted((p, n) for p, n in found if (os.path.basename(p), n) not in NOT_COSTS)
    assert not offenders, (
        "module-level numbers that are not in engine/cost_model.py: a threshold that picks a "
        "kernel, lowering or pass goes there (with its machine and date, read through "
        "en.config.cost); anything else goes in NOT_COSTS here, with the reason: "
        f"{offenders}")


def test_the_exemptions_are_still_there():
    # An exemption whose constant is gone is removed, so the list stays the true one.
    present = {(os.path.basename(p), n) for p, n in numeric_constants()}
    stale = sorted(set(NOT_COSTS) - present)
    assert not stale, f"NOT_COSTS names constants that no longer exist: {stale}"


def test_the_scan_finds_a_threshold_written_as_a_module_constant(tmp_path):
    # The scanner itself: a constant written the way the thresholds used to be is found.
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "kernel.py").write_text(
        "import math\nBLOCK = 1 << 16\nRATE: float = -1.5e-9\nNAME = 'x'\nPI = math.pi\n"
        "def f():\n    LOCAL = 3\n")
    assert numeric_constants(str(tmp_path)) == {(os.path.join("graph", "kernel.py"), "BLOCK"),
                                                (os.path.join("graph", "kernel.py"), "RATE")}


def readers(root=REPO):
    """``{threshold name: {relative path}}``: the files whose code reads ``cost.<name>``
    (or ``config.cost.<name>``); comments and docstrings do not count."""
    found = {}
    for top in FOLDERS:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                path = os.path.join(folder, name)
                if not name.endswith(".py") or os.path.relpath(path, root) == MODEL:
                    continue
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), filename=path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Attribute) and (
                            getattr(node.value, "id", None) == "cost" or
                            getattr(node.value, "attr", None) == "cost"):
                        found.setdefault(node.attr, set()).add(os.path.relpath(path, root))
    return found


def test_every_threshold_is_read_in_the_files_the_model_names():
    read = readers()
    unread = [t.name for t in cost_model.THRESHOLDS if t.name not in read]
    assert not unread, f"thresholds nothing reads (remove them, or read them): {unread}"
    wrong = [(t.name, t.used_in, ", ".join(sorted(read[t.name])))
             for t in cost_model.THRESHOLDS
             if {p.strip() for p in t.used_in.split(",")} != read[t.name]]
    assert not wrong, ("a threshold's used_in is not the list of files that read it "
                       f"(name, declared, read in): {wrong}")
    unknown = sorted(set(read) - {t.name for t in cost_model.THRESHOLDS}
                     - {"override", "reset", "changed"})
    assert not unknown, f"code reads thresholds the model does not declare: {unknown}"
