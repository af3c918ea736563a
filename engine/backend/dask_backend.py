"""The Dask back end: tensors whose values are ``dask.array`` arrays, chunked along
their first axis, computed lazily, on a ``dask.distributed`` cluster when a
``Client`` is active (Dask's local threads otherwise).

Eager ops on Dask tensors run through the op kernels written once against the
Array API namespace (``array_api_compat``'s wrapper of ``dask.array``): each op
adds Dask tasks, nothing runs until ``.numpy()``, ``float()`` or
:func:`engine.compute`. numpy tensors (small parameters) join Dask tensors in
an op: they become one-chunk Dask arrays, one graph key each, so a cluster
sends them to a worker once per computation, not once per task. An
``en.function`` called with Dask tensors does not run op by op: it runs per
chunk, see ``engine.graph.chunked``.

Example:
    >>> import dask.array as da, numpy as np, engine as en
    >>> x = en.tensor(da.from_array(np.arange(6.0).reshape(3, 2), chunks=(2, 2)))
    >>> x.backend.name, float(en.sum(x * 2.0))
    ('dask', 30.0)
"""
import array_api_compat.dask.array as _compat_dask
import dask
import dask.array as da
import uuid
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import ChunkError
from ..lifting import as_array
from .base import Backend


# array-api-compat's Dask namespace copies dask.array's names into itself when imported
# (and imports its fft submodule the same way), which a type checker cannot follow.
xpd: Any = _compat_dask

WHOLE_ARRAY_FAMILIES = ("engine.ops.linalg", "numpy.linalg", "engine.ops.sorting")


def _whole_array(op):
    """``op``'s numpy kernel as one Dask task over its inputs (each in one chunk)."""
    def kernel(*arrays, **params):
        avals = op.abstract_eval(*[(a.shape, a.dtype) for a in arrays], **params)
        task = dask.delayed(op.impl, pure=True)(*[_one_block(a) for a in arrays], **params)
        if not op.multiple_results:
            return da.from_delayed(task, shape=avals[0], dtype=avals[1])
        return tuple(da.from_delayed(task[i], shape=shape, dtype=dtype)
                     for i, (shape, dtype) in enumerate(avals))
    kernel.__name__ = op.name
    return kernel


def _one_block(array):
    """``array`` in one chunk, as a Delayed naming that chunk's key in the array's own
    graph. Passing the array itself to a delayed call would embed a renamed copy of
    its graph (Dask finalizes collection arguments), and every such copy reads the
    source chunks again."""
    (block,) = array.rechunk(-1).to_delayed(optimize_graph=False).ravel()
    return block


class _FFTNamespace:
    """Dask's ``fft`` functions, each given its transformed axes in one chunk (Dask
    transforms only along unsplit axes; the other axes keep their chunks)."""

    def __getattr__(self, name):
        fn = getattr(xpd.fft, name)

        def transform(x, /, *, s=None, axes=None, norm="backward"):
            axes = tuple(range(x.ndim)) if axes is None else axes
            x = x.rechunk({a % x.ndim: -1 for a in axes})
            return fn(x, s=s, axes=axes, norm=norm)
        transform.__name__ = name
        return transform


