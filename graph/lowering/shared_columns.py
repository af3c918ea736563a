"""One im2col matrix for a convolution and its filter gradient.

A convolution's kernel copies its input's windows into an im2col matrix and
multiplies it by the filters; the filter gradient of the same convolution
(in a training step, the same input with the same strides, padding and
dilation) copies the very same windows again before its product
``cols.T @ g``. This pass makes the matrix a value of the graph: one
``im2col`` node whose result both products read (``engine/ops/conv_columns.py``
holds the kernels), written into a buffer memory planning reuses across calls.
The copies saved are 0.3-0.4 ms each in the styles CNN step (64 images of
28x28, one thread, caches warm); the price is keeping the matrix alive from the forward
to the backward, so a pair shares its columns only where they take at most
``cost.shared_columns_max_bytes``.

Not in the default pipeline: measured, it does not pay on the 2-core EPYC
(styles CNN step, one thread, 15 interleaved rounds at load 2: 11.79 against
11.33 ms sharing both matrices, 11.36 against 11.40 sharing only the 1.8 MB
one). The copies it saves read a small input that is still in the cache,
while a kept matrix is written to memory and read back from it; and a kernel
that copies its windows itself runs in cache-sized blocks of images
(``cost.window_block_bytes``). Ask for it by name:
``en.function(f, passes=[..., "shared_columns", "memory_planning"])``.

Left alone: convolutions whose kernel is the direct loop (``conv.runs_direct``: it
makes no columns), grouped convolutions (their columns are laid out per group), pairs
whose input, filters and cotangent differ in dtype, shapes not known when
tracing, convolutions without a filter gradient of the same input (nothing
to share), and back ends without ``out=`` kernels on numpy arrays. The
kernels split their images over the kernel threads exactly where the ops'
kernels would, and run the same products: results are the same bits.

Example:
    >>> import engine as en
    >>> from engine.graph.lowering.shared_columns import shared_columns
    >>> f = en.function(en.grad(lambda w, x: en.sum(en.conv2d(x, w) ** 2.0)),
    ...                 passes=["cleanup", "shared_columns"])
    >>> g = f.graph_for(en.ones((3, 3, 2, 4)), en.ones((1, 6, 6, 2)))
    >>> sorted(n.op.name for n in g.nodes if "columns" in n.op.name or n.op.name == "im2col")
    ['conv2d_backprop_filter_columns', 'conv2d_columns', 'im2col']
"""
import numpy as np

from engine import ops
from engine.cost_model import cost
from engine.op import Op
from engine.ops import conv, conv_columns

from ..ir.queries import replace_node, static_shape


def _geometry(node):
    """The window geometry a convolution node and a filter gradient node share."""
    p = node.params
    return (p["strides"], p["padding"], p.get("dilation", (1, 1)))


def _plain(node, kernel_hw):
    """Whether ``node`` (a conv2d or its filter gradient) may read shared columns: not
    where its kernel is the direct loop, which makes no columns."""
    return node.params.get("groups", 1) == 1 and node.dtype.kind == "f" and \
        all(static_shape(i.shape) and i.dtype == node.dtype for i in node.inputs) and \
        static_shape(node.shape) and not conv.runs_direct(
            node.dtype, 1, kernel_hw[0] * kernel_hw[1] * node.inputs[0].shape[3],
            node.shape[3] if node.op is ops.conv2d_op else node.inputs[1].shape[3],
            filter_grad=node.op is ops.conv2d_backprop_filter_op)


def _applies(graph):
    backend = getattr(graph, "backend", None)
    return backend is None or (backend.out_kernels and backend.numpy_arrays)


def _fresh(shape, dtype, out_impl):
    """The ``impl`` of a kernel that writes into ``out``: allocate, then write."""
    def impl(*arrays):
        return out_impl(*arrays, out=np.empty(shape, dtype))
    return impl


def _im2col_op(x, kernel_hw, geometry, shape, dtype, work):
    strides, padding, dilation = geometry

    def out_impl(xv, out):
        return conv_columns.im2col_out(xv, out=out, kernel_hw=kernel_hw, strides=strides,
                                       padding=padding, dilation=dilation, split_work=work)
    return Op("im2col", _fresh(shape, dtype, out_impl), lambda *a: (shape, dtype), None,
              n_inputs=1, out_impl=out_impl,
              doc="The windows of an NHWC input as the rows of an im2col matrix.")


def _conv_op(node):
    shape, dtype, images = tuple(node.shape), node.dtype, node.shape[0]

    def out_impl(cols, w, out):
        return conv_columns.conv2d_columns_out(cols, w, out=out, images=images)
    return Op("conv2d_columns", _fresh(shape, dtype, out_impl), lambda *a: (shape, dtype),
              None, n_inputs=2, out_impl=out_impl,
              doc="conv2d as the product of its input's im2col matrix and the filters.")


def _filter_grad_op(node):
    shape, dtype = tuple(node.shape), node.dtype

    def out_impl(cols, g, out):
        return conv_columns.filter_grad_columns_out(cols, g, out=out)
    return Op("conv2d_backprop_filter_columns", _fresh(shape, dtype, out_impl),
              lambda *a: (shape, dtype), None, n_inputs=2, out_impl=out_impl,
              doc="conv2d's filter gradient from its input's im2col matrix.")


def _pairs(graph):
    """``{(input, kernel size, geometry): ([convolutions], [filter gradients])}``."""
    found: dict = {}
    for node in graph.topo_order():
        if node.op is ops.conv2d_op and _plain(node, node.inputs[1].shape[:2]):
            key = (node.inputs[0], tuple(node.inputs[1].shape[:2]), _geometry(node))
            found.setdefault(key, ([], []))[0].append(node)
        elif node.op is ops.conv2d_backprop_filter_op and \
                _plain(node, node.params["kernel_hw"]):
            key = (node.inputs[0], tuple(node.params["kernel_hw"]), _geometry(node))
            found.setdefault(key, ([], []))[1].append(node)
    return {k: v for k, v in found.items() if v[0] and v[1]}


def shared_columns(graph):
    """Give each convolution and filter gradient of the same input one im2col matrix
    (module doc). Returns whether the graph changed."""
    if not _applies(graph):
        return False
    shared = 0
    for (x, kernel_hw, geometry), (convs, filter_grads) in _pairs(graph).items():
        shape = conv_columns.columns_shape(tuple(x.shape), kernel_hw, *geometry)
        if int(np.prod(shape)) * x.dtype.itemsize > cost.shared_columns_max_bytes:
            continue
        # The columns split over the threads where the convolution's kernel would.
        work = shape[0] * shape[1] * convs[0].shape[-1]
        cols = graph.add(_im2col_op(x, kernel_hw, geometry, shape, x.dtype, work), [x], {},
                         (shape, x.dtype), name="im2col", source=convs[0].source)
        for node in convs:
            new = graph.add(_conv_op(node), [cols, node.inputs[1]], {},
                            (node.shape, node.dtype), name="conv2d_columns", source=node.source)
            replace_node(graph, node, new)
        for node in filter_grads:
            new = graph.add(_filter_grad_op(node), [cols, node.inputs[1]], {},
                            (node.shape, node.dtype), name="conv2d_backprop_filter_columns",
                            source=node.source)
            replace_node(graph, node, new)
        shared += 1
    if shared:
        graph.notes.append(f"{shared} im2col matri{'ces' if shared != 1 else 'x'} shared by "
                           "convolutions and their filter gradients")
    return bool(shared)
