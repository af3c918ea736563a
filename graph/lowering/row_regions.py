"""Row regions: elementwise ops and last-axis reductions of one row geometry, one C kernel.

A reduction over the last axis (``mean(x, axis=-1, keepdims=True)``, or in a gradient
``sum`` over the last axis followed by a ``reshape`` appending a 1) ends an elementwise
region for ``fusion``: a layer norm or a softmax runs as five to eight numpy or C calls,
each reading and writing the whole array. Here the ops of one row geometry -- a full
shape ``S = (*lead, n)`` and its row-scalar shape ``(*lead, 1)`` -- are grouped into one
region whatever they compute: elementwise ops with a C scalar form
(``graph/lowering/c/c_source.py``) of either shape and reductions over the last axis of
a full one. The region becomes one node whose C kernel loops over the rows and computes
each row in passes while it sits in L1: a pass runs the full members that a row's
reductions allow, accumulating the reductions it feeds (float32 sums in double, eight
lanes at a time; maxima and minima NaN-propagating as numpy's); row-scalar members are
scalars between the passes; a full member a later pass reads keeps a row buffer.

Regions grow in topological order: a candidate joins the region of its inputs' region
when the geometry matches and joining keeps the graph acyclic once each region is one
node (no path from the region to one of the candidate's other inputs); otherwise it
starts one. A region is kept when it holds a reduction, its rows are at most
``cost.row_region_max_row`` long and its work (elements times members) reaches
``cost.row_region_min_work``. Its results are its members used outside it or as graph
outputs, each in a fresh array.

Measured on the 2-core AMD EPYC VM (Zen 5), the transformer block's training step
(``bench/workloads/styles_engine.py``, float32): its five regions (two layer norms
forward over (32, 32, 64), one backward, the softmax forward and backward over
(32, 4, 32, 32)) take 46, 62, 66, 186 and 63 us as kernels against 85, 113, 130, 187
and 143 us for the kernels they replace (the softmax forward is bound by its ``exp32``,
which both run); the step, with and without the pass in one process, 30 calls at a
time in turns, under the load of another process (1.4): 5.19, 4.81 and 5.09 ms against
5.81, 5.41 and 5.54.

The pass does nothing where no C compiler is found, under ``en.config.numerics =
"bitwise"`` (a row's sums add in another order than numpy's) and where
``en.config.lowering`` is neither ``"auto"`` nor ``"c"``. A kernel whose library is
not on disk is built on the background compile thread (``hot_swap.submit``); until it
is loaded the node runs its members' own numpy kernels in order.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x: x - en.max(x, axis=-1, keepdims=True))
    >>> x = en.ones((64, 128), dtype="float32")
    >>> text = f.source_for(x)
    >>> ("row_region" in text) == (compiles() and en.config.lowering == "auto")
    True
"""
import ctypes
import itertools
import math

import numpy as np

from engine import ops
from engine.config import config
from engine.cost_model import cost
from engine.numerics import bitwise
from engine.op import Op

from ..ir.graph_ops import unpack_op
from . import hot_swap
from .c import c_address, c_compiler, c_pool, c_source
from .parallel import row_bounds
from .plugin import Unsupported

NAME = "rowk"
# The reductions a region takes, by the pattern their ops declare (``numba_form``).
_REDUCTIONS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")
_ADDS = ("reduce_sum", "reduce_mean")
_FLOATS = (np.dtype("float32"), np.dtype("float64"))
_VALUES = _FLOATS + (np.dtype("bool"),)
_ids = itertools.count()


def compiles():
    """Whether the pass may write kernels now: a C compiler, non-bitwise numerics and a
    lowering switch that allows C.

    Example:
        >>> isinstance(compiles(), bool)
        True
    """
    return config.lowering in ("auto", "c") and not bitwise() and c_compiler.available()


def _static(node):
    return node.shape is not None and None not in node.shape


