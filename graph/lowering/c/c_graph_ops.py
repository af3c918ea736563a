"""C writers of the ops a whole graph in C holds, by the pattern their ``numba_form`` names.

Elementwise ops are written through their ``scalar_form`` rules (``c_source.c_expression``,
the fused kernels' translation); reductions add in double; matrix products call the
BLAS ``gemm`` whose address the caller passes (``graph/lowering/scipy_blas.py``), a transposed operand read
transposed; shape ops are views where the memory allows (reshape, a leading index,
rows of a split) and copy loops elsewhere. Each writer raises :class:`Unsupported`
for what it cannot write, and the numpy lowering keeps the graph (or the part).
"""
import math

import numpy as np

from engine import scalar_forms

from ...ir.graph_ops import unpack_op
from ..plugin import Unsupported
from .c_graph_emit import CVal, linear
from .c_source import _offset, c_expression, ctype


# The longest C expression an elementwise value is inlined as into its user's loop (an
# unbounded chain would cost time quadratic in its length to write).
MAX_INLINED_CHARS = 2000
# The partial sums a reduction over contiguous rows keeps (_sum_rows).
LANES = 8


def _arg(em, v, shape, flat, loops):
    """The C text of input ``v``'s element: in a flat loop over ``shape`` (index ``flat``)
    or at ``loops`` of a loop nest."""
    if v.literal is not None:
        return v.literal
    if v.expr is not None:
        return v.expr(flat, loops)
    if flat is not None:
        return f"{v.ptr}[{flat}]" if v.shape == shape and shape else f"{v.ptr}[0]"
    return em.element(v, shape, loops)


def _reads_once(user, node):
    """Whether ``user``'s scalar form names ``node``'s place once (``square``'s
    ``{0} * {0}`` would compute an inlined input twice)."""
    form = scalar_forms.resolve(user.op, [(tuple(i.shape), i.dtype) for i in user.inputs],
                                user.dtype, user.params)
    return isinstance(form, str) and form.count("{%d}" % user.inputs.index(node)) == 1


def _inlinable(em, node):
    """An elementwise value read once, by an elementwise op of its shape: computed in
    that op's loop, never stored."""
    users = em.users.get(node, [])
    if node in em.out_index or node in em.keep or len(users) != 1:
        return False
    user = users[0]
    if _is_concat(user):    # written by the concat's loop into its place in the result
        return user.inputs.count(node) == 1
    return user.op.elementwise and not user.op.multiple_results and \
        user.op.rules.get("scalar_form") is not None and \
        tuple(user.shape) == tuple(node.shape) and user.inputs.count(node) == 1 and \
        _reads_once(user, node)


def _is_concat(node):
    return node.op.rules.get("numba_form") == "concat_rows"


def _read_in_place(em, node, shape):
    """Whether every reader of ``node`` (a value of ``shape``) is an elementwise op of
    that shape that ``_arg`` reads it for: such a value may be an ``expr`` (a strided
    read, never stored)."""
    users = em.users.get(node, [])
    return bool(users) and node not in em.out_index and node not in em.keep and all(
        u.op.elementwise and not u.op.multiple_results and
        u.op.rules.get("scalar_form") is not None and tuple(u.shape) == shape
        for u in users)


def elementwise(em, node):
    ins = [em.get(i) for i in node.inputs]
    ins = [em.contig(v) if v.trans is not None else v for v in ins]
    shape = tuple(node.shape)
    # A flat loop where no input is broadcast (nor any input of an inlined one).
    flat = all(v.literal is not None or (v.flat if v.expr is not None else
                                         v.shape in (shape, ())) for v in ins)

    def text(i, loops):
        return c_expression(node, [_arg(em, v, shape, i, loops) for v in ins])
    if _inlinable(em, node) and len(text("i", [f"i{k}" for k in range(len(shape))])) <= \
            MAX_INLINED_CHARS:
        em.values[node] = CVal(None, shape, node.dtype, expr=text, flat=flat)
        return
    out = em.dest(node)
    if flat:
        i = em.fresh()
        em.open(f"for (int64_t {i} = 0; {i} < {max(1, math.prod(shape))}; {i}++)")
        em.line(f"{out.ptr}[{i}] = {text(i, None)};")
        em.close()
    else:
        loops = em.loops(shape)
        em.line(f"{out.ptr}[{_offset(shape, shape, loops)}] = {text(None, loops)};")
        em.close_loops(len(shape))
    em.values[node] = out


def _operand(v, rows_first):
    """``(memory, rows, cols, transposed)`` of a matmul operand as a matrix; a vector is
    one row (``rows_first``: the left operand) or one column."""
    if v.trans is not None:
        r, c = v.shape
        return v.trans, r, c, True
    if len(v.shape) == 1:
        return (v, 1, v.shape[0], False) if rows_first else (v, v.shape[0], 1, False)
    return v, v.shape[0], v.shape[1], False


