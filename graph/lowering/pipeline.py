"""The optimization passes and the pipeline that runs them.

Each pass is a plain function ``(graph) -> changed`` in its own module. The
default pipeline, in order:

1. ``simplify``, ``layout``, ``constant_folding``, ``cse``, ``batch_products``, ``dce`` --
   repeated until none changes the graph (each can expose work for the others);
   with them ``scan_dead_results`` -- a scan's per-step results, carries and inputs nothing
   reads leave the loop -- ``while_dead_vars`` -- the same for a while_loop's variables --
   and ``body_cleanup`` -- these passes inside the bodies of
   scan, while_loop and cond;
   ``sliced_products`` -- a matrix product whose readers take only part of its rows or
   columns is the product of the factor's part (in loop bodies too: a VJP's
   ``d_gates @ W.T`` of which only ``h``'s columns are read);
   ``scan_residuals`` -- a later scan (a VJP's backward loop) reads the values it would
   recompute from an earlier scan's steps (the forward's gate products) from stacks the
   earlier scan keeps;
   ``scan_products`` (before ``scan_hoist``, which would stack a product whose factors
   read no carry) -- a scan's sum over its steps of per-step products (a weight's
   gradient ``h_t.T @ d_t``, a per-example accumulator) is one product after the loop;
   ``scan_wide_products`` -- a loop body's small products of one left operand by
   loop-invariant weights (a JVP's ``h @ W`` and ``h @ dW``) are one product by the
   weights side by side, concatenated once before the loop;
2. ``compile_numba`` -- a whole small graph, or each ``scan``, as one compiled function
   where a registered lowering writes it (numba, where it is installed) and it pays
   (the lowering policy, ``en.config.lowering``);
3. ``scan_hoist`` -- in the scans no compiled lowering took (the C lowering hoists the
   scans it writes one by one itself), work that reads no carry
   (``x_t @ U``) runs for all steps before the loop, one large product (a loop compiled
   whole runs its small products well, and hoisted stacks would stop that);
   ``scan_sums`` -- a scan's per-step results that only their sum over the steps reads
   are added up in the loop instead of stacked (the numpy lowering's scans);
   ``scan_unread`` -- the stacks of a scan's carries and random draws that nothing reads
   are left out;
4. ``row_regions`` -- elementwise ops and reductions over the last axis of one row
   geometry (a softmax, a layer norm, their gradients) into one C kernel each, looping
   over the rows (where a C compiler is found and numerics are not bitwise);
   ``fusion`` -- elementwise regions (and regions feeding one another) into single
   kernels, then ``dce``;
5. ``parallel_matmul`` -- with kernel threads (``en.config.fusion_threads`` above 1), large
   matrix products split by rows over the engine's pool; nothing otherwise;
   ``chunked_products`` -- in a graph without such products, mid-sized products cut into
   chunks the kernel threads take in turn, OpenBLAS at one thread;
6. ``memory_planning`` -- buffers for the compiled schedule (a plan kept for lowering;
   the graph does not change).

Not in the default list: ``shared_columns`` (a convolution and its filter gradient of the
same input read one im2col matrix; measured no faster, see its module).

``en.function(optimize=False)`` runs none; ``en.function(passes=[...])`` runs
the given ones (names or functions) in the given order; ``en.config.default_passes``
overrides the default list.
"""
import time

from engine.config import config

from ..passes.batch_products import batch_products
from ..passes.body_cleanup import CLEANUP_PASSES, body_cleanup
from ..passes.constant_folding import constant_folding
from .compile_numba import compile_numba
from ..passes.cse import cse
from ..passes.dce import dce
from .fusion import fusion
from .row_regions import row_regions
from ..passes.layout import layout
from .memory_planning import memory_planning
from .parallel_matmul import parallel_matmul
from .chunked_products import chunked_products
from .shared_columns import shared_columns
from ..passes.report import OptimizationReport, PassRecord
from ..passes.scan_dead_results import scan_dead_results
from ..passes.scan_hoist import scan_hoist
from ..passes.scan_products import scan_products
from ..passes.scan_residuals import scan_residuals
from ..passes.scan_sums import scan_sums
from ..passes.scan_wide_products import scan_wide_products
from ..passes.scan_unread import scan_unread
from ..passes.simplify import simplify
from ..passes.sliced_products import sliced_products
from ..passes.while_dead_vars import while_dead_vars
from engine.errors import InvalidArgumentError

PASSES = {f.__name__: f for f in (simplify, layout, constant_folding, cse, batch_products, dce,
                                  compile_numba, scan_sums, scan_unread, row_regions, fusion, parallel_matmul,
                                  chunked_products, memory_planning, scan_dead_results, while_dead_vars,
                                  body_cleanup, scan_hoist, scan_products, sliced_products,
                                  scan_residuals, scan_wide_products, shared_columns)}
CLEANUP = ("simplify", "layout", "constant_folding", "cse", "batch_products", "sliced_products",
           "dce",
           "scan_dead_results", "while_dead_vars", "body_cleanup", "scan_residuals",
           "scan_products", "scan_wide_products")
DEFAULT_PIPELINE = ("cleanup", "compile_numba", "scan_hoist", "scan_sums", "scan_unread",
                    "row_regions", "fusion", "dce", "parallel_matmul", "chunked_products",
                    "memory_planning")
MAX_ROUNDS = 10
# body_cleanup runs the cleanup passes (itself too: nested bodies) inside loop bodies.
CLEANUP_PASSES.extend(PASSES[name] for name in CLEANUP)

# Tests set this to run graph.lint() after every pass.
LINT_AFTER_EACH_PASS = [False]


def _resolve(p):
    if callable(p):
        return p.__name__, p
    if p not in PASSES:
        raise InvalidArgumentError(f"unknown pass {p!r}; known: {', '.join(PASSES)}")
    return p, PASSES[p]


def _run_one(graph, name, fn, report):
    before = graph.node_count()
    start = time.perf_counter()
    graph.notes = []
    changed = fn(graph)
    seconds = time.perf_counter() - start
    if LINT_AFTER_EACH_PASS[0]:
        graph.lint()
    report.add(PassRecord(name, before, graph.node_count(), "; ".join(graph.notes), seconds))
    return changed


def optimize(graph, passes=None):
    """Optimize a copy of ``graph``; return ``(optimized graph, OptimizationReport)``."""
    graph = graph.copy()
    report = OptimizationReport()
    if passes is None:
        passes = config.default_passes or DEFAULT_PIPELINE
    for p in passes:
        if p == "cleanup":
            for _ in range(MAX_ROUNDS):
                changed = False
                for name in CLEANUP:
                    changed |= bool(_run_one(graph, name, PASSES[name], report))
                if not changed:
                    break
        else:
            name, fn = _resolve(p)
            _run_one(graph, name, fn, report)
    return graph, report
