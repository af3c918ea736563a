"""Elementwise fusion: connected elementwise regions become one kernel.

A region grows from a node into its elementwise producers of the same shape
whose every user is already in the region (so a region has one output and
fusing can never create a cycle). The region becomes one ``fused`` node whose
kernel runs the members' ``out_impl`` kernels (numpy ufuncs with ``out=``)
over row blocks small enough to stay in cache: intermediates live in a few
block-sized scratch buffers, so no full-size temporary array is made, and each
input is streamed from memory once. For a small traced shape the node's plain
``impl`` is a second generated function that allocates the result and runs
every op once over whole arrays, in the result itself where the values allow.
With kernel threads (``graph.lowering.parallel.kernel_threads()``: ``en.config.fusion_threads``,
by default 2 on two cores or more in a graph with a product of 2^29 multiply-adds,
else 1) the row blocks of a large kernel are shared among threads
(``graph/lowering/parallel.py``), each with its own scratch. A large region is compiled into
one loop nest instead, in C where a C compiler is found (``graph/lowering/c/c_fused.py``)
or with numba where it is installed (``graph/lowering/numba/numba_fused.py``), where
``en.config.lowering`` and the policy (``graph/lowering/policy.py``) say so; fusion only
finds the regions and writes the numpy kernel. Under ``"auto"`` a region that
pays only over a long run starts on numpy and moves to C once hot
(``graph/lowering/hot_swap.py``).

Regions that feed one another are then grouped (``fusion_groups``): a group
becomes one node with several results (``unpack`` nodes), each a value used
outside the group or a full reduction, all computed in one block loop.

Example of a generated kernel (``fn.explain`` and ``node.meta["kernel_source"]``)::

    def fused_sigmoid_add(x0, x1, out):
        ...
        def part(lo, hi):
            scratch_float32_0 = np.empty((rows,) + shape[1:], np.float32)
            for s in range(lo, hi, rows):
                e = min(s + rows, n)
                a0 = x0[s:e] if sl0 else x0
                t0 = k0(a0, x1, out=scratch_float32_0[:e - s])
                t1 = k1(t0, out=out[s:e])
        run_split(part, row_bounds(n, rows, kernel_threads()))
"""
import functools
import itertools
import math
import re
from typing import Any

import numpy as np

from engine import numerics, ops, scalar_forms
from engine.cost_model import cost
from engine.op import Op, declare
from engine.warning_location import TRACED_LINES

from ..ir.graph import Node
from ..ir.graph_ops import unpack_op
from .parallel import kernel_threads, row_bounds, run_split, threads_for
from . import bitwise, policy
from .plugin import Region
from .fusion_groups import group_outputs, group_regions

# A region of at most cost.fused_whole_array_elements (static shape) runs as one numpy
# call per op over whole arrays; a larger one walks row blocks of about
# cost.fused_block_elements elements, so
# the handful of block-sized buffers each op reads and writes stay in the core's L2
# cache. Measured on a 2-core Xeon VM with AVX-512 (1.25 MiB of L2 a core): the
# autoencoder's loss tail over (1000, 784) float32, 13 numpy calls a block, takes
# 3.7 ms in 2^16-element blocks, 3.9 in 2^17 and 4.8 in 2^18; at batch 60000,
# 174 against 186 ms. Smaller blocks pay numpy's ~1 us a call more often: on an AMD
# EPYC, sigmoid(x + b) over (1000, 784) took 878 us in 2^15-element blocks, 821 in
# 2^18 and 750 as one pass. Both are read when a graph is lowered.
_ids = itertools.count()


def _fusable(node):
    op = node.op
    return (op.elementwise and op.out_impl is not None and not op.multiple_results
            and not node.side_effects and not op.random and node.shape is not None)


def find_regions(graph):
    """Group fusable nodes into regions; return {region id: [nodes in topo order]}
    (single nodes included: one may still fuse with the reduction that consumes it)."""
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
    regions: dict[int, list[Node]] = {}
    for node in order:
        if node in region_of:
            regions.setdefault(region_of[node], []).append(node)
    return regions