def matmul(em, node):
    x, y = (em.get(i) for i in node.inputs)
    if em.blas is None:
        raise Unsupported("matmul: no BLAS (SciPy is not importable)")
    if len(x.shape) not in (1, 2) or len(y.shape) not in (1, 2) or \
            x.dtype != y.dtype or x.dtype not in (np.float32, np.float64) or \
            np.dtype(node.dtype) != x.dtype:
        raise Unsupported("matmul: only 1-d and 2-d float products of one dtype")
    x = em.contig(x) if x.literal is not None else x
    y = em.contig(y) if y.literal is not None else y
    a, m, k, ta = _operand(x, True)
    b, k2, n, tb = _operand(y, False)
    if 0 in (m, k, n) or k != k2:
        raise Unsupported("matmul: empty operands")
    out = em.dest(node)
    gemm(em, a.ptr, ta, b.ptr, tb, out.ptr, m, k, n, x.dtype)
    em.values[node] = out


def gemm(em, a, ta, b, tb, c, m, k, n, dtype):
    """Writes ``c = op(a) @ op(b)``, row-major, ``(m, k) @ (k, n)``: ``a`` (a pointer
    text) holds the left operand, or its transpose where ``ta``; ``b`` likewise."""
    em.uses_blas = True
    em.largest_product = max(em.largest_product, m * k * n)
    # Row-major C = A @ B is column-major C^T = B^T @ A^T: B's memory read as B^T
    # (transposed again where B is held transposed), then A's.
    lda = m if ta else k
    ldb = k if tb else n
    call = "sgemm_" if np.dtype(dtype) == np.float32 else "dgemm_"
    em.open("")
    em.line(f"const int m_ = {n}, n_ = {m}, k_ = {k}, lda_ = {ldb}, ldb_ = {lda}, "
            f"ldc_ = {n};")
    em.line(f"const {ctype(dtype)} one_ = 1, zero_ = 0;")
    em.line(f"{call}(\"{'T' if tb else 'N'}\", \"{'T' if ta else 'N'}\", &m_, &n_, &k_, "
            f"&one_, {b}, &lda_, {a}, &ldb_, &zero_, {c}, &ldc_);")
    em.close()


def transpose(em, node):
    x = em.get(node.inputs[0])
    rank = len(x.shape)
    axes = node.params.get("axes")
    axes = tuple(reversed(range(rank))) if axes is None else tuple(a % rank for a in axes)
    if axes == tuple(range(rank)):
        em.values[node] = x
        return
    if rank == 2:
        if x.trans is not None:            # transposed twice: the original
            em.values[node] = x.trans
            return
        x = em.contig(x)
        em.values[node] = CVal(None, node.shape, node.dtype, root=x.root, trans=x)
        return
    x = em.contig(x)
    out = em.dest(node)
    shape = tuple(node.shape)
    loops = em.loops(shape)
    source = [None] * rank
    for k, a in enumerate(axes):
        source[a] = loops[k]
    em.line(f"{out.ptr}[{linear(loops, shape)}] = {x.ptr}[{linear(source, x.shape)}];")
    em.close_loops(rank)
    em.values[node] = out


def _axes(node, rank):
    axis = node.params["axis"]
    if axis is None:
        return tuple(range(rank))
    return tuple(sorted(a % rank for a in (axis if isinstance(axis, tuple) else (axis,))))


def reduction_input(em, node, what):
    """``(x, axes, kept, kept_shape)`` of a reduction ``node`` over ``axis``/``keepdims``
    that C writes: a contiguous float input whose dtype the result keeps, not empty.
    Raises :class:`Unsupported` naming ``what`` otherwise."""
    if set(node.params) != {"axis", "keepdims"}:
        raise Unsupported("reduction params")
    x = em.contig(em.get(node.inputs[0]))
    if x.dtype not in (np.float32, np.float64) or np.dtype(node.dtype) != x.dtype:
        raise Unsupported(f"{what}: float in, same float out only")
    if 0 in x.shape:
        raise Unsupported(f"{what} of an empty array")
    rank = len(x.shape)
    axes = _axes(node, rank) if rank else ()
    kept = [k for k in range(rank) if k not in axes]
    return x, axes, kept, tuple(x.shape[k] for k in kept)


