"""Faults injected into the graph side (a kernel of each lowering, a rewrite of each pass,
a lowering rule): ``en.debug.compare`` must find each and name the node and the user's
line that made it. Each program marks the line the fault lands on with ``# F:<name>``."""
import importlib
import re
import runpy
from pathlib import Path

import numpy as np
import pytest

import engine as en
from engine import chunk_rules, ops
from engine.graph.ir.graph_ops import constant_op
from engine.graph.ir.queries import replace_node
from engine.graph.lowering import fusion, parallel_matmul, pipeline, plugin
from engine.graph.control import control_flow
from engine.graph.lowering.c import c_graph_ops, c_source
from engine.graph.lowering import graph_limits
from engine.graph.lowering.numba import fusion_numba, numba_emitter
from engine.graph.passes import batch_products
from engine.graph.passes import constant_folding as folding
from engine.graph.passes import simplify
from support.compilers import import_numba

SOURCE = Path(__file__).read_text().splitlines()


def line_of(marker):
    """The line number of the line ending with ``# F:<marker>``."""
    return next(k for k, text in enumerate(SOURCE, 1) if text.endswith(f"# F:{marker}"))


def data(*shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    return en.tensor(rng.uniform(-1.0, 1.0, shape).astype(dtype))


def assert_found(report, marker, traced_op=None, made_by=None):
    """The report diverges first at the line marked ``marker`` (and op, maker)."""
    assert not report.ok, str(report)
    first = report.first
    assert first.source[0] == __file__ and first.source[1] == line_of(marker), str(report)
    if traced_op is not None:
        assert first.traced_op == traced_op, str(report)
    if made_by is not None:
        assert re.search(made_by, first.made_by), str(report)
    assert first.figures.graph_abs > first.figures.tolerance
    return first


# ---- programs ---------------------------------------------------------------------------

def elementwise(x):
    h = en.tanh(x @ x.T)
    y = en.exp(h)  # F:region
    return y * 2.0 + 1.0, h


def sliced(x):
    h = x * 3.0
    y = h[1:, :2]  # F:getitem
    return y + 1.0


def product(a, b):
    h = en.tanh(a)
    y = h @ b  # F:matmul
    return y * 2.0


def summed(x):
    h = x @ x.T
    return en.sum(h, axis=0)  # F:sum


def tanh_region(x):
    h = x @ x.T
    y = en.tanh(h)  # F:tanh
    return y * 0.5 - 1.0


def constants(x):
    c = en.exp(en.tensor(np.array([0.5, 1.5, 2.5], np.float32)))  # F:folded
    return x * c


def two_scales(x):
    a = x * 2.0
    b = x * 3.0  # F:cse
    return a - b


def cube(x):
    h = en.sin(x)
    y = h ** 3.0  # F:pow
    return y + h


def transposed(a, b, c):
    y = en.transpose(a @ b)  # F:layout
    return y + c


def mean_region(x):
    h = en.sin(x)
    return en.mean(en.tanh(h) * 2.0)  # F:mean


def gradient_step(w, x):
    def loss(w):
        h = en.tanh(x @ w)  # F:tanh_in_loss
        return en.mean((h - 0.5) ** 2.0)
    return en.grad(loss)(w)


# ---- faults ---------------------------------------------------------------------------

def scaled(fn, factor=1.001, n_inputs=None):
    """``fn`` (a kernel) off by ``factor``; with ``n_inputs``, an ``out=`` kernel that may
    take ``out`` by position after its inputs."""
    def wrong(*args, **kwargs):
        if n_inputs is not None and len(args) > n_inputs:
            args, kwargs["out"] = args[:n_inputs], args[n_inputs]
        out = kwargs.get("out")
        value = fn(*args, **kwargs)
        if out is not None:
            np.multiply(out, factor, out=out)
            return out
        return np.asarray(value) * np.asarray(factor, dtype=np.asarray(value).dtype)
    return wrong


def test_numpy_fused_kernel(monkeypatch):
    monkeypatch.setattr(en.config, "lowering", "numpy")
    monkeypatch.setattr(ops.exp_op, "out_impl", scaled(ops.exp_op.out_impl, n_inputs=1))
    first = assert_found(en.debug.compare(elementwise, data(8, 8)), "region", traced_op="exp",
                         made_by="fused region .*numpy kernel")
    assert "%exp" in first.members


def test_numpy_python_form_rule(monkeypatch):
    rule = ops.getitem_op.rules["python_form"]

    def wrong(avals, params):
        form = rule(avals, params)
        return None if form is None else f"({form} * 1.01)"
    monkeypatch.setitem(ops.getitem_op.rules, "python_form", wrong)
    assert_found(en.debug.compare(sliced, data(6, 5)), "getitem", traced_op="getitem",
                 made_by="python_form")


def test_numpy_static_kernel_of_matmul(monkeypatch):
    rule = ops.matmul_op.rules["static_kernel"]
    monkeypatch.setitem(ops.matmul_op.rules, "static_kernel",
                        lambda *a: scaled(rule(*a) or ops.matmul_op.impl))
    assert_found(en.debug.compare(product, data(6, 5), data(5, 4)), "matmul", traced_op="matmul",
                 made_by="static_kernel")


def test_numpy_static_kernel_of_sum(monkeypatch):
    rule = ops.sum_op.rules["static_kernel"]
    monkeypatch.setitem(ops.sum_op.rules, "static_kernel",
                        lambda *a: scaled(rule(*a) or ops.sum_op.impl))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    assert_found(en.debug.compare(summed, data(7, 3)), "sum", traced_op="sum",
                 made_by="static_kernel")


def _fused_kernels_only(monkeypatch):
    """C writes fused kernels only (the path these faults are planted in): a graph this
    small would otherwise be one C function (graph/lowering/c/c_graph.py)."""
    monkeypatch.setattr(plugin.get("c"), "writes_graphs", False)


def wrong_tanh(expression, factor="1.001f"):
    """An expression writer ``expression(node, args)`` whose tanh is off by ``factor``
    (a C or numba literal)."""
    def wrong(node, args):
        text = expression(node, args)
        return f"({text} * {factor})" if node.op.name == "tanh" else text
    return wrong


def test_c_kernel(monkeypatch):
    monkeypatch.setattr(c_source, "c_expression", wrong_tanh(c_source.c_expression))
    monkeypatch.setattr(en.config, "lowering", "c")
    _fused_kernels_only(monkeypatch)
    first = assert_found(en.debug.compare(tanh_region, data(64, 64)), "tanh", traced_op="tanh",
                         made_by="C kernel")
    assert "%tanh" in first.members


def test_scalar_form_rule_in_c(monkeypatch):
    monkeypatch.setitem(ops.tanh_op.rules, "scalar_form", "np.tanh({0}) * 1.001")
    monkeypatch.setattr(en.config, "lowering", "c")
    _fused_kernels_only(monkeypatch)
    assert_found(en.debug.compare(tanh_region, data(64, 64)), "tanh", traced_op="tanh",
                 made_by="C kernel")


def test_scalar_form_rule_in_numba(monkeypatch):
    import_numba()
    monkeypatch.setitem(ops.tanh_op.rules, "scalar_form", "np.tanh({0}) * 1.001")
    monkeypatch.setattr(en.config, "lowering", "numba")
    assert_found(en.debug.compare(tanh_region, data(16, 16)), "tanh", traced_op="tanh",
                 made_by="numba")


def test_constant_folding(monkeypatch):
    def wrong_folding(graph):
        changed = False
        for node in graph.topo_order():
            if folding._foldable(node):
                value = node.op.impl(*[folding._input_value(i) for i in node.inputs],
                                     **node.params) * 1.01
                value = np.array(value, dtype=node.dtype)
                const = graph.add(constant_op, (), {"value": value}, (value.shape, value.dtype),
                                  name=f"{node.name}_c", source=node.source)
                replace_node(graph, node, const)
                changed = True
        return changed
    monkeypatch.setitem(pipeline.PASSES, "constant_folding", wrong_folding)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(constants, data(4, 3)), "folded", traced_op="exp")
    assert first.made_by.startswith("constant folding")


