"""Export a traced function to ONNX (opset 17) for runtimes such as onnxruntime.

``en.export_onnx(fn, path, *example_args)`` traces ``fn`` (or uses its
``input_signature``), simplifies the graph (constant folding, CSE, dead code;
no fusion, so only registry ops remain) and writes one ONNX node, or a short
composition, per engine op. Each op says how in its ``onnx`` rule, declared
beside it (``declare(exp_op, onnx=("node", "Exp"))``): a pattern of
:data:`PATTERNS` and the pattern's arguments. Variables become initializers
holding their current values; unknown dims become symbolic dims. Ops whose
rule is None (control flow, random draws, variable assignment, gradients of
convolution and pooling...) raise :class:`OnnxExportError` naming the op and
the line that created it.

Needs the optional ``onnx`` package (``pip install 'dualmode-engine[onnx]'``,
which also brings onnxruntime to run the model).

Example:
    >>> import engine as en, tempfile, os
    >>> f = en.function(lambda x: en.tanh(x) * 2.0)
    >>> path = os.path.join(tempfile.mkdtemp(), "f.onnx")
    >>> model = en.export_onnx(f, path, en.ones((2, 3), dtype="float32"))
    >>> [n.op_type for n in model.graph.node]
    ['Tanh', 'Mul', 'Identity']
"""
import ast
import importlib
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from engine import dtypes
from engine.errors import EngineError, format_location
from engine.op import REGISTRY

from .native import concrete_function_for, safe_name
from .reference import OTHER_RUNTIME_RTOL, compare, default_tolerance, reference_for
from ..ir.graph_ops import STRUCTURAL
from .onnx_errors import OnnxExportError
from ..lowering.pipeline import optimize

log = logging.getLogger("engine.graph")

OPSET = 17
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min




def _onnx():
    # onnx is an optional dependency, imported only when a model is exported.
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise OnnxExportError("en.export_onnx needs the onnx package: "
                              "pip install 'dualmode-engine[onnx]' (or pip install onnx)") from None
    return onnx, helper, numpy_helper


def export_onnx(fn, path, *example_args, opset=OPSET, check=True, tolerance=None):
    """Write ``fn``'s graph for ``example_args`` as an ONNX model to ``path``; return the
    ``onnx.ModelProto`` (checked with ``onnx.checker``).

    Inputs keep the traced names (``x0``, ``x1``... or the input_signature's
    names); outputs are ``output0``, ``output1``... in flattened order.

    With ``check`` (the default), example arguments and onnxruntime installed, the
    model is run in onnxruntime on the example arguments before anything is written;
    the largest difference from the engine's outputs is stored in the model's metadata
    (``engine.onnxruntime_max_abs_difference``, ``..._max_rel_difference``) and logged,
    and a difference beyond ``tolerance=(rtol, atol)`` (by default a few hundred units in
    the last place of the outputs' dtype) raises :class:`OnnxExportError`.
    """
    onnx, _, _ = _onnx()
    concrete = concrete_function_for(fn, example_args, "en.export_onnx")
    model = to_onnx(concrete.unoptimized_graph, concrete.name, opset)
    onnx.checker.check_model(model, full_check=True)
    if check and example_args and importlib.util.find_spec("onnxruntime") is not None:
        _check_in_onnxruntime(model, concrete, example_args, tolerance)
    onnx.save(model, path)
    return model


def _check_in_onnxruntime(model, concrete, example_args, tolerance):
    """Run ``model`` in onnxruntime on the example arguments and compare with the engine."""
    ort = importlib.import_module("onnxruntime")
    inputs, outputs, _, _ = reference_for(concrete, example_args, (0.0, 0.0))
    rtol, atol = tolerance or default_tolerance(outputs, OTHER_RUNTIME_RTOL)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    feed = {i.name: a for i, a in zip(session.get_inputs(), inputs)}
    report = compare([np.asarray(o) for o in session.run(None, feed)], outputs, rtol, atol)
    for key, value in (("max_abs_difference", report.max_abs),
                       ("max_rel_difference", report.max_rel)):
        entry = model.metadata_props.add()
        entry.key, entry.value = f"engine.onnxruntime_{key}", repr(value)
    log.info("en.export_onnx %s: onnxruntime %s, largest difference %.3g (relative %.3g)",
             concrete.name, ort.__version__, report.max_abs, report.max_rel)
    if not report.ok:
        raise OnnxExportError(
            f"en.export_onnx {concrete.name}: onnxruntime's outputs differ from the engine's: "
            f"output{report.worst} by {report.max_abs:.3g} (relative {report.max_rel:.3g}), "
            f"beyond rtol={rtol:g}, atol={atol:g}; nothing was written. Pass check=False to "
            f"export anyway, or tolerance=(rtol, atol)")


