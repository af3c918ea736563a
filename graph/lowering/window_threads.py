"""The kernel threads that window kernels split their images over (``engine/ops/batch_split.py``).

A split convolution runs its chunks on the engine's pool (``parallel.run_chunks``)
with numpy's OpenBLAS held at one thread (``blas_threads``): each chunk's product is
a one-thread BLAS call, as a split matrix product's parts are, so OpenBLAS's own
workers get no work and do not spin against the pool's.

Example:
    >>> threads() in (1, 2)
    True
"""
from engine.config import config
from engine.ops import batch_split

from . import blas_threads, parallel
from .machine_load import machine_busy


def threads(blas=True):
    """Threads a split window kernel may use: ``en.config.fusion_threads`` where set, else
    one for a BLAS kernel (im2col and a product) on an idle machine
    (``machine_load.machine_busy``: there OpenBLAS's threads run the whole kernel's
    product faster, the CNN step 9.0 ms against 11.6-11.9 split), else the machine's (a
    native loop, ``blas`` False, has no threads of its own), but no more than OpenBLAS's
    own count (``OPENBLAS_NUM_THREADS=1``, as ``python -m bench --threads 1`` sets, keeps
    every kernel on one thread)."""
    if config.fusion_threads is not None:
        return config.fusion_threads
    if blas and not machine_busy():
        return 1
    return parallel.native_threads()


def run_chunks(fn, n, count):
    """``[fn(0), ..., fn(n - 1)]`` on ``count`` threads, OpenBLAS at one thread inside."""
    with blas_threads.one_blas_thread():
        return parallel.run_chunks(fn, n, count)


def splits_in(graph):
    """Whether a kernel of ``graph`` will split its images over the threads (its window
    ops' static shapes and the thresholds as they are now)."""
    for node in graph.nodes:
        if node.op in batch_split.WORK and node.shape is not None and \
                all(i.shape is not None for i in node.inputs) and \
                batch_split.splits(node.op, [tuple(i.shape) for i in node.inputs],
                                   tuple(node.shape), node.params):
            return True
    return False


def install():
    """Make the engine's pool the runner of split window kernels."""
    if blas_threads.available():     # else a chunk's product would start OpenBLAS's threads
        batch_split.register(threads, run_chunks)