def _sum_rows(em, x, acc, rows, count):
    """``acc[r] = sum(x[r * count:(r + 1) * count])`` in double, each row by ``LANES``
    partial sums added at the end (numpy's pairwise sum unrolls eight the same way). One
    running sum is a chain of dependent adds, latency-bound: 1.7 us for 2,048 floats
    on the EPYC against 0.2 us in lanes, which the compiler vectorizes."""
    r, j, lane = em.fresh(), em.fresh(), em.fresh()
    row, part = em.fresh("row"), em.fresh("part")
    em.open(f"for (int64_t {r} = 0; {r} < {rows}; {r}++)")
    em.line(f"const {ctype(x.dtype)} *{row} = {x.ptr} + {r} * {count};")
    em.line(f"double {part}[{LANES}] = {{0}};")
    em.line(f"int64_t {j} = 0;")
    em.line(f"for (; {j} + {LANES} <= {count}; {j} += {LANES}) "
            f"for (int {lane} = 0; {lane} < {LANES}; {lane}++) "
            f"{part}[{lane}] += {row}[{j} + {lane}];")
    em.line(f"for (; {j} < {count}; {j}++) {part}[0] += {row}[{j}];")
    terms = [f"{part}[{k}]" for k in range(LANES)]
    while len(terms) > 1:     # added pairwise: ((p0 + p1) + (p2 + p3)) + ...
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) // 2 * 2:]
    em.line(f"{acc.ptr}[{r}] = {terms[0]};")
    em.close()


def reduce(mean):
    def emit(em, node):
        x, axes, kept, kept_shape = reduction_input(em, node, "reduction")
        rank = len(x.shape)
        count = math.prod(x.shape[a] for a in axes) if axes else 1
        size = max(1, math.prod(kept_shape))
        # In double, whatever the dtype: no worse than numpy's pairwise float32 sums.
        acc = em.slot((size,), np.float64)
        i = em.fresh()
        if axes and axes == tuple(range(rank - len(axes), rank)) and count >= 2 * LANES:
            _sum_rows(em, x, acc, size, count)
        else:
            em.line(f"for (int64_t {i} = 0; {i} < {size}; {i}++) {acc.ptr}[{i}] = 0;")
            loops = em.loops(x.shape)
            target = linear([loops[k] for k in kept], kept_shape)
            em.line(f"{acc.ptr}[{target}] += {x.ptr}[{linear(loops, x.shape)}];")
            em.close_loops(rank)
        out = em.dest(node)
        value = f"{acc.ptr}[{i}] / {count}.0" if mean else f"{acc.ptr}[{i}]"
        em.line(f"for (int64_t {i} = 0; {i} < {size}; {i}++) "
                f"{out.ptr}[{i}] = ({ctype(node.dtype)})({value});")
        em.values[node] = out
    return emit


def getitem(em, node):
    """Integers and static slices: a view where the result is one block of the input
    (integers on the leading axes, then at most one step-1 slice), a copy elsewhere."""
    spec = node.params.get("spec")
    if set(node.params) != {"spec"} or len(node.inputs) != 1 or \
            any(s[0] not in ("int", "slice") for s in spec):
        raise Unsupported("getitem: integers and static slices only")
    x = em.contig(em.get(node.inputs[0]))
    if len(spec) > len(x.shape):
        raise Unsupported("getitem: too many indices")
    starts: list[int] = []
    steps: list[int | None] = []
    block = True
    for k, s in enumerate(spec):
        d = x.shape[k]
        if s[0] == "int":
            if not -d <= s[1] < d:
                raise Unsupported("getitem out of range")
            starts.append(s[1] % d)
            steps.append(None)
            if any(st is not None for st in steps[:-1]):
                block = False
        else:
            lo, _, step = slice(s[1], s[2], s[3]).indices(d)
            starts.append(lo)
            steps.append(step)
            if step != 1 or any(st is not None for st in steps[:-1]):
                block = False
    rest = len(x.shape) - len(spec)
    if block:
        offset = linear([str(v) for v in starts] + ["0"] * rest, x.shape)
        em.values[node] = CVal(f"({x.ptr} + {offset})", node.shape, node.dtype, root=x.root)
        return
    shape = tuple(node.shape)
    if len(spec) == len(x.shape) and steps[-1] == 1 and \
            all(st == 1 and lo == 0 and d == n for st, lo, d, n in
                zip(steps[:-1], starts[:-1], x.shape[:-1], shape[:-1])) and \
            _read_in_place(em, node, shape):
        # Columns read only by elementwise ops of their shape (a slice of a wider
        # product, scan_wide_products'): read in place through the rows, as split's.
        em.values[node] = _strided_part(x, starts[-1], shape, node.dtype)
        return
    out = em.dest(node)
    loops = em.loops(shape)
    source, j = [], 0
    for lo, stride in zip(starts, steps):
        if stride is None:
            source.append(str(lo))
        else:
            source.append(f"({lo} + {stride} * {loops[j]})")
            j += 1
    source += loops[j:]
    em.line(f"{out.ptr}[{linear(loops, shape)}] = {x.ptr}[{linear(source, x.shape)}];")
    em.close_loops(len(shape))
    em.values[node] = out