def test_cse(monkeypatch):
    def wrong_cse(graph):
        """Takes constants of one shape and dtype for the same value."""
        seen = {}
        changed = False
        for node in graph.topo_order():
            if node.op is constant_op:
                key = (np.shape(node.params["value"]), node.dtype)
                if key in seen and seen[key] is not node:
                    replace_node(graph, node, seen[key])
                    changed = True
                else:
                    seen[key] = node
        return changed
    monkeypatch.setitem(pipeline.PASSES, "cse", wrong_cse)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(two_scales, data(4, 3)), "cse", traced_op="mul")
    assert "cse" in first.made_by


def test_simplify(monkeypatch):
    def wrong_power(graph, node):
        """Rewrites ``x ** 3`` as ``square(x)``."""
        x, y = node.inputs
        if simplify.all_equal_to(y, 3):
            sq = graph.add(ops.square_op, [x], {}, (node.shape, node.dtype), name="square",
                           source=node.source)
            return replace_node(graph, node, sq)
        return False
    monkeypatch.setitem(simplify.RULES, ops.pow_op, wrong_power)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(cube, data(4, 3)), "pow", traced_op="pow")
    assert "simplify" in first.made_by


def test_layout(monkeypatch):
    def wrong_layout(graph):
        """``transpose(a @ b)`` as ``transpose(a) @ transpose(b)`` (the operands unswapped)."""
        changed = False
        for node in graph.topo_order():
            if node in graph and node.op is ops.transpose_op and node.inputs[0].op is ops.matmul_op:
                a, b = node.inputs[0].inputs
                ta, tb = [graph.add(ops.transpose_op, [v], {"axes": (1, 0)},
                                    ((v.shape[1], v.shape[0]), v.dtype), source=node.source)
                          for v in (a, b)]
                new = graph.add(ops.matmul_op, [ta, tb], {}, (node.shape, node.dtype),
                                source=node.source)
                replace_node(graph, node, new)
                changed = True
        return changed
    monkeypatch.setitem(pipeline.PASSES, "layout", wrong_layout)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(transposed, data(5, 5), data(5, 5, seed=1),
                                          data(5, 5, seed=2)), "layout",
                         traced_op="transpose")
    assert first.made_by.startswith("layout change")


