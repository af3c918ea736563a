"""``en.debug.compare``: the optimized, lowered graph against eager mode, node by node.

For one call, three runs give a value per node (``evaluate.py``): the compiled graph
with every intermediate kept, eager mode op by op, and the same ops in float64. Each
node of the optimized graph that stands for a traced node (``provenance.py``) is judged
by the criterion of ``judge.py``; a fused region is judged by its results, each result
standing for the traced node it replaced. The real compiled function (with its memory
plan) is run too and its outputs judged the same way. The first wrong node, in the
order the graph runs, is where the graph first diverged; what made it and the user's
line come with it (``report.py``).
"""
import numpy as np

from ...control.subgraph import SubGraph
from ...ir.graph import Node
from ...ir.graph_ops import placeholder_op, unpack_op
from ...lowering.codegen import _python_form, _static_kernel
from .chunked import compare_chunked
from .evaluate import VariableState, counterparts, graph_values, traced_values
from .judge import close, judge, max_abs
from .localize import wrong_body_node, wrong_kernel_member, wrong_member
from .vjp_check import check_vjps
from .provenance import MADE_BY, ORIGIN, tracked_optimize
from .report import Divergence, Report
from .repro import writer

_KERNELS = {"c": "C kernel", "numba": "numba kernel", "numba_ufunc": "numba ufunc",
            "numpy": "numpy kernel"}
_PASS_WORDS = {"layout": "layout change (pass layout)", "fusion": "fusion (pass fusion)",
               "constant_folding": "constant folding (pass constant_folding)"}


def compare_function(function, args, kwargs, make_function):
    """The :class:`Report` of one call of the ``en.function`` ``function``
    (``make_function(fn, name, passes)`` makes the ``en.function`` of a subgraph)."""
    concrete, tensors, _ = function._concrete_and_tensors(args, kwargs)
    if not hasattr(concrete, "unoptimized_graph"):    # chunked (Dask) data: the outputs
        return compare_chunked(function, concrete, tensors)
    return compare_concrete(concrete, [t._value for t in tensors], make_function)


def optimized_with_provenance(concrete):
    """The concrete function's graph optimized again with provenance (made once)."""
    graph = getattr(concrete, "_compare_graph", None)
    if graph is None:
        graph = tracked_optimize(concrete.unoptimized_graph, concrete._passes, concrete.backend)
        concrete._compare_graph = graph
    return graph


def compare_concrete(concrete, arrays, make_function):
    """The :class:`Report` of running ``concrete`` (a ConcreteFunction) on ``arrays``."""
    unoptimized = concrete.unoptimized_graph
    optimized = optimized_with_provenance(concrete)
    variables = VariableState([unoptimized])
    try:
        graph = graph_values(optimized, arrays, concrete.backend)
        variables.restore()
        real = concrete.compiled.run(list(arrays))
    finally:
        variables.restore()
    given = counterparts(optimized, graph)
    eager, _ = traced_values(unoptimized, arrays, given, variables)
    checked, near = _close_to_eager(optimized, graph, eager)
    if near and _outputs_close(optimized, real, eager):
        divergences, narrow = [], set()   # the criterion holds without a reference
    else:
        reference, narrow = traced_values(unoptimized, arrays, given, variables,
                                          fallback=eager)
        divergences, checked = _diverging(concrete, optimized, unoptimized, arrays, graph,
                                          real, eager, reference, variables)
    rules_wrong = []
    if not getattr(concrete, "_compare_rules_checked", False):
        rules_wrong = check_vjps(unoptimized, eager, narrow)
        concrete._compare_rules_checked = not rules_wrong
    for node, figures in rules_wrong:
        divergences.append(Divergence(
            node.name, node.op.name, node.name, node.op.name,
            f"the VJP rule of '{node.op.name}' (its gradient against a float64 finite "
            "difference: graph and eager both run it)", node.source, figures,
            traced_node=node))
    notes = []
    if narrow:
        notes.append("no float64 reference for " + ", ".join(sorted(f"%{n.name}" for n in narrow))
                     + " (their ops refused float64 inputs: eager's values stand in)")
    return Report(concrete.name, divergences, checked, writer(concrete, eager, make_function), notes)


def _compared(optimized, eager):
    """``(node, origin)`` for each node of the optimized graph (in order) that stands for
    one traced node with one value eager mode computed."""
    for node in optimized.topo_order():
        origin = node.meta.get(ORIGIN)
        if node.op is not placeholder_op and origin is not None and _single(node) and \
                _single(origin) and origin in eager:
            yield node, origin


