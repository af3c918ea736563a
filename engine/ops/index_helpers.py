"""numpy's index builders: ``tril_indices_from``, ``triu_indices_from``,
``diag_indices_from``, ``ix_``, ``ravel_multi_index`` and ``unravel_index``.

The ``*_indices_from`` functions read only the shape of their array, so they give
int64 constants (numpy's ``intp``); the others are arithmetic in engine ops on the
index tensors and trace. ``mode="raise"`` checks the indices where values exist
(eagerly), before any work.

Example:
    >>> import engine as en
    >>> [t.tolist() for t in en.unravel_index(en.tensor([5, 1]), (2, 3))]
    [[1, 0], [2, 1]]
    >>> int(en.ravel_multi_index((en.tensor(1), en.tensor(2)), (2, 3)))
    5
"""
import math
import operator

import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidArgumentError, ShapeError
from ..modes import current_mode
from . import shape_ops
from ._args import at_user_line, int_tuple
from .concrete import concrete_values
from .creation import cast
from .cumulative import as_tensor
from .concrete import constant_like
from .math_binary import clip

__all__ = ["tril_indices_from", "triu_indices_from", "diag_indices_from", "ix_",
           "ravel_multi_index", "unravel_index"]


def _constants(like, arrays):
    return tuple(constant_like(like, np.asarray(a, dtype=np.int64)) for a in arrays)


def _matrix(name, arr):
    arr = as_tensor(arr)
    if arr.ndim != 2:
        raise ShapeError(f"{name}: needs a 2-D array, got shape {tuple(arr.shape)}"
                         f"{at_user_line()}")
    return arr


def tril_indices_from(arr, k=0):
    """The (row, column) indices of the lower triangle of the 2-D ``arr`` (on and below
    the ``k``-th diagonal), like ``np.tril_indices_from``.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.tril_indices_from(en.ones((2, 2)))]
        [[0, 1, 1], [0, 0, 1]]
    """
    arr = _matrix("tril_indices_from", arr)
    return _constants(arr, np.tril_indices(arr.shape[0], operator.index(k), arr.shape[1]))


def triu_indices_from(arr, k=0):
    """The (row, column) indices of the upper triangle of the 2-D ``arr`` (on and above
    the ``k``-th diagonal), like ``np.triu_indices_from``.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.triu_indices_from(en.ones((2, 2)))]
        [[0, 0, 1], [0, 1, 1]]
    """
    arr = _matrix("triu_indices_from", arr)
    return _constants(arr, np.triu_indices(arr.shape[0], operator.index(k), arr.shape[1]))


def diag_indices_from(arr):
    """The indices of the main diagonal of ``arr`` (at least 2-D, all sides equal), one
    array per axis, like ``np.diag_indices_from``.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.diag_indices_from(en.ones((2, 2)))]
        [[0, 1], [0, 1]]
    """
    arr = as_tensor(arr)
    if arr.ndim < 2:
        raise ShapeError(f"diag_indices_from: needs an array of at least 2 dimensions, got "
                         f"shape {tuple(arr.shape)}{at_user_line()}")
    if len(set(arr.shape)) != 1:
        raise ShapeError(f"diag_indices_from: all dimensions must be equal, got shape "
                         f"{tuple(arr.shape)}{at_user_line()}")
    return _constants(arr, [np.arange(arr.shape[0])] * arr.ndim)


def ix_(*args):
    """Open-mesh index arrays from 1-D sequences: the ``k``-th of ``n`` has shape
    ``(1, ..., len, ..., 1)``, so ``x[en.ix_(rows, cols)]`` picks the cross product,
    like ``np.ix_`` (a boolean sequence stands for its true positions).

    Example:
        >>> import engine as en
        >>> x = en.arange(9).reshape((3, 3))
        >>> x[en.ix_([0, 2], [1])].tolist()
        [[1], [7]]
    """
    out = []
    for k, seq in enumerate(args):
        seq = as_tensor(np.asarray(seq) if isinstance(seq, (list, tuple)) else seq)
        if seq.ndim != 1:
            raise ShapeError(f"ix_: argument {k} must be 1-D, got shape {tuple(seq.shape)}"
                             f"{at_user_line()}")
        if seq.dtype == dtypes.bool_:
            seq = constant_like(seq, np.flatnonzero(
                concrete_values("ix_", seq, f"argument {k}")).astype(np.int64))
        elif seq.shape[0] == 0:
            seq = cast(seq, dtypes.int64)
        shape = [1] * len(args)
        shape[k] = seq.shape[0]
        out.append(shape_ops.reshape(seq, tuple(shape)))
    return tuple(out)