def test_fusion_reduction(monkeypatch):
    kind = fusion.reduction_kind
    monkeypatch.setattr(fusion, "reduction_kind",
                        lambda m, r: "sum" if kind(m, r) == "mean" else kind(m, r))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(mean_region, data(6, 7)), "mean", traced_op="mean",
                         made_by="fused region")
    assert "%tanh" in first.members


def test_fault_in_a_gradient(monkeypatch):
    """A backward node's fused kernel: the gradient function's graph holds the backward."""
    monkeypatch.setattr(en.config, "lowering", "numpy")
    monkeypatch.setattr(ops.square_op, "out_impl", scaled(ops.square_op.out_impl, n_inputs=1))
    report = en.debug.compare(gradient_step, data(5, 3), data(8, 5, seed=1))
    assert not report.ok
    assert "fused region" in report.first.made_by


def scanned(h0, xs, w):
    def step(h, x):
        h = en.tanh(x @ w + h)  # F:scan_body
        return h, h
    _, hs = en.scan(step, h0, xs)  # F:scan
    return hs


def test_fault_in_a_scan_body(monkeypatch):
    """The body's kernels are the graph's; eager runs the body op by op."""
    rule = ops.matmul_op.rules["static_kernel"]
    monkeypatch.setitem(ops.matmul_op.rules, "static_kernel",
                        lambda *a: scaled(rule(*a) or ops.matmul_op.impl))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    report = en.debug.compare(scanned, data(4, 6), data(5, 4, 3, seed=1), data(3, 6, seed=2))
    # The loop's results diverge; replayed step by step, its body names the product.
    first = assert_found(report, "scan_body", traced_op="matmul", made_by="body 'body', call 1")
    assert "scan" in first.op


