"""Mid-sized matrix products in chunks on the engine's pool, OpenBLAS held at one thread.

A graph of many mid-sized products (a transformer block's step: 4-17 million
multiply-adds each, elementwise kernels between them) gets no kernel threads
(``parallel.threads_for``), so each product used to run on OpenBLAS's own threads.
Those help on an idle machine and fail badly on a loaded one: OpenBLAS hands each
thread a fixed share, so when the second core is taken by another process the
product waits a whole scheduler slice for it (a 0.3 ms product took 8 ms at
load 4-5), and numpy's product of a 3-D operand by a matrix calls BLAS once per
leading index, each call a chance to wait. Its workers then spin for about 0.1 s,
taking the second core from the kernels that follow.

This pass gives each such product (``cost.chunked_product_min_work`` multiply-adds
or more, a matrix on the right) a kernel that cuts the result into chunks of rows
(of columns where there are fewer rows than columns), each one BLAS call on one
BLAS thread, handed out in turn by ``parallel.run_chunks``: the calling thread
takes the chunks a descheduled worker has not started, so a loaded machine costs
about the one-thread time; the engine's workers sleep between kernels rather than
spin. The overlap is small (the chunks of one product last about 0.1 ms and each
thread takes the GIL between them): on a quiet machine OpenBLAS's own threads were
faster (the transformer step 5.4 against 6.5-8 ms at load 1.7), on a loaded one they
were three to six times slower (14-37 against 8 at load 1.8-3.4), which is the case this
rule is for: the pass applies only while the machine is busy when the graph is traced
(``machine_busy``; idle, the graph is left as it was: the transformer step 5.3-5.7 ms on
an idle machine, 7.5 with the pass and its products run whole), and each call reads the
load again and runs the whole product on OpenBLAS's threads while a core is idle. A 3-D operand's leading axes are merged,
so the product is one BLAS call per chunk. The graph's other products that
OpenBLAS would thread run on one BLAS thread (waking OpenBLAS's workers for
one of them would leave them spinning through the chunked ones).

Left alone: graphs with a product of ``cost.parallel_matmul_min_work`` or more (the
kernel threads' rules in ``parallel_matmul`` and ``parallel.threads_for`` decide
those), one kernel thread (``en.config.fusion_threads = 1`` or a one-core machine),
no controllable OpenBLAS, ``en.config.numerics = "bitwise"`` (a chunk may be blocked
by BLAS differently from the whole product, so results agree to rounding only),
and back ends without ``out=`` kernels on numpy arrays.

Example:
    >>> import numpy as np
    >>> k = ChunkedProduct(np.float64, 2)
    >>> k.impl(np.ones((4, 3)), np.ones((3, 2))).tolist()
    [[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]]
"""
import numpy as np

from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise
from engine.op import Op

from .blas_threads import available, one_blas_thread
from .machine_load import machine_busy
from .parallel import kernel_threads, product_work, run_chunks
from ..ir.queries import replace_node, static_shape