def to_onnx(graph, name="graph", opset=OPSET):
    """An ``onnx.ModelProto`` for an (unoptimized) engine graph."""
    onnx, helper, _ = _onnx()
    graph, _ = optimize(graph, ["cleanup"])
    b = _Builder(graph, opset)
    for node in graph.topo_order():
        b.convert(node)
    outputs = []
    for i, out in enumerate(graph.outputs):
        oname = f"output{i}"
        b.emit("Identity", [b.value(out)], [oname])
        outputs.append(b.value_info(oname, out.shape, out.dtype))
    inputs = [b.value_info(b.names[n], n.shape, n.dtype) for n in graph.inputs]
    g = helper.make_graph(b.nodes, safe_name(name), inputs, outputs, initializer=b.initializers)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="dualmode-engine")
    model.ir_version = min(model.ir_version, 8)   # readable by onnxruntime releases of opset 17
    return model


# ONNX TensorProto.DataType codes.
_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
               "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13,
               "complex64": 14, "complex128": 15}


class _Builder:
    """Collects ONNX nodes and initializers while walking the engine graph."""

    def __init__(self, graph, opset=OPSET):
        _, self.helper, self.numpy_helper = _onnx()
        self.graph = graph
        self.opset = opset       # patterns whose ONNX op is newer than it refuse the node
        self.nodes = []
        self.initializers = []
        self.names = {}          # engine node -> ONNX value name(s)
        self.used = set()
        self._consts = {}        # id(array) or variable id -> initializer name
        self._keep = []          # arrays whose ids key _consts
        for n in graph.inputs:
            self.names[n] = self.fresh(n.name)

    # -- names and values ------------------------------------------------------------
    def fresh(self, base):
        base = safe_name(base)
        name, i = base, 1
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        return name

    def value(self, node):
        return self.names[node]

    def value_info(self, name, shape, dtype):
        dims = [f"d{i}_{name}" if d is None else int(d) for i, d in enumerate(shape)]
        return self.helper.make_tensor_value_info(name, _ONNX_TYPES[np.dtype(dtype).name], dims)

    def const(self, array, base="const", key=None):
        """An initializer for ``array`` (shared when the same array or variable repeats)."""
        key = id(array) if key is None else key
        if key in self._consts:
            return self._consts[key]
        name = self.fresh(base)
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        self._consts[key] = name
        self._keep.append(array)
        return name

    def ints(self, values, base="ints"):
        return self.const(np.asarray(values, dtype=np.int64), base)

    def emit(self, op_type, inputs, outputs=None, n_outputs=1, **attrs):
        """Add one ONNX node; return its output name (or names when ``n_outputs > 1``)."""
        if outputs is None:
            outputs = [self.fresh(op_type.lower()) for _ in range(n_outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs), **attrs))
        return outputs[0] if len(outputs) == 1 and n_outputs == 1 else list(outputs)

    def cast(self, name, from_dtype, to_dtype):
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self.emit("Cast", [name], to=_ONNX_TYPES[np.dtype(to_dtype).name])

    def inputs_as(self, node, dtype):
        return [self.cast(self.value(i), i.dtype, dtype) for i in node.inputs]

    # -- nodes -------------------------------------------------------------------------------
    def convert(self, node):
        rule = node.op.rules.get("onnx")
        if rule is None:
            raise OnnxExportError(
                f"en.export_onnx: op {node.op.name!r} (node {node.name}, created at "
                f"{format_location(node.source)}) has no ONNX equivalent here; ops that do "
                f"not export: {', '.join(not_exported())}")
        pattern, *args = rule
        value = PATTERNS[pattern](self, node, *args)
        if value is not None:
            self.names[node] = value