def _close_to_eager(optimized, graph, eager):
    """``(nodes compared, whether every one is close to eager's value)`` (``judge.close``)."""
    checked = 0
    scales: dict[Node, float] = {}
    for node, origin in _compared(optimized, eager):
        checked += 1
        if not close(graph[node], eager[origin], input_scales(origin, eager, scales),
                     origin.dtype):
            return checked, False
    return checked, True


def _outputs_close(optimized, real, eager):
    scales: dict[Node, float] = {}
    for node, value in zip(optimized.outputs, real):
        origin = node.meta.get(ORIGIN)
        if origin is not None and _single(origin) and origin in eager and \
                not close(value, eager[origin], input_scales(origin, eager, scales),
                          origin.dtype):
            return False
    return True


def _diverging(concrete, optimized, unoptimized, arrays, graph, real, eager, reference,
               variables):
    """The divergences by the full criterion, and the number of nodes judged."""
    divergences, checked = _judge_nodes(optimized, graph, eager, reference)
    rewritten = getattr(optimized, "rewritten", None)
    if divergences and rewritten is not None:
        # Was it a rewrite? The graph before fusion and compiled kernels, op by op, says
        # which node (a fused region would hide it among its members).
        try:
            early = graph_values(rewritten, arrays, concrete.backend)
        finally:
            variables.restore()
        found, _ = _judge_nodes(rewritten, early, eager, reference)
        divergences = found + [d for d in divergences if d.traced not in
                               {f.traced for f in found}]
    if divergences and divergences[0].members:
        _narrow_region(divergences[0], unoptimized, eager, reference)
    if divergences:
        _narrow_body(divergences[0], eager, concrete.backend)
    divergences += _judge_outputs(concrete, optimized, real, graph, eager, reference,
                                  {d.traced for d in divergences})
    return divergences, checked


def _narrow_region(divergence, unoptimized, eager, reference):
    """Name the member of a fused region whose kernel alone diverges, or of a whole-graph
    kernel whose value that lowering computes wrong (``localize.py``)."""
    by_name = {f"%{n.name}": n for n in unoptimized.nodes}
    members = [by_name[m] for m in divergence.members if m in by_name]
    if divergence.lowering is not None:
        found = wrong_kernel_member(members, eager, reference, divergence.lowering)
        how = f"(the members written again by the {divergence.lowering} lowering, each value out)"
    else:
        found = wrong_member(members, eager, reference)
        how = "alone in the same lowering"
    if found is not None:
        member, figures = found
        named = member.inputs[0] if member.op is unpack_op else member   # a loop's result
        divergence.made_by += (f"; its member %{named.name} (op '{named.op.name}') "
                               f"diverges {how}")
        divergence.region_node = divergence.traced_node
        divergence.traced, divergence.traced_op = member.name, member.op.name
        divergence.traced_node, divergence.figures = member, figures
        divergence.source = member.source or divergence.source


def _narrow_body(divergence, eager, backend):
    """Name the body node of a diverging loop or conditional (``localize.py``)."""
    node = divergence.traced_node
    if node is not None and node.op is unpack_op:
        node = node.inputs[0]
    if node is None:
        return
    found = wrong_body_node(node, eager, backend, lowering=divergence.lowering)
    if found is not None:
        body, call, inner, figures, values = found
        divergence.made_by += (f"; in its body '{body}', call {call + 1}: node %{inner.name} "
                               f"(op '{inner.op.name}') diverges")
        divergence.region_node = divergence.region_node or divergence.traced_node
        divergence.traced, divergence.traced_op = inner.name, inner.op.name
        divergence.traced_node, divergence.figures = inner, figures
        divergence.source = inner.source or divergence.source
        divergence.members = ()
        divergence.body = (inner.graph, values)


def input_scales(node, values, memo):
    """The largest magnitudes of ``node``'s inputs' ``values`` (each computed once, kept
    in ``memo``)."""
    scales = []
    for i in node.inputs:
        value = values.get(i)
        if not _single(i) or value is None or np.asarray(value).dtype.kind not in "fc":
            continue
        if i not in memo:
            memo[i] = max_abs(value)
        scales.append(memo[i])
    return scales


def _single(node):
    return node.avals is None


