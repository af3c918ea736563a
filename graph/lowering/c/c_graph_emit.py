"""The statement writer of whole graphs in C: buffers, loop nests, and the values they hold.

An :class:`Emitter` writes the body of one C function over static shapes. Every value
is C-contiguous memory behind a pointer (:class:`CVal`): an input, an output array, a
slot of the workspace the caller passes (every slot is laid out when the source is
written, so the function allocates nothing), or a view of one of these (a reshape, a
leading index, rows of a split). A 0-d constant is a C literal; a transposed matrix
stays a view of its input until something other than a matrix product reads it (BLAS
reads it transposed). The writers of each op kind are in ``c_graph_ops.py``; a scan's
time loop in ``c_scan.py``.
"""
import math

import numpy as np

from ...ir.graph_ops import constant_op, placeholder_op, unpack_op
from ..plugin import Unsupported
from .c_source import _offset, ctype, literal

# Slots start on cache-line boundaries (aligned loads, no false sharing between values).
ALIGN = 64
# The largest array constant written into the source (larger ones are graph inputs; in a
# scan's body they make the scan stay with the numpy lowering).
MAX_CONSTANT_ELEMENTS = 4096


class CVal:
    """A value in the generated C: ``ptr`` (a C pointer expression to its first element,
    C-contiguous), or ``literal`` (a 0-d constant), or ``trans`` (a 2-d value that is the
    transpose of the C-contiguous ``trans``), or ``expr`` (an elementwise value computed
    inside its one user's loop: ``expr(flat index, loop indices)`` gives its C text;
    ``flat``: whether it reads no broadcast input, so a flat loop may compute it).
    ``root`` names the memory it lives in (a workspace slot's number, or a string for
    inputs and outputs)."""

    __slots__ = ("ptr", "shape", "dtype", "root", "literal", "trans", "expr", "flat")

    def __init__(self, ptr, shape, dtype, root=None, literal=None, trans=None, expr=None,
                 flat=False):
        self.ptr, self.shape, self.dtype = ptr, tuple(shape), np.dtype(dtype)
        self.root, self.literal, self.trans = root, literal, trans
        self.expr, self.flat = expr, flat

    @property
    def size(self):
        return math.prod(self.shape)


def check_node(node):
    """Raises :class:`Unsupported` unless ``node`` has static dims and a C dtype."""
    if node.shape is None or any(d is None for d in node.shape):
        raise Unsupported(f"{node.name}: unknown dims")
    ctype(node.dtype)


def linear(indices, shape):
    """The C text of the row-major linear index of ``indices`` (C texts) in ``shape``."""
    terms, stride = [], 1
    for k in range(len(shape) - 1, -1, -1):
        if shape[k] != 1:
            index = indices[k] if indices[k].isidentifier() or indices[k].isdigit() \
                else f"({indices[k]})"
            terms.append(index if stride == 1 else f"{index} * {stride}")
        stride *= shape[k]
    return " + ".join(reversed(terms)) or "0"