def not_exported():
    """Names of the registered ops with no ONNX rule, sorted (for messages and the README)."""
    ops = {**REGISTRY, **STRUCTURAL}
    return sorted(name for name, op in ops.items() if op.rules.get("onnx") is None)


# ---- patterns: name -> function(builder, node, *args) -> ONNX value name(s) --------------------
def _node(b, node, op_type):
    """One ONNX node on the inputs cast to the result's dtype."""
    return b.emit(op_type, b.inputs_as(node, node.dtype))


def _compare(b, node, op_type, negate=None):
    dt = np.result_type(*[i.dtype for i in node.inputs])
    out = b.emit(op_type, b.inputs_as(node, dt))
    return b.emit("Not", [out]) if negate == "not" else out


def _logical(b, node, op_type):
    return b.emit(op_type, b.inputs_as(node, dtypes.bool_))


def _scalar(b, value, dtype):
    return b.const(np.asarray(value, dtype=dtype), f"k{value}")


def _where(b, node):
    cond, x, y = node.inputs
    return b.emit("Where", [b.cast(b.value(cond), cond.dtype, dtypes.bool_),
                            b.cast(b.value(x), x.dtype, node.dtype),
                            b.cast(b.value(y), y.dtype, node.dtype)])


def _cast(b, node):
    (x,) = node.inputs
    return b.emit("Cast", [b.value(x)], to=_ONNX_TYPES[node.dtype.name])


def _transpose(b, node):
    (x,) = node.inputs
    nd = len(x.shape)
    axes = node.params["axes"]
    perm = list(range(nd))[::-1] if axes is None else [a % nd for a in axes]
    return b.emit("Transpose", [b.value(x)], perm=perm)


def _reshape(b, node):
    (x,) = node.inputs
    shape = [int(d) for d in node.params["shape"]]
    if None not in node.shape:
        shape = list(node.shape)     # static: no -1 to resolve
    extra = {"allowzero": 1} if 0 in shape and -1 not in shape else {}
    return b.emit("Reshape", [b.value(x), b.ints(shape, "shape")], **extra)


def _expand_dims(b, node):
    (x,) = node.inputs
    axis = node.params["axis"]
    axes = list(axis) if isinstance(axis, tuple) else [axis]
    return b.emit("Unsqueeze", [b.value(x), b.ints(axes, "axes")])


def _squeeze(b, node):
    (x,) = node.inputs
    axis = node.params["axis"]
    if axis is None:
        return b.emit("Squeeze", [b.value(x)])
    axes = [axis] if isinstance(axis, int) else list(axis)
    return b.emit("Squeeze", [b.value(x), b.ints(axes, "axes")])


def _broadcast_to(b, node):
    (x,) = node.inputs
    return b.emit("Expand", [b.value(x), b.ints(node.params["shape"], "shape")])


def _broadcast_like(b, node):
    x, like = node.inputs
    shape = b.emit("Shape", [b.value(like)])
    return b.emit("Expand", [b.cast(b.value(x), x.dtype, node.dtype), shape])


def _fill_like(b, node, fill):
    (x,) = node.inputs
    value = b.numpy_helper.from_array(np.asarray([fill], dtype=node.dtype), "value")
    return b.emit("ConstantOfShape", [b.emit("Shape", [b.value(x)])], value=value)


def _reduce(b, node, op_type):
    (x,) = node.inputs
    axis = node.params.get("axis")
    keepdims = int(bool(node.params.get("keepdims", False)))
    xin = b.cast(b.value(x), x.dtype, node.dtype)
    axes = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
    out = _reduce_over(b, op_type, xin, axes, keepdims)
    if op_type in ("ReduceMax", "ReduceMin") and node.dtype in dtypes.FLOATS:
        # numpy's max and min are NaN where any element is; onnxruntime's may skip it.
        nans = b.emit("Cast", [b.emit("IsNaN", [xin])], to=_ONNX_TYPES["float32"])
        any_nan = b.emit("Greater", [_reduce_over(b, "ReduceMax", nans, axes, keepdims),
                                     _scalar(b, 0, np.float32)])
        out = b.emit("Where", [any_nan, _scalar(b, np.nan, node.dtype), out])
    return out


