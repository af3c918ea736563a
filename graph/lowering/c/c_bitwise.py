"""The C graph writer's ops under ``en.config.numerics = "bitwise"``: eager's bits in C.

A whole graph or a scan's time loop is written in C (``c_graph.py``, ``c_scan.py``) with
these writers in place of the default ones for the ops whose default C form is not
numpy's (``graph/lowering/bitwise.py`` says which):

- elementwise ops of IEEE arithmetic keep their C form (the library is built with
  ``-ffp-contract=off``: one rounding per operation, as numpy's loops round);
- an elementwise op whose scalar form calls a numpy ufunc that C does not compute as
  numpy does (``np.exp``, ``np.tanh``...) has each such call's argument written into a
  workspace slot over the whole value, and numpy's own inner loop of the ufunc
  (``graph/lowering/numpy_kernels.py``) called once over it, as eager calls it over a
  contiguous array; the rest of the form is C. The form must compute what eager's kernel
  computes, step by step: the op database's bitwise tests hold every op to it
  (``tests/graph/lowering/c/test_c_bitwise.py``);
- a matrix product of two matrices calls the ``cblas_?gemm`` of numpy's own BLAS with
  the arguments ``np.dot`` passes (a transposed operand read transposed); the products
  ``np.dot`` gives to other BLAS routines (a dimension of 1: ``gemv``; ``a @ a.T``:
  ``syrk``) stay with numpy;
- ``sum`` over the leading axis of rows of two elements or more adds the rows in
  order from zero, in the dtype, as numpy's reduction does; any other sum (numpy's
  pairwise order, ``_blocked_sum``'s blocks) and ``mean`` stay with numpy.

Anything else raises :class:`Unsupported`, and the numpy lowering runs the part.
"""
import ast
import math

import numpy as np

from engine.ops.reduce import BLOCKED_FROM_ROWS
from engine.shapes import normalize_axes

from .. import numpy_kernels
from ..bitwise import EXACT_CALLS, why_form_inexact
from ..plugin import Unsupported
from . import c_graph_ops
from .c_graph_emit import CVal, linear
from .c_source import _offset, _ToC, ctype

_FLOATS = (np.dtype("float32"), np.dtype("float64"))
# cblas's enums (cblas.h): the order and the transposition flags np.dot passes.
_ROW_MAJOR, _NO_TRANS, _TRANS = "101", "111", "112"
# A getitem reversing the leading axis (``x[::-1]``).
_REVERSED = (("slice", None, None, -1),)


def _form_tree(node):
    form = node.op.rules.get("scalar_form")
    if callable(form):
        try:
            form = form([(tuple(i.shape), i.dtype) for i in node.inputs], node.dtype)
        except TypeError:     # a form that needs the node's params
            form = None
    if form is None:
        raise Unsupported(f"{node.name}: {node.op.name} has no scalar form")
    try:
        return ast.parse(form.format(*[f"_a{k}" for k in range(len(node.inputs))]),
                         mode="eval").body
    except (SyntaxError, IndexError, KeyError) as why:
        raise Unsupported(f"{node.name}: its scalar form does not parse: {why}") from None


def _numpy_call(call, dtype):
    """The ufunc of a call ``np.f(...)`` of a scalar form
    that numpy's own loop of ``f`` for ``dtype`` computes; raises Unsupported."""
    f = call.func
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and
            f.value.id == "np") or call.keywords:
        raise Unsupported(f"no numpy loop for {ast.dump(f)[:60]}")
    ufunc = getattr(np, f.attr, None)
    if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or ufunc.nin != len(call.args):
        raise Unsupported(f"np.{f.attr} is not a ufunc of {len(call.args)} inputs")
    if numpy_kernels.ufunc_loop(ufunc, dtype) is None:
        raise Unsupported(f"numpy's loop of np.{f.attr} for {dtype.name} is not found")
    return ufunc


