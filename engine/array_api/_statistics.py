"""The standard's statistical, searching, sorting, set and utility functions.

``dtype=`` casts before reducing (and the result is that dtype); ``correction``
is numpy's ``ddof``; ``descending`` sorts stay stable (equal elements keep their
order). Functions whose engine op does not exist are not defined.

Example:
    >>> import engine.array_api as xp
    >>> xp.sum(xp.asarray([1, 2, 3], dtype=xp.int8), dtype=xp.int16).dtype
    dtype('int16')
"""
from collections import namedtuple

import engine as _en
from engine import dtypes as _dt

from ._lookup import standard_function

__all__ = ["max", "min", "mean", "sum", "prod", "argmax", "argmin"]


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def max(x, /, *, axis=None, keepdims=False):   # noqa: A001
    """The largest element over ``axis``."""
    return _en.max(x, axis=_axis(axis), keepdims=keepdims)


def min(x, /, *, axis=None, keepdims=False):   # noqa: A001
    """The smallest element over ``axis``."""
    return _en.min(x, axis=_axis(axis), keepdims=keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    """The arithmetic mean over ``axis``."""
    return _en.mean(x, axis=_axis(axis), keepdims=keepdims)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):   # noqa: A001
    """The sum over ``axis``; small integers accumulate in int64 (uint64) unless ``dtype``."""
    return _en.sum(x, axis=_axis(axis), keepdims=keepdims, dtype=dtype)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    """The product over ``axis``; small integers accumulate in int64 (uint64) unless ``dtype``."""
    return _en.prod(x, axis=_axis(axis), keepdims=keepdims, dtype=dtype)


