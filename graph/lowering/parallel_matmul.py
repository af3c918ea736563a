"""Row-split matrix products: with kernel threads, a large product runs on the engine's pool.

With kernel threads (``graph.lowering.parallel.kernel_threads()`` above 1: by default on two
cores or more in a graph with a product of 2^29 multiply-adds or more) when a
function is traced, each 2-D
product of static shape with at least ``en.config.cost.parallel_matmul_min_work``
multiply-adds becomes a
``matmul_rows`` node (its op is named ``matmul`` still): its rows are shared among the kernel threads
(``graph/lowering/parallel.py``), each part one BLAS call on one BLAS thread, with
numpy's OpenBLAS held at one thread meanwhile (``graph/lowering/blas_threads.py``). The
graph's other products then run on one BLAS thread too (``matmul_one_thread``).
The engine's pool does all of a graph's parallel work: its workers sleep on a
lock between kernels, where OpenBLAS's spin for about 0.1 s after each product
and take the cores from the fused elementwise kernels that follow (which is
why kernel threads did not pay beside OpenBLAS's own).

Where compiled kernels split their parts among numpy's OpenBLAS's own threads
(``c_pool.kernels_on_blas_threads()``, the default where that OpenBLAS allows it),
products and kernels already share one set of threads, and the pass does nothing:
products stay whole on OpenBLAS's threads. A product split on the Python pool there
shares a core with OpenBLAS's worker polling after the kernel before it (the bench's
autoencoder JVP at batch 10000: 140-160 ms split, 89 whole, against 82 for its five
products alone).

Each part is a BLAS product over the same inner dimension, so results agree with
the whole product to rounding; not always bit for bit, since OpenBLAS blocks a
product by its shape (fused kernels, by contrast, give the same bits on any
thread count). Where no OpenBLAS
can be controlled (``blas_threads.available()`` False) nothing changes, and
with one kernel thread (``en.config.fusion_threads = 1``) the pass does nothing.
"""
import numpy as np

from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise
from engine.op import Op

from . import window_threads
from .c import c_pool
from .blas_threads import available, one_blas_thread
from .parallel import kernel_threads, product_work, run_split, threads_for
from ..ir.queries import replace_node, static_shape
from ..passes.body_copy import bodies, private_body, set_body

# Multiply-adds below which a product stays whole (and OpenBLAS keeps its own threads):
# about 1 ms of one core. The autoencoder's products at batch 100 (1.5e7) stay whole:
# there the best of 40 calls was 1.35 ms with OpenBLAS's threads, 2.43 ms split, since
# waking a worker costs tens of microseconds on a loaded machine; at batch 1000 (1.5e8)
# splitting won (best 21 against 108 ms, median 78 against 154, machine loaded):
# cost.parallel_matmul_min_work.