class _Split(ast.NodeTransformer):
    """Replaces each call of a numpy ufunc that C does not compute as numpy does by a
    name ``_aK``: a slot its argument arrays were written into and numpy's loop called
    over (innermost calls first)."""

    def __init__(self, em, node, dtype, args):
        self.em, self.shape, self.dtype, self.args = em, tuple(node.shape), dtype, args
        self.node = node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):   # numpy's ** is np.power
            call = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                               attr="power", ctx=ast.Load()),
                            args=[node.left, node.right], keywords=[])
            return self.visit_Call(call, visited=True)
        if not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            raise Unsupported(f"{self.node.name}: {type(node.op).__name__} is not IEEE "
                              "arithmetic")
        return node

    def visit_Call(self, node, visited=False):
        if not visited:
            self.generic_visit(node)
        if _call_name(node.func) in EXACT_CALLS:
            return node
        ufunc = _numpy_call(node, self.dtype)
        for a in node.args:
            self.check_whole(a)
        ins = [self.materialize(a) for a in node.args]
        out = self.em.slot(self.shape, self.dtype)
        k = len(self.em.ufunc_loops)
        self.em.ufunc_loops.append((ufunc.__name__, self.dtype.name))
        n = max(1, math.prod(self.shape))
        step = self.dtype.itemsize
        ptrs = ", ".join(f"(char *){v.ptr}" for v in ins + [out])
        self.em.open("")
        self.em.line(f"char *args_[{len(ins) + 1}] = {{{ptrs}}};")
        self.em.line(f"const int64_t n_ = {n}, steps_[{len(ins) + 1}] = "
                     f"{{{', '.join([str(step)] * (len(ins) + 1))}}};")
        self.em.line(f"loop{k}(args_, &n_, steps_, data{k});")
        self.em.close()
        self.args.append(out)
        return ast.Name(id=f"_a{len(self.args) - 1}", ctx=ast.Load())

    def check_whole(self, tree):
        """Raises Unsupported unless ``tree`` reads only values of the node's whole shape
        that eager holds contiguous: numpy's loops may take another path (SVML's
        ``power``...) for a broadcast (stride 0) or strided operand, which eager would
        pass and the slot written here would not."""
        names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and
                 n.id.startswith("_a")]
        if not names:
            raise Unsupported(f"{self.node.name}: numpy's loop over a constant")
        for name in names:
            k = int(name[2:])
            v = self.args[k]
            if v.literal is not None or v.shape != self.shape:
                raise Unsupported(f"{self.node.name}: numpy's loop over a broadcast value")
            if k < len(self.node.inputs) and not _contiguous_in_eager(self.node.inputs[k]):
                raise Unsupported(f"{self.node.name}: numpy's loop over a strided view")

    def materialize(self, tree):
        """The value of ``tree`` (a sub-form) over the whole shape, in a slot (an input
        of the whole shape already in memory is read where it is)."""
        if isinstance(tree, ast.Name) and tree.id.startswith("_a"):
            v = self.args[int(tree.id[2:])]
            if v.ptr is not None and v.expr is None and v.shape == self.shape:
                return v
        out = self.em.slot(self.shape, self.dtype)
        _write(self.em, out, tree, self.args, self.shape, self.dtype)
        return out


def _contiguous_in_eager(node):
    """Whether eager mode holds ``node``'s value as contiguous memory (not a transposed,
    broadcast or strided view)."""
    form = node.op.rules.get("numba_form")
    if form in ("view_transpose", "broadcast_copy"):
        return False
    if form == "leading_index":   # integers first, then one step-1 slice, then whole axes
        spec = list(node.params.get("spec", ()))
        while spec and spec[0][0] == "int":
            spec.pop(0)
        if spec and spec[0][0] == "slice" and spec[0][3] in (None, 1):
            spec.pop(0)
        return all(tuple(s) == ("slice", None, None, None) for s in spec)
    return True


def _call_name(func):
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return func.id if isinstance(func, ast.Name) else ""


def _flat(args, shape):
    """Whether a flat loop over ``shape`` reads every one of ``args`` (none broadcast)."""
    return all(v.literal is not None or (v.flat if v.expr is not None else v.shape in (shape, ()))
               for v in args)


def _text(em, tree, args, shape, dtype, i, loops):
    """The C text of ``tree`` at flat index ``i`` or at ``loops``, in ``dtype``."""
    texts = [c_graph_ops._arg(em, v, shape, i, loops) for v in args]
    return f"({ctype(dtype)})({_ToC(dtype, texts).visit(tree)})"


def _write(em, out, tree, args, shape, dtype):
    """Writes ``tree`` over ``shape`` into ``out`` (a slot or output)."""
    if _flat(args, shape):
        i = em.fresh()
        em.open(f"for (int64_t {i} = 0; {i} < {max(1, math.prod(shape))}; {i}++)")
        em.line(f"{out.ptr}[{i}] = {_text(em, tree, args, shape, dtype, i, None)};")
        em.close()
        return
    loops = em.loops(shape)
    em.line(f"{out.ptr}[{_offset(shape, shape, loops)}] = "
            f"{_text(em, tree, args, shape, dtype, None, loops)};")
    em.close_loops(len(shape))


