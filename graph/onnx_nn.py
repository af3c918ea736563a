"""ONNX patterns of the neural-network ops (activations, convolution, pooling, resizing).

Each is a function ``(builder, node, *args) -> value name`` like those of
:data:`graph.onnx_export.PATTERNS`, which takes these in with one update.
Images are NHWC in the engine and NCHW in ONNX: a pattern transposes in and
out (onnxruntime's optimizer folds the pairs between consecutive layers).
"""
import math

import numpy as np



def _const(b, value, dtype, base="k"):
    return b.const(np.asarray(value, dtype=dtype), base)


def _nchw(b, value):
    return b.emit("Transpose", [value], perm=[0, 3, 1, 2])


def _nhwc(b, value):
    return b.emit("Transpose", [value], perm=[0, 2, 3, 1])


# ---- activations --------------------------------------------------------------------------
def attrs_node(b, node, op_type, attrs):
    """One ONNX node whose float attributes are op params: ``attrs`` holds
    ``(onnx attribute, param name)`` pairs, e.g. ``(("alpha", "negative_slope"),)``."""
    values = {onnx_name: float(node.params[param]) for onnx_name, param in attrs}
    return b.emit(op_type, b.inputs_as(node, node.dtype), **values)


def softplus(b, node):
    """``Softplus(beta x) / beta``, and ``x`` where ``beta x > threshold``."""
    (x,) = b.inputs_as(node, node.dtype)
    beta, threshold = node.params["beta"], node.params["threshold"]
    bx = b.emit("Mul", [x, _const(b, beta, node.dtype)])
    smooth = b.emit("Div", [b.emit("Softplus", [bx]), _const(b, beta, node.dtype)])
    linear = b.emit("Greater", [bx, _const(b, threshold, node.dtype)])
    return b.emit("Where", [linear, x, smooth])


def gelu(b, node):
    """``x Phi(x)`` with Erf, or the tanh form (opset 17 has no Gelu node)."""
    (x,) = b.inputs_as(node, node.dtype)
    k = lambda v: _const(b, v, node.dtype)   # noqa: E731
    if node.params["approximate"] == "tanh":
        cube = b.emit("Mul", [b.emit("Mul", [x, x]), x])
        inner = b.emit("Add", [x, b.emit("Mul", [cube, k(0.044715)])])
        t = b.emit("Tanh", [b.emit("Mul", [inner, k(math.sqrt(2.0 / math.pi))])])
    else:
        t = b.emit("Erf", [b.emit("Mul", [x, k(1.0 / math.sqrt(2.0))])])
    half_x = b.emit("Mul", [x, k(0.5)])
    return b.emit("Mul", [half_x, b.emit("Add", [t, k(1.0)])])


PATTERNS = {"attrs_node": attrs_node, "Softplus": softplus, "Gelu": gelu}