def _assign_slots(members, member_index, in_scratch, out_dtype=None):
    """Scratch slot names for the values of ``in_scratch``: a buffer is reused once its
    value is dead (per dtype). Returns ``({member: slot}, [(slot, dtype name)])``.

    A numpy ufunc writes over an input that dies there (in place, as memory planning
    does: the fewer buffers, the more of them stay in cache); other kernels may read
    an input again after their first write, or copy it when it is their ``out``, so
    they get a buffer of their own. With ``out_dtype`` the kernel's own fresh ``out``
    is a slot of that dtype too, and every op may write over an input that dies
    there: a chain of ops then runs in ``out`` alone, with no scratch buffer.
    """
    last_use = {}
    for k, m in enumerate(members):
        for i in m.inputs:
            if i in member_index:
                last_use[i] = k
    free = {}
    if out_dtype is not None:
        free[np.dtype(out_dtype).name] = ["out"]
    slot_of: dict[Node, str] = {}
    slots: list[tuple[str, str]] = []      # (name, dtype)

    def release(m):
        k = member_index[m]
        for i in dict.fromkeys(m.inputs):   # a value used twice is freed once
            if i in member_index and last_use.get(i) == k and i in slot_of:
                free[np.dtype(i.dtype).name].append(slot_of[i])

    for m in in_scratch:
        in_place = out_dtype is not None or isinstance(m.op.out_impl, np.ufunc)
        if in_place:
            release(m)
        dt = np.dtype(m.dtype).name
        pool = free.setdefault(dt, [])
        if pool:
            slot = pool.pop()
        else:
            slot = f"scratch_{dt}_{len(slots)}"
            slots.append((slot, dt))
        slot_of[m] = slot
        if not in_place:
            release(m)
    return slot_of, slots


def _allocates_out(member, region_shape):
    """Whether ``member``, first in a kernel, can make the kernel's fresh result itself:
    a plain ufunc whose own result (numpy's dtype rules, on the traced dtypes) is an
    array of the member's dtype. A ufunc allocating is cheaper than ``np.empty``."""
    ufunc = member.op.out_impl
    if not (isinstance(ufunc, np.ufunc) and member.op.rules.get("positional_out")) \
            or member.params or region_shape == ():
        return False   # on 0-d inputs a ufunc returns a scalar, not an array
    try:
        resolved = ufunc.resolve_dtypes(tuple(np.dtype(i.dtype) for i in member.inputs) +
                                        (None,) * ufunc.nout)
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return False
    return ufunc.nout == 1 and resolved[-1] == np.dtype(member.dtype)


def _small_lines(members, inputs, slot_of, slots, targets, indent, first_allocates=False,
                 reduced=None):
    """The kernel over whole arrays of the traced shape, scratch buffers taken from a
    free list kept between calls (so concurrent calls never share one). A member in
    ``targets`` writes into the array named there, the others into their scratch
    slots; for a member in ``reduced`` (``{member: (out name, "sum" or "mean")}``)
    its reduction is stored in that output. With ``first_allocates`` the first
    member's own new array becomes ``out``."""
    lines = []
    pad = " " * indent
    reduced = reduced or {}
    if slots:
        lines += [f"{pad}try:",
                  f"{pad}    scratch = small_scratch.pop()",
                  f"{pad}except IndexError:",
                  f"{pad}    scratch = new_small_scratch()",
                  f"{pad}{', '.join(slot for slot, _ in slots)}, = scratch"]
    small = {node: f"x{i}" for i, node in enumerate(inputs)}
    for k, m in enumerate(members):
        argv = [small[i] for i in m.inputs]
        small[m] = f"u{k}"
        if k == 0 and first_allocates:
            call = f"k0({', '.join(argv)}"
            lines += [f"{pad}out = u0 = {call})  # {m.op.name}",
                      # A Python scalar input is weakly typed: numpy may pick another dtype.
                      f"{pad}if out.dtype is not out_dtype:",
                      f"{pad}    out = u0 = {call}, empty(static_shape, out_dtype))"]
            continue
        params = "".join(f", {key}=p{k}_{key}" for key in sorted(m.params))
        target = targets.get(m) or slot_of[m]
        # numpy ufuncs take out positionally, which skips keyword parsing.
        out_arg = target if m.op.rules.get("positional_out") and not params else f"out={target}"
        lines.append(f"{pad}u{k} = k{k}({', '.join(argv)}, {out_arg}{params})  # {m.op.name}")
        if m in reduced:
            o, r = reduced[m]
            total = f"np.sum(u{k}, axis=0)" if r == "rows" else f"np.sum(u{k})"
            lines.append(f"{pad}{o}[...] = {total}{' / size' if r == 'mean' else ''}")
    return lines