class Emitter:
    """Writes one C function's statements; ``values`` maps nodes to :class:`CVal` (a list
    of them, None for results nobody reads, for a node of several results)."""

    def __init__(self, patterns):
        self.patterns = patterns      # numba_form rule -> writer(emitter, node)
        self.lines = []
        self.decls = []               # slot pointers, declared at the function's top
        self.statics = []             # array constants, before the function
        self.values = {}
        self.users = {}
        self.out_index = {}           # part output -> index of its output pointer
        self.ws_bytes = 0
        self.slots = 0
        self.depth = 1
        self.loop_depth = 0           # > 0 inside a time loop: no output written directly
        self.names = 0
        self.uses_blas = False
        self.blas = None              # (sgemm, dgemm) addresses where SciPy has them
        self.largest_product = 0
        self.keep = set()             # nodes stored whatever their users (a scan body's results)
        self.homes = {}               # node -> the CVal its writer's dest() gives (a stack's row)
        self.ufunc_loops = []         # (ufunc name, dtype) of numpy loops called (c_bitwise.py)

    # -- text ------------------------------------------------------------------------
    def fresh(self, prefix="i"):
        self.names += 1
        return f"{prefix}{self.names}"

    def line(self, text):
        self.lines.append("    " * self.depth + text)

    def open(self, text):
        self.line(text + " {")
        self.depth += 1

    def close(self):
        self.depth -= 1
        self.line("}")

    # -- memory ----------------------------------------------------------------------
    def slot(self, shape, dtype):
        """A new workspace slot of ``shape`` and ``dtype``: a :class:`CVal` that owns it."""
        t = ctype(dtype)
        self.slots += 1
        name = f"b{self.slots}"
        size = max(1, math.prod(shape))
        offset = self.ws_bytes
        self.ws_bytes += -(-size * np.dtype(dtype).itemsize // ALIGN) * ALIGN
        self.decls.append(f"{t} *restrict {name} = ({t} *)(ws + {offset});")
        return CVal(name, shape, dtype, root=self.slots)

    def dest(self, node):
        """Where ``node``'s value is written: the place ``homes`` gives it (a scan writes a
        stacked result straight into its stack's row), its output array (outside time
        loops), or a new slot."""
        home = self.homes.pop(node, None)
        if home is not None:
            return home
        j = self.out_index.get(node)
        if j is not None and not self.loop_depth and node not in self.values:
            return CVal(f"o{j}", node.shape, node.dtype, root=f"o{j}")
        return self.slot(node.shape, node.dtype)

    def owned_since(self, value, first_slot):
        """Whether ``value`` lives in a slot made after slot ``first_slot``."""
        return isinstance(value.root, int) and value.root > first_slot

    # -- reading ---------------------------------------------------------------------
    def get(self, node):
        v = self.values.get(node)
        if v is None or isinstance(v, list):
            raise Unsupported(f"{node.name}: a value the C lowering did not keep")
        return v

    def contig(self, v):
        """``v`` as C-contiguous memory: a transposed view, a literal or an inlined value is
        copied out."""
        if v.ptr is not None and v.expr is None:
            return v
        out = self.slot(v.shape, v.dtype)
        self.copy_into(out.ptr, v)
        return out

    def element(self, v, shape, loops):
        """``v``'s element at ``loops`` (C texts) of a loop nest over ``shape``, broadcast."""
        if v.literal is not None:
            return v.literal
        if v.trans is not None:   # (callers copy transposed views out before their loops)
            raise Unsupported("a transposed view read inside a loop nest")
        return f"{v.ptr}[{_offset(v.shape, shape, loops)}]"

    def loops(self, shape):
        """Opens a loop nest over ``shape``; returns its index names (close with
        :meth:`close_loops`)."""
        names = []
        for d in shape:
            i = self.fresh()
            self.open(f"for (int64_t {i} = 0; {i} < {d}; {i}++)")
            names.append(i)
        return names

    def close_loops(self, n):
        for _ in range(n):
            self.close()

    def copy_into(self, dst, v, op="="):
        """``dst[...] op v[...]`` over ``v``'s shape (``dst`` a C pointer text)."""
        shape = v.shape
        if v.trans is not None:
            src = v.trans
            r, c = shape
            i, j = self.loops(shape)
            self.line(f"{dst}[{i} * {c} + {j}] {op} {src.ptr}[{j} * {r} + {i}];")
            self.close_loops(2)
            return
        if v.expr is not None:    # a value computed in place of its reads (a strided view)
            loops = self.loops(shape)
            self.line(f"{dst}[{linear(loops, shape)}] {op} {v.expr(None, loops)};")
            self.close_loops(len(shape))
            return
        if v.literal is not None:
            n = max(1, v.size)
            i = self.fresh()
            self.open(f"for (int64_t {i} = 0; {i} < {n}; {i}++)")
            self.line(f"{dst}[{i}] {op} {v.literal};")
            self.close()
            return
        n = max(1, v.size)
        i = self.fresh()
        self.open(f"for (int64_t {i} = 0; {i} < {n}; {i}++)")
        self.line(f"{dst}[{i}] {op} {v.ptr}[{i}];")
        self.close()

    # -- nodes -----------------------------------------------------------------------
    def emit_nodes(self, order):
        for node in order:
            if node in self.values:
                continue
            self.emit_node(node)

    def emit_node(self, node):
        op = node.op
        if op is placeholder_op:
            raise Unsupported("a placeholder that is not an input")
        if op is unpack_op:
            results = self.values[node.inputs[0]]
            self.values[node] = results[node.params["index"]]
            return
        if op is constant_op:
            self.values[node] = self.constant(node)
            return
        if not op.multiple_results:
            check_node(node)
        for i in node.inputs:
            if i not in self.values:
                raise Unsupported(f"{node.name}: input {i.name} outside the region")
        if op.elementwise and op.rules.get("scalar_form") is not None:
            self.patterns["elementwise"](self, node)
            return
        pattern = op.rules.get("numba_form")
        if pattern is None or pattern not in self.patterns:
            raise Unsupported(f"op {op.name} has no C form")
        self.patterns[pattern](self, node)

    def constant(self, node):
        check_node(node)
        value = np.asarray(node.params["value"], dtype=node.dtype)
        if value.ndim == 0:
            return CVal(None, (), node.dtype, literal=literal(value.item(), node.dtype))
        if value.size > MAX_CONSTANT_ELEMENTS or value.size == 0:
            raise Unsupported(f"{node.name}: an array constant of {value.size} elements")
        name = self.fresh("k")
        items = ", ".join(literal(v, node.dtype) for v in value.ravel().tolist())
        self.statics.append(f"static const {ctype(node.dtype)} {name}[{value.size}] = "
                            f"{{{items}}};")
        return CVal(name, value.shape, node.dtype, root=name)
