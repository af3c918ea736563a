"""ONNX patterns of the selection and scatter ops (``topk``, ``scatter_reduce``).

Each is a function ``(builder, node, *args) -> value name(s)`` like those of
:data:`graph.export.onnx_export.PATTERNS`, which takes these in with one update.
"""
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.ops.scatter import reduce_identity

from .onnx_errors import OnnxExportError

# TopK's own types; others sort as int32 (bools, narrow ints) and are cast back.
_TOPK_KEPT = ("float32", "float64", "int32", "int64")


def top_k(b, node):
    """``topk``: ONNX's TopK (its ties: the lower index first, the engine's order)."""
    (x,) = node.inputs
    value = b.value(x)
    kept = np.dtype(x.dtype).name in _TOPK_KEPT
    if not kept:
        value = b.cast(value, x.dtype, np.int32)
    values, indices = b.emit("TopK", [value, b.ints([node.params["k"]], "k")], n_outputs=2,
                             axis=node.params["axis"], largest=int(node.params["largest"]),
                             sorted=1)
    return [values if kept else b.cast(values, np.int32, x.dtype), indices]


def scatter_reduce(b, node, reductions):
    """``scatter_reduce``: ScatterElements with its reduction (``reductions``: the
    engine's reduce -> ONNX's and the opset that has it); without ``include_self`` the
    written positions are first set to the reduction's identity."""
    x, index, src = node.inputs
    reduce = node.params["reduce"]
    reduction, opset = reductions[reduce]
    if b.opset < opset:
        raise OnnxExportError(
            f"en.export_onnx: scatter_reduce node {node.name} reduces with {reduce!r}, which "
            f"ONNX's ScatterElements has from opset {opset}; export with opset={opset}")
    axis = node.params["axis"]
    data = b.value(x)
    idx = b.cast(b.value(index), index.dtype, np.int64)
    upd = b.cast(b.value(src), src.dtype, x.dtype)
    if not node.params["include_self"]:
        fill = b.const(reduce_identity(reduce, np.dtype(x.dtype)).reshape(1), "identity")
        start = b.emit("Expand", [fill, b.emit("Shape", [idx])])
        data = b.emit("ScatterElements", [data, idx, start], axis=axis)
    return b.emit("ScatterElements", [data, idx, upd], axis=axis, reduction=reduction)


PATTERNS: dict[str, Callable[..., Any]] = {"TopKSelect": top_k, "ScatterReduce": scatter_reduce}