def elementwise(em, node):
    """An elementwise op: IEEE arithmetic as the default writer writes it; a form that
    calls numpy ufuncs with numpy's own loops for those calls (see the module docstring)."""
    if why_form_inexact(node) is None:
        c_graph_ops.elementwise(em, node)
        return
    dtype = np.dtype(node.dtype)
    if dtype not in _FLOATS or any(np.dtype(i.dtype) != dtype for i in node.inputs):
        raise Unsupported(f"{node.name}: numpy's loops are called for one float dtype only")
    shape = tuple(node.shape)
    args = [em.get(i) for i in node.inputs]
    args = [em.contig(v) if v.trans is not None else v for v in args]
    impl = node.op.impl
    if isinstance(impl, np.ufunc):
        # Eager calls this ufunc itself (float_power's form says np.power): its loop.
        tree = ast.Call(func=ast.Attribute(value=ast.Name(id="np", ctx=ast.Load()),
                                           attr=impl.__name__, ctx=ast.Load()),
                        args=[ast.Name(id=f"_a{k}", ctx=ast.Load())
                              for k in range(len(node.inputs))], keywords=[])
    else:
        tree = _form_tree(node)
    tree = _Split(em, node, dtype, args).visit(tree)
    if c_graph_ops._inlinable(em, node):
        em.values[node] = CVal(None, shape, dtype, flat=_flat(args, shape),
                               expr=lambda i, loops: _text(em, tree, args, shape, dtype, i,
                                                           loops))
        return
    out = em.dest(node)
    _write(em, out, tree, args, shape, dtype)
    em.values[node] = out


def matmul(em, node):
    """A product of two float matrices through numpy's ``cblas_?gemm``, as ``np.dot``
    calls it."""
    found = numpy_kernels.cblas_gemm()
    if found is None:
        raise Unsupported("matmul: numpy's BLAS is not found")
    x, y = (em.get(i) for i in node.inputs)
    dtype = np.dtype(node.dtype)
    if len(x.shape) != 2 or len(y.shape) != 2 or x.dtype != dtype or y.dtype != dtype or \
            dtype not in _FLOATS or x.literal is not None or y.literal is not None:
        raise Unsupported("matmul: products of two float matrices of one dtype only")
    (m, k), (k2, n) = x.shape, y.shape
    if 1 in (m, k, n) or 0 in (m, k, n) or k != k2:
        raise Unsupported("matmul: np.dot calls gemv or nothing for a dimension of 1 or 0")
    mem_x, mem_y = (v.trans if v.trans is not None else v for v in (x, y))
    if mem_x.ptr == mem_y.ptr:
        raise Unsupported("matmul: np.dot calls syrk for a product of a matrix and itself")
    x = em.contig(x) if x.expr is not None else x
    y = em.contig(y) if y.expr is not None else y
    out = em.dest(node)
    em.uses_blas = True
    em.largest_product = max(em.largest_product, m * k * n)
    ta, tb = x.trans is not None, y.trans is not None
    a = x.trans.ptr if ta else x.ptr
    b = y.trans.ptr if tb else y.ptr
    lda = m if ta else k
    ldb = k if tb else n
    call = "cblas_s_" if dtype == np.float32 else "cblas_d_"
    em.line(f"{call}({_ROW_MAJOR}, {_TRANS if ta else _NO_TRANS}, "
            f"{_TRANS if tb else _NO_TRANS}, {m}, {n}, {k}, 1.0, {a}, {lda}, {b}, {ldb}, "
            f"0.0, {out.ptr}, {n});")
    em.values[node] = out


def reduce_sum(em, node):
    """``sum`` over the leading axis of rows of at least two elements: the rows added in
    order from zero, in the dtype (numpy's reduction over an outer axis)."""
    if set(node.params) != {"axis", "keepdims"}:
        raise Unsupported("sum params")
    x = em.contig(em.get(node.inputs[0]))
    dtype = np.dtype(node.dtype)
    if x.dtype != dtype or dtype not in _FLOATS or len(x.shape) < 2:
        raise Unsupported("sum: float rows of one dtype only")
    axes = normalize_axes(node.params["axis"], len(x.shape), "sum")
    row = math.prod(x.shape[1:])
    # (from BLOCKED_FROM_ROWS rows eager's sum adds blocks of rows: _blocked_sum)
    if axes != (0,) or row < 2 or not 0 < x.shape[0] < BLOCKED_FROM_ROWS:
        raise Unsupported("sum: numpy adds other than row by row (pairwise, or in blocks)")
    out = em.dest(node)
    i, j = em.fresh(), em.fresh()
    t = ctype(dtype)
    em.line(f"for (int64_t {j} = 0; {j} < {row}; {j}++) {out.ptr}[{j}] = ({t})0;")
    em.open(f"for (int64_t {i} = 0; {i} < {x.shape[0]}; {i}++)")
    em.line(f"for (int64_t {j} = 0; {j} < {row}; {j}++) "
            f"{out.ptr}[{j}] += {x.ptr}[{linear([i, j], (x.shape[0], row))}];")
    em.close()
    em.values[node] = out