def _fresh_source(name, members, inputs, member_index):
    """``name(x0, ...)``: the kernel on inputs of the traced (small) shape, writing into
    an array it allocates; the fused node's plain ``impl``."""
    slot_of, slots = _assign_slots(members, member_index, members[:-1], members[-1].dtype)
    first = members[0]
    allocates = slot_of.get(first) == "out" and _allocates_out(first, members[-1].shape)
    lines = [f"def {name}({', '.join(f'x{i}' for i in range(len(inputs)))}):"]
    if not allocates:
        lines.append("    out = empty(static_shape, out_dtype)")
    lines += _small_lines(members, inputs, slot_of, slots, {members[-1]: "out"}, 4, allocates)
    if slots:
        lines.append("    small_scratch.append(scratch)")
    lines.append("    return out")
    return "\n".join(lines) + "\n", [dt for _, dt in slots]


def _scratch_maker(shape, dtypes):
    """A function making one small-path scratch set, an array of ``shape`` per dtype
    (the small path runs only where the traced shape is static)."""
    return lambda: [np.empty(shape, d) for d in dtypes]


def _small_static(shape):
    """Whether arrays of the traced ``shape`` take the one-pass small path."""
    return None not in shape and math.prod(shape) <= cost.fused_whole_array_elements


def _kernel_source(name, members, inputs, member_index, outputs):
    """Python source of a fused kernel for ``members`` (topo order).

    ``outputs`` lists ``(member, reduce)``: the kernel writes each member with
    ``reduce`` None into an output array, and for ``reduce`` "sum" or "mean"
    that reduction of the member over all its elements (block by block, so the
    value is never stored whole). One output is ``out``; several are ``out0,
    out1, ...``, where None asks the kernel to allocate that result."""
    n_in = len(inputs)
    args = [f"x{i}" for i in range(n_in)]
    multi = len(outputs) > 1
    outs = [f"out{j}" for j in range(len(outputs))] if multi else ["out"]
    lines = [f"def {name}({', '.join(args + outs)}):"]
    targets = {m: o for (m, r), o in zip(outputs, outs) if r is None}
    reduced = {m: (o, r) for (m, r), o in zip(outputs, outs) if r is not None}
    # An output may be a planned buffer shared with an input: a single output is
    # written by the last member only; with several, see ``_may_overwrite``.
    slot_of, slots = _assign_slots(members, member_index,
                                   [m for m in members if m not in targets])
    if targets and not multi:
        lines.append("    shape = out.shape")
    else:
        shape_args = ", ".join(f"x{i}.shape" for i in range(n_in))
        lines.append(f"    shape = static_shape or np.broadcast_shapes({shape_args})")
    if multi:
        for j, (m, r) in enumerate(outputs):
            shape = "shape[1:]" if r == "rows" else "()" if r else "shape"
            lines += [f"    if out{j} is None:",
                      f"        out{j} = np.empty({shape}, np.{np.dtype(m.dtype).name})"]
    # Whether the traced shape is small is known now, so the test is one compare (and
    # the small path takes its size as a constant: math.prod costs 0.1 us a call).
    if _small_static(members[-1].shape):
        lines.append("    if shape == static_shape:")
        if any(r == "mean" for _, r in reduced.values()):
            lines.append("        size = static_size")
        lines += _small_lines(members, inputs, slot_of, slots, targets, 8, reduced=reduced)
        if slots:
            lines.append("        small_scratch.append(scratch)")
        lines.append(f"        return {', '.join(outs)}")
    lines += ["    size = math.prod(shape)",
              "    nd = len(shape)",
              "    n = shape[0] if nd else 1",
              "    row = size // n if n else 0",
              f"    rows = max(1, {cost.fused_block_elements} // row) if row else n",
              "    if nd == 0 or rows >= n:",
              "        rows = max(n, 1)   # n == 0: an empty loop, not range(0, 0, 0)",
              "    else:",
              # Equal shares for 1, 2 or 4 threads; the blocks (so the block sums,
              # so the results) depend on the shape alone, never on the threads.
              "        blocks = -(-n // rows)",
              "        rows = -(-n // (blocks + -blocks % 4))"]
    for i in range(n_in):
        lines.append(f"    sl{i} = nd > 0 and x{i}.ndim == nd and x{i}.shape[0] == n and n > 1")
    # One part of the rows per thread, each with its own scratch buffers.
    lines.append("    def part(lo, hi):")
    for slot, dt in slots:
        lines.append(f"        {slot} = np.empty((rows,) + shape[1:] if nd else (), np.{dt})")
    for o, _ in reduced.values():
        lines.append(f"        sums_{o} = []")
    lines.append("        for s in range(lo, hi, rows):")
    lines.append("            e = min(s + rows, n)")
    lines.append("            b = e - s")
    for i in range(n_in):
        lines.append(f"            a{i} = x{i}[s:e] if sl{i} else x{i}")
    names = {node: f"a{i}" for i, node in enumerate(inputs)}
    for k, m in enumerate(members):
        argv = [names[i] for i in m.inputs]
        params = "".join(f", {key}=p{k}_{key}" for key in sorted(m.params))
        if m in targets:
            target = f"{targets[m]}[s:e] if nd else {targets[m]}"
        else:
            target = f"{slot_of[m]}[:b] if nd else {slot_of[m]}"
        lines.append(f"            t{k} = k{k}({', '.join(argv)}, out={target}{params})"
                     f"  # {m.op.name}")
        names[m] = f"t{k}"
        if m in reduced and reduced[m][1] == "rows":
            lines.append(f"            sums_{reduced[m][0]}.append(np.sum(t{k}, axis=0))")
        elif m in reduced:
            lines.append(f"            sums_{reduced[m][0]}.append(float(np.sum(t{k})))")
    if reduced:
        lines.append(f"        return {', '.join(f'sums_{o}' for o, _ in reduced.values())},")
    split = "run_split(part, row_bounds(n, rows, kernel_threads()))"
    lines.append(f"    parts = {split}" if reduced else f"    {split}")
    for j, (o, r) in enumerate(reduced.values()):
        if r == "rows":
            # Each block's row sums added in block order in double precision (the
            # same bits for any thread count).
            lines.append(f"    {o}[...] = sum((v.astype(np.float64) for p in parts "
                         f"for v in p[{j}]), np.zeros(shape[1:]))")
            continue
        # Block sums added exactly, in double precision.
        lines.append(f"    {o}[...] = math.fsum(v for p in parts for v in p[{j}])"
                     f"{' / size' if r == 'mean' else ''}")
    lines.append(f"    return {', '.join(outs)}")
    return "\n".join(lines) + "\n", [dt for _, dt in slots]