def _reduce_over(b, op_type, value, axes, keepdims):
    """``op_type`` of ``value`` over ``axes`` (None: all)."""
    if axes is None:
        return b.emit(op_type, [value], keepdims=keepdims)
    if op_type == "ReduceSum":    # opset 17: ReduceSum takes its axes as an input, the others
        return b.emit(op_type, [value, b.ints(axes, "axes")], keepdims=keepdims)
    return b.emit(op_type, [value], axes=axes, keepdims=keepdims)   # as an attribute


def _concat(b, node):
    return b.emit("Concat", b.inputs_as(node, node.dtype), axis=node.params["axis"])


def _stack(b, node):
    axis = node.params["axis"]
    axes = b.ints([axis], "axes")
    parts = [b.emit("Unsqueeze", [v, axes]) for v in b.inputs_as(node, node.dtype)]
    return b.emit("Concat", parts, axis=axis)


def _split(b, node):
    (x,) = node.inputs
    sizes = [s[node.params["axis"]] for s, _ in node.avals]
    if None in sizes:
        raise OnnxExportError(f"en.export_onnx: split of node {node.name} has parts of unknown "
                              "size")
    return b.emit("Split", [b.value(x), b.ints(sizes, "split")], n_outputs=len(sizes),
                  axis=node.params["axis"])


def _getitem(b, node):
    x = node.inputs[0]
    spec = node.params["spec"]
    arrays = [item for item in spec if item[0] == "array"]
    gather = None
    if arrays:
        # One index array among slices (en.take, x[:, idx]) is a Gather on its axis; an
        # int or newaxis beside it, or a second array, follows numpy's advanced rules.
        if len(arrays) > 1 or any(item[0] in ("int", "newaxis") for item in spec):
            raise OnnxExportError(f"en.export_onnx: node {node.name} indexes with several "
                                  "arrays (or an array beside ints or None), which is not "
                                  "exported; one index array among slices exports as Gather")
        at = spec.index(arrays[0])
        used = sum(1 for item in spec if item[0] in ("slice", "array"))
        # The input axis it indexes: one per slice before it, the rest for an ellipsis.
        gather_axis = sum(1 if item[0] == "slice" else len(x.shape) - used
                          for item in spec[:at])
        gather = (node.inputs[1 + arrays[0][1]], gather_axis)
        spec = spec[:at] + (("slice", None, None, None),) + spec[at + 1:]
    nd = len(x.shape)
    used = sum(1 for item in spec if item[0] in ("int", "slice"))
    items: list[tuple] = []
    for item in spec:
        items.extend([("slice", None, None, None)] * (nd - used) if item[0] == "ellipsis"
                     else [item])
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    axis = out = 0
    for item in items:
        if item[0] == "newaxis":
            unsqueeze.append(out)
            out += 1
            continue
        if item[0] == "int":
            i = item[1]
            starts.append(i)
            ends.append(INT64_MAX if i == -1 else i + 1)
            steps.append(1)
            squeeze.append(axis)
        else:
            _, start, stop, step = item
            step = 1 if step is None else step
            starts.append(start if start is not None else (0 if step > 0 else INT64_MAX))
            ends.append(stop if stop is not None else (INT64_MAX if step > 0 else INT64_MIN))
            steps.append(step)
            out += 1
        axes.append(axis)
        axis += 1
    value = b.value(x)
    if axes:
        value = b.emit("Slice", [value, b.ints(starts, "starts"), b.ints(ends, "ends"),
                                 b.ints(axes, "axes"), b.ints(steps, "steps")])
    if squeeze:
        value = b.emit("Squeeze", [value, b.ints(squeeze, "axes")])
    if unsqueeze:
        value = b.emit("Unsqueeze", [value, b.ints(unsqueeze, "axes")])
    if gather is not None:
        index, axis = gather
        value = b.emit("Gather", [value, b.cast(b.value(index), index.dtype, np.int64)],
                       axis=axis)
    return value if value != b.value(x) else b.emit("Identity", [value])


