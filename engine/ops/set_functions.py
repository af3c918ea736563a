"""numpy's set functions and the sorts they build on, as composites of registered ops:
``isin``, ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``, ``lexsort`` and
``sort_complex``.

``isin``, ``lexsort`` and ``sort_complex`` have static shapes and trace. The 1-D set
functions return as many values as the data holds distinct ones: they find which
elements to keep from the values (:mod:`engine.ops.concrete`, eagerly) and gather
those elements, so the result is on the input's back end and differentiates with
respect to it; while tracing they raise :class:`TracingError`, as ``en.unique`` does
without ``size=``.

Example:
    >>> import engine as en
    >>> en.union1d(en.tensor([3, 1]), en.tensor([2, 1])).tolist()
    [1, 2, 3]
    >>> en.isin(en.tensor([1, 5]), en.tensor([5, 6])).tolist()
    [False, True]
"""
import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, ShapeError
from ..lifting import TensorLike
from . import compare, join, shape_ops
from ._args import at_user_line
from .concrete import concrete_values
from .creation import cast
from .cumulative import as_tensor, user_axis
from .manipulation import take, take_along_axis
from .numpy_names import any as _any
from .rearranging import full_like
from .sorting import argsort, searchsorted, sort

__all__ = ["isin", "intersect1d", "union1d", "setdiff1d", "setxor1d", "lexsort",
           "sort_complex"]