def test_vjp_rule(monkeypatch):
    """A gradient rule off by a factor: eager and graph agree, the finite difference not."""
    vjp = ops.tanh_op.vjp
    monkeypatch.setattr(ops.tanh_op, "vjp", lambda g, out, x: tuple(
        None if v is None else v * 1.1 for v in vjp(g, out, x)))
    first = assert_found(en.debug.compare(gradient_step, data(5, 3), data(8, 5, seed=1)),
                         "tanh_in_loss", traced_op="tanh", made_by="VJP rule of 'tanh'")
    assert first.figures.graph_rel > 0.01


def autoencoder_step(w, b1, b2, x):
    def loss(w, b1, b2):
        h = en.sigmoid(x @ w + b1)
        y = en.sigmoid(h @ en.transpose(w) + b2)  # F:output_sigmoid
        return en.mean((y - x) ** 2.0)
    return en.value_and_grad(loss, argnums=(0, 1, 2))(w, b1, b2)


def test_backward_kernel_of_a_training_step(monkeypatch):
    """sigmoid_grad runs only in the backward pass: its node carries the line of the
    forward op whose gradient it computes (the output's sigmoid, whose gradient runs
    first), and the report says it is that op's gradient."""
    monkeypatch.setattr(en.config, "lowering", "numpy")
    monkeypatch.setattr(ops.sigmoid_grad_op, "out_impl",
                        scaled(ops.sigmoid_grad_op.out_impl, 1.01, n_inputs=2))
    first = assert_found(en.debug.compare(autoencoder_step, data(12, 6), data(6, seed=1),
                                          data(12, seed=2), data(9, 12, seed=3)),
                         "output_sigmoid", traced_op="sigmoid_grad", made_by="fused region")
    assert "in the gradient of op 'sigmoid' made there" in first.line
    assert "in the gradient of op 'sigmoid'" in str(first)


class _WrongLeadingSum(control_flow.LeadingSum):
    def total(self):
        return super().total() * 1.01


def summed_scan(w, xs):
    ys = en.scan(lambda c, x: (c, en.tanh(x * w)), 0.0, xs)[1]
    return en.sum(ys, axis=0)  # F:scan_sums


def test_scan_sums(monkeypatch):
    """The scan adds up a result its sum alone reads (pass scan_sums): a wrong total."""
    monkeypatch.setattr(control_flow, "LeadingSum", _WrongLeadingSum)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(summed_scan, data(3), data(6, 3, seed=1)),
                         "scan_sums", traced_op="sum")
    assert "scan_sums" in first.made_by


def two_products(x, w, v):
    a = x @ w
    b = x @ v
    return a * b  # F:planned


def test_memory_planning(monkeypatch):
    """A plan that puts every value in one buffer: values overwrite one another."""
    plan_pass = pipeline.PASSES["memory_planning"]

    def one_buffer(graph):
        plan_pass(graph)
        plan = graph.memory_plan
        if plan is not None and plan.views:
            plan.slots = [max(plan.slots)]
            plan.views = [(0, shape, dtype) for _, shape, dtype in plan.views]
        return False
    monkeypatch.setitem(pipeline.PASSES, "memory_planning", one_buffer)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(two_products, data(64, 64), data(64, 64, seed=1),
                                          data(64, 64, seed=2)), "planned", traced_op="mul")
    assert first.made_by.startswith("memory planning")


def branches(x, flag):
    return en.cond(flag, lambda v: v @ v, lambda v: v - 1.0, x)  # F:cond


def test_fault_in_a_cond_branch(monkeypatch):
    rule = ops.matmul_op.rules["static_kernel"]
    monkeypatch.setitem(ops.matmul_op.rules, "static_kernel",
                        lambda *a: scaled(rule(*a) or ops.matmul_op.impl))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(branches, data(5, 5), en.tensor(True)), "cond",
                         traced_op="matmul", made_by="body 'true'")
    assert "cond" in first.op


def looped(x):
    return en.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v @ v * 0.5),  # F:while
                         (en.tensor(0), x))[1]


