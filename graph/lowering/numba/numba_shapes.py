"""numba forms of shape ops that scan bodies meet: ``broadcast_to``, ``split``, ``concat``.

Patterns of ``numba_source.PATTERNS`` (each op's ``numba_form`` rule names its own):
a layer norm's backward broadcasts its row statistics back over the row
(``broadcast_to``); an LSTM written as ``split(concat([x, h], axis=1) @ w + b, 4,
axis=1)`` joins and cuts along the last axis. Each writes plain loops over static
shapes, so the scan around it stays one compiled time loop.

Example (the loop ``broadcast_to`` of a (2, 1) value to (2, 3) writes)::

    v2 = np.empty((2, 3), np.float32)
    for i0 in range(2):
        for i1 in range(3):
            v2[i0, i1] = a0[i0, 0]
"""
import numpy as np

from .numba_emitter import Unsupported, _Value


def broadcast(em, node, depth):
    """``broadcast_to``: the input's elements copied over the new shape (size-1 and missing
    leading axes repeated), into the node's buffer."""
    x = em.scalar_or_array(node.inputs[0])
    rank = len(node.shape)
    if rank == 0 or tuple(x.shape) == tuple(node.shape):
        em.values[node] = x
        return
    name = em.buffer(node, depth)
    index, inner = em.loop_nest(node.shape, depth)
    em.line(f"{name}[{index}] = {em.element(node.inputs[0], rank)}", inner)
    em.values[node] = _Value("array", name, node.shape, node.dtype)


def split(em, node, depth):
    """``split``: along the first axis each part is a view of consecutive rows; along
    another, each is copied into a buffer of its own (contiguous, as ``np.dot`` wants)."""
    x = em.scalar_or_array(node.inputs[0])
    if x.kind != "array":
        raise Unsupported("split of a scalar")
    rank = len(x.shape)
    axis = node.params["axis"] % rank
    parts, start = [], 0
    for shape, dtype in node.avals:
        size = shape[axis]
        if axis == 0:
            name = em.fresh()
            em.line(f"{name} = {x.text}[{start}:{start + size}]", depth)
            if x.text in em.contiguous:     # rows of a C array are one
                em.contiguous.add(name)
        else:
            name = em.alloc(shape, dtype, depth)
            index, inner = em.loop_nest(shape, depth)
            source = ", ".join(f"{start} + i{k}" if k == axis else f"i{k}"
                               for k in range(rank))
            em.line(f"{name}[{index}] = {x.text}[{source}]", inner)
        parts.append(_Value("array", name, shape, dtype))
        start += size
    em.values[node] = parts


def concat(em, node, depth):
    """``concat``: the parts copied into consecutive slices of a new array along the axis."""
    rank = len(node.shape)
    if set(node.params) != {"axis"} or rank == 0:
        raise Unsupported("concat of scalars")
    axis = node.params["axis"] % rank
    parts = [em.scalar_or_array(i) for i in node.inputs]
    if any(p.kind != "array" or np.dtype(p.dtype) != np.dtype(node.dtype) for p in parts):
        raise Unsupported("concat of mixed dtypes")
    name = em.alloc(node.shape, node.dtype, depth)
    start = 0
    for p in parts:
        index, inner = em.loop_nest(p.shape, depth)
        target = ", ".join(f"{start} + i{k}" if k == axis and start else f"i{k}"
                           for k in range(rank))
        em.line(f"{name}[{target}] = {p.text}[{index}]", inner)
        start += p.shape[axis]
    em.values[node] = _Value("array", name, node.shape, node.dtype)