def _judge_nodes(optimized, graph, eager, reference):
    found: list[Divergence] = []
    checked = 0
    scales: dict[Node, float] = {}
    for node, origin in _compared(optimized, eager):
        checked += 1
        figures = judge(graph[node], eager[origin], reference[origin],
                        input_scales(origin, reference, scales), origin.dtype)
        if figures.wrong:
            found.append(_divergence(node, origin, figures, optimized))
    return found, checked


def _judge_outputs(concrete, optimized, real, graph, eager, reference, seen):
    """The real compiled function's outputs (memory plan, output recycling) against the
    reference, where the graph run with every value kept had them right."""
    found: list[Divergence] = []
    scales: dict[Node, float] = {}
    for k, (node, value) in enumerate(zip(optimized.outputs, real)):
        origin = node.meta.get(ORIGIN)
        if origin is None or not _single(origin) or origin.name in seen or origin not in eager:
            continue
        figures = judge(value, eager[origin], reference[origin],
                        input_scales(origin, reference, scales), origin.dtype)
        if figures.wrong and not np.array_equal(np.asarray(value), np.asarray(graph[node])):
            real_node = concrete.graph.outputs[k]
            found.append(Divergence(real_node.name, real_node.op.name, origin.name,
                                    origin.op.name, "memory planning (buffers shared between "
                                    "values, written in place) or output recycling",
                                    origin.source, figures, traced_node=origin))
    return found


def _divergence(node, origin, figures, optimized):
    producer = node.inputs[0] if node.op is unpack_op and node.inputs else node
    members: tuple[str, ...] = ()
    lowering = None
    if "fused_ops" in producer.meta or producer.meta.get(MADE_BY) == "compile_numba":
        members = tuple(f"%{m.name}" for m in _region_members(producer, optimized))
    if producer.meta.get(MADE_BY) == "compile_numba" and "fused_ops" not in producer.meta:
        lowering = producer.meta.get("backend")
    return Divergence(node.name, node.op.name if node is producer else producer.op.name,
                      origin.name, origin.op.name, made_by(node, producer),
                      origin.source or node.source, figures, members, traced_node=origin,
                      lowering=lowering)


def made_by(node, producer):
    """Words for what made ``node``: a fused region and its kernel, a pass, or the lowering's
    kernel for the op."""
    meta = producer.meta
    if "fused_ops" in meta:
        kernel = _KERNELS.get(meta.get("backend"), f"{meta.get('backend')} kernel")
        hot = " (numpy until hot, then C)" if "hot_swap" in meta else ""
        return (f"fused region {producer.op.name} ({kernel}{hot}: "
                f"{' -> '.join(meta['fused_ops'])})")
    maker = node.meta.get(MADE_BY) or producer.meta.get(MADE_BY)
    if maker is None and any(isinstance(v, SubGraph) for v in producer.params.values()):
        return f"'{producer.op.name}' running its bodies' compiled graphs"
    if maker == "compile_numba":   # the pass that asks each lowering for whole graphs
        lowering = meta.get("backend", "numba")
        return f"whole-graph {lowering} kernel {producer.op.name} (pass compile_numba)"
    if maker is not None:
        return _PASS_WORDS.get(maker, f"rewrite by pass {maker}")
    if node.meta.get("contiguous"):
        return "layout change (a C-order copy, pass layout)"
    backend = node.graph.backend if node.graph is not None else None
    if backend is not None and backend.numpy_arrays:
        if _python_form(node, backend) is not None:
            return f"numpy lowering: the python_form rule of '{node.op.name}'"
        static = _static_kernel(node, False)
        if static is not None:
            return (f"numpy lowering: the static_kernel rule of '{node.op.name}' "
                    f"({getattr(static, '__name__', static)})")
    return f"lowering: the kernel of '{node.op.name}'"


def _region_members(fused, optimized):
    """The traced nodes a fused node computes: from the traced nodes its results stand for
    back to those its inputs stand for."""
    results = [fused] if fused.meta.get(ORIGIN) is not None else \
        [u for u in optimized.users(fused) if u.op is unpack_op]
    stop = {i.meta.get(ORIGIN) for i in fused.inputs}
    todo = [u.meta.get(ORIGIN) for u in results if u.meta.get(ORIGIN) is not None]
    seen: dict[Node, None] = {}
    while todo:
        n = todo.pop()
        if n in seen or n in stop or n.op is placeholder_op:
            continue
        seen[n] = None
        todo.extend(n.inputs)
    return sorted(seen, key=lambda n: n.id)
