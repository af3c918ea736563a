"""The comparison of a call with chunked (Dask) arguments, by its outputs.

The chunked path runs the function in parts (once before, per chunk, once after:
``graph/chunked/run.py``), so its intermediates are spread over tasks; its outputs are
judged against eager mode's run of the traced graph on the whole data, by the
criterion of ``judge.py`` (the float64 run made only where an output is further from
eager than ``close`` allows).
"""
import numpy as np

from ...ir.graph_ops import placeholder_op
from .evaluate import VariableState, traced_values
from .judge import close, judge, max_abs
from .report import Divergence, Report

MADE_BY = ("the chunked (Dask) path: the per-chunk program and its partial results "
           "combined (the ops' chunks rules)")


def _numpy(value):
    return np.asarray(getattr(value, "_value", value))


def compare_chunked(function, concrete, tensors):
    """The :class:`Report` of one chunked call of ``function`` (its trace ``concrete``)."""
    graph = concrete.graph
    arrays = [_numpy(t) for t in tensors]        # the whole data, computed once
    variables = VariableState([graph])
    try:
        results = concrete(tensors)
    finally:
        variables.restore()
    outs = [_numpy(r) for r in _leaves(results)]
    eager, _ = traced_values(graph, arrays, {}, variables)
    pairs = [(o, v) for o, v in zip(graph.outputs, outs)
             if o.op is not placeholder_op and o.avals is None and o in eager]
    if all(close(v, eager[o], [], o.dtype) for o, v in pairs):
        return Report(f"{function.name} (chunked)", [], len(pairs))
    reference, _ = traced_values(graph, arrays, {}, variables, fallback=eager)
    found = []
    for o, v in pairs:
        figures = judge(v, eager[o], reference[o],
                        [max_abs(reference[i]) for i in o.inputs if i.avals is None
                         and np.asarray(reference[i]).dtype.kind in "fc"], o.dtype)
        if figures.wrong:
            found.append(Divergence(o.name, o.op.name, o.name, o.op.name, MADE_BY, o.source,
                                    figures, traced_node=o))
    return Report(f"{function.name} (chunked)", found, len(pairs))


def _leaves(results):
    if isinstance(results, (tuple, list)):
        return [leaf for r in results for leaf in _leaves(r)]
    if isinstance(results, dict):
        return [leaf for r in results.values() for leaf in _leaves(r)]
    return [results]