def step_sum(users, unpack, reverse, length):
    """``(sum node, reversing getitem or None)`` where the stacked per-step result
    ``unpack`` of a scan is read only by its sum over the steps, in the loop's order: a
    forward scan's stack summed, or a reversed scan's stack reversed (``[::-1]``, as the
    scan's gradient sums a weight's per-step gradients, ``control_flow._scan_vjp``) and
    summed. numpy adds such a sum row by row from zero, so the loop adds each step's
    value into an accumulator of the dtype as it goes and gives the same bits (rows of
    at least two elements, fewer steps than ``BLOCKED_FROM_ROWS``); else None.
    ``users(node)``: the nodes reading ``node``."""
    readers = users(unpack)
    if len(readers) != 1:
        return None
    flip, total = None, readers[0]
    if total.op.rules.get("numba_form") == "leading_index" and \
            tuple(tuple(s) for s in total.params.get("spec", ())) == _REVERSED:
        flip, readers = total, users(total)
        if len(readers) != 1:
            return None
        total = readers[0]
    dtype = np.dtype(unpack.dtype)
    shape = tuple(unpack.shape)
    if (flip is not None) != bool(reverse) or \
            total.op.rules.get("numba_form") != "reduce_sum" or \
            total.inputs != [flip if flip is not None else unpack] or \
            set(total.params) != {"axis", "keepdims"} or total.params["keepdims"] or \
            dtype not in _FLOATS or np.dtype(total.dtype) != dtype or len(shape) < 2 or \
            normalize_axes(total.params["axis"], len(shape), "sum") != (0,) or \
            math.prod(shape[1:]) < 2 or not 0 < length < BLOCKED_FROM_ROWS:
        return None
    return total, flip


def with_step_sums(graph, members):
    """A scan's ``members`` (the scan, its unpacks) with the sums over the steps that
    :func:`step_sum` finds, so that the loop adds them up (after the unpacks: the part
    stays in topological order)."""
    scan = members[0]
    more = []
    for u in members[1:]:
        found = step_sum(graph.users, u, scan.params["reverse"], scan.params["length"])
        if found is not None:
            more += [n for n in (found[1], found[0]) if n is not None]
    return members + more


def source_head(ufunc_loops, n_pointers):
    """The typedefs and declarations a bitwise source needs: numpy's cblas products
    (passed as the function's BLAS arguments) and the ufunc loops called (their
    addresses after the inputs' and outputs' in ``p``: loop then data, each)."""
    found = numpy_kernels.cblas_gemm()
    i = found[2] if found is not None else "int64_t"
    head = [numpy_kernels.LOOP_TYPEDEF,
            f"typedef void (*cblas_s)(int, int, int, {i}, {i}, {i}, float, const float *, {i}, "
            f"const float *, {i}, float, float *, {i});\n",
            f"typedef void (*cblas_d)(int, int, int, {i}, {i}, {i}, double, const double *, "
            f"{i}, const double *, {i}, double, double *, {i});\n"]
    decls = ["cblas_s cblas_s_ = (cblas_s)sgemm_p;", "cblas_d cblas_d_ = (cblas_d)dgemm_p;",
             "(void)cblas_s_; (void)cblas_d_;"]
    for k in range(len(ufunc_loops)):
        decls.append(f"ufunc_loop loop{k} = (ufunc_loop)p[{n_pointers + 2 * k}]; "
                     f"void *data{k} = p[{n_pointers + 2 * k + 1}];")
    return "".join(head), decls


def loop_pointers(ufunc_loops):
    """The addresses ``source_head``'s declarations read, in order."""
    pointers = []
    for name, dtype in ufunc_loops:
        found = numpy_kernels.ufunc_loop(getattr(np, name), np.dtype(dtype))
        if found is None:
            raise Unsupported(f"numpy's loop of np.{name} for {dtype} is gone")
        pointers += [found[0], found[1]]
    return pointers
