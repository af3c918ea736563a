"""ONNX patterns of the neural-network ops (activations, convolution, pooling, resizing).

Each is a function ``(builder, node, *args) -> value name`` like those of
:data:`graph.export.onnx_export.PATTERNS`, which takes these in with one update.
Images are NHWC in the engine and NCHW in ONNX: a pattern transposes in and
out (onnxruntime's optimizer folds the pairs between consecutive layers).
"""
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.ops.conv_geometry import span, spatial
from engine.ops.pooling import window_sizes

from .onnx_errors import OnnxExportError



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


# ---- convolution and pooling ---------------------------------------------------------------------
def _error(message):
    return OnnxExportError(f"en.export_onnx: {message}")


def _window_attrs(node, hw, kernel, ceil_mode=False):
    """Conv/pool attributes for the node's strides, dilation and padding: explicit pads
    (the "same" and ``ceil_mode`` pads included) when the spatial sizes are known."""
    params = node.params
    strides = [int(s) for s in params["strides"]]
    dilation = [int(d) for d in params.get("dilation", (1, 1))]
    attrs = {"kernel_shape": [int(k) for k in kernel], "strides": strides}
    if dilation != [1, 1]:
        attrs["dilations"] = dilation
    padding = params["padding"]
    if None not in hw:
        _, pads = spatial(node.op.name, hw, kernel, strides, padding, [], dilation, ceil_mode)
        return {**attrs, "pads": [pads[0][0], pads[1][0], pads[0][1], pads[1][1]]}
    if ceil_mode:
        raise _error(f"node {node.name} ({node.op.name}) rounds its output size up "
                     "(ceil_mode) over spatial dims unknown at export time")
    if padding == "valid":
        return attrs
    if not isinstance(padding, str):
        (t, bottom), (left, r) = padding
        return {**attrs, "pads": [t, left, bottom, r]}
    if any(s > span(k, d) for k, s, d in zip(kernel, strides, dilation)):
        # onnxruntime's SAME_UPPER would ask for a negative pad where TensorFlow's is 0.
        raise _error(f"node {node.name} ({node.op.name}) pads 'same' with a stride larger "
                     "than its window over dims unknown at export time")
    return {**attrs, "auto_pad": "SAME_UPPER"}


def _known_kernel(node, w):
    kh, kw = w.shape[:2]
    if kh is None or kw is None:
        raise _error(f"{node.op.name} node {node.name} has filters of unknown size")
    return kh, kw


def conv(b, node):
    """Conv on NCHW copies; filters (KH, KW, C/G, O) become (O, C/G, KH, KW)."""
    x, w = b.inputs_as(node, node.dtype)
    kernel = _known_kernel(node, node.inputs[1])
    attrs = _window_attrs(node, node.inputs[0].shape[1:3], kernel)
    groups = node.params.get("groups", 1)
    if groups != 1:
        attrs["group"] = int(groups)
    w_oihw = b.emit("Transpose", [w], perm=[3, 2, 0, 1])
    return _nhwc(b, b.emit("Conv", [_nchw(b, x), w_oihw], **attrs))


def conv_transpose(b, node):
    """conv2d_backprop_input as ConvTranspose: the cotangent is its input, the filters
    (KH, KW, C/G, O) become (O, C/G, KH, KW), the output padding makes ``input_hw``."""
    g, w = b.inputs_as(node, node.dtype)
    kernel = _known_kernel(node, node.inputs[1])
    params = node.params
    out_hw = [int(v) for v in params["input_hw"]]
    g_hw = node.inputs[0].shape[1:3]
    if None in g_hw:
        raise _error(f"node {node.name} ({node.op.name}) has a cotangent of unknown size")
    attrs = _window_attrs(node, out_hw, kernel)
    pads = attrs.pop("pads")
    extra = [out_hw[i] - ((g_hw[i] - 1) * attrs["strides"][i]
                          + span(kernel[i], params.get("dilation", (1, 1))[i])
                          - pads[i] - pads[i + 2]) for i in range(2)]
    attrs.update(pads=pads, output_padding=extra)
    if params.get("groups", 1) != 1:
        attrs["group"] = int(params["groups"])
    w_oihw = b.emit("Transpose", [w], perm=[3, 2, 0, 1])
    return _nhwc(b, b.emit("ConvTranspose", [_nchw(b, g), w_oihw], **attrs))