def _member_lines(source, members):
    """``{line: source location of the member whose kernel k<i> that line calls}``, so a
    numpy warning in a fused kernel names the user's line of that op (TRACED_LINES)."""
    found = {}
    for number, line in enumerate(source.splitlines(), 1):
        match = _MEMBER_CALL.search(line)
        if match and getattr(members[int(match.group(1))], "source", None):
            found[number] = members[int(match.group(1))].source
    return found


_MEMBER_CALL = re.compile(r"\bk(\d+)\(")


class FusedKernel:
    """The callable behind a fused node: ``impl`` allocates, ``out_impl`` writes into ``out``.

    ``outputs`` lists ``(member, reduction)``: the member's value (``reduction``
    None) or the full sum or mean node that consumes it. With several outputs
    ``out_impl`` takes one array per result (None: allocate) and returns them all.
    """

    def __init__(self, name, members, inputs, outputs, threads=None, scratch_pools=None):
        self.name = name
        member_index = {m: k for k, m in enumerate(members)}
        spec = [(m, reduction_kind(m, r)) for m, r in outputs]
        self.source, self.scratch_dtypes = _kernel_source(name, members, inputs, member_index,
                                                          spec)
        # ``threads``: what "auto" kernel threads chose for the graph (parallel.threads_for).
        namespace: dict[str, Any] = {"np": np, "math": math,
                     "kernel_threads": functools.partial(kernel_threads, threads),
                     "run_split": run_split, "row_bounds": row_bounds}
        for k, m in enumerate(members):
            namespace[f"k{k}"] = m.op.out_impl
            for key, value in m.params.items():
                namespace[f"p{k}_{key}"] = value
        shape = members[-1].shape      # every member has the region's shape
        static = None if None in shape else tuple(shape)
        small_dtypes = [np.dtype(d) for d in self.scratch_dtypes]
        namespace["static_shape"] = static
        namespace["static_size"] = None if static is None else math.prod(static)
        # The small path's free list of scratch sets, shared by the graph's kernels of
        # the same shape and scratch dtypes: one set then serves them all in turn and
        # stays in L1, where a set per kernel (the steps of an unrolled RNN) would come
        # back from L2 on every call. Concurrent calls each pop a set of their own.
        pools = {} if scratch_pools is None else scratch_pools
        namespace["small_scratch"] = pools.setdefault((static, tuple(small_dtypes)), [])
        namespace["new_small_scratch"] = _scratch_maker(static, small_dtypes)
        fresh = dict(namespace)   # before exec: the fresh kernel keeps its own scratch
        namespace[TRACED_LINES] = _member_lines(self.source, members)
        exec(compile(self.source, f"<fused kernel {name}>", "exec"), namespace)
        self.out_impl = namespace.pop(name)   # not kept in its own globals: no cycle
        self.backend = "numpy"
        self.hot = None   # a HotSwap: compiled in the background once hot (hot_swap.py)
        one_value = len(outputs) == 1 and outputs[0][1] is None
        # The policy may pick a compiled lowering for the region, or start it on this
        # numpy kernel and build the compiled one once hot.
        region = Region(name, members, inputs, spec, threads, exact=numerics.bitwise())
        compiled, self.hot = policy.fused_kernel(region, self.out_impl) \
            if bitwise.region_allowed(region) else (None, None)
        if compiled is not None:
            self.backend = compiled.backend
            self.source = compiled.source
            self.out_impl = compiled.out_impl
        elif self.hot is not None:
            self.out_impl = self.hot.out_impl
        if self.backend == "numpy" and one_value and _small_static(shape):
            # The traced shape is the only one: allocate and run in one generated call.
            fresh_source, fresh_dtypes = _fresh_source(name + "_fresh", members, inputs,
                                                       member_index)
            fresh.update(empty=np.empty, out_dtype=np.dtype(members[-1].dtype),
                         small_scratch=pools.setdefault(
                             (static, tuple(np.dtype(d) for d in fresh_dtypes)), []),
                         new_small_scratch=_scratch_maker(static, fresh_dtypes))
            fresh[TRACED_LINES] = _member_lines(fresh_source, members)
            exec(compile(fresh_source, f"<fused kernel {name}_fresh>", "exec"), fresh)
            # Per instance, so a call skips impl's checks; mypy refuses assigning to a
            # method, which is meant here.
            self.impl = fresh.pop(name + "_fresh")  # type: ignore[method-assign]
            self.source += "\n" + fresh_source
        self.results = [r if r is not None else m for m, r in outputs]
        self.avals = [(r.shape, r.dtype) for r in self.results]
        self.shape, self.dtype = self.avals[0]
        self._unknown = None in self.shape
        self.ops = tuple(m.op.name for m in members) + tuple(r.op.name for _, r in outputs
                                                              if r is not None)

    def impl(self, *arrays):
        # (Replaced per instance by the generated fresh kernel for small traced shapes.)
        if len(self.avals) > 1:
            return self.out_impl(*arrays, *([None] * len(self.avals)))
        shape = self.shape
        if self._unknown:   # dims unknown while tracing: the inputs know them now
            shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
        return self.out_impl(*arrays, np.empty(shape, self.dtype))


