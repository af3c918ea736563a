"""Mini-batches drawn from arrays that live in chunks of rows (Dask): a chunk at a time.

A Dask array bigger than memory cannot be indexed at random the way
:func:`engine.data.batches` indexes a numpy array, and computing it per
mini-batch would cost one cluster round trip per step. So the rows come one
chunk at a time: each chunk is computed once per epoch (the next one is
computed in the background while the current one is used), its rows become
mini-batches on the client, and the rows a chunk leaves over start the next
chunk's first batch, so every batch but the last has ``batch_size`` rows and an
epoch has as many batches as it would over numpy.

Shuffling is by chunk order and within each chunk, the way a shuffle buffer of
one chunk works (tf.data's ``shuffle``, dask-ml): every row is visited once per
epoch, in an order drawn from the seed, but two rows of distant chunks never
share a batch. Without shuffling the batches are exactly those over the same
rows in numpy, so training follows the same path.

Example:
    >>> import dask.array as da, numpy as np, engine as en
    >>> x = da.from_array(np.arange(20.0).reshape(10, 2), chunks=(4, 2))
    >>> [tuple(xb.shape) for xb in en.data.batches(x, 3)]
    [(3, 2), (3, 2), (3, 2), (1, 2)]
"""
import concurrent.futures

import numpy as np

from ..tensor import tensor


def iterate_chunks(backend, arrays, single, size, rng, drop_last):
    """Yield the mini-batches of ``arrays`` (lazy arrays of ``backend``, equal rows).

    ``rng`` is a numpy Generator when shuffling, else None. One chunk's values
    are held at a time, plus the next one being computed.
    """
    blocks = backend.row_blocks(list(arrays))
    order = rng.permutation(len(blocks)) if rng is not None else np.arange(len(blocks))
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="engine-chunk-loader")
    try:
        pending = pool.submit(backend.compute, blocks[order[0]])
        leftover = None
        for k in range(len(order)):
            values = [np.asarray(v) for v in pending.result()]
            if k + 1 < len(order):
                pending = pool.submit(backend.compute, blocks[order[k + 1]])
            if rng is not None:
                perm = rng.permutation(len(values[0]))
                values = [v[perm] for v in values]
            if leftover is not None:
                values = [np.concatenate([a, b]) for a, b in zip(leftover, values)]
            whole = len(values[0]) - len(values[0]) % size
            for start in range(0, whole, size):
                yield _batch([v[start:start + size] for v in values], single)
            leftover = [v[whole:] for v in values]
        if leftover is not None and len(leftover[0]) and not drop_last:
            yield _batch(leftover, single)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _batch(parts, single):
    parts = [tensor(p) for p in parts]
    return parts[0] if single else tuple(parts)