def _strides(dims, order):
    if order not in ("C", "F"):
        raise InvalidArgumentError(f"order must be 'C' or 'F', got {order!r}{at_user_line()}")
    sizes = dims if order == "C" else dims[::-1]
    strides = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    return strides if order == "C" else strides[::-1]


def _int_tensor(name, x, what):
    x = as_tensor(np.asarray(x) if isinstance(x, (list, tuple, int)) else x)
    if x.dtype not in dtypes.INTS:
        raise DTypeError(f"{name}: {what} must hold integers, got {x.dtype}{at_user_line()}")
    return cast(x, dtypes.int64)


def _dims(name, dims):
    dims = int_tuple(name, (dims,) if isinstance(dims, (int, np.integer)) else dims, "dims")
    if any(d < 0 for d in dims):
        raise ShapeError(f"{name}: dims {dims} must be non-negative{at_user_line()}")
    return dims


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """The flat indices of the index tuples ``multi_index`` in an array of shape
    ``dims``, like ``np.ravel_multi_index``; ``mode`` (one for all, or one per axis)
    says what an index out of range does: ``"raise"``, ``"wrap"`` or ``"clip"``.

    Example:
        >>> import engine as en
        >>> en.ravel_multi_index((en.tensor([3, 6]), en.tensor([4, 5])), (7, 6)).tolist()
        [22, 41]
    """
    dims = _dims("ravel_multi_index", dims)
    if len(multi_index) != len(dims):
        raise ShapeError(f"ravel_multi_index: {len(multi_index)} index arrays for "
                         f"{len(dims)} dims{at_user_line()}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    strides = _strides(dims, order)
    total = None
    for k, (idx, n, m) in enumerate(zip(multi_index, dims, modes)):
        idx = _int_tensor("ravel_multi_index", idx, f"index array {k}")
        idx = index_by_mode("ravel_multi_index", idx, n, m, f"index array {k} has an entry")
        term = idx * strides[k]
        total = term if total is None else total + term
    return total


def unravel_index(indices, shape, order="C"):
    """The index tuples of the flat ``indices`` in an array of ``shape``, one int64 array
    per axis, like ``np.unravel_index``.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.unravel_index(en.tensor([22, 41]), (7, 6))]
        [[3, 6], [4, 5]]
    """
    shape = _dims("unravel_index", shape)
    indices = _int_tensor("unravel_index", indices, "indices")
    size = math.prod(shape)
    if current_mode().is_concrete:
        v = indices.numpy()
        if v.size and (v.min() < 0 or v.max() >= size):
            bad = v[(v < 0) | (v >= size)].flat[0]
            raise ShapeError(f"unravel_index: index {int(bad)} is out of bounds for an array "
                             f"of size {size}{at_user_line()}")
    return tuple((indices // s) % n if n else indices * 0
                 for s, n in zip(_strides(shape, order), shape))


def index_by_mode(name, idx, n, mode, what, hint=""):
    """Integer indices into ``n`` places under numpy's ``mode``: 'wrap' (modulo n), 'clip'
    (into [0, n)) or 'raise' (checked where the values are concrete; ``what`` names the
    offender in the error, ``hint`` follows it).

    Example:
        >>> import engine as en
        >>> index_by_mode("take", en.tensor([-1, 5]), 4, "wrap", "an index").tolist()
        [3, 1]
    """
    if mode == "wrap":
        return idx % n
    if mode == "clip":
        return clip(idx, 0, n - 1)
    if mode != "raise":
        raise InvalidArgumentError(f"{name}: mode must be 'raise', 'wrap' or 'clip', got "
                                   f"{mode!r}{at_user_line()}")
    if current_mode().is_concrete:
        values = idx.numpy()
        if values.size and (values.min() < 0 or values.max() >= n):
            raise ShapeError(f"{name}: {what} outside [0, {n}){hint}{at_user_line()}")
    return idx