def reshape(em, node):
    x = em.contig(em.get(node.inputs[0]))
    if set(node.params) != {"shape"}:
        raise Unsupported("reshape params")
    em.values[node] = CVal(x.ptr, node.shape, node.dtype, root=x.root, literal=x.literal)


def broadcast(em, node):
    x = em.get(node.inputs[0])
    x = em.contig(x) if x.trans is not None else x
    shape = tuple(node.shape)
    if x.shape == shape:
        em.values[node] = x
        return
    out = em.dest(node)
    loops = em.loops(shape)
    em.line(f"{out.ptr}[{_offset(shape, shape, loops)}] = {em.element(x, shape, loops)};")
    em.close_loops(len(shape))
    em.values[node] = out


def concat(em, node):
    rank = len(node.shape)
    if set(node.params) != {"axis"} or rank == 0:
        raise Unsupported("concat of scalars")
    axis = node.params["axis"] % rank
    parts = [em.get(i) for i in node.inputs]
    parts = [p if p.expr is not None else em.contig(p) for p in parts]
    if any(p.dtype != np.dtype(node.dtype) for p in parts):
        raise Unsupported("concat of mixed dtypes")
    out = em.dest(node)
    start = 0
    for p in parts:
        if 0 in p.shape:
            continue
        loops = em.loops(p.shape)
        target = [f"{start} + {i}" if k == axis and start else i for k, i in enumerate(loops)]
        # An elementwise part read only here is computed in this loop (_inlinable).
        value = p.expr(None, loops) if p.expr is not None else \
            f"{p.ptr}[{linear(loops, p.shape)}]"
        em.line(f"{out.ptr}[{linear(target, node.shape)}] = {value};")
        em.close_loops(rank)
        start += p.shape[axis]
    em.values[node] = out


def _strided_part(x, start, shape, dtype):
    """The piece of ``x`` from ``start`` on the last axis, of ``shape``, read in place:
    an ``expr`` indexing ``x``'s rows (never flat: a flat index would be divided)."""
    def text(flat, loops):
        source = loops[:-1] + [f"{start} + {loops[-1]}" if start else loops[-1]]
        return f"{x.ptr}[{linear(source, x.shape)}]"
    return CVal(None, shape, dtype, root=x.root, expr=text, flat=False)


def split(em, node):
    """Pieces along the leading non-unit axis are views; pieces along the last axis read
    only by elementwise ops of their shape are read in place through the rows (the
    gates of an LSTM's ``split(z, 4, axis=1)``: no copy a step); others are copied."""
    x = em.contig(em.get(node.inputs[0]))
    rank = len(x.shape)
    if rank == 0:
        raise Unsupported("split of a scalar")
    axis = node.params["axis"] % rank
    pieces: dict[int, list] = {}
    for u in em.users.get(node, []):
        if u.op is unpack_op:
            pieces.setdefault(u.params["index"], []).append(u)
    parts, start = [], 0
    for k, (shape, dtype) in enumerate(node.avals):
        shape = tuple(shape)
        readers = pieces.get(k, [])
        if axis == 0 or all(d == 1 for d in x.shape[:axis]):
            # Consecutive memory: a view.
            offset = start * math.prod(x.shape[axis + 1:])
            parts.append(CVal(f"({x.ptr} + {offset})", shape, dtype, root=x.root))
        elif axis == rank - 1 and readers and \
                all(_read_in_place(em, u, shape) for u in readers):
            parts.append(_strided_part(x, start, shape, dtype))
        else:
            out = em.slot(shape, dtype)
            loops = em.loops(shape)
            source = [f"{start} + {i}" if k == axis else i for k, i in enumerate(loops)]
            em.line(f"{out.ptr}[{linear(loops, shape)}] = {x.ptr}[{linear(source, x.shape)}];")
            em.close_loops(rank)
            parts.append(out)
        start += shape[axis]
    em.values[node] = parts


def stack(em, node):
    if set(node.params) != {"axis"} or node.params["axis"] not in (0, -len(node.shape)):
        raise Unsupported("stack: axis 0 only")
    parts = [em.get(i) for i in node.inputs]
    if any(p.dtype != np.dtype(node.dtype) for p in parts):
        raise Unsupported("stack of mixed dtypes")
    out = em.dest(node)
    size = math.prod(node.shape[1:])
    for k, p in enumerate(parts):
        em.copy_into(f"({out.ptr} + {k * size})", p)
    em.values[node] = out