def _flat(x):
    return shape_ops.reshape(as_tensor(x), (-1,))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element of ``element`` is in ``test_elements`` (a bool array of
    ``element``'s shape; its negation with ``invert``), like ``np.isin``. NaN is in no
    array. It sorts the test elements and searches them, so it traces.

    Example:
        >>> import engine as en
        >>> en.isin(en.tensor([[1, 2], [3, 4]]), [2, 3], invert=True).tolist()
        [[True, False], [False, True]]
    """
    if kind not in (None, "sort", "table"):
        raise InvalidArgumentError(f"isin: kind must be None, 'sort' or 'table', got "
                                   f"{kind!r}{at_user_line()}")
    element, tests = as_tensor(element), _flat(test_elements)
    dtype = np.result_type(element.dtype, tests.dtype)
    if dtype == dtypes.bool_:
        dtype = np.dtype(np.int8)
    values, tests = cast(_flat(element), dtype), cast(tests, dtype)
    if tests.shape[0] == 0:
        found = full_like(values, False, dtype=dtypes.bool_)
    elif dtype.kind == "c":      # no order to search: compare with every test element
        found = _any(compare.equal(shape_ops.reshape(values, (-1, 1)),
                                   shape_ops.reshape(tests, (1, -1))), axis=1)
    else:
        ordered = sort(tests)
        at = searchsorted(ordered, values)
        at = compare.where(compare.less(at, tests.shape[0]), at, tests.shape[0] - 1)
        found = compare.equal(take(ordered, at, 0), values)
    if invert:
        found = compare.logical_not(found)
    return shape_ops.reshape(found, tuple(element.shape))


def _first_unique(values):
    """Indices of the first occurrence of each distinct value, in sorted value order."""
    return np.unique(values, return_index=True)[1]


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """The sorted values found in both arrays (flattened), like ``np.intersect1d``;
    with ``return_indices`` also the indices of their first occurrences in each.

    Example:
        >>> import engine as en
        >>> en.intersect1d(en.tensor([1, 3, 4, 3]), en.tensor([3, 1, 2, 1])).tolist()
        [1, 3]
    """
    ar1, ar2 = _flat(ar1), _flat(ar2)
    v1 = concrete_values("intersect1d", ar1, "ar1")
    v2 = concrete_values("intersect1d", ar2, "ar2")
    _, i1, i2 = np.intersect1d(v1, v2, assume_unique=assume_unique, return_indices=True)
    values = cast(take(ar1, i1, 0), np.result_type(ar1.dtype, ar2.dtype))
    if not return_indices:
        return values
    return values, as_tensor(i1.astype(np.int64)), as_tensor(i2.astype(np.int64))


def union1d(ar1, ar2):
    """The sorted distinct values of both arrays (flattened), like ``np.union1d``.

    Example:
        >>> import engine as en
        >>> en.union1d(en.tensor([-1, 0, 1]), en.tensor([-2, 0, 2])).tolist()
        [-2, -1, 0, 1, 2]
    """
    both = join.concat([_flat(ar1), _flat(ar2)])
    return take(both, _first_unique(concrete_values("union1d", both, "the inputs")), 0)


def setdiff1d(ar1, ar2, assume_unique=False):
    """The distinct values of ``ar1`` that are not in ``ar2``, sorted (in ``ar1``'s order
    when ``assume_unique``), like ``np.setdiff1d``.

    Example:
        >>> import engine as en
        >>> en.setdiff1d(en.tensor([5, 1, 2, 2]), en.tensor([2, 7])).tolist()
        [1, 5]
    """
    ar1 = _flat(ar1)
    v1 = concrete_values("setdiff1d", ar1, "ar1")
    v2 = concrete_values("setdiff1d", ar2, "ar2")
    base = np.arange(len(v1)) if assume_unique else _first_unique(v1)
    return take(ar1, base[np.isin(v1[base], v2, invert=True)], 0)


def setxor1d(ar1, ar2, assume_unique=False):
    """The sorted values in exactly one of the arrays, like ``np.setxor1d``.

    Example:
        >>> import engine as en
        >>> en.setxor1d(en.tensor([1, 2, 3, 2, 4]), en.tensor([2, 3, 5, 7, 5])).tolist()
        [1, 4, 5, 7]
    """
    ar1, ar2 = _flat(ar1), _flat(ar2)
    both = join.concat([ar1, ar2])
    values = concrete_values("setxor1d", both, "the inputs")
    n1 = ar1.shape[0]
    if assume_unique:
        candidates = np.arange(len(values))
    else:
        candidates = np.concatenate([_first_unique(values[:n1]),
                                     n1 + _first_unique(values[n1:])])
    candidates = candidates[np.argsort(values[candidates], kind="stable")]
    aux = values[candidates]
    flag = np.concatenate(([True], aux[1:] != aux[:-1], [True]))
    return take(both, candidates[flag[1:] & flag[:-1]], 0)


def lexsort(keys, axis=-1):
    """Indices that sort by several keys, the last key first (ties broken by the one
    before, and so on), like ``np.lexsort``; ``keys`` is a sequence of arrays of one
    shape or an array whose first axis runs over the keys.

    Example:
        >>> import engine as en
        >>> surnames, names = en.tensor([2, 1, 2]), en.tensor([0, 5, 1])
        >>> en.lexsort([names, surnames]).tolist()
        [1, 0, 2]
    """
    keys = list(keys) if not isinstance(keys, TensorLike) or keys.ndim else [keys]
    if not keys:
        raise InvalidArgumentError(f"lexsort: needs at least one key{at_user_line()}")
    keys = [as_tensor(k) for k in keys]
    shapes = {tuple(k.shape) for k in keys}
    if len(shapes) != 1:
        raise ShapeError(f"lexsort: all keys must have the same shape, got "
                         f"{sorted(shapes)}{at_user_line()}")
    if axis is None:
        keys, axis = [shape_ops.reshape(k, (-1,)) for k in keys], 0
    if keys[0].ndim == 0:
        return as_tensor(np.int64(0))
    axis = user_axis(axis, keys[0].ndim, "lexsort")
    order = argsort(keys[0], axis=axis)
    for key in keys[1:]:
        step = argsort(take_along_axis(key, order, axis=axis), axis=axis)
        order = take_along_axis(order, step, axis=axis)
    return order


def sort_complex(a):
    """``a`` sorted along its last axis, as complex numbers (by real part, then
    imaginary part), like ``np.sort_complex``: a real input becomes complex128
    (complex64 for 8- and 16-bit integers).

    Example:
        >>> import engine as en
        >>> en.sort_complex(en.tensor([5, 3, 6])).tolist()
        [(3+0j), (5+0j), (6+0j)]
    """
    a = as_tensor(a)
    if a.ndim == 0:
        raise ShapeError(f"sort_complex: needs at least 1 dimension, got a 0-d array"
                         f"{at_user_line()}")
    out = sort(a, axis=-1)
    if a.dtype.kind == "c":
        return out
    return cast(out, dtypes.complex64 if a.dtype.char in "bhBH" else dtypes.complex128)
