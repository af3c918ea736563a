"""Window kernels (convolutions, max pooling) split over their images on the engine's kernel threads.

numpy runs a convolution's im2col copy on one thread, and OpenBLAS threads only the
product after it: on two cores a convolution gained little from the second core
(PyTorch's oneDNN splits the whole kernel over the batch). The images of a batch are
independent, so a kernel here runs in chunks of images, each chunk's im2col, product
(and col2im) on whichever kernel thread takes it, with OpenBLAS held at one thread.
Chunks are handed out in turn rather than as fixed halves, so that on a loaded machine
the caller never waits for a worker the scheduler has not started.

The core cannot import the lowerings that own the threads, so a lowering fills
:data:`RUNNERS` (``graph/lowering/window_threads.py``, installed with the lowerings'
registry, which ``native.kernel`` imports on first use). A kernel splits only where a
runner is registered, it offers more than one thread, ``en.config.lowering`` allows
native kernels (not "numpy"), numerics are not "bitwise" (a filter gradient's sum
over the batch would change its order) and the kernel has at least
``cost.window_split_min_work`` multiply-adds (max pooling's C kernels split too, from
``cost.pool_split_min_taps`` values read).

Example:
    >>> import numpy as np
    >>> x = np.arange(6.0).reshape(6, 1)
    >>> [float(s.sum()) for s in run(6, 0, lambda lo, hi: x[lo:hi])]     # too little work
    [15.0]
"""
from collections.abc import Callable
from typing import Any

import numpy as np

from ..cost_model import cost
from . import native

# [(threads(blas) -> int, run(fn, n_chunks, threads) -> list)], filled by a lowering.
RUNNERS: list[tuple[Callable[..., int], Callable[..., list]]] = []
# op -> work(input shapes, output shape, params) -> (work, minimum or None): what an op
# that splits measures, declared in the op's module, so that a lowering can tell from a
# graph which kernels will split (their products then stay on one OpenBLAS thread).
WORK: dict[Any, Callable[..., tuple[int, Any]]] = {}


def declare(op, work):
    """Say that ``op``'s kernel splits by :func:`run` with ``work(in_shapes, out_shape,
    params)``, which gives ``(work, minimum)`` as the kernel passes them, or ``(work,
    minimum, blas)`` where whether the kernel calls BLAS depends on the shapes."""
    WORK[op] = work


def splits(op, in_shapes, out_shape, params):
    """Whether a kernel of ``op`` on these static shapes will split its images."""
    rule = WORK.get(op)
    if rule is None:
        return False
    found = tuple(rule(in_shapes, out_shape, params))
    blas = bool(found[2]) if len(found) > 2 else True         # (work, minimum[, blas])
    return threads(found[0], found[1], blas) > 1


def register(threads, run_chunks):
    """Split kernels with ``run_chunks(fn, n, threads)`` over ``threads(blas)`` threads
    (``blas``: whether the kernel's work is a BLAS product)."""
    RUNNERS[:] = [(threads, run_chunks)]


def threads(work, minimum=None, blas=True):
    """How many threads a kernel of ``work`` runs on (1: not split): ``work`` counts
    multiply-adds against ``cost.window_split_min_work`` unless another ``minimum``
    is given (pooling counts the values its windows read). ``blas``: the kernel is an
    im2col and a BLAS product, which OpenBLAS's own threads may run instead (the runner
    weighs that); a native loop (a direct convolution) has no other threads."""
    minimum = cost.window_split_min_work if minimum is None else minimum
    if work < minimum or native.kernel_lowering_off():
        return 1
    if not RUNNERS:
        native.load()
    return RUNNERS[0][0](blas) if RUNNERS else 1


def run(n, work, fn: Callable[[int, int], Any], minimum=None, image_bytes=0,
        blas=True) -> list:
    """``fn(lo, hi)`` over image ranges that cover ``range(n)``, in order: one call
    ``[fn(0, n)]`` unless :func:`threads` gives more than one, else
    ``cost.window_split_chunks`` (``cost.window_split_native_chunks`` for a native loop,
    ``blas`` False; at most ``n``) calls spread over the threads.

    On one thread, a kernel whose scratch takes ``image_bytes`` per image runs in
    blocks of images whose scratch fits ``cost.window_block_bytes`` (see :func:`blocks`)."""
    count = threads(work, minimum, blas)
    chunks = min(n, int(cost.window_split_chunks if blas else cost.window_split_native_chunks))
    if count < 2 or chunks < 2:
        return [fn(lo, hi) for lo, hi in blocks(n, image_bytes)]
    bounds = [k * n // chunks for k in range(chunks + 1)]
    return RUNNERS[0][1](lambda k: fn(bounds[k], bounds[k + 1]), chunks, count)


def run_into(out, shape, dtype, n, work, fn: Callable[[int, int, Any], Any], minimum=None,
             image_bytes=0):
    """A kernel split by :func:`run` into one C-contiguous result of ``shape`` and
    ``dtype``: ``fn(lo, hi, rows)`` writes images ``lo:hi`` into ``rows``, the result's
    rows ``lo:hi`` (it returns None where its native kernel is not built). The result
    is ``out`` itself where it fits, else a fresh array, copied into ``out`` if given.
    None where a chunk gave None.

    Example:
        >>> x = np.arange(6.0).reshape(3, 2)
        >>> run_into(None, x.shape, x.dtype, 3, 0, lambda lo, hi, rows: np.negative(
        ...     x[lo:hi], out=rows)).tolist()
        [[-0.0, -1.0], [-2.0, -3.0], [-4.0, -5.0]]
    """
    fits = out is not None and out.dtype == dtype and out.flags.c_contiguous
    dst = out if fits else np.empty(shape, dtype)
    done = run(n, work, lambda lo, hi: fn(lo, hi, dst[lo:hi]), minimum, image_bytes)
    if any(part is None for part in done):
        return None
    if out is not None and dst is not out:
        out[...] = dst
        return out
    return dst


def blocks(n, image_bytes):
    """Image ranges, in order, for a kernel on one thread whose scratch (an im2col
    matrix) takes ``image_bytes`` per image: each block's scratch at most
    ``cost.window_block_bytes``, so the product reads the matrix from the cache the
    copy just wrote it to rather than from memory. One block where the whole batch
    fits, where ``image_bytes`` is 0, and where native kernels are ruled out (bitwise
    numerics keep the one product's order of sums).

    Example:
        >>> blocks(64, 1 << 17) == [(k * 16, k * 16 + 16) for k in range(4)]   # 8 MiB in 2 MiB
        True
        >>> blocks(64, 0)
        [(0, 64)]
    """
    limit = int(cost.window_block_bytes)
    if image_bytes <= 0 or n * image_bytes <= limit or native.kernel_lowering_off():
        return [(0, n)]
    count = min(n, -(-n * image_bytes // limit))
    bounds = [k * n // count for k in range(count + 1)]
    return list(zip(bounds[:-1], bounds[1:]))