def _make_op(kernel, n_inputs, outputs):
    doc = "A fused elementwise kernel: " + " -> ".join(kernel.ops)
    if len(outputs) > 1:
        avals = list(kernel.avals)
        return Op(kernel.name, kernel.impl, lambda *a: avals, None, multiple_results=True,
                  n_inputs=n_inputs, out_impl=lambda *a, out: kernel.out_impl(*a, *out),
                  doc=doc + f" ({len(avals)} results)")
    aval = kernel.avals[0]
    reduction = outputs[0][1] is not None
    # The generated numpy kernel takes ``out`` by name itself: called directly, it saves
    # a wrapper call (0.2 us of a 7 us step kernel); a compiled one takes it last.
    out_impl = kernel.out_impl if kernel.backend == "numpy" else \
        (lambda *a, out: kernel.out_impl(*a, out))
    return Op(kernel.name, kernel.impl, lambda *a: aval, None, elementwise=not reduction,
              reduction=reduction, n_inputs=n_inputs, out_impl=out_impl, doc=doc)


def _may_overwrite(members, inputs, outputs):
    """``{result index: [input positions]}``: inputs a result's buffer may share. The
    kernel writes each block of a value result at its member, so an input of the
    same shape and dtype read only by that member or earlier ones is done with
    (for the block) by then: the same reasoning as in-place elementwise ops."""
    last_reader = {}
    for k, m in enumerate(members):
        for i in m.inputs:
            last_reader[i] = k
    safe = {}
    for j, (m, reduction) in enumerate(outputs):
        if reduction is not None:
            continue
        k = members.index(m)
        safe[j] = [p for p, i in enumerate(inputs)
                   if tuple(i.shape) == tuple(m.shape) and i.dtype == m.dtype
                   and last_reader[i] <= k]
    return safe