def test_fault_in_a_while_loop(monkeypatch):
    rule = ops.matmul_op.rules["static_kernel"]
    monkeypatch.setitem(ops.matmul_op.rules, "static_kernel",
                        lambda *a: scaled(rule(*a) or ops.matmul_op.impl))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    assert_found(en.debug.compare(looped, data(5, 5)), "while", traced_op="matmul",
                 made_by="body 'body'")


def test_numba_ufunc_kernel(monkeypatch):
    """The numba lowering that writes each region as one ufunc, its kernel text wrong."""
    import_numba()
    form = fusion_numba.scalar_form_text

    def wrong(op, in_avals, out_dtype, params=None):
        text = form(op, in_avals, out_dtype, params)
        return f"({text}) * 1.001" if op.name == "tanh" else text
    monkeypatch.setattr(fusion_numba, "scalar_form_text", wrong)
    monkeypatch.setattr(en.config, "lowering", "numba_ufunc")
    first = assert_found(en.debug.compare(tanh_region, data(64, 64)), "tanh", made_by="numba")
    assert first.traced_op == "tanh"


def test_c_whole_graph_kernel(monkeypatch):
    """The C lowering of whole graphs, its elementwise writer wrong for tanh: the compare
    names the one C function, then its member tanh and its line (the members written
    again by the same writer, every value out)."""
    monkeypatch.setattr(c_graph_ops, "c_expression", wrong_tanh(c_graph_ops.c_expression))
    monkeypatch.setattr(en.config, "lowering", "c")
    report = en.debug.compare(tanh_region, data(64, 64))
    first = assert_found(report, "tanh", traced_op="tanh",
                         made_by=r"whole-graph c kernel .*member %tanh")
    assert "%tanh" in first.members
    assert first.figures.graph_abs > 10 * first.figures.eager_abs


def _scan_args():
    return data(4, 6), data(5, 4, 3, seed=1), data(3, 6, seed=2)


def test_c_whole_graph_scan_body(monkeypatch):
    """A scan in a graph written as one C function, the body's tanh written wrong: the
    loop's result diverges, its body's calls are replayed through the C writer, and the
    body's tanh and its line are named."""
    monkeypatch.setattr(c_graph_ops, "c_expression", wrong_tanh(c_graph_ops.c_expression))
    monkeypatch.setattr(en.config, "lowering", "c")
    first = assert_found(en.debug.compare(scanned, *_scan_args()), "scan_body",
                         traced_op="tanh",
                         made_by=r"whole-graph c kernel .*member %scan .*body 'body', call 1")


def test_c_scan_written_alone(monkeypatch):
    """The graph is not written whole, its scan is (a C time loop of its own)."""
    monkeypatch.setattr(c_graph_ops, "c_expression", wrong_tanh(c_graph_ops.c_expression))
    monkeypatch.setattr(en.config, "lowering", "c")
    monkeypatch.setattr(graph_limits, "too_large", lambda members: "a test's refusal")
    f = en.function(scanned)
    args = _scan_args()
    assert [n.op.name for n in f.graph_for(*args).nodes].count("compiled_region") == 1
    first = assert_found(en.debug.compare(f, *args), "scan_body", traced_op="tanh",
                         made_by=r"whole-graph c kernel .*body 'body', call 1")
    assert first.members == ()


def test_numba_whole_graph_kernel(monkeypatch):
    """The numba lowering of whole graphs, its elementwise writer wrong for tanh."""
    import_numba()
    monkeypatch.setattr(numba_emitter, "scalar_expression",
                        wrong_tanh(numba_emitter.scalar_expression, "np.float32(1.001)"))
    monkeypatch.setattr(en.config, "lowering", "numba")
    first = assert_found(en.debug.compare(tanh_region, data(16, 16)), "tanh",
                         traced_op="tanh", made_by=r"whole-graph numba kernel .*member %tanh")
    assert "%tanh" in first.members


