"""Elementwise fusion: connected elementwise regions become one kernel.

A region grows from a node into its elementwise producers of the same shape
whose every user is already in the region (so a region has one output and
fusing can never create a cycle). The region becomes one ``fused`` node whose
kernel runs the members' ``out_impl`` kernels (numpy ufuncs with ``out=``)
over row blocks small enough to stay in cache: intermediates live in a few
block-sized scratch buffers, so no full-size temporary array is made, and each
input is streamed from memory once.

Example of a generated kernel (``fn.explain`` and ``node.meta["kernel_source"]``)::

    def fused_sigmoid_add(x0, x1, out):
        ...
        for s in range(0, n, rows):
            e = min(s + rows, n)
            a0 = x0[s:e] if sl0 else x0
            t0 = k0(a0, x1, out=scratch_float32_0[:e - s])
            k1(t0, out=out[s:e])
"""
import itertools

import numpy as np

from engine.config import config
from engine.op import Op

from . import fusion_numba
from .common import has_side_effects

# Elements per block: a few block-sized float32 scratch buffers fit in L2.
BLOCK_ELEMENTS = 1 << 15
_ids = itertools.count()


def _fusable(node):
    op = node.op
    return (op.elementwise and op.out_impl is not None and not op.multiple_results
            and not has_side_effects(node) and not op.random and node.shape is not None)


def find_regions(graph):
    """Map each fused node to its region id; return {region id: [nodes in topo order]}."""
    order = graph.topo_order()
    outputs = set(graph.outputs)
    region_of = {}
    next_id = itertools.count()
    for node in reversed(order):
        if not _fusable(node):
            continue
        if node not in region_of:
            region_of[node] = next(next_id)
        rid = region_of[node]
        for p in node.inputs:
            if p in region_of or not _fusable(p) or p in outputs:
                continue
            if tuple(p.shape) != tuple(node.shape):
                continue
            users = graph.users(p)
            if users and all(region_of.get(u) == rid and any(i is p for i in u.inputs)
                             for u in users):
                region_of[p] = rid
    regions = {}
    for node in order:
        if node in region_of:
            regions.setdefault(region_of[node], []).append(node)
    return {r: nodes for r, nodes in regions.items() if len(nodes) > 1}


def _positional_out(kernel):
    # numpy deprecates a positional out only for maximum and minimum.
    return isinstance(kernel, np.ufunc) and kernel.__name__ not in ("maximum", "minimum")


def _kernel_source(name, members, inputs, member_index):
    """Python source of a fused kernel for ``members`` (topo order; the last is the output)."""
    n_in = len(inputs)
    args = [f"x{i}" for i in range(n_in)]
    lines = [f"def {name}({', '.join(args + ['out'])}):"]
    # Scratch slots: reuse a buffer once its value is dead (per dtype).
    last_use = {}
    for k, m in enumerate(members):
        for i in m.inputs:
            if i in member_index:
                last_use[i] = k
    free = {}
    slot_of = {}
    slots = []
    for k, m in enumerate(members[:-1]):
        dt = np.dtype(m.dtype).name
        pool = free.setdefault(dt, [])
        if pool:
            slot = pool.pop()
        else:
            slot = f"scratch_{dt}_{len(slots)}"
            slots.append((slot, dt))
        slot_of[m] = slot
        for i in dict.fromkeys(m.inputs):   # a value used twice is freed once
            if i in member_index and last_use.get(i) == k and i in slot_of:
                free[np.dtype(i.dtype).name].append(slot_of[i])
    # Small arrays of the traced shape: one pass over whole arrays, with scratch
    # buffers kept between calls (a free list, so concurrent calls never share).
    slot_names = [slot for slot, _ in slots]
    lines.append(f"    if out.size <= {BLOCK_ELEMENTS} and out.shape == static_shape:")
    if slots:
        lines.append("        try:")
        lines.append("            scratch = small_scratch.pop()")
        lines.append("        except IndexError:")
        lines.append("            scratch = new_small_scratch()")
        lines.append(f"        {', '.join(slot_names)}, = scratch")
    small = {node: f"x{i}" for i, node in enumerate(inputs)}
    for k, m in enumerate(members):
        argv = [small[i] for i in m.inputs]
        params = "".join(f", {key}=p{k}_{key}" for key in sorted(m.params))
        target = "out" if k == len(members) - 1 else slot_of[m]
        # numpy ufuncs take out positionally, which skips keyword parsing.
        out_arg = target if _positional_out(m.op.out_impl) and not params else f"out={target}"
        lines.append(f"        u{k} = k{k}({', '.join(argv)}, {out_arg}{params})  # {m.op.name}")
        small[m] = f"u{k}"
    if slots:
        lines.append("        small_scratch.append(scratch)")
    lines.append("        return out")
    lines.append("    n = out.shape[0] if out.ndim else 1")
    lines.append("    row = out.size // n if n else 0")
    lines.append(f"    rows = max(1, {BLOCK_ELEMENTS} // row) if row else n")
    lines.append("    nd = out.ndim")
    lines.append("    if nd == 0 or rows >= n:")
    lines.append("        rows = max(n, 1)   # n == 0: an empty loop, not range(0, 0, 0)")
    for i in range(n_in):
        lines.append(f"    sl{i} = out.ndim > 0 and x{i}.ndim == out.ndim and x{i}.shape[0] == n and n > 1")
    for slot, dt in slots:
        lines.append(f"    {slot} = np.empty((rows,) + out.shape[1:] if nd else (), np.{dt})")
    lines.append("    for s in range(0, n, rows):")
    lines.append("        e = min(s + rows, n)")
    lines.append("        b = e - s")
    for i in range(n_in):
        lines.append(f"        a{i} = x{i}[s:e] if sl{i} else x{i}")
    names = {node: f"a{i}" for i, node in enumerate(inputs)}
    for k, m in enumerate(members):
        argv = [names[i] for i in m.inputs]
        params = "".join(f", {key}=p{k}_{key}" for key in sorted(m.params))
        buf = "out" if k == len(members) - 1 else slot_of[m]
        target = f"{buf}[s:e] if nd else out" if buf == "out" else f"{buf}[:b] if nd else {buf}"
        lines.append(f"        t{k} = k{k}({', '.join(argv)}, out={target}{params})  # {m.op.name}")
        names[m] = f"t{k}"
    lines.append("    return out")
    return "\n".join(lines) + "\n", [dt for _, dt in slots]