def argmax(x, /, *, axis=None, keepdims=False):
    """The index of the first largest element (flat when ``axis`` is None)."""
    return _en.argmax(x, axis=axis, keepdims=keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    """The index of the first smallest element (flat when ``axis`` is None)."""
    return _en.argmin(x, axis=axis, keepdims=keepdims)


def _optional(name, make):
    fn = standard_function(name)
    if fn is not None:
        globals()[name] = make(fn)
        __all__.append(name)


def _std(fn):
    def std(x, /, *, axis=None, correction=0.0, keepdims=False):
        """The standard deviation over ``axis``, dividing by ``N - correction``."""
        return fn(x, axis=_axis(axis), ddof=correction, keepdims=keepdims)
    return std


def _var(fn):
    def var(x, /, *, axis=None, correction=0.0, keepdims=False):
        """The variance over ``axis``, dividing by ``N - correction``."""
        return fn(x, axis=_axis(axis), ddof=correction, keepdims=keepdims)
    return var


def _cumulative(name):
    def make(fn):
        def f(x, /, *, axis=None, dtype=None, include_initial=False):
            if axis is None:
                if x.ndim > 1:
                    raise _en.ShapeError(f"{name}: axis is required for a {x.ndim}-d input")
                axis = 0
            if dtype is not None and _dt.as_dtype(dtype) != x.dtype:
                x = _en.cast(x, _dt.as_dtype(dtype))
            out = fn(x, axis=axis)
            if dtype is not None and out.dtype != _dt.as_dtype(dtype):
                out = _en.cast(out, _dt.as_dtype(dtype))
            if include_initial:
                shape = list(out.shape)
                shape[axis] = 1
                start = 0 if name == "cumulative_sum" else 1
                out = _en.concat([_en.full(tuple(shape), start, dtype=out.dtype), out], axis=axis)
            return out
        f.__name__ = f.__qualname__ = name
        f.__doc__ = (f"The running {'sum' if 'sum' in name else 'product'} along ``axis``; "
                     "``include_initial`` puts the empty one first.")
        return f
    return make


def _all(fn):
    def all(x, /, *, axis=None, keepdims=False):   # noqa: A001
        """Whether every element over ``axis`` is true (nonzero)."""
        return fn(x, axis=_axis(axis), keepdims=keepdims)
    return all


def _any(fn):
    def any(x, /, *, axis=None, keepdims=False):   # noqa: A001
        """Whether some element over ``axis`` is true (nonzero)."""
        return fn(x, axis=_axis(axis), keepdims=keepdims)
    return any


def _diff(fn):
    def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
        """The ``n``-th discrete difference along ``axis``."""
        parts = [p for p in (prepend, x, append) if p is not None]
        if len(parts) > 1:
            x = _en.concat(parts, axis=axis)
        return fn(x, n=n, axis=axis)
    return diff


def _count_nonzero(fn):
    def count_nonzero(x, /, *, axis=None, keepdims=False):
        """The number of nonzero elements over ``axis`` (int64)."""
        return fn(x, axis=_axis(axis), keepdims=keepdims)
    return count_nonzero


def _nonzero(fn):
    def nonzero(x, /):
        """The indices of the nonzero elements, one int64 array per axis."""
        if x.ndim == 0:
            raise _en.ShapeError("nonzero: a 0-d input has no indices (the standard refuses it)")
        return tuple(fn(x))
    return nonzero


def _searchsorted(fn):
    def searchsorted(x1, x2, /, *, side="left", sorter=None):
        """Where the elements of ``x2`` go in the sorted 1-d ``x1`` to keep it sorted."""
        return fn(x1, x2, side=side, sorter=sorter)
    return searchsorted


def _sort(fn):
    def sort(x, /, *, axis=-1, descending=False, stable=True):
        """``x`` sorted along ``axis``."""
        out = fn(x, axis=axis)
        return _en.flip(out, axis=axis) if descending else out
    return sort


def _argsort(fn):
    def argsort(x, /, *, axis=-1, descending=False, stable=True):
        """The indices that sort ``x`` along ``axis``; stable, also when descending
        (the last of equal elements must not come first)."""
        if not descending:
            return fn(x, axis=axis)
        n = x.shape[axis]
        flipped = fn(_en.flip(x, axis=axis), axis=axis)
        return (n - 1) - _en.flip(flipped, axis=axis)
    return argsort


UniqueAll = namedtuple("UniqueAll", "values indices inverse_indices counts")
UniqueCounts = namedtuple("UniqueCounts", "values counts")
UniqueInverse = namedtuple("UniqueInverse", "values inverse_indices")


def _unique_all(fn):
    def unique_all(x, /):
        """Unique values, first indices, inverse indices (shaped like ``x``) and counts."""
        values, indices, inverse, counts = fn(x, return_index=True, return_inverse=True,
                                              return_counts=True, equal_nan=False)
        return UniqueAll(values, indices, _en.reshape(inverse, x.shape), counts)
    return unique_all


def _unique_counts(fn):
    def unique_counts(x, /):
        """Unique values and how often each occurs."""
        return UniqueCounts(*fn(x, return_counts=True, equal_nan=False))
    return unique_counts


def _unique_inverse(fn):
    def unique_inverse(x, /):
        """Unique values and the inverse indices (shaped like ``x``)."""
        values, inverse = fn(x, return_inverse=True, equal_nan=False)
        return UniqueInverse(values, _en.reshape(inverse, x.shape))
    return unique_inverse


def _unique_values(fn):
    def unique_values(x, /):
        """The unique values of ``x`` (every NaN counts once)."""
        return fn(x, equal_nan=False)
    return unique_values


for _name, _make in (
        ("std", _std), ("var", _var),
        ("cumulative_sum", _cumulative("cumulative_sum")),
        ("cumulative_prod", _cumulative("cumulative_prod")),
        ("all", _all), ("any", _any), ("diff", _diff), ("count_nonzero", _count_nonzero),
        ("nonzero", _nonzero), ("searchsorted", _searchsorted), ("sort", _sort),
        ("argsort", _argsort), ("unique_all", _unique_all),
        ("unique_counts", _unique_counts), ("unique_inverse", _unique_inverse),
        ("unique_values", _unique_values)):
    _optional(_name, _make)