class RowSplitProduct:
    """``x @ y`` for 2-D operands, the result's rows split among the kernel threads.

    Example:
        >>> import numpy as np
        >>> k = RowSplitProduct(np.float64)
        >>> a, b = np.ones((4, 3)), np.ones((3, 2))
        >>> k.impl(a, b).tolist()
        [[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]]
    """

    def __init__(self, dtype, threads=None):
        self.dtype = np.dtype(dtype)
        self.threads = threads   # what "auto" kernel threads chose for the graph

    def out_impl(self, x, y, out):
        m = out.shape[0]
        threads = min(kernel_threads(self.threads), m)
        if threads < 2:
            return np.matmul(x, y, out=out)
        bounds = [m * t // threads for t in range(threads + 1)]
        with one_blas_thread():
            run_split(lambda lo, hi: np.matmul(x[lo:hi], y, out=out[lo:hi]), bounds)
        return out

    def impl(self, x, y):
        return self.out_impl(x, y, np.empty((x.shape[0], y.shape[1]), self.dtype))


def _row_split_op(node, threads):
    kernel = RowSplitProduct(node.dtype, threads)
    aval = (tuple(node.shape), node.dtype)
    # Named "matmul": to every reader of the optimized graph it is still that product
    # (the node's name, matmul_rows, says how it runs).
    return Op("matmul", kernel.impl, lambda *a: aval, None, n_inputs=2,
              out_impl=lambda x, y, out: kernel.out_impl(x, y, out),
              doc="A matrix product whose rows are split among the kernel threads.")


def _splits(node, threads):
    if node.op is not ops.matmul_op or len(node.shape) != 2 or not static_shape(node.shape):
        return False
    x, y = node.inputs
    if len(x.shape) != 2 or len(y.shape) != 2 or not static_shape(x.shape) \
            or node.dtype.kind not in "fc":
        return False
    return node.shape[0] >= 2 * threads and product_work(node) >= cost.parallel_matmul_min_work


def parallel_matmul(graph):
    """Replace each large 2-D matrix product by its row-split form (kernel threads on).
    Not under ``en.config.numerics = "bitwise"``: BLAS may block a product of fewer rows
    differently from eager's whole one."""
    if bitwise() or c_pool.kernels_on_blas_threads():
        return False
    backend = getattr(graph, "backend", None)
    choice = threads_for(graph)
    threads = kernel_threads(choice)
    # The row-split kernel writes numpy products into views of one numpy array.
    if (backend is not None and not (backend.out_kernels and backend.numpy_arrays)) or \
            not available():
        return False
    # Convolutions that split their images over the threads (window_threads) keep the
    # graph's products on one BLAS thread too, for the same reason as split products.
    windows = window_threads.splits_in(graph)
    if threads < 2 and not windows:
        return False
    count = 0
    whole = []
    for node in graph.topo_order():
        if threads >= 2 and node in graph and _splits(node, threads):
            new = graph.add(_row_split_op(node, choice), list(node.inputs), {},
                            (node.shape, node.dtype), name="matmul_rows", source=node.source)
            replace_node(graph, node, new)
            count += 1
        elif node.op is ops.matmul_op:
            whole.append(node)
    if count or windows:
        # The graph's other products run on one BLAS thread too: one that woke
        # OpenBLAS's workers would leave them spinning on the second core through the
        # split products and kernels that follow (the traced L-BFGS iteration's
        # history products took its next two split products from 26 to 50 ms).
        for node in whole:
            new = graph.add(_one_thread_op(node), list(node.inputs), {},
                            (node.shape, node.dtype), name="matmul_one_thread",
                            source=node.source)
            replace_node(graph, node, new)
        # ... and so do those inside its loop and branch bodies (the traced L-BFGS
        # iteration's history products sit in cond branches).
        whole_in_bodies = _hold_in_bodies(graph)
        if count:
            graph.notes.append(f"split the rows of {count} matrix product"
                               f"{'s' if count != 1 else ''} among {threads} kernel threads")
        if windows and whole:
            graph.notes.append(f"{len(whole)} matrix product{'s' if len(whole) != 1 else ''} "
                               "on one BLAS thread beside window kernels split over threads")
        if whole_in_bodies:
            graph.notes.append(f"{whole_in_bodies} matrix product"
                               f"{'s' if whole_in_bodies != 1 else ''} in loop or branch "
                               "bodies on one BLAS thread")
        return bool(count) or bool(whole) or bool(whole_in_bodies)
    return False


def _holds_a_product(graph):
    """Whether ``graph`` or a body nested in it has a matrix product."""
    return any(node.op is ops.matmul_op or
               any(_holds_a_product(body.graph) for _, body in bodies(node))
               for node in graph.nodes)


def _hold_in_bodies(graph):
    """Put every matrix product in the bodies of ``graph``'s control-flow nodes (nested
    ones too) on one BLAS thread; each changed body is the node's own copy. Returns how
    many products."""
    held = 0
    for node in graph.topo_order():
        for key, body in bodies(node):
            if not _holds_a_product(body.graph):
                continue
            work = private_body(node, body)
            for inner in work.graph.topo_order():
                if inner.op is ops.matmul_op:
                    new = work.graph.add(_one_thread_op(inner), list(inner.inputs), {},
                                         (inner.shape, inner.dtype), name="matmul_one_thread",
                                         source=inner.source)
                    replace_node(work.graph, inner, new)
                    held += 1
            held += _hold_in_bodies(work.graph)
            set_body(node, key, work)
    return held


def _one_thread_op(node):
    """``node``'s product, run with numpy's OpenBLAS held at one thread."""
    impl, out_impl = node.op.impl, node.op.out_impl
    aval = (tuple(node.shape), node.dtype)

    def run(x, y):
        with one_blas_thread():
            return impl(x, y)

    def run_out(x, y, out):
        with one_blas_thread():
            return out_impl(x, y, out=out)
    return Op("matmul", run, lambda *a: aval, None, n_inputs=2,
              out_impl=run_out if out_impl is not None else None,
              doc="A matrix product on one BLAS thread (in a graph whose large products "
                  "are split among the kernel threads).")
