"""C writers of batched matrix products and of max/min reductions, for whole graphs in C.

A product of stacks of matrices (numpy's ``matmul`` over leading batch dims, broadcast
between the operands) is a loop over the result's batch calling the BLAS ``gemm``
once a matrix, each operand read at its own offset (a broadcast dim stays put); a stack
times one matrix is one ``gemm`` over the stack's rows. Products of 1-d and 2-d
operands are ``c_graph_ops.matmul``'s. ``max``/``min`` over any axes keep numpy's
rule that a NaN wins. The softmax and attention of a transformer block are made of
these, so its graph (forward and gradient) is written whole.

Example:
    >>> import engine as en
    >>> from engine.graph.lowering.graph_part import GraphPart
    >>> from engine.graph.lowering.c.c_graph import emit
    >>> f = en.function(lambda a, b: en.max(a @ b, axis=-1), passes=["cleanup"])
    >>> g = f.graph_for(en.ones((2, 3, 4)), en.ones((2, 4, 5)))
    >>> part = GraphPart.whole(g)
    >>> source, _ = emit(part.members, part.inputs, part.outputs)
    >>> source.count("dgemm_(")       # one call, in a loop over the batch of 2
    1
"""
import math

import numpy as np

from ..plugin import Unsupported
from . import c_graph_ops
from .c_graph_emit import linear
from .c_source import _offset, ctype


def matmul(em, node):
    x, y = (em.get(i) for i in node.inputs)
    if len(x.shape) <= 2 and len(y.shape) <= 2:
        c_graph_ops.matmul(em, node)
        return
    if em.blas is None:
        raise Unsupported("matmul: no BLAS (SciPy is not importable)")
    if len(x.shape) < 2 or len(y.shape) < 2 or x.dtype != y.dtype or \
            x.dtype not in (np.float32, np.float64) or np.dtype(node.dtype) != x.dtype:
        raise Unsupported("matmul: batched products of float stacks of one dtype only")
    x = em.contig(x)
    m, k = x.shape[-2:]
    n = y.shape[-1]
    if 0 in (m, k, n) or 0 in node.shape:
        raise Unsupported("matmul: empty operands")
    out = em.dest(node)
    if len(y.shape) == 2:
        # A stack times one matrix: one product of the stack's rows (y may stay a
        # transposed view, which gemm reads transposed).
        b, _, _, tb = c_graph_ops._operand(y, False)
        rows = math.prod(x.shape[:-1])
        c_graph_ops.gemm(em, x.ptr, False, b.ptr, tb, out.ptr, rows, k, n, x.dtype)
        em.values[node] = out
        return
    y = em.contig(y)
    batch = tuple(node.shape[:-2])
    loops = em.loops(batch)
    x_at = _offset(tuple(x.shape[:-2]), batch, loops)
    y_at = _offset(tuple(y.shape[:-2]), batch, loops)
    out_at = linear(loops, batch)
    c_graph_ops.gemm(em, f"({x.ptr} + ({x_at}) * {m * k})", False,
                     f"({y.ptr} + ({y_at}) * {k * n})", False,
                     f"({out.ptr} + ({out_at}) * {m * n})", m, k, n, x.dtype)
    em.close_loops(len(batch))
    em.values[node] = out


def extreme(largest):
    """The writer of ``max`` (``largest``) or ``min`` over the node's axes."""
    def emit(em, node):
        x, _, kept, kept_shape = c_graph_ops.reduction_input(em, node, "max/min")
        rank = len(x.shape)
        size = max(1, math.prod(kept_shape))
        out = em.dest(node)
        start = "-INFINITY" if largest else "INFINITY"
        i = em.fresh()
        em.line(f"for (int64_t {i} = 0; {i} < {size}; {i}++) {out.ptr}[{i}] = {start};")
        loops = em.loops(x.shape)
        target = f"{out.ptr}[{linear([loops[k] for k in kept], kept_shape)}]"
        v = em.fresh("v")
        em.open("")   # (a block: a 0-d input has no loop to hold the name)
        em.line(f"const {ctype(x.dtype)} {v} = {x.ptr}[{linear(loops, x.shape)}];")
        # A NaN, once there, stays: nothing compares above it.
        em.line(f"if ({v} {'>' if largest else '<'} {target} || {v} != {v}) {target} = {v};")
        em.close()
        em.close_loops(rank)
        em.values[node] = out
    return emit