# ONNX's MaxPool takes floats, int8 and uint8; other integers up to 32 bits pool exactly in
# float64. 64-bit integers would not (above 2**53), so they are refused.
_MAX_POOL_NATIVE = frozenset(("float16", "float32", "float64", "int8", "uint8"))
_MAX_POOL_VIA_DOUBLE = frozenset(("int16", "uint16", "int32", "uint32"))


def _max_pool_input(b, node):
    """The input in a dtype ONNX's MaxPool takes, and that dtype."""
    (x,) = node.inputs
    name = np.dtype(x.dtype).name
    if name in _MAX_POOL_NATIVE:
        return b.value(x), x.dtype
    if name in _MAX_POOL_VIA_DOUBLE:
        return b.cast(b.value(x), x.dtype, np.float64), np.dtype(np.float64)
    raise _error(f"node {node.name} ({node.op.name}) pools {name} values: ONNX's MaxPool has "
                 f"no {name} kernel and float64 cannot hold every {name} value")


def max_pool(b, node):
    x, dtype = _max_pool_input(b, node)
    # ONNX pads max pooling with values that never win, as the engine's -inf; the
    # ceil_mode pads are part of the explicit pads.
    attrs = _window_attrs(node, node.inputs[0].shape[1:3], node.params["pool_size"],
                          node.params.get("ceil_mode", False))
    out = b.emit("MaxPool", [_nchw(b, x)], **attrs)
    return _nhwc(b, b.cast(out, dtype, node.dtype))


def max_pool_indices(b, node):
    """MaxPool's second output (flat indices over the whole NCHW input) modulo H*W."""
    x, _ = _max_pool_input(b, node)
    h, wd = node.inputs[0].shape[1:3]
    if h is None or wd is None:
        raise _error(f"node {node.name} ({node.op.name}) needs the input's height and width")
    attrs = _window_attrs(node, (h, wd), node.params["pool_size"],
                          node.params.get("ceil_mode", False))
    _, indices = b.emit("MaxPool", [_nchw(b, x)], n_outputs=2, **attrs)
    plane = b.emit("Mod", [indices, b.const(np.asarray(h * wd, np.int64), "plane")])
    return _nhwc(b, plane)


def average_pool(b, node):
    """AveragePool over the real positions; where PyTorch counts explicit pads, a constant
    rescales (ONNX's ceil_mode lets a last window start in the padding, PyTorch's not)."""
    (x,) = b.inputs_as(node, node.dtype)
    params = node.params
    hw = node.inputs[0].shape[1:3]
    include = bool(params["count_include_pad"]) and not isinstance(params["padding"], str)
    attrs = _window_attrs(node, hw, params["pool_size"], params["ceil_mode"])
    if include and None in hw:
        out = b.emit("AveragePool", [_nchw(b, x)], count_include_pad=1, **attrs)
        return _nhwc(b, out)
    out = _nhwc(b, b.emit("AveragePool", [_nchw(b, x)], count_include_pad=0, **attrs))
    if not include:
        return out
    shape = (1,) + tuple(hw) + (1,)
    geometry = {k: params[k] for k in ("pool_size", "strides", "padding", "ceil_mode")}
    real, _ = window_sizes(shape, count_include_pad=False, dtype=node.dtype, **geometry)
    counted, _ = window_sizes(shape, count_include_pad=True, dtype=node.dtype, **geometry)
    return b.emit("Mul", [out, b.const(real / counted, "window_share")])


PATTERNS: dict[str, Callable[..., Any]] = {
    "attrs_node": attrs_node, "Softplus": softplus, "Gelu": gelu, "Conv": conv,
    "ConvTranspose": conv_transpose, "MaxPool": max_pool,
    "MaxPoolIndices": max_pool_indices, "AveragePool": average_pool}
