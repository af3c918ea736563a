"""Whole graphs, or each ``scan`` with its time loop, as one C function.

The C lowering's graph writer (the twin of ``graph/lowering/numba/whole_graph.py``, on
the same op rules). ``emit`` writes ``int graph(p, ws, sgemm, dgemm)``: ``p`` holds the
part's input pointers then its output pointers, ``ws`` a workspace whose slots hold
every value in between (laid out when the source is written: the function allocates
nothing), and ``sgemm``/``dgemm`` the BLAS the products call (``graph/lowering/scipy_blas.py``). Elementwise
ops come from their ``scalar_form`` rules as in the fused kernels; the other ops from
the pattern their ``numba_form`` rule names (``PATTERNS``; ``c_graph_ops.py`` and
``c_scan.py``). Anything else raises :class:`Unsupported` and the numpy lowering runs
it. The system's C compiler builds the source and the checked disk cache keeps it
(``c_compiler``); :class:`CGraphFunction` calls it through ``ctypes``, first a quick
build where the full one is not on disk, swapped for the full build once that is made in
the background.

Example:
    >>> import engine as en
    >>> g = en.function(lambda x: en.tanh(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
    >>> from engine.graph.lowering.graph_part import GraphPart
    >>> part = GraphPart.whole(g)
    >>> source, _ = emit(part.members, part.inputs, part.outputs)
    >>> "int graph(char *const *p, char *ws, void *sgemm_p, void *dgemm_p)" in source
    True
"""
import ctypes
import threading
import warnings
from typing import Any

import numpy as np

from engine.numerics import bitwise

from . import c_batched, c_bitwise, c_compiler, c_graph_ops, c_scan
from .c_graph_emit import CVal, Emitter, check_node
from ..plugin import Unsupported
from .c_source import C_MATH, ctype
from .. import hot_swap, numpy_kernels, scipy_blas

NAME = "graph"

PATTERNS = {
    "elementwise": c_graph_ops.elementwise,
    "dot": c_batched.matmul,
    "view_transpose": c_graph_ops.transpose,
    "reduce_sum": c_graph_ops.reduce(mean=False),
    "reduce_mean": c_graph_ops.reduce(mean=True),
    "reduce_max": c_batched.extreme(largest=True),
    "reduce_min": c_batched.extreme(largest=False),
    "leading_index": c_graph_ops.getitem,
    "reshape_view": c_graph_ops.reshape,
    "broadcast_copy": c_graph_ops.broadcast,
    "concat_rows": c_graph_ops.concat,
    "split_parts": c_graph_ops.split,
    "stack_rows": c_graph_ops.stack,
    "time_loop": c_scan.scan_loop,
}
# Under en.config.numerics = "bitwise": the writers that give eager's bits (c_bitwise.py);
# no mean (numpy's pairwise sums).
BITWISE_PATTERNS = {**{k: v for k, v in PATTERNS.items() if k != "reduce_mean"},
                    "elementwise": c_bitwise.elementwise, "dot": c_bitwise.matmul,
                    "reduce_sum": c_bitwise.reduce_sum}


