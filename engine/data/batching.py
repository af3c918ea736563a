"""Mini-batches over equal-length arrays: :func:`batches` and :class:`DataLoader`.

The batch size selects the flavour of gradient descent: ``None`` (or the
number of examples) gives one full batch per epoch (batch gradient descent),
``1`` gives stochastic gradient descent, anything between mini-batches.
"""
import itertools

import numpy as np

from .. import dtypes
from ..errors import DTypeError, EngineError, ShapeError
from ..tensor import Tensor, tensor
from ..variable import Variable
from ..backend import of_array
from .chunked import iterate_chunks


class DataError(EngineError, ValueError):
    """Bad arguments to the data helpers (lengths, batch sizes, files)."""


def batches(arrays, batch_size=None, shuffle=False, seed=None, drop_last=False):
    """Iterate over mini-batches of ``arrays`` (one epoch), yielding engine tensors.

    Args:
        arrays: a tuple or list of arrays (numpy arrays, tensors, nested lists)
            with the same length along axis 0; each batch is a tuple with one
            tensor per array. A single array yields single tensors.
        batch_size: examples per batch; ``None`` (or any size >= the number of
            examples) means all of them in one batch.
        shuffle: visit the examples in a random order.
        seed: seed of that order (the same seed gives the same batches);
            ``None`` draws a fresh order every call.
        drop_last: skip a final batch smaller than ``batch_size``.

    Batches without shuffling are views of the input arrays (no copy): do not
    change the arrays while iterating.

    Example:
        >>> import engine as en, numpy as np
        >>> x, y = np.arange(10.0).reshape(5, 2), np.arange(5)
        >>> [tuple(b.shape for b in batch) for batch in en.data.batches((x, y), 2)]
        [((2, 2), (2,)), ((2, 2), (2,)), ((1, 2), (1,))]
    """
    columns, single, lazy = _columns(arrays)
    n = len(columns[0])
    size = _batch_size(batch_size, n)
    if lazy is not None:
        rng = np.random.default_rng(seed) if shuffle else None
        return iterate_chunks(lazy, columns, single, size, rng, drop_last)
    order = np.random.default_rng(seed).permutation(n) if shuffle else None
    return _iterate(columns, single, n, size, order, drop_last)