def _elementwise(node):
    """Whether ``node`` is an elementwise candidate: pure, one result, a C scalar form."""
    op = node.op
    if not (op.elementwise and not op.multiple_results and not op.random
            and not node.side_effects and _static(node) and len(node.shape) >= 1
            and np.dtype(node.dtype) in _VALUES):
        return False
    if any(i.shape is None or None in i.shape or np.dtype(i.dtype) not in _VALUES
           for i in node.inputs):
        return False
    try:
        c_source.c_expression(node, [f"a{k}" for k in range(len(node.inputs))])
    except Unsupported:
        return False
    return True


def _last_axis_reduction(node):
    """``(kind, keepdims)`` for a sum, mean, maximum or minimum of a float over its last
    axis only, else None (the caller checks that a reduction without keepdims is read
    only by reshapes appending a 1)."""
    kind = node.op.rules.get("numba_form")
    if kind not in _REDUCTIONS or len(node.inputs) != 1 or \
            not set(node.params) <= {"axis", "keepdims"}:
        return None
    x = node.inputs[0]
    if not (_static(x) and _static(node) and len(x.shape) >= 1 and x.shape[-1] >= 1
            and np.dtype(x.dtype) in _FLOATS and node.dtype == x.dtype):
        return None
    axis = node.params.get("axis")
    nd = len(x.shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    if None in axes or len(axes) != 1 or axes[0] % nd != nd - 1:
        return None
    return kind, bool(node.params.get("keepdims"))


class _Region:
    def __init__(self, rid, shape):
        self.id, self.shape = rid, tuple(shape)
        self.lead = self.shape[:-1]
        self.members: list = []
        self.reductions = 0

    def kind_of(self, shape):
        """"full", "scalar" or None for a member's shape in this geometry."""
        shape = tuple(shape)
        if shape == self.shape:
            return "full"
        if shape == self.lead + (1,):
            return "scalar"
        return None


def _broadcasts_to(shape, target):
    shape = tuple(shape)
    if len(shape) > len(target):
        return False
    pad = (1,) * (len(target) - len(shape)) + shape
    return all(a in (1, b) for a, b in zip(pad, target))


def find_row_regions(graph):
    """The row regions of ``graph`` worth a kernel: a list of ``_Region`` (members in
    topological order)."""
    order = graph.topo_order()
    index = {n: k for k, n in enumerate(order)}
    region_of: dict = {}
    regions: list[_Region] = []

    def reaches(region, sources):
        # Whether a member of ``region`` is an ancestor of a node in ``sources`` once
        # each region is one node (a region stands for all its members' inputs).
        # (A node before the region's first member is no descendant of it, unless a
        # region it belongs to is: those are followed whatever their place.)
        start = min(index[m] for m in region.members)
        seen, expanded, todo = set(), set(), list(sources)
        while todo:
            x = todo.pop()
            r = region_of.get(x)
            if x in seen or r is None and index[x] < start:
                continue
            seen.add(x)
            if r is region:
                return True
            if r is None:
                todo.extend(x.inputs)
            elif r not in expanded:
                expanded.add(r)
                todo.extend(i for m in r.members for i in m.inputs)
        return False

    def fits(node, region):
        red = _last_axis_reduction(node)
        if red is not None:
            return tuple(node.inputs[0].shape) == region.shape
        if node.op is ops.reshape_op:
            return True
        return region.kind_of(node.shape) is not None and \
            all(_broadcasts_to(i.shape, region.shape) for i in node.inputs)

    for node in order:
        red = _last_axis_reduction(node)
        reshape_of = None
        if red is None and node.op is ops.reshape_op:
            src = node.inputs[0]
            r = region_of.get(src)
            src_red = _last_axis_reduction(src)
            if r is None or src_red is None or src_red[1] or \
                    tuple(node.shape) != tuple(src.shape) + (1,):
                continue
            reshape_of = r
        elif red is not None:
            if not red[1] and not all(
                    u.op is ops.reshape_op and tuple(u.shape) == tuple(node.shape) + (1,)
                    for u in graph.users(node)) or node in graph.outputs and not red[1]:
                continue
        elif not _elementwise(node):
            continue
        if reshape_of is not None:
            reshape_of.members.append(node)
            region_of[node] = reshape_of
            continue
        # The most recent region among the inputs' that fits and stays acyclic.
        joined = None
        for r in sorted({region_of[i] for i in node.inputs if i in region_of},
                        key=lambda r: -r.id):
            if not fits(node, r):
                continue
            outside = [i for i in node.inputs if region_of.get(i) is not r]
            if not reaches(r, outside):
                joined = r
                break
        if joined is None:
            shape = node.inputs[0].shape if red is not None else node.shape
            if len(shape) < 1 or shape[-1] < 1:
                continue
            joined = _Region(len(regions), shape)
            if not fits(node, joined):
                continue
            regions.append(joined)
        joined.members.append(node)
        joined.reductions += red is not None
        region_of[node] = joined
    kept = []
    for r in regions:
        work = math.prod(r.shape) * len(r.members)
        if r.reductions and r.shape[-1] <= cost.row_region_max_row and \
                work >= cost.row_region_min_work:
            kept.append(r)
    return kept


# ---- the C kernel --------------------------------------------------------------------------

def _plan(region):
    """``(stage, pass_of)``: a value's stage (a full member: the pass over the row that
    computes it; a row scalar: the pass before which it is known) and the pass that
    reads a member's inputs (a reduction: the pass of its input)."""
    members = set(region.members)
    stage: dict = {}
    pass_of: dict = {}
    for m in region.members:
        if m.op is ops.reshape_op:
            stage[m] = pass_of[m] = stage[m.inputs[0]]
        elif _last_axis_reduction(m) is not None:
            x = m.inputs[0]
            pass_of[m] = stage[x] if x in members else 0
            stage[m] = pass_of[m] + 1
        else:
            stage[m] = pass_of[m] = max([stage[i] for i in m.inputs if i in members],
                                        default=0)
    return stage, pass_of


def kernel_source(region, inputs, results):
    """The C source of ``region``'s kernel ``rowk(x..., out..., lo, hi)`` over rows lo:hi.

    Example:
        >>> import engine as en
        >>> f = en.function(lambda x: en.sum(x, axis=-1, keepdims=True), passes=["cleanup"])
        >>> g = f.graph_for(en.ones((4, 8), dtype="float32"))
        >>> r = _Region(0, (4, 8)); r.members = g.topo_order()[1:]
        >>> "int rowk" in kernel_source(r, g.topo_order()[:1], r.members)
        True
    """
    shape, lead, n = region.shape, region.lead, region.shape[-1]
    lanes = 8     # running sums and extremes a row keeps (one AVX vector; the fold below)
    members = region.members
    member_set = set(members)
    at = {m: k for k, m in enumerate(members)}     # a member's number in the C names
    stage, pass_of = _plan(region)
    is_red = {m: _last_axis_reduction(m) for m in members}
    # With rows of one value every member is a row scalar.
    full = {m for m in members if is_red[m] is None and m.op is not ops.reshape_op
            and region.kind_of(m.shape) == "full"} if n > 1 else set()
    # A full member read by a later pass, or searched for a NaN by a maximum or minimum.
    buffered = [m for m in members if m in full and
                any(m in u.inputs and (pass_of[u] > stage[m] or
                                       is_red[u] is not None and is_red[u][0] not in _ADDS)
                    for u in members)]
    if len(buffered) * n * 8 > cost.row_region_max_row * 8 * 4:
        raise Unsupported("too many row buffers")
    nd = len(shape)
    args = [f"const {c_source.ctype(i.dtype)} *restrict x{k}" for k, i in enumerate(inputs)] + \
        [f"{c_source.ctype(m.dtype)} *restrict out{k}" for k, m in enumerate(results)] + \
        ["int64_t lo", "int64_t hi"]
    lines = [c_source.C_MATH, f"int {NAME}({', '.join(args)}) {{"]
    for m in buffered:
        lines.append(f"    {c_source.ctype(m.dtype)} buf{at[m]}[{n}];")
    lines.append("    for (int64_t r = lo; r < hi; r++) {")
    pad = "        "
    # Each input: the offset of the row's first value (the row's index along each
    # leading axis, 0 along the row, broadcast as c_source's loop nests read it); read
    # at each j where it varies along the row, else once a row.
    names: dict = {}
    row_index = [f"((r / {math.prod(lead[ax + 1:])}) % {lead[ax]})" for ax in range(nd - 1)]
    for k, i in enumerate(inputs):
        base = c_source._offset(tuple(i.shape), shape, row_index + ["0"])
        lines.append(f"{pad}const int64_t b{k} = {base};")
        if len(i.shape) and i.shape[-1] != 1 and n > 1:
            names[i] = f"x{k}[b{k} + j]"
        else:
            lines.append(f"{pad}const {c_source.ctype(i.dtype)} s{k} = x{k}[b{k}];")
            names[i] = f"s{k}"
    out_of = {m: k for k, m in enumerate(results)}
    passes = max([pass_of[m] for m in members if m in full or is_red[m]], default=0)
    value: dict = dict(names)

    def scalar_member(m):
        k = at[m]
        t = c_source.ctype(m.dtype)
        if m.op is ops.reshape_op:
            lines.append(f"{pad}const {t} v{k} = v{at[m.inputs[0]]};")
        else:
            expr = c_source.c_expression(m, [value[i] for i in m.inputs])
            lines.append(f"{pad}const {t} v{k} = {expr};")
        value[m] = f"v{k}"
        if m in out_of:
            lines.append(f"{pad}out{out_of[m]}[r] = v{k};")

    done = set()
    for p in range(passes + 1):
        # Row scalars computable before this pass.
        for m in members:
            if m not in done and m not in full and not is_red[m] and stage[m] <= p:
                if all(i not in member_set or i in done for i in m.inputs):
                    scalar_member(m)
                    done.add(m)
        in_pass = [m for m in members if m not in done and (m in full or is_red[m])
                   and pass_of[m] == p]
        if not in_pass:
            continue
        reds = [m for m in in_pass if is_red[m]]
        for m in reds:
            k = at[m]
            kind = is_red[m][0]
            t = c_source.ctype(m.dtype)
            init = "0.0" if kind in _ADDS else "-INFINITY" if kind == "reduce_max" \
                else "INFINITY"
            acc_t = "double" if kind in _ADDS else t
            lines.append(f"{pad}{acc_t} acc{k}[{lanes}] = {{{', '.join([init] * lanes)}}};")
            if kind not in _ADDS:
                lines.append(f"{pad}{t} chk{k}[{lanes}] = {{{', '.join(['0.0'] * lanes)}}};")

        def body(ind, lane, in_pass=in_pass):
            out = []
            local = dict(value)
            for m in in_pass:
                k = at[m]
                t = c_source.ctype(m.dtype)
                if is_red[m]:
                    x = m.inputs[0]
                    v = local[x] if x in local else f"buf{at[x]}[j]"
                    kind = is_red[m][0]
                    if kind in _ADDS:
                        out.append(f"{ind}acc{k}[{lane}] += (double)({v});")
                    else:
                        cmp = ">" if kind == "reduce_max" else "<"
                        # (a running sum beside: NaN where the row holds a NaN, see below)
                        out.append(f"{ind}{{ const {t} e = {v}; acc{k}[{lane}] = "
                                   f"e {cmp} acc{k}[{lane}] ? e : acc{k}[{lane}]; "
                                   f"chk{k}[{lane}] += e; }}")
                    continue
                argv = []
                for i in m.inputs:
                    if i in full and i not in in_pass:
                        argv.append(f"buf{at[i]}[j]")
                    else:
                        argv.append(local[i])
                out.append(f"{ind}const {t} t{k} = {c_source.c_expression(m, argv)};")
                local[m] = f"t{k}"
                if m in buffered:
                    out.append(f"{ind}buf{k}[j] = t{k};")
                if m in out_of:
                    out.append(f"{ind}out{out_of[m]}[r * {n} + j] = t{k};")
            return out

        main = n - n % lanes
        if main:
            lines.append(f"{pad}for (int64_t j0 = 0; j0 < {main}; j0 += {lanes}) {{")
            lines.append(f"{pad}    for (int64_t l = 0; l < {lanes}; l++) {{")
            lines.append(f"{pad}        const int64_t j = j0 + l;")
            lines += body(pad + "        ", "l")
            lines.append(f"{pad}    }}")
            lines.append(f"{pad}}}")
        if n % lanes:
            lines.append(f"{pad}for (int64_t j = {main}; j < {n}; j++) {{")
            lines.append(f"{pad}    const int64_t l = j - {main};")
            lines += body(pad + "    ", "l")
            lines.append(f"{pad}}}")
        for m in in_pass:
            done.add(m)
        for m in reds:
            k = at[m]
            kind = is_red[m][0]
            t = c_source.ctype(m.dtype)
            a = f"acc{k}"
            if kind in _ADDS:
                total = f"((({a}[0] + {a}[1]) + ({a}[2] + {a}[3])) + " \
                        f"(({a}[4] + {a}[5]) + ({a}[6] + {a}[7])))"
                if kind == "reduce_mean":
                    total = f"({total} / {n}.0)"
                lines.append(f"{pad}const {t} v{k} = ({t}){total};")
            else:
                cmp = ">" if kind == "reduce_max" else "<"
                x = m.inputs[0]
                seen = value.get(x) or f"buf{at[x]}[j]"
                c = f"chk{k}"
                lines += [f"{pad}{t} v{k} = {a}[0];",
                          f"{pad}for (int l = 1; l < {lanes}; l++) "
                          f"v{k} = {a}[l] {cmp} v{k} ? {a}[l] : v{k};",
                          # The lanes skip NaNs; the row's sum is NaN where it holds one (or
                          # adds infinities of both signs): only then is the row searched.
                          f"{pad}const {t} c{k} = (({c}[0] + {c}[1]) + ({c}[2] + {c}[3])) + "
                          f"(({c}[4] + {c}[5]) + ({c}[6] + {c}[7]));",
                          f"{pad}if (c{k} != c{k})",
                          f"{pad}    for (int64_t j = 0; j < {n}; j++)",
                          f"{pad}        if ({seen} != {seen}) v{k} = NAN;"]
            value[m] = f"v{k}"
            if m in out_of:
                lines.append(f"{pad}out{out_of[m]}[r] = v{k};")
    # Row scalars after the last pass.
    for m in members:
        if m not in done and m not in full and not is_red[m]:
            scalar_member(m)
            done.add(m)
    if len(done) != len(members):
        raise Unsupported("a member could not be scheduled")
    lines += ["    }", "    return 0;", "}", ""]
    return "\n".join(lines)


class RowRegionKernel:
    """The callable behind a row-region node: the C kernel once loaded, the members'
    own numpy kernels in order until then."""

    def __init__(self, name, region, inputs, results):
        self.name = name
        self.n_inputs, self.n_results = len(inputs), len(results)
        self.rows = math.prod(region.lead)
        self.input_dtypes = [np.dtype(i.dtype) for i in inputs]
        self.avals = [(tuple(m.shape), m.dtype) for m in results]
        self.source = kernel_source(region, inputs, results) + \
            c_pool.parts_entry(NAME, len(inputs) + len(results))
        c_pool.ready()     # builds the pool's library (in the background)
        # Rows of a part on the C pool: about cost.kernel_pool_part_elements elements.
        self._part_rows = max(1, int(cost.kernel_pool_part_elements) // region.shape[-1])
        # The numpy fallback's steps, by position (the members' inputs are rewired when
        # the region's node replaces them): (kernel, input positions, params).
        slot = {node: k for k, node in enumerate(list(inputs) + list(region.members))}
        self._steps = [(m.op.impl, [slot[i] for i in m.inputs], dict(m.params))
                       for m in region.members]
        self._result_slots = [(slot[m], np.dtype(m.dtype)) for m in results]
        self.fn = None
        self.future = None
        if c_compiler.is_cached(self.source):
            self.fn = self._load()
        else:
            self.future = hot_swap.submit(self._build)

    def _load(self):
        lib = c_compiler.load(self.source)
        fn = getattr(lib, NAME)
        fn.restype = ctypes.c_int
        fn.parts_entry = ctypes.cast(getattr(lib, NAME + "_parts"), ctypes.c_void_p).value
        fn.argtypes = [ctypes.c_void_p] * (self.n_inputs + self.n_results) + \
            [ctypes.c_int64] * 2
        return fn

    def _build(self):
        self.fn = self._load()
        return self.fn

    def numpy_impl(self, *arrays):
        """The members' own kernels in order (while the C library builds)."""
        values = list(arrays)
        for kernel, positions, params in self._steps:
            values.append(kernel(*[values[k] for k in positions], **params))
        return tuple(np.asarray(values[k], dtype=dt) for k, dt in self._result_slots)

    def impl(self, *arrays):
        """Every result, in fresh arrays."""
        return self.out_impl(*arrays, *([None] * self.n_results))

    def out_impl(self, *args):
        """The results written into the arrays after the inputs (memory planning's
        buffers; None: a fresh array), returned."""
        arrays, given = args[:self.n_inputs], args[self.n_inputs:]
        fn = self.fn
        if fn is None:
            results = list(self.numpy_impl(*arrays))
            for j, out in enumerate(given):
                if out is not None:
                    out[...] = results[j]
                    results[j] = out
            return tuple(results)
        xs = [a if isinstance(a, np.ndarray) and a.dtype == dt and a.flags.c_contiguous
              else np.ascontiguousarray(a, dt) for a, dt in zip(arrays, self.input_dtypes)]
        # A given buffer the kernel cannot write (strided) is filled by a copy after.
        outs = [out if out is not None and out.flags.c_contiguous else np.empty(s, d)
                for out, (s, d) in zip(given, self.avals)]
        pointers = [c_address.data(x) for x in xs] + [c_address.data(o) for o in outs]
        bounds = row_bounds(self.rows, self._part_rows, c_pool.threads())
        # The rows split over the C pool's threads; on this thread where it is busy.
        if len(bounds) <= 2 or c_pool.run_parts(fn.parts_entry, [pointers] * (len(bounds) - 1),
                                                bounds) is None:
            fn(*pointers, 0, self.rows)
        for j, out in enumerate(given):
            if out is not None and out is not outs[j]:
                out[...] = outs[j]
                outs[j] = out
        return tuple(outs)


def row_regions(graph):
    """Replace each row region (see the module docstring) by one node with a C kernel.
    Returns True if any was.

    Example:
        >>> import engine as en
        >>> f = en.function(lambda x: en.exp(x - en.max(x, axis=-1, keepdims=True)))
        >>> f(en.zeros((2, 3))).numpy().tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    if not compiles():
        return False
    regions = find_row_regions(graph)
    outputs = set(graph.outputs)
    made = fused = 0
    for region in regions:
        member_set = set(region.members)
        inputs = []
        for m in region.members:
            for i in m.inputs:
                if i not in member_set and i not in inputs:
                    inputs.append(i)
        results = [m for m in region.members
                   if m in outputs or any(u not in member_set for u in graph.users(m))]
        if not results:
            continue
        name = f"row_region_{next(_ids)}"
        try:
            kernel = RowRegionKernel(name, region, inputs, results)
        except Unsupported:
            continue
        avals = list(kernel.avals)
        op = Op(name, kernel.impl, lambda *a, avals=avals: avals, None, multiple_results=True,
                n_inputs=len(inputs),
                out_impl=lambda *a, out, kernel=kernel: kernel.out_impl(*a, *out),
                doc="A row region: " + " -> ".join(m.op.name for m in region.members))
        node = graph.add(op, inputs, {}, avals, name="row_region", source=results[-1].source)
        node.meta["kernel_source"] = kernel.source
        node.meta["backend"] = "c"
        node.meta["fused_ops"] = tuple(m.op.name for m in region.members)
        for j, m in enumerate(results):
            value = graph.add(unpack_op, [node], {"index": j}, avals[j], name="row_result",
                              source=m.source)
            graph.replace_all_uses_with(m, value)
        for m in reversed(region.members):
            graph.drop_control_users(m)
            graph.erase(m)
        made += 1
        fused += len(region.members)
    if made:
        graph.notes.append(f"row regions: {fused} ops into {made} kernel{'s' if made != 1 else ''}")
    return bool(made)