def emit(members, inputs, outputs, transposed=()):
    """``(source, emitter)``: the C source computing ``outputs`` from ``inputs`` through
    ``members`` (topological order); the emitter tells the workspace's size
    (``ws_bytes``), whether BLAS is called and the largest product. ``transposed``: the
    positions of 2-d inputs given as the transpose of C-ordered memory (read as
    transposed views, see :class:`CGraphFunction`). Raises :class:`Unsupported` naming
    what cannot be written."""
    exact = bitwise()
    em = Emitter(BITWISE_PATTERNS if exact else PATTERNS)
    em.blas = None if exact else scipy_blas.gemm_pointers()
    n_in = len(inputs)
    for k, node in enumerate(inputs):
        check_node(node)
        t = ctype(node.dtype)
        em.decls.append(f"const {t} *restrict a{k} = (const {t} *)p[{k}];")
        if k in transposed:
            memory = CVal(f"a{k}", tuple(reversed(node.shape)), node.dtype, root=f"a{k}")
            em.values[node] = CVal(None, node.shape, node.dtype, root=f"a{k}", trans=memory)
        else:
            em.values[node] = CVal(f"a{k}", node.shape, node.dtype, root=f"a{k}")
    for j, node in enumerate(outputs):
        check_node(node)
        t = ctype(node.dtype)
        em.decls.append(f"{t} *restrict o{j} = ({t} *)p[{n_in + j}];")
        em.out_index[node] = j
    for n in members:
        for i in n.inputs:
            em.users.setdefault(i, []).append(n)
    em.emit_nodes(members)
    for j, node in enumerate(outputs):
        v = em.get(node)
        if v.ptr != f"o{j}":
            em.copy_into(f"o{j}", v)
    head = ["gemm_s sgemm_ = (gemm_s)sgemm_p;", "gemm_d dgemm_ = (gemm_d)dgemm_p;",
            "(void)sgemm_; (void)dgemm_; (void)ws;"]
    typedefs = scipy_blas.GEMM_TYPEDEF
    if exact:   # numpy's cblas products and ufunc loops (c_bitwise.py)
        more, decls = c_bitwise.source_head(em.ufunc_loops, n_in + len(outputs))
        typedefs, head = typedefs + more, head + decls
    head = ["    " + h for h in head]
    source = (C_MATH + typedefs + "\n".join(em.statics) + "\n"
              f"int {NAME}(char *const *p, char *ws, void *sgemm_p, void *dgemm_p) {{\n" +
              "\n".join(head + ["    " + d for d in em.decls] + em.lines) +
              "\n    return 0;\n}\n")
    return source, em