class DataLoader:
    """A reusable :func:`batches`: each ``iter()`` is one epoch.

    With ``shuffle=True`` every epoch has a new order, drawn from one random
    generator seeded with ``seed``, so a run is reproducible epoch by epoch.
    Over Dask arrays each epoch reads the data once, a chunk at a time (see
    :mod:`engine.data.chunked`).

    :meth:`state_dict` is its position (epochs completed, batches handed out in
    the current epoch, the random generator's state when that epoch's order was
    drawn); after :meth:`load_state_dict` the next ``iter()`` goes on with the
    same batches an uninterrupted run would have seen (``en.TrainingCheckpoint``
    saves it with the model).

    Example:
        >>> import engine as en, numpy as np
        >>> loader = en.data.DataLoader((np.zeros((10, 3)), np.arange(10)), batch_size=4,
        ...                             shuffle=True, seed=0, drop_last=True)
        >>> len(loader), [xb.shape for xb, yb in loader]
        (2, [(4, 3), (4, 3)])
    """

    def __init__(self, arrays, batch_size=None, shuffle=False, seed=None, drop_last=False):
        self._columns, self._single, self._lazy = _columns(arrays)
        self.num_examples = len(self._columns[0])
        self.batch_size = _batch_size(batch_size, self.num_examples)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self._rng = np.random.default_rng(seed)
        self._epochs_started = 0
        self._position = 0              # batches of the current epoch handed out
        self._epoch_rng_state = None    # the generator before this epoch's order
        self._resume_at = 0             # batches the next epoch skips (after a restore)

    @property
    def epochs_completed(self):
        """Epochs whose every batch has been handed out (an interrupted one is not)."""
        mid_epoch = self._epochs_started and self._position < len(self)
        return self._epochs_started - (1 if mid_epoch else 0)

    def state_dict(self):
        """The position as a JSON-able dict (see the class docstring)."""
        if self._epochs_started and self._position < len(self):      # an epoch under way
            return {"epochs_completed": self._epochs_started - 1, "position": self._position,
                    "rng": self._epoch_rng_state}
        # between epochs (or restored and not yet iterated: the position to skip to)
        return {"epochs_completed": self.epochs_completed, "position": self._resume_at,
                "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state):
        """Go back to a position :meth:`state_dict` returned; the next ``iter()`` resumes
        there (the rest of an interrupted epoch, else the next epoch)."""
        try:
            done, position, rng = (int(state["epochs_completed"]), int(state["position"]),
                                   state["rng"])
            self._rng.bit_generator.state = rng
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(f"DataLoader.load_state_dict: not a DataLoader state ({err!r})") from None
        if not 0 <= position < len(self):
            raise DataError(f"DataLoader.load_state_dict: position {position} is outside an "
                            f"epoch of {len(self)} batches")
        # as at the end of epoch `done`; the next iter() skips `position` batches
        self._epochs_started, self._position = done, len(self)
        self._epoch_rng_state, self._resume_at = None, position

    def __len__(self):
        """Batches per epoch."""
        full, rest = divmod(self.num_examples, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def __iter__(self):
        self._epoch_rng_state = self._rng.bit_generator.state
        self._epochs_started += 1
        skip, self._resume_at = self._resume_at, 0
        self._position = skip
        if self._lazy is not None:
            # the chunks' order is drawn as they are read: replay it, dropping the batches
            # an interrupted epoch had handed out
            it = iterate_chunks(self._lazy, self._columns, self._single, self.batch_size,
                                self._rng if self.shuffle else None, self.drop_last)
            it = itertools.islice(it, skip, None)
        else:
            order = self._rng.permutation(self.num_examples) if self.shuffle else None
            it = _iterate(self._columns, self._single, self.num_examples, self.batch_size,
                          order, self.drop_last, first=skip)
        return self._counted(it)

    def _counted(self, batches):
        for batch in batches:
            self._position += 1
            yield batch

    def __repr__(self):
        return (f"DataLoader({self.num_examples} examples, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last})")


def _iterate(columns, single, n, size, order, drop_last, first=0):
    stop = n - n % size if drop_last else n
    for start in range(first * size, stop, size):
        end = min(start + size, n)
        if order is None:
            parts = [tensor(c[start:end]) for c in columns]
        else:
            idx = order[start:end]
            parts = [tensor(c[idx]) for c in columns]
        yield parts[0] if single else tuple(parts)


def _columns(arrays):
    """The arrays as numpy arrays, or, when one of them lives in chunks (a Dask
    array or tensor), all as that back end's arrays; with whether it is one array
    and the chunked back end (None for numpy)."""
    single = not isinstance(arrays, (tuple, list))
    items = [arrays] if single else list(arrays)
    if not items:
        raise DataError("batches: no arrays given")
    values = [a._value if isinstance(a, Tensor) and a._value is not None else a for a in items]
    owners = [of_array(v) for v in values]
    lazy = next((b for b in owners if b is not None and b.chunked), None)
    columns = []
    for i, a in enumerate(values):
        if lazy is not None:
            a = a if owners[i] is lazy else lazy.from_numpy(np.asarray(
                a.numpy() if isinstance(a, (Tensor, Variable)) else a))
        elif isinstance(a, (Tensor, Variable)):
            a = a.numpy()
        else:
            a = np.asarray(a)
        if a.dtype not in dtypes.ALL:
            raise DTypeError(f"batches: array {i} has dtype {a.dtype}, which the engine does not "
                             f"support ({dtypes.names()}); convert it first, e.g. "
                             "a.astype('float32')")
        if a.ndim == 0:
            raise ShapeError(f"batches: array {i} is a scalar; every array needs an example axis 0")
        columns.append(a)
    lengths = [c.shape[0] for c in columns]
    if any(n != n for n in lengths):      # NaN: a Dask array of unknown chunk sizes
        raise ShapeError(f"batches: array lengths {lengths} are not known; call "
                         "compute_chunk_sizes() on the Dask array first")
    if len(set(lengths)) > 1:
        raise ShapeError(f"batches: the arrays must have the same length along axis 0, got "
                         f"lengths {lengths}")
    if lengths[0] == 0:
        raise DataError("batches: the arrays are empty")
    return columns, single, lazy


def _batch_size(batch_size, n):
    if batch_size is None:
        return n
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise DataError(f"batches: batch_size must be a positive int or None, got {batch_size!r}")
    if batch_size < 1:
        raise DataError(f"batches: batch_size must be >= 1, got {batch_size}")
    return min(int(batch_size), n)