# -- graph structure ------------------------------------------------------------------------------
def _input(b, node):
    return None          # named when the builder starts


def _initializer(b, node):
    return b.const(node.params["value"], "c_" + node.name)


def _variable(b, node):
    var = node.params["var"].var
    return b.const(var.numpy(), var.name, key=("var", id(var)))


def _unpack(b, node):
    return b.value(node.inputs[0])[node.params["index"]]


def _constant(b, node):
    # A creation op (zeros, arange, eye...): its value is known at export time.
    if None in node.shape:
        raise OnnxExportError(f"en.export_onnx: node {node.name} ({node.op.name}) has a shape "
                              f"{node.shape} not known at export time")
    return b.const(np.asarray(node.op.impl(**node.params), node.dtype), node.name)


# -- ops composed of several ONNX nodes --------------------------------------------------------------
def _expr(b, node, expr):
    """ONNX nodes for ``expr``, a nested call of ONNX op types on the inputs ``x0, x1, ...``
    (cast to the result's dtype) and numbers (constants of that dtype), as in
    ``"Log(Add(x0, 1))"``."""
    return _emit_expr(b, expr, b.inputs_as(node, node.dtype), node.dtype)


def _emit_expr(b, expr, inputs, dtype):
    """The ONNX nodes of ``expr`` on the value names ``inputs``, numbers as ``dtype``."""
    def build(e):
        if isinstance(e, ast.Call):
            if not isinstance(e.func, ast.Name):     # (the rules call ONNX ops by name)
                raise EngineError("ONNX rule: an op called by an expression (internal error)")
            return b.emit(e.func.id, [build(a) for a in e.args])
        if isinstance(e, ast.Name):
            return inputs[int(e.id[1:])]
        return _scalar(b, e.value, dtype)
    return build(ast.parse(expr, mode="eval").body)


def _rounding(b, node, expr):
    """Rounding to integers: ``expr`` on floats; integers are already whole (ONNX's
    Floor, Ceil and Round take only floats)."""
    if node.dtype in dtypes.FLOATS:
        return _expr(b, node, expr)
    return b.emit("Identity", b.inputs_as(node, node.dtype))


def _predicate(b, node, expr):
    """A float predicate (bool result) as ``expr`` on the input in floating point
    (integers, finite and never NaN, cast to float64: ONNX's IsNaN takes only floats)."""
    (x,) = node.inputs
    dt = x.dtype if x.dtype in dtypes.FLOATS else dtypes.float64
    return _emit_expr(b, expr, [b.cast(b.value(x), x.dtype, dt)], dt)


# ONNX's ArgMax/ArgMin run (in onnxruntime) on these types; others are cast first.
_ARG_TYPES = ("float32", "float64", "int32")


def _arg_reduce(b, node, op_type):
    (x,) = node.inputs
    axis, keepdims = node.params["axis"], node.params["keepdims"]
    value = b.value(x)
    if np.dtype(x.dtype).name not in _ARG_TYPES:
        # Order-preserving: bool and int8..int32 fit int32; int64 goes through float64.
        target = np.float64 if np.dtype(x.dtype).itemsize > 4 else np.int32
        value = b.cast(value, x.dtype, target)
    flat = axis is None   # the index into the flattened input, as numpy gives it
    if flat:
        value = b.emit("Reshape", [value, b.ints([-1], "shape")])
    at = 0 if flat else int(axis) % len(x.shape)
    keep = 0 if flat else int(keepdims)
    # The first extreme on ties, as numpy.
    out = b.emit(op_type, [value], axis=at, keepdims=keep, select_last_index=0)
    if x.dtype in dtypes.FLOATS:
        # numpy's index is the first NaN's where there is one (onnxruntime may skip it).
        nans = b.emit("Cast", [b.emit("IsNaN", [value])], to=_ONNX_TYPES["int32"])
        first_nan = b.emit("ArgMax", [nans], axis=at, keepdims=keep, select_last_index=0)
        any_nan = b.emit("Greater", [b.emit("ReduceMax", [nans], axes=[at], keepdims=keep),
                                     _scalar(b, 0, np.int32)])
        out = b.emit("Where", [any_nan, first_nan, out])
    if flat and keepdims:
        return b.emit("Reshape", [out, b.ints([1] * len(x.shape), "shape")])
    return out