class ChunkedProduct:
    """``x @ y`` (``x`` 2-D or more, ``y`` a matrix), the result cut into ``chunks``
    blocks of rows (or of columns, where it has fewer rows than columns) computed by
    the calling thread and the kernel threads, OpenBLAS at one thread."""

    def __init__(self, dtype, chunks):
        self.dtype = np.dtype(dtype)
        self.chunks = chunks

    def out_impl(self, x, y, out):
        if not machine_busy():       # OpenBLAS's own threads: the faster on an idle machine
            return np.matmul(x, y, out=out)
        threads = kernel_threads()
        if threads < 2 or not out.flags.c_contiguous:   # (its rows must be a view)
            with one_blas_thread():
                return np.matmul(x, y, out=out)
        flat_out = out.reshape(-1, out.shape[-1])
        flat_x = x.reshape(-1, x.shape[-1])
        rows, cols = flat_out.shape
        by_rows = rows >= cols
        extent = rows if by_rows else cols
        n = max(1, min(self.chunks, extent))
        bounds = [extent * k // n for k in range(n + 1)]

        def chunk(k):
            lo, hi = bounds[k], bounds[k + 1]
            if by_rows:
                np.matmul(flat_x[lo:hi], y, out=flat_out[lo:hi])
            else:
                np.matmul(flat_x, y[:, lo:hi], out=flat_out[:, lo:hi])
        with one_blas_thread():
            run_chunks(chunk, n, threads)
        return out

    def impl(self, x, y):
        out = np.empty(x.shape[:-1] + y.shape[-1:], self.dtype)
        return self.out_impl(x, y, out)


def chunk_count(node):
    """How many chunks ``node``'s product is cut into: one per
    ``cost.chunked_product_chunk_work`` multiply-adds, each at least
    ``cost.chunked_product_min_rows`` rows (or columns) wide, at least two.

    Example:
        >>> import engine as en
        >>> g = en.function(lambda a, b: a @ b).graph_for(en.ones((1024, 64)),
        ...                                                en.ones((64, 256)))
        >>> chunk_count(g.outputs[0])
        2
    """
    rows = int(np.prod(node.shape[:-1]))
    extent = max(rows, node.shape[-1])
    work = rows * node.shape[-1] * node.inputs[0].shape[-1]
    by_work = work // max(1, int(cost.chunked_product_chunk_work))
    by_extent = extent // max(1, int(cost.chunked_product_min_rows))
    return max(2, min(by_work, by_extent))


def _chunks(node):
    """Whether ``node`` is a product this pass cuts into chunks."""
    if node.op is not ops.matmul_op or node.dtype.kind not in "fc" or \
            not static_shape(node.shape):
        return False
    x, y = node.inputs
    if len(y.shape) != 2 or len(x.shape) < 2 or not static_shape(x.shape) or \
            not static_shape(y.shape):
        return False
    return product_work(node) >= cost.chunked_product_min_work


def _threaded_by_openblas(node):
    """Whether OpenBLAS would run one of ``node``'s matrix products on its threads."""
    if node.op is not ops.matmul_op or any(not static_shape(i.shape) or len(i.shape) < 2
                                           for i in node.inputs):
        return False
    x, y = node.inputs
    return x.shape[-2] * x.shape[-1] * y.shape[-1] >= cost.openblas_threaded_work


def _chunked_op(node):
    kernel = ChunkedProduct(node.dtype, chunk_count(node))
    aval = (tuple(node.shape), node.dtype)
    # Named "matmul": to every reader of the optimized graph it is still that product.
    return Op("matmul", kernel.impl, lambda *a: aval, None, n_inputs=2,
              out_impl=kernel.out_impl,
              doc="A matrix product cut into chunks run by the kernel threads.")


def _one_thread_op(node):
    impl, out_impl = node.op.impl, node.op.out_impl
    aval = (tuple(node.shape), node.dtype)

    def run(x, y):
        if not machine_busy():
            return impl(x, y)
        with one_blas_thread():
            return impl(x, y)

    def run_out(x, y, out):
        if not machine_busy():
            return out_impl(x, y, out=out)
        with one_blas_thread():
            return out_impl(x, y, out=out)
    return Op("matmul", run, lambda *a: aval, None, n_inputs=2,
              out_impl=run_out if out_impl is not None else None,
              doc="A matrix product on one BLAS thread (beside chunked products).")


def _applies(graph):
    backend = getattr(graph, "backend", None)
    if bitwise() or not available() or kernel_threads() < 2:
        return False
    if not machine_busy():   # idle now: the graph as it was, products on OpenBLAS's threads
        return False
    if backend is not None and not (backend.out_kernels and backend.numpy_arrays):
        return False
    # A product already rewritten by parallel_matmul (its op is no longer matmul_op),
    # or one large enough for the kernel threads' rules: this graph is theirs.
    return not any(n.op.name == "matmul" and n.op is not ops.matmul_op or
                   product_work(n) >= cost.parallel_matmul_min_work for n in graph.nodes)


def chunked_products(graph):
    """Cut each mid-sized product into chunks on the kernel threads (module doc); the
    graph's other products OpenBLAS would thread run on one BLAS thread."""
    if not _applies(graph):
        return False
    chunked, others = [], []
    for node in graph.topo_order():
        if _chunks(node):
            chunked.append(node)
        elif _threaded_by_openblas(node):
            others.append(node)
    if not chunked:
        return False
    for node in chunked:
        new = graph.add(_chunked_op(node), list(node.inputs), {}, (node.shape, node.dtype),
                        name="matmul_chunks", source=node.source)
        replace_node(graph, node, new)
    for node in others:
        new = graph.add(_one_thread_op(node), list(node.inputs), {}, (node.shape, node.dtype),
                        name="matmul_one_thread", source=node.source)
        replace_node(graph, node, new)
    graph.notes.append(f"cut {len(chunked)} matrix product{'s' if len(chunked) != 1 else ''} "
                       f"into chunks for the kernel threads; {len(others)} on one BLAS thread")
    return True
