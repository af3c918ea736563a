"""Which member of a diverging fused region is wrong.

A fused kernel computes its members together, so its results are all the graph run
shows. Each elementwise member is compiled again alone, by the same lowering (the
kernel ``fusion`` would make for a region of that one op: C, numba or numpy, as the
policy picks under ``en.config.lowering``), and run on eager's values of its inputs;
the first member whose own kernel is wrong by the criterion is the one to name. When
none is (the fault is in how the region was put together: its reduction, its order),
the region stays the answer.

A loop or conditional is compared by its results; when they diverge, its body calls
are replayed: the node's own kernel runs on eager's inputs with each body call made op
by op in eager mode and recorded, and each recorded call's inputs are run through the
body's compiled graph (every value kept) and eagerly; the first body node that diverges,
in the first call where one does, is the one to name.
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


class _RecordingBody(EagerBody):
    """A body run op by op in eager mode that remembers each call's inputs."""

    def __init__(self, body, key, calls):
        super().__init__(body)
        self._key, self._calls = key, calls

    def run(self, arrays):
        self._calls.append((self._key, [np.asarray(a) for a in arrays]))
        return super().run(arrays)


def wrong_body_node(node, eager, backend, max_calls=MAX_BODY_CALLS):
    """For a control-flow node (``scan``, ``while_loop``, ``cond``) whose results diverge:
    ``(body name, call number, body node, Figures, eager values of that call)`` of the
    first body node, in the first body call, whose compiled value diverges from eager's
    on eager's inputs to that call; or None."""
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
    for number, (key, arrays) in enumerate(calls[:max_calls]):
        graph = bodies[key].graph
        variables = VariableState([graph])
        try:
            compiled = graph_values(graph, arrays, backend)
        finally:
            variables.restore()
        body_eager, _ = traced_values(graph, arrays, {}, variables)
        reference = None
        for n in graph.topo_order():
            if n.op is placeholder_op or n.avals is not None or n not in body_eager:
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