def _full_reduction(graph, root):
    """The sum or mean over all elements that alone consumes ``root``, if there is one."""
    users = graph.users(root)
    if len(users) != 1 or root in graph.outputs or root.dtype.kind != "f":
        return None
    user = users[0]
    if user.op not in (ops.sum_op, ops.mean_op) or list(user.inputs) != [root]:
        return None
    axis = user.params["axis"]
    nd = len(root.shape)
    axes = tuple(range(nd)) if axis is None else \
        tuple(sorted(a % nd for a in (axis if isinstance(axis, tuple) else (axis,)))) if nd else ()
    if axes != tuple(range(nd)) or user.dtype != root.dtype:
        return None
    # A float16 mean is summed in float32 (its own kernel, as numpy's): a kernel's
    # float16 block sums would overflow.
    if user.op is ops.mean_op and root.dtype == np.float16:
        return None
    return user


def _rows_sum(graph, root):
    """The ``sum(root, axis=0)`` among ``root``'s users, for a 2-D float ``root`` of static
    shape (a dense layer's bias gradient), or None: a fused kernel adds it up block by
    block while it writes ``root``, instead of a second pass reading ``root`` again."""
    shape = root.shape
    if root.dtype.kind != "f" or shape is None or len(shape) != 2 or None in shape:
        return None
    for user in graph.users(root):
        if user.op is not ops.sum_op or list(user.inputs) != [root] or \
                user.params.get("keepdims") or user.dtype != root.dtype:
            continue
        axis = user.params.get("axis")
        axes = axis if isinstance(axis, tuple) else (axis,)
        if len(axes) == 1 and axes[0] is not None and axes[0] % 2 == 0:
            return user
    return None


def _no_rows_sum(graph, root):
    return None


def reduction_kind(member, reduction):
    """``None`` (the member's value), ``"sum"`` or ``"mean"`` (over every element), or
    ``"rows"`` (the sum over the first axis of a 2-D member) for one kernel output."""
    if reduction is None:
        return None
    if reduction.shape is not None and len(reduction.shape) == 1 and len(member.shape) == 2:
        return "rows"
    return reduction.op.name


def _one_pass_pays(node):
    """Whether a lone elementwise ``node`` is worth a kernel of its own: its numpy kernel
    is not one ufunc but several passes over memory (gelu's exact form: ten, erf's in
    float64), its scalar form lets a compiled lowering write it as one, the switch
    allows one, and the passes saved outweigh a compiled call (the C lowering's figures,
    the cheapest to call: under them no lowering takes the region and the kernel would
    only wrap the op's own, e.g. a (32, 64) sigmoid_grad's three passes; a lowering
    the user forced takes it whatever its size). Any other lone op runs its own kernel."""
    passes, mode = scalar_forms.numpy_passes(node), policy.mode()
    # (numpy's own kernel over row blocks would be no faster: only a compiled loop nest is.)
    if passes <= 1 and _crossed_broadcast(node) and policy.compiles_regions():
        passes = 2
    if mode == "numpy" or passes <= 1:
        return False
    if mode != "auto":
        return True
    if None in node.shape:
        return False
    size = math.prod(node.shape)
    return size * passes * cost.c_saved_seconds_per_element_op > cost.c_call_seconds


