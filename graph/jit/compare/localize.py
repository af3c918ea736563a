"""Which member of a diverging fused region is wrong.

A fused kernel computes its members together, so its results are all the graph run
shows. Each elementwise member is compiled again alone, by the same lowering (the
kernel ``fusion`` would make for a region of that one op: C, numba or numpy, as the
policy picks under ``en.config.lowering``), and run on eager's values of its inputs;
the first member whose own kernel is wrong by the criterion is the one to name. When
none is (the fault is in how the region was put together: its reduction, its order),
the region stays the answer.

A whole-graph kernel (a graph or a scan that a lowering wrote as one function) is taken
apart the same way by that lowering (``kernel_members.py``): its members are written
again as one function whose outputs are every member's value, run on eager's values of
what they read, and the first member wrong by the criterion is named.

A loop or conditional is compared by its results; when they diverge, its body calls
are replayed: the node's own kernel runs on eager's inputs with each body call made op
by op in eager mode and recorded, and each recorded call's inputs are run through the
body's compiled graph (every value kept) and eagerly; the first body node that diverges,
in the first call where one does, is the one to name. A loop a lowering compiled (its
body inlined in a C or numba function) has its body's values computed by that lowering
(``kernel_members.Probe``), written once for every call.
"""
import numpy as np

from engine.modes import default_mode
from engine.recording import no_tapes
from engine.tensor import wrap

from ...control.interpret import evaluate
from ...control.subgraph import SubGraph
from ...ir.graph_ops import placeholder_op
from ...lowering.fusion import FusedKernel, _fusable
from .evaluate import EagerBody, VariableState, graph_values, traced_values
from .judge import close, judge, max_abs
from .kernel_members import Probe

# Body calls looked into at most (a loop's steps, a while loop's tests and steps).
MAX_BODY_CALLS = 256


def wrong_member(members, eager, reference):
    """``(member, Figures)`` of the first member (traced nodes, in order) whose kernel
    alone diverges, or None."""
    for k, member in enumerate(members):
        if not _fusable(member) or member not in eager:
            continue
        inputs = list(dict.fromkeys(member.inputs))
        if any(i not in eager for i in inputs):
            continue
        try:
            kernel = FusedKernel(f"probe_{k}_{member.op.name}", [member], inputs,
                                 [(member, None)], threads=1)
            value = kernel.impl(*[np.asarray(eager[i], dtype=i.dtype) for i in inputs])
        except Exception:     # the lowering cannot take the op alone: no verdict
            continue
        figures = judge(value, eager[member], reference[member],
                        [max_abs(reference[i]) for i in inputs], member.dtype)
        if figures.wrong:
            return member, figures
    return None


def wrong_kernel_member(members, eager, reference, lowering):
    """``(member, Figures)`` of the first member (traced nodes, in order) of a whole-graph
    kernel whose value, computed by the lowering named ``lowering`` from eager's values of
    what the members read, is wrong; or None (none is, or the lowering cannot write them)."""
    probe = Probe(lowering, members)
    if not probe.built or any(i not in eager for i in probe.outside):
        return None
    try:
        values = probe.run({i: eager[i] for i in probe.outside})
    except Exception:     # the probe failed to run: no verdict
        return None
    for member in probe.members:
        if member not in values or member not in eager or member not in reference:
            continue
        figures = judge(values[member], eager[member], reference[member],
                        _scales(member, reference), member.dtype)
        if figures.wrong:
            return member, figures
    return None


def _scales(node, values):
    return [max_abs(values[i]) for i in node.inputs
            if i.avals is None and i in values and np.asarray(values[i]).dtype.kind in "fc"]


class _RecordingBody(EagerBody):
    """A body run op by op in eager mode that remembers each call's inputs."""

    def __init__(self, body, key, calls):
        super().__init__(body)
        self._key, self._calls = key, calls

    def run(self, arrays):
        self._calls.append((self._key, [np.asarray(a) for a in arrays]))
        return super().run(arrays)


def wrong_body_node(node, eager, backend, max_calls=MAX_BODY_CALLS, lowering=None):
    """For a control-flow node (``scan``, ``while_loop``, ``cond``) whose results diverge:
    ``(body name, call number, body node, Figures, eager values of that call)`` of the
    first body node, in the first body call, whose compiled value diverges from eager's
    on eager's inputs to that call; or None. ``lowering``: the name of the lowering that
    wrote the loop with its body as one function (None: the body's graph ran)."""
    bodies = {k: v for k, v in node.params.items() if isinstance(v, SubGraph)}
    if not bodies or any(i not in eager for i in node.inputs):
        return None
    calls: list[tuple[str, list[np.ndarray]]] = []
    params = {k: _RecordingBody(v, k, calls) if k in bodies else v
              for k, v in node.params.items()}
    with no_tapes(), np.errstate(all="ignore"):
        try:
            evaluate(default_mode(), node, [wrap(np.asarray(eager[i])) for i in node.inputs],
                     params)
        except Exception:      # no verdict
            return None
    probes: dict[str, Probe] = {}
    for number, (key, arrays) in enumerate(calls[:max_calls]):
        graph = bodies[key].graph
        variables = VariableState([graph])
        try:
            compiled = _body_values(graph, arrays, backend, lowering, probes, key)
        finally:
            variables.restore()
        body_eager, _ = traced_values(graph, arrays, {}, variables)
        reference = None
        for n in graph.topo_order():
            if n.op is placeholder_op or n.avals is not None or n not in body_eager or \
                    n not in compiled:
                continue
            scales = [max_abs(body_eager[i]) for i in n.inputs
                      if i.avals is None and np.asarray(body_eager[i]).dtype.kind in "fc"]
            if close(compiled[n], body_eager[n], scales, n.dtype):
                continue
            if reference is None:
                reference, _ = traced_values(graph, arrays, {}, variables, fallback=body_eager)
            figures = judge(compiled[n], body_eager[n], reference[n],
                            [max_abs(reference[i]) for i in n.inputs
                             if i.avals is None and np.asarray(reference[i]).dtype.kind in "fc"],
                            n.dtype)
            if figures.wrong:
                return key, number, n, figures, body_eager
    return None


def _body_values(graph, arrays, backend, lowering, probes, key):
    """``{body node: value}`` of one body call: by the lowering that wrote the loop where
    it can write the body alone (its probe made once per body), else the body's graph."""
    if lowering is not None:
        if key not in probes:
            probes[key] = Probe(lowering, [n for n in graph.topo_order()
                                           if n.op is not placeholder_op])
        probe = probes[key]
        if probe.built:
            values = dict(zip(graph.inputs, arrays))
            values.update(probe.run(values))
            return values
    return graph_values(graph, arrays, backend)