class CGraphFunction:
    """The compiled node's callable: ``inputs``' arrays in, a tuple of fresh output
    arrays back. One workspace is kept and reused (a call that finds it in use, on
    another thread, allocates its own).

    A strided input is copied to C order, except under bitwise numerics a 2-d input given
    as a transposed view (the transpose of C-ordered memory): numpy's BLAS call for it
    passes a transposition flag, which gives other bits than the product of a copy, so
    the source is written again with that input read transposed (``variant``, made once
    per such layout from ``members``).

    Where the source's full build is not on disk (``c_compiler.quick_first``), the first
    call runs a quick build (``c_compiler.QUICK_LEVEL``: about half the compile); the
    second call hands the full build to the background compile thread (``hot_swap``), and
    the calls after it is made run it (a function called once, as a one-off evaluation,
    never pays a second build). ``upgrade`` is that build's future (None before)."""

    def __init__(self, source, inputs, outputs, ws_bytes, uses_blas, ufunc_loops=None,
                 members=None):
        """``ufunc_loops``: the numpy loops a bitwise source calls (``c_bitwise.py``), whose
        addresses follow the outputs' in the pointers passed; None for a default source.
        ``members``: the nodes written (bitwise: for the variants of transposed inputs)."""
        self.source = source
        # The numerics the source was written for: its full build, made later on another
        # thread, takes their flags whatever en.config.numerics is then.
        self.exact = bitwise()
        self.quick = c_compiler.quick_first(source, self.exact)
        self._bind(c_compiler.load(source, quick=self.quick, exact=self.exact))
        self.called = False
        self.upgrade: Any = None
        self.upgrade_lock = threading.Lock()
        self.in_dtypes = [np.dtype(i.dtype) for i in inputs]
        self.out_avals = [(tuple(o.shape), np.dtype(o.dtype)) for o in outputs]
        self.extra = c_bitwise.loop_pointers(ufunc_loops or ())
        self.n = len(inputs) + len(outputs) + len(self.extra)
        self.ws_bytes = ws_bytes + 64
        self.ws = np.empty(self.ws_bytes, np.uint8)
        self.lock = threading.Lock()
        blas = None
        if uses_blas:
            blas = numpy_kernels.cblas_gemm()[:2] if ufunc_loops is not None else \
                scipy_blas.gemm_pointers()
        self.blas = blas if blas is not None else (None, None)
        self.part: Any = (members, inputs, outputs) if ufunc_loops is not None and members \
            else None
        # positions of transposed inputs -> CGraphFunction, or None where not written
        self.variants: dict[tuple[int, ...], Any] = {}

    def _bind(self, lib):
        fn = getattr(lib, NAME)
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * 4
        self.fn = fn    # one assignment: a call on another thread runs the old or the new

    def _start_upgrade(self):
        """From the second call of a quick build on: its full build, once, on the
        background compile thread."""
        if not self.called:
            self.called = True
            return
        with self.upgrade_lock:
            if self.upgrade is None:
                self.upgrade = hot_swap.submit(self._upgrade)

    def _upgrade(self):
        """Builds (or loads) the full library and calls it from then on; where that fails
        the quick build stays, with a warning. Returns the library (None: failed)."""
        try:
            lib = c_compiler.load(self.source, exact=self.exact)
            self._bind(lib)
        except (c_compiler.CompileError, OSError) as err:
            warnings.warn(f"C lowering: a compiled graph's optimized build failed ({err}); "
                          "its quick build keeps running it", RuntimeWarning, stacklevel=1)
            return None
        self.quick = False
        return lib

    def __call__(self, *given):
        if self.quick and self.upgrade is None:
            self._start_upgrade()
        if self.part is not None:
            flipped = tuple(k for k, a in enumerate(given) if _transposed(a))
            if flipped:
                run = self.variant(flipped)
                if run is not None:
                    return run(*[a.T if k in flipped else a for k, a in enumerate(given)])
        arrays = [np.ascontiguousarray(a, dt) for a, dt in zip(given, self.in_dtypes)]
        outs = [np.empty(shape, dt) for shape, dt in self.out_avals]
        pointers = (ctypes.c_void_p * self.n)(*[a.ctypes.data for a in arrays],
                                             *[o.ctypes.data for o in outs], *self.extra)
        mine = self.lock.acquire(blocking=False)
        try:
            ws = self.ws if mine else np.empty(self.ws_bytes, np.uint8)
            base = ws.ctypes.data
            self.fn(pointers, base + (-base % 64), *self.blas)
        finally:
            if mine:
                self.lock.release()
        return tuple(outs)


    def variant(self, flipped):
        """The function reading the inputs at ``flipped`` transposed (None: the C writer
        cannot, and they are copied)."""
        if flipped not in self.variants:
            members, inputs, outputs = self.part
            try:
                source, em = emit(members, inputs, outputs, transposed=flipped)
                self.variants[flipped] = CGraphFunction(
                    source, inputs, outputs, em.ws_bytes, em.uses_blas,
                    tuple(em.ufunc_loops))
            except Unsupported:
                self.variants[flipped] = None
        return self.variants[flipped]


def _transposed(array):
    """A 2-d array that is the transpose of C-ordered memory (and not C-ordered itself)."""
    return isinstance(array, np.ndarray) and array.ndim == 2 and \
        not array.flags.c_contiguous and array.T.flags.c_contiguous


def build(source, part, em_meta, threaded_work):
    """The callable for ``part`` from ``source`` (see :class:`CGraphFunction`); one BLAS
    thread while it runs where a product is large enough for OpenBLAS to thread
    (``scipy_blas.one_thread``: its spinning workers slow the loops around it)."""
    run = CGraphFunction(source, part.inputs, part.outputs, em_meta["workspace_bytes"],
                         em_meta["uses_blas"], em_meta.get("ufunc_loops"), part.members)
    if em_meta["largest_product"] > threaded_work:
        return scipy_blas.one_thread(run)
    return run