class FusedKernel:
    """The callable behind a fused node: ``impl`` allocates, ``out_impl`` writes into ``out``."""

    def __init__(self, name, members, inputs):
        self.name = name
        member_index = {m: k for k, m in enumerate(members)}
        self.source, self.scratch_dtypes = _kernel_source(name, members, inputs, member_index)
        namespace = {"np": np}
        for k, m in enumerate(members):
            namespace[f"k{k}"] = m.op.out_impl
            namespace[f"i{k}"] = m.op.impl
            for key, value in m.params.items():
                namespace[f"p{k}_{key}"] = value
        shape = members[-1].shape
        static = None if None in shape else tuple(shape)
        small_dtypes = [np.dtype(d) for d in self.scratch_dtypes]
        namespace["static_shape"] = static
        namespace["small_scratch"] = []
        namespace["new_small_scratch"] = lambda: [np.empty(static, d) for d in small_dtypes]
        exec(compile(self.source, f"<fused kernel {name}>", "exec"), namespace)
        self.out_impl = namespace[name]
        self.backend = "numpy"
        if config.fusion_backend == "numba":
            ufunc = fusion_numba.build(name, members, inputs)
            if ufunc is not None:
                self.backend = "numba"
                self.source = ufunc.source
                self.out_impl = lambda *args: ufunc(*args[:-1], out=args[-1])
        self.shape = members[-1].shape
        self.dtype = members[-1].dtype
        self.ops = tuple(m.op.name for m in members)

    def impl(self, *arrays):
        shape = self.shape
        if None in shape:   # dims unknown while tracing: the inputs know them now
            shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
        return self.out_impl(*arrays, np.empty(shape, self.dtype))


def _make_op(kernel, n_inputs, aval):
    def abstract_eval(*avals):
        return aval
    return Op(kernel.name, kernel.impl, abstract_eval, None, elementwise=True,
              n_inputs=n_inputs, out_impl=lambda *a, out: kernel.out_impl(*a, out),
              doc="A fused elementwise kernel: " + " -> ".join(kernel.ops))


def fusion(graph):
    """Replace each elementwise region by one fused node. Returns True if any region was fused."""
    regions = find_regions(graph)
    fused_ops = 0
    for members in regions.values():
        member_set = set(members)
        inputs = []
        for m in members:
            for i in m.inputs:
                if i not in member_set and i not in inputs:
                    inputs.append(i)
        root = members[-1]
        name = f"fused_{next(_ids)}_" + "_".join(m.op.name for m in members[-3:][::-1])
        kernel = FusedKernel(name, members, inputs)
        op = _make_op(kernel, len(inputs), (root.shape, root.dtype))
        node = graph.add(op, inputs, {}, (root.shape, root.dtype), name="fused",
                         source=root.source)
        node.meta["kernel_source"] = kernel.source
        node.meta["fused_ops"] = kernel.ops
        node.meta["backend"] = kernel.backend
        graph.replace_all_uses_with(root, node)
        for m in reversed(members):
            graph.drop_control_users(m)
            graph.erase(m)
        fused_ops += len(members)
    if regions:
        graph.notes.append(f"fused {fused_ops} ops into {len(regions)} kernel{'s' if len(regions) != 1 else ''}")
    return bool(regions)