def _crossed_broadcast(node):
    """Whether two of ``node``'s inputs are broadcast along different axes of its result
    (``x[:, :, None] * d[:, None, :]``: an outer product per leading index). numpy's loop
    then runs its innermost axis with one operand repeated, per row of the other: the
    result is written at a third of the memory's speed (a (10000, 1) by (1, 2000) float32
    product, 9.3 ms against 2.4 ms to fill the result; 2.5 ms as one C loop nest), as
    slow as a second pass over it.

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x, d: x[:, :, None] * d[:, None, :],
        ...                 passes=["cleanup"]).graph_for(en.ones((2, 3)), en.ones((2, 4)))
        >>> _crossed_broadcast(g.topo_order()[-1])
        True
    """
    shape = node.shape
    if shape is None or None in shape or len(node.inputs) < 2:
        return False
    ndim = len(shape)
    repeated = []     # per input: the axes of the result it is repeated along
    for i in node.inputs:
        if i.shape is None or None in i.shape:
            return False
        padded = (1,) * (ndim - len(i.shape)) + tuple(i.shape)
        repeated.append({k for k in range(ndim) if padded[k] == 1 and shape[k] > 1})
    return any(a - b and b - a for a in repeated for b in repeated)


def fusion(graph):
    """Replace each elementwise region, or group of regions feeding one another, by one
    fused node. Returns True if anything was fused."""
    fused_ops = 0
    kernels = multi = 0
    threads = threads_for(graph)
    scratch_pools: dict[tuple, list] = {}
    regions = find_regions(graph)
    # Under en.config.numerics = "bitwise" no sum is fused: its blocks would add in
    # another order than eager's kernel.
    exact = numerics.bitwise()
    reductions = {rid: None if exact else _full_reduction(graph, ms[-1])
                  for rid, ms in regions.items()}
    rows_sum = _no_rows_sum if exact else _rows_sum
    index = {n: i for i, n in enumerate(graph.topo_order())}
    # A lowering that writes one result a kernel (numba's ufuncs) takes each region apart.
    groups = group_regions(graph, regions, reductions) if policy.groups_regions() else \
        [[rid] for rid in regions]
    for rids in groups:
        members = sorted((m for r in rids for m in regions[r]), key=index.__getitem__)
        member_set = set(members)
        outputs = group_outputs(graph, rids, regions, reductions, member_set, index,
                                rows_sum)
        if len(members) == 1 and all(r is None for _, r in outputs) and \
                not _one_pass_pays(members[0]):
            continue
        inputs = []
        for m in members:
            for i in m.inputs:
                if i not in member_set and i not in inputs:
                    inputs.append(i)
        reduced = [r for _, r in outputs if r is not None]
        tail = reduced[-1:] + members[-3:][::-1]
        name = f"fused_{next(_ids)}_" + "_".join(m.op.name for m in tail[:3])
        kernel = FusedKernel(name, members, inputs, outputs, threads, scratch_pools)
        results = kernel.results
        op = _make_op(kernel, len(inputs), outputs)
        if len(outputs) > 1:
            declare(op, may_overwrite=_may_overwrite(members, inputs, outputs))
        node = graph.add(op, inputs, {}, kernel.avals if len(outputs) > 1 else kernel.avals[0],
                         name="fused", source=results[-1].source)
        node.meta["kernel_source"] = kernel.source
        node.meta["fused_ops"] = kernel.ops
        node.meta["backend"] = kernel.backend
        if kernel.hot is not None:   # compiled in the background once hot
            node.meta["hot_swap"] = kernel.hot
        if len(outputs) == 1:
            graph.replace_all_uses_with(results[0], node)
        else:
            multi += 1
            for j, result in enumerate(results):
                value = graph.add(unpack_op, [node], {"index": j}, kernel.avals[j],
                                  name="fused_result", source=result.source)
                graph.replace_all_uses_with(result, value)
        for m in reduced + list(reversed(members)):
            graph.drop_control_users(m)
            graph.erase(m)
        fused_ops += len(members) + len(reduced)
        kernels += 1
    if kernels:
        graph.notes.append(f"fused {fused_ops} ops into {kernels} kernel{'s' if kernels != 1 else ''}"
                           + (f" ({multi} with several results)" if multi else ""))
    return bool(kernels)
