"""Mini-batches over equal-length arrays: :func:`batches` and :class:`DataLoader`.

The batch size selects the flavour of gradient descent: ``None`` (or the
number of examples) gives one full batch per epoch (batch gradient descent),
``1`` gives stochastic gradient descent, anything between mini-batches.
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, EngineError, ShapeError
from ..tensor import Tensor, tensor
from ..variable import Variable


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
    columns, single = _columns(arrays)
    n = len(columns[0])
    size = _batch_size(batch_size, n)
    order = np.random.default_rng(seed).permutation(n) if shuffle else None
    return _iterate(columns, single, n, size, order, drop_last)


class DataLoader:
    """A reusable :func:`batches`: each ``iter()`` is one epoch.

    With ``shuffle=True`` every epoch has a new order, drawn from one random
    generator seeded with ``seed``, so a run is reproducible epoch by epoch.

    Example:
        >>> import engine as en, numpy as np
        >>> loader = en.data.DataLoader((np.zeros((10, 3)), np.arange(10)), batch_size=4,
        ...                             shuffle=True, seed=0, drop_last=True)
        >>> len(loader), [xb.shape for xb, yb in loader]
        (2, [(4, 3), (4, 3)])
    """

    def __init__(self, arrays, batch_size=None, shuffle=False, seed=None, drop_last=False):
        self._columns, self._single = _columns(arrays)
        self.num_examples = len(self._columns[0])
        self.batch_size = _batch_size(batch_size, self.num_examples)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self._rng = np.random.default_rng(seed)

    def __len__(self):
        """Batches per epoch."""
        full, rest = divmod(self.num_examples, self.batch_size)
        return full + (1 if rest and not self.drop_last else 0)

    def __iter__(self):
        order = self._rng.permutation(self.num_examples) if self.shuffle else None
        return _iterate(self._columns, self._single, self.num_examples, self.batch_size,
                        order, self.drop_last)

    def __repr__(self):
        return (f"DataLoader({self.num_examples} examples, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last})")


def _iterate(columns, single, n, size, order, drop_last):
    stop = n - n % size if drop_last else n
    for start in range(0, stop, size):
        end = min(start + size, n)
        if order is None:
            parts = [tensor(c[start:end]) for c in columns]
        else:
            idx = order[start:end]
            parts = [tensor(c[idx]) for c in columns]
        yield parts[0] if single else tuple(parts)


def _columns(arrays):
    single = not isinstance(arrays, (tuple, list))
    items = [arrays] if single else list(arrays)
    if not items:
        raise DataError("batches: no arrays given")
    columns = []
    for i, a in enumerate(items):
        if isinstance(a, (Tensor, Variable)):
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
    lengths = [len(c) for c in columns]
    if len(set(lengths)) > 1:
        raise ShapeError(f"batches: the arrays must have the same length along axis 0, got "
                         f"lengths {lengths}")
    if lengths[0] == 0:
        raise DataError("batches: the arrays are empty")
    return columns, single


def _batch_size(batch_size, n):
    if batch_size is None:
        return n
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise DataError(f"batches: batch_size must be a positive int or None, got {batch_size!r}")
    if batch_size < 1:
        raise DataError(f"batches: batch_size must be >= 1, got {batch_size}")
    return min(int(batch_size), n)