def _count(b, node):
    (x,) = node.inputs
    axes = list(node.params["axes"])
    if not axes:
        return b.const(np.asarray(1, node.dtype), "count")
    dims = b.emit("Gather", [b.emit("Shape", [b.value(x)]), b.ints(axes, "axes")])
    return b.emit("Cast", [b.emit("ReduceProd", [dims], keepdims=0)],
                  to=_ONNX_TYPES[node.dtype.name])


def _einsum(b, node):
    # The engine's einsum op holds explicit subscripts (every dim labelled), as ONNX asks.
    return b.emit("Einsum", b.inputs_as(node, node.dtype), equation=node.params["subscripts"])


def _cumsum(b, node):
    (x,) = b.inputs_as(node, node.dtype)
    axis = b.const(np.asarray(node.params["axis"], dtype=np.int64), "axis")
    return b.emit("CumSum", [x, axis], reverse=int(bool(node.params.get("reverse", False))))


def _top_k(b, node, result):
    """sort (``result`` 0: the values) and argsort (1: the indices) as a TopK of every
    element; TopK breaks ties by the lower index, so it is stable both ways."""
    (x,) = node.inputs
    axis = node.params["axis"]
    n = x.shape[axis]
    if n is None:
        raise OnnxExportError(f"en.export_onnx: {node.op.name} node {node.name} sorts an axis "
                              "of unknown size")
    value = b.value(x)
    kept = np.dtype(x.dtype).name in ("float32", "float64", "int32", "int64")
    if not kept:
        value = b.cast(value, x.dtype, np.int32)
    values, indices = b.emit("TopK", [value, b.ints([n], "k")], n_outputs=2, axis=axis,
                             largest=int(node.params["descending"]), sorted=1)
    if result:
        return indices
    return values if kept else b.cast(values, np.int32, x.dtype)


def _scatter_elements(b, node):
    x, indices, values = node.inputs
    return b.emit("ScatterElements", [b.value(x), b.cast(b.value(indices), indices.dtype,
                                                            np.int64),
                                      b.cast(b.value(values), values.dtype, x.dtype)],
                  axis=node.params["axis"])


def _pad(b, node):
    (x,) = node.inputs
    mode = node.params["mode"]
    if mode not in ("constant", "edge", "reflect"):
        raise OnnxExportError(f"en.export_onnx: pad node {node.name} pads in mode {mode!r}; "
                              "ONNX's Pad (opset 17) has constant, edge and reflect")
    widths = node.params["widths"]
    pads = b.ints([w[0] for w in widths] + [w[1] for w in widths], "pads")
    inputs = [b.value(x), pads]
    if mode == "constant":
        inputs.append(b.const(np.asarray(node.params["value"], dtype=node.dtype), "pad_value"))
    return b.emit("Pad", inputs, mode=mode)


def _nonzero(b, node):
    """NonZero, padded with ``fill_value`` and cut to ``size``, one result per dimension."""
    (x,) = node.inputs
    size, nd = node.params["size"], len(x.shape)
    found = b.emit("NonZero", [b.value(x)])                              # (nd, count)
    fill = b.const(np.asarray(node.params["fill_value"], dtype=np.int64), "fill")
    padded = b.emit("Pad", [found, b.ints([0, 0, 0, size], "pads"), fill], mode="constant")
    cut = b.emit("Slice", [padded, b.ints([0], "starts"), b.ints([size], "ends"),
                           b.ints([1], "axes")])                         # (nd, size)
    rows = b.emit("Split", [cut, b.ints([1] * nd, "split")], n_outputs=nd, axis=0)
    rows = rows if isinstance(rows, list) else [rows]
    return [b.emit("Squeeze", [r, b.ints([0], "axes")]) for r in rows]