class _Namespace:
    """``array_api_compat``'s Dask namespace with the few functions where Dask needs
    help: a reshape that merges or splits dimensions unevenly across chunks, ``eye``
    with an offset, ``take_along_axis`` (missing), max/min of an empty array (Dask
    reduces chunk by chunk, and an empty chunk has no maximum), and the transforms
    of ``fft`` (along unsplit axes only)."""

    fft = _FFTNamespace()

    def __getattr__(self, name):
        return getattr(xpd, name)

    @staticmethod
    def reshape(x, shape, copy=None):
        try:
            return xpd.reshape(x, shape)
        except (NotImplementedError, TypeError, ValueError):   # chunks that do not line up
            return xpd.reshape(x.rechunk(-1), shape)        # ... so one chunk first

    @staticmethod
    def eye(n, m=None, k=0, dtype=None, device=None):
        return da.from_array(np.eye(n, m, k, dtype=dtype))

    @staticmethod
    def take_along_axis(x, indices, axis=-1):
        # Not in Dask: numpy's, as one task over both arrays (the result has the
        # indices' shape).
        task = dask.delayed(np.take_along_axis, pure=True)(_one_block(x), _one_block(indices),
                                                            axis)
        return da.from_delayed(task, shape=indices.shape, dtype=x.dtype)

    @staticmethod
    def max(x, axis=None, keepdims=False):
        return _reduce_empty(xpd.max, np.max, x, axis, keepdims)

    @staticmethod
    def min(x, axis=None, keepdims=False):
        return _reduce_empty(xpd.min, np.min, x, axis, keepdims)


def _reduce_empty(fn, np_fn, x, axis, keepdims):
    if 0 in x.shape:     # numpy's result (empty) or numpy's error (an empty axis reduced)
        return da.from_array(np_fn(np.empty(x.shape, x.dtype), axis=axis, keepdims=keepdims))
    return fn(x, axis=axis, keepdims=keepdims)


class DaskBackend(Backend):
    name = "dask"
    xp = _Namespace()
    array_types = (da.Array,)
    numpy_promotion = True      # dask.array promotes as numpy does
    joins_numpy = True          # numpy tensors combine with Dask tensors (see module doc)
    chunked = True              # en.function runs per chunk (engine.graph.chunked)
    lazy = True                 # nothing runs until a value is asked for

    def asarray(self, data, dtype=None):
        if self.is_array(data):
            # Dask arrays never change once made: no copy is needed.
            return data if dtype is None else self.astype(data, dtype)
        return self.from_numpy(as_array(data, dtype))

    def from_numpy(self, array):
        # One chunk: a parameter is one graph key, shipped to a worker once.
        array = np.array(array, copy=True)
        return da.from_array(array, chunks=array.shape or (), name=False)

    def own_kernel(self, op):
        # The linear-algebra family works on whole matrices (LAPACK calls), sorting and
        # the data-dependent sizes (nonzero, unique) on whole axes; Dask's own
        # linalg wants square chunks and lacks most of it, so each such op runs as one
        # task on its inputs in one chunk (lazy, not split). An op with a chunks rule
        # (the matrix product) acts block by block: Dask's own kernel splits it as
        # dask.array would (x.T @ x: one product per chunk, then a sum).
        if getattr(op.impl, "__module__", "").startswith(WHOLE_ARRAY_FAMILIES) and \
                op.rules.get("chunks") is None:
            return _whole_array(op)
        return None

    def to_numpy(self, array):
        return np.asarray(array.compute())

    def dtype_of(self, array):
        return array.dtype

    def dtype(self, dtype):
        return dtypes.as_dtype(dtype)

    def astype(self, array, dtype):
        return array.astype(dtypes.as_dtype(dtype))

    def may_share_memory(self, a, b):
        return False    # Dask arrays are immutable: nothing written can alias them

    def compute(self, arrays):
        """numpy values of several Dask arrays, computed together (shared work)."""
        return [np.asarray(v) for v in dask.compute(*arrays)]

    def checked_finite(self, array, message):
        # One check per chunk, in the chunk's own task chain: what reads the array
        # waits for it, so the first bad chunk raises before its NaN spreads.
        return array.map_blocks(_check_block, message, dtype=array.dtype, meta=array._meta)

    def row_blocks(self, arrays):
        arrays = _aligned_rows(arrays)
        return [[a.blocks[i] for a in arrays] for i in range(arrays[0].numblocks[0])]

    # -- running a function per chunk (engine.graph.chunked) ----------------------------
    def run_chunks(self, program, arrays, shared, combines, row_avals=()):
        """Run ``program`` (a ChunkProgram) on each chunk of rows of ``arrays``, with
        the numpy arrays ``shared`` one graph key (sent to each worker once). ``combines`` gives, per
        partial result, ``(kind, divisor)``: the partials are combined in a tree and
        the result divided by ``divisor`` (a mean) when it is not None. ``row_avals``
        gives, per result that stays per chunk, its shape after the rows and its
        dtype. Returns the combined results (numpy, computed now: one Dask
        computation) and the per-chunk results, joined into lazy Dask arrays.
        """
        total, row_outputs = self.chunk_graph(program, arrays, shared, combines, row_avals)
        if total is None:
            return [], row_outputs
        (values,) = dask.compute(total)
        return [v if d is None else v / d for v, (_, d) in zip(values, combines)], row_outputs

    def chunk_graph(self, program, arrays, shared, combines, row_avals=(), split_every=8):
        """What :meth:`run_chunks` computes, not computed: the Delayed combined partial
        results (None without reductions) and the per-chunk results. One task per
        chunk, and a tree of ``split_every``-way combining tasks."""
        arrays = _aligned_rows(arrays)
        blocks = [a.to_delayed().ravel() for a in arrays]
        token = uuid.uuid4().hex
        shared_key = _shared(shared, token)
        parts = [dask.delayed(_run_chunk)(program, [b[i] for b in blocks], shared_key, i,
                                          dask_key_name=f"engine-chunk-{token}-{i}")
                 for i in range(len(blocks[0]))]
        rows = arrays[0].chunks[0]
        row_outputs = [da.concatenate([da.from_delayed(dask.delayed(_row_part)(p, j),
                                                       shape=(n, *tail), dtype=dtype)
                                       for p, n in zip(parts, rows)], axis=0)
                       for j, (tail, dtype) in enumerate(row_avals)]
        if not combines:
            return None, row_outputs
        level = [dask.delayed(_partials)(p) for p in parts]
        while len(level) > 1:
            level = [dask.delayed(_combine)(combines, *level[i:i + split_every])
                     for i in range(0, len(level), split_every)]
        return level[0], row_outputs