def test_numba_scan_body(monkeypatch):
    """A scan compiled by numba, its body's tanh written wrong: replayed through numba's
    writer, the body's tanh and its line are named."""
    import_numba()
    monkeypatch.setattr(numba_emitter, "scalar_expression",
                        wrong_tanh(numba_emitter.scalar_expression, "np.float32(1.001)"))
    monkeypatch.setattr(en.config, "lowering", "numba")
    assert_found(en.debug.compare(scanned, *_scan_args()), "scan_body", traced_op="tanh",
                 made_by=r"whole-graph numba kernel .*body 'body', call 1")


def chunked_loss(x, w):
    h = en.tanh(x @ w)
    return en.mean(h * h)  # F:chunked


def _chunked_args():
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(4)
    x = en.tensor(da.from_array(rng.uniform(-1, 1, (40, 5)), chunks=(8, 5)))
    return x, en.tensor(rng.uniform(-1, 1, (5, 3)))


def test_dask_chunked_path_agrees():
    report = en.debug.compare(chunked_loss, *_chunked_args())
    assert report.ok and report.checked == 1, str(report)


def test_dask_chunks_rule(monkeypatch):
    """mean's chunks rule without its division: the combined sum is returned."""
    monkeypatch.setitem(ops.mean_op.rules, "chunks",
                        chunk_rules.reduction("sum", partial="sum", divide=False))
    first = assert_found(en.debug.compare(chunked_loss, *_chunked_args()), "chunked",
                         traced_op="mean", made_by="chunked")
    assert first.figures.graph_rel > 1.0


def test_repro_of_a_fault_in_a_loop_body(monkeypatch, tmp_path):
    """The script rebuilds the body's diverging product on that step's inputs."""
    rule = ops.matmul_op.rules["static_kernel"]
    monkeypatch.setitem(ops.matmul_op.rules, "static_kernel",
                        lambda *a: scaled(rule(*a) or ops.matmul_op.impl))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    report = en.debug.compare(scanned, data(4, 6), data(5, 4, 3, seed=1), data(3, 6, seed=2))
    path = report.write_repro(tmp_path / "body.py")
    text = Path(path).read_text()
    assert "lookup('matmul')" in text and "scan" not in text.split("def subgraph")[1]
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(path), run_name="__main__")
    assert exit_.value.code == 1


def unrolled(xs, w):
    outs = [en.tanh(xs[t] @ w) for t in range(6)]  # F:batched
    return en.stack(outs)


def test_batch_products(monkeypatch):
    """Small products sharing a weight, batched into one: the blocks stacked out of order."""
    stacked = batch_products._stacked
    monkeypatch.setattr(batch_products, "_stacked", lambda graph, xs, axis, source:
                        stacked(graph, list(reversed(xs)), axis=axis, source=source))
    monkeypatch.setattr(en.config, "lowering", "numpy")
    first = assert_found(en.debug.compare(unrolled, data(6, 4, 5), data(5, 3, seed=1)),
                         "batched", traced_op="matmul")
    assert "batch_products" in first.made_by


def big_product(x, w):
    return en.tanh(x @ w)  # F:rows


def test_row_split_product(monkeypatch):
    """A product split by rows among kernel threads (pass parallel_matmul), its second
    share of rows written wrong."""
    monkeypatch.setattr(importlib.import_module("engine.graph.lowering.c.c_pool"),
                        "kernels_on_blas_threads", lambda: False)
    def wrong_out_impl(self, x, y, out):
        half = out.shape[0] // 2
        np.matmul(x[:half], y, out=out[:half])
        np.matmul(x[half:], y, out=out[half:])
        out[half:] *= 1.01
        return out
    monkeypatch.setattr(parallel_matmul.RowSplitProduct, "out_impl", wrong_out_impl)
    monkeypatch.setattr(en.config, "lowering", "numpy")
    monkeypatch.setattr(en.config, "fusion_threads", 2)
    with en.config.cost.override(parallel_matmul_min_work=1):
        f = en.function(big_product)
        args = data(16, 8), data(8, 4, seed=1)
        assert any(n.name.startswith("matmul_rows") for n in f.graph_for(*args).nodes)
        first = assert_found(en.debug.compare(f, *args), "rows", traced_op="matmul")
    assert "parallel_matmul" in first.made_by