def _bitwise(b, node, logical, bitwise):
    """Bools: ONNX's logical op; integers: its bitwise op (from opset 18)."""
    if node.dtype == dtypes.bool_:
        return b.emit(logical, b.inputs_as(node, dtypes.bool_))
    if b.opset < 18:
        raise OnnxExportError(
            f"en.export_onnx: op {node.op.name!r} on {node.dtype} (node {node.name}, created at "
            f"{format_location(node.source)}) needs ONNX's {bitwise}, from opset 18; export "
            f"with opset=18")
    return b.emit(bitwise, b.inputs_as(node, node.dtype))


def _mod(b, node, kind):
    """numpy's remainders and floor division from ONNX's Mod. Integers: Mod(fmod=0) has
    the divisor's sign, as numpy's; fmod=1 is C's remainder. Floats: ONNX allows only
    fmod=1 (the dividend's sign), moved by y where the signs differ. The floored
    quotient is ``(x - mod(x, y)) / y``, rounded (it is an integer up to rounding), as
    numpy computes it."""
    x, y = b.inputs_as(node, node.dtype)
    is_float = node.dtype in dtypes.FLOATS
    if kind == "fmod":
        return b.emit("Mod", [x, y], fmod=1)
    if is_float:
        f = b.emit("Mod", [x, y], fmod=1)
        zero = _scalar(b, 0, node.dtype)
        differ = b.emit("Xor", [b.emit("Less", [f, zero]), b.emit("Less", [y, zero])])
        fix = b.emit("And", [b.emit("Not", [b.emit("Equal", [f, zero])]), differ])
        r = b.emit("Where", [fix, b.emit("Add", [f, y]), f])
    else:
        r = b.emit("Mod", [x, y], fmod=0)
    if kind == "mod":
        return r
    q = b.emit("Div", [b.emit("Sub", [x, r]), y])
    if not is_float:
        return q
    # An infinite operand: the engine's (the Array API standard's) floor(x / y), where
    # the remainder route gives NaN.
    infinite = b.emit("Or", [b.emit("IsInf", [x]), b.emit("IsInf", [y])])
    return b.emit("Where", [infinite, b.emit("Floor", [b.emit("Div", [x, y])]),
                            b.emit("Round", [q])])


# What an op's ``onnx`` rule may name: ``(pattern, *args)`` calls ``PATTERNS[pattern](builder,
# node, *args)``, which emits the ONNX nodes and returns the value name(s) of the result.
# Families of ops have lower-case patterns; a pattern built around one ONNX op (with the
# engine's params turned into its attributes) has that op's name.
PATTERNS: dict[str, Callable[..., Any]] = {
    "input": _input, "initializer": _initializer, "variable": _variable,
    "tuple_item": _unpack, "value_at_export": _constant,
    "node": _node, "expr": _expr, "compare": _compare, "logical": _logical,
    "reduce": _reduce, "arg_reduce": _arg_reduce, "shape_product": _count,
    "Where": _where, "Cast": _cast, "ConstantOfShape": _fill_like,
    "Transpose": _transpose, "Reshape": _reshape, "Unsqueeze": _expand_dims,
    "Squeeze": _squeeze, "Expand": _broadcast_to, "ExpandToShapeOf": _broadcast_like,
    "Concat": _concat, "UnsqueezeConcat": _stack, "Split": _split, "Slice": _getitem,
    "Einsum": _einsum,
    "CumSum": _cumsum, "TopK": _top_k, "ScatterElements": _scatter_elements, "Pad": _pad,
    "NonZero": _nonzero,
    "bitwise": _bitwise, "Mod": _mod, "rounding": _rounding, "predicate": _predicate,
}

# The neural-network ops' patterns (activations, convolution, pooling): graph/export/onnx_nn.py.
from .onnx_nn import PATTERNS as _NN_PATTERNS  # noqa: E402
PATTERNS.update(_NN_PATTERNS)
# The selection and scatter ops' patterns (topk, scatter_reduce): graph/export/onnx_select.py.
from .onnx_select import PATTERNS as _SELECT_PATTERNS  # noqa: E402
PATTERNS.update(_SELECT_PATTERNS)