def _aligned_rows(arrays):
    """The arrays chunked along rows only, all with the first one's row chunks."""
    first = arrays[0]
    rows = first.chunks[0]
    out = []
    for a in arrays:
        wanted = {0: rows, **{i: -1 for i in range(1, a.ndim)}}
        out.append(a.rechunk(wanted) if a.chunks[0] != rows or
                   any(len(c) > 1 for c in a.chunks[1:]) else a)
    return out


def _check_block(block, message, block_id=None):
    """``block``, after raising ChunkError (``message`` formatted) if it holds NaN or Inf."""
    values = np.asarray(block)
    if values.dtype.kind in "fc" and not np.isfinite(values).all():
        kind = "NaN" if np.isnan(values).any() else "Inf"
        # The index along the rows, the only split axis of engine data; the whole
        # block position where other axes are split too.
        ids = tuple(block_id or ())
        chunk = ids[0] if ids and not any(ids[1:]) else (ids or 0)
        rows = values.shape[0] if values.ndim else 1
        raise ChunkError(message.format(kind=kind, chunk=chunk, rows=rows))
    return block


def _shared(values, token):
    """One graph key holding the shared values: sent once to each worker that runs a
    chunk, and, unlike data scattered to workers, recomputable if a worker dies."""
    return dask.delayed(list(values), name=f"engine-shared-{token}", pure=False)


def _run_chunk(program, chunks, shared, index):
    return program.run(list(chunks), list(shared), index)


def _partials(result):
    return result[0]


def _row_part(result, j):
    return result[1][j]


_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _combine(combines, *parts):
    out = []
    for j, (kind, _) in enumerate(combines):
        value = parts[0][j]
        for p in parts[1:]:
            value = _COMBINE[kind](value, p[j])
        out.append(value)
    return out

