"""Counting into bins as composites: ``bincount``, ``digitize``, ``histogram_bin_edges``,
``histogram``, ``histogram2d`` and ``histogramdd``, numpy's.

A value's bin is found with ``searchsorted`` against the edges, and the counts (or
the summed weights) are a ``scatter_add`` into a row of zeros, so the counts
differentiate with respect to ``weights`` and everything traces where the number of
bins is known. Edges computed from the data (``bins`` an int, no ``range``) are
engine ops of the data's min and max, so they trace too. Two things depend on the
values themselves and are computed eagerly: ``bincount``'s length without
``length=`` (numpy's ``max(x) + 1``) and numpy's estimators for ``bins`` given as a
string ("auto", "fd", ...); inside a traced function they raise a
:class:`TracingError` that says what to pass instead.

Example:
    >>> import engine as en
    >>> counts, edges = en.histogram(en.tensor([0.0, 0.5, 1.0, 3.0]), bins=3)
    >>> counts.tolist(), edges.tolist()
    ([2, 1, 1], [0.0, 1.0, 2.0, 3.0])
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidArgumentError, ShapeError, TracingError
from ..lifting import TensorLike
from ..modes import current_mode
from . import compare, creation, indexing, join, numpy_names, reduce, shape_ops, sorting
from ._args import at_user_line
from .cumulative import as_tensor, diff
from .constants import constant_like

__all__ = ["bincount", "digitize", "histogram_bin_edges", "histogram", "histogram2d",
           "histogramdd"]


def _constant(like, array):
    return constant_like(like, array)


def _concrete(name, what):
    if not current_mode().is_concrete:
        raise TracingError(f"{name}: {what} depends on the values, which are not known while "
                           f"tracing{at_user_line()}")


# ---- bincount and digitize -----------------------------------------------------------------
def bincount(x, weights=None, minlength=0, *, length=None):
    """How many times each non-negative integer occurs in the 1-D ``x`` (the sum of the
    ``weights`` at its places when given, in float64), like ``np.bincount``: the result
    has ``max(x) + 1`` entries, at least ``minlength``. ``length`` (JAX's keyword)
    fixes the number of entries, values past it are dropped; it is what makes
    ``bincount`` traceable. The counts differentiate with respect to ``weights``.

    Example:
        >>> import engine as en
        >>> en.bincount(en.tensor([0, 1, 1, 3])).tolist()
        [1, 2, 0, 1]
    """
    x = as_tensor(x)
    if x.ndim != 1:
        raise ShapeError(f"bincount: x must be 1-D, got shape {tuple(x.shape)}{at_user_line()}")
    if x.dtype not in dtypes.INTS | {dtypes.bool_}:
        raise DTypeError(f"bincount: x must hold integers, got {x.dtype}{at_user_line()}")
    if minlength is None or int(minlength) < 0:
        raise InvalidArgumentError(f"bincount: minlength must be non-negative, got "
                                   f"{minlength!r}{at_user_line()}")
    if current_mode().is_concrete and x.shape[0]:
        if int(reduce.min(x)) < 0:
            raise InvalidArgumentError(f"bincount: x must be non-negative{at_user_line()}")
    if length is None:
        if current_mode().is_concrete:
            length = max(int(reduce.max(x)) + 1 if x.shape[0] else 0, int(minlength))
        else:
            raise TracingError(f"bincount: the length of the result is max(x) + 1, which "
                               f"depends on the values of x, not known while tracing; pass "
                               f"length= (a static bound){at_user_line()}")
    length = int(length)
    if weights is None:
        updates = creation.cast(creation.ones_like(x), dtypes.int64)
    else:
        updates = creation.cast(as_tensor(weights), dtypes.float64)
        if tuple(updates.shape) != tuple(x.shape):
            raise ShapeError(f"bincount: weights of shape {tuple(updates.shape)} must match "
                             f"x's {tuple(x.shape)}{at_user_line()}")
    index = creation.cast(x, dtypes.int64)
    index = compare.where(compare.less(index, length), index, length)   # past it: dropped
    zeros = _zeros_like_backend(x, length + 1, np.dtype(updates.dtype))
    return indexing.scatter_add(zeros, index, updates)[:length]


def _zeros_like_backend(x, n, dtype):
    return _constant(x, np.zeros((n,), dtype=dtype))


def digitize(x, bins, right=False):
    """The index of the bin of ``bins`` each value of ``x`` falls in, like
    ``np.digitize``: ``bins[i-1] <= x < bins[i]`` (``<`` and ``<=`` swapped when
    ``right``), for increasing or decreasing ``bins``.

    Example:
        >>> import engine as en
        >>> en.digitize(en.tensor([0.5, 1.0, 2.5]), en.tensor([1.0, 2.0, 3.0])).tolist()
        [0, 1, 2]
    """
    x, bins = as_tensor(x), as_tensor(bins)
    if bins.ndim != 1:
        raise ShapeError(f"digitize: bins must be 1-D, got shape {tuple(bins.shape)}"
                         f"{at_user_line()}")
    n = bins.shape[0]
    steps = diff(bins) if n > 1 else None
    increasing = numpy_names.all(compare.greater_equal(steps, 0)) if steps is not None else True
    if steps is not None and current_mode().is_concrete:
        if not (bool(increasing) or bool(numpy_names.all(compare.less_equal(steps, 0)))):
            raise InvalidArgumentError(f"digitize: bins must be monotonically increasing or "
                                       f"decreasing{at_user_line()}")
    flat = shape_ops.reshape(x, (-1,))
    up = sorting.searchsorted(bins, flat, side="left" if right else "right")
    if steps is None:
        out = up
    else:
        down = n - sorting.searchsorted(shape_ops.reshape(bins[::-1], (n,)), flat,
                                        side="right" if right else "left")
        out = compare.where(increasing, up, down)
    return shape_ops.reshape(out, tuple(x.shape))


# ---- edges ---------------------------------------------------------------------------------
def _outer_edges(a, range_, name):
    """numpy's ``_get_outer_edges``: the range, else the data's min and max, widened by
    a half on both sides when they are equal."""
    if range_ is not None:
        first, last = range_
        first, last = float(first), float(last)
        if first > last:
            raise InvalidArgumentError(f"{name}: max must be larger than min in range "
                                       f"parameter, got {range_}{at_user_line()}")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise InvalidArgumentError(f"{name}: supplied range of [{first}, {last}] is not "
                                       f"finite{at_user_line()}")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last
    if a.size == 0:
        return 0.0, 1.0
    first, last = reduce.min(a), reduce.max(a)
    if current_mode().is_concrete:
        lo, hi = float(first), float(last)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise InvalidArgumentError(f"{name}: autodetected range of [{lo}, {hi}] is not "
                                       f"finite{at_user_line()}")
    same = compare.equal(first, last)
    return compare.where(same, first - 0.5, first), compare.where(same, last + 0.5, last)


def _linspace_edges(a, first, last, n, dtype):
    """``np.linspace(first, last, n + 1)``: ``k * step + first``, the last edge exact."""
    k = _constant(a, np.arange(n + 1, dtype=dtype))
    if isinstance(first, TensorLike):
        first, last = creation.cast(first, dtype), creation.cast(last, dtype)
    edges = k * ((last - first) / n) + first
    last_edge = shape_ops.reshape(last, (1,)) if isinstance(last, TensorLike) else \
        _constant(a, np.asarray([last], dtype=dtype))
    return join.concat([edges[:n], creation.cast(last_edge, dtype)], axis=0)


def _edge_dtype(a):
    return a.dtype if a.dtype in dtypes.FLOATS else dtypes.float64


def _bin_edges(a, bins, range_, weights, name):
    """The edges (a 1-D tensor) and whether they are uniform."""
    if isinstance(bins, str):
        _concrete(name, f"bins={bins!r} (numpy's estimator of the bin width)")
        w = None if weights is None else np.asarray(as_tensor(weights).numpy())
        found = np.histogram_bin_edges(np.asarray(a.numpy()), bins, range_, w)
        return _constant(a, found.astype(np.dtype(_edge_dtype(a)))), True
    if _is_count(bins):
        if int(bins) != bins or int(bins) < 1:
            raise InvalidArgumentError(f"{name}: bins must be a positive integer, got "
                                       f"{bins!r}{at_user_line()}")
        first, last = _outer_edges(a, range_, name)
        return _linspace_edges(a, first, last, int(bins), _edge_dtype(a)), True
    # edges given as data (a list, a numpy array) live where the values do
    edges = bins if isinstance(bins, TensorLike) else _constant(a, np.asarray(bins))
    if edges.ndim != 1:
        raise ShapeError(f"{name}: bins must be an int, a string or a 1-D sequence of "
                         f"edges, got shape {tuple(edges.shape)}{at_user_line()}")
    if current_mode().is_concrete and edges.shape[0] > 1 and \
            bool(numpy_names.any(compare.less(diff(edges), 0))):
        raise InvalidArgumentError(f"{name}: bins must increase monotonically"
                                   f"{at_user_line()}")
    return edges, False


def _is_count(bins):
    return isinstance(bins, (int, float, np.number)) or (
        isinstance(bins, np.ndarray) and bins.ndim == 0)


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002  (numpy's name)
    """The bin edges :func:`histogram` uses (``np.histogram_bin_edges``).

    Example:
        >>> import engine as en
        >>> en.histogram_bin_edges(en.tensor([1.0, 2.0, 5.0]), bins=2).tolist()
        [1.0, 3.0, 5.0]
    """
    a = shape_ops.reshape(as_tensor(a), (-1,))
    return _bin_edges(a, bins, range, weights, "histogram_bin_edges")[0]


def _count(index, n, weights, like):
    """``bincount`` of ``index`` over ``n`` bins, index ``n`` being dropped."""
    if weights is None:
        updates = creation.cast(creation.ones_like(index), dtypes.int64)
    else:
        updates = weights
    zeros = _zeros_like_backend(like, n + 1, np.dtype(updates.dtype))
    return indexing.scatter_add(zeros, index, updates)[:n]


def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The counts of ``a``'s values (flattened) in ``bins`` and the bin edges, like
    ``np.histogram``: every bin is half-open but the last, which holds its right edge;
    values outside the edges are not counted. ``bins`` is a count of equal bins over
    ``range`` (the data's min and max when None), the edges, or one of numpy's
    estimator names ("auto", "fd", "sturges", ... -- computed eagerly). ``weights``
    sum instead of counting (their dtype); ``density`` divides by the total and the
    widths.

    Example:
        >>> import engine as en
        >>> en.histogram(en.tensor([1, 2, 2, 4]), bins=[0, 2, 4])[0].tolist()
        [1, 3]
    """
    a = shape_ops.reshape(as_tensor(a), (-1,))
    w = None
    if weights is not None:
        w = shape_ops.reshape(as_tensor(weights), (-1,))
        if w.shape[0] != a.shape[0]:
            raise ShapeError(f"histogram: weights should have the same shape as a, got "
                             f"{tuple(as_tensor(weights).shape)}{at_user_line()}")
    edges, _ = _bin_edges(a, bins, range, weights, "histogram")
    n = edges.shape[0] - 1
    values = creation.cast(a, edges.dtype) if a.dtype != edges.dtype else a
    index = sorting.searchsorted(edges, values, side="right") - 1
    last = edges[n:]
    index = compare.where(compare.equal(values, last), n - 1, index)
    inside = compare.logical_and(compare.greater_equal(values, edges[:1]),
                                 compare.less_equal(values, last))
    counts = _count(compare.where(inside, index, n), n, w, a)
    if density:
        counts = creation.cast(counts, dtypes.float64) if counts.dtype not in \
            dtypes.INEXACT else counts
        counts = counts / creation.cast(diff(edges), counts.dtype) / reduce.sum(counts)
    return counts, edges


def _sample_columns(sample):
    if isinstance(sample, (list, tuple)):
        return [shape_ops.reshape(as_tensor(s), (-1,)) for s in sample]
    s = as_tensor(sample)
    if s.ndim == 1:
        return [s]
    if s.ndim != 2:
        raise ShapeError(f"histogramdd: sample must be (N, D) or a sequence of D arrays, got "
                         f"shape {tuple(s.shape)}{at_user_line()}")
    return [s[:, i] for i in range(s.shape[1])]


def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The multidimensional histogram of ``sample`` (N points of D coordinates, or D
    1-D arrays), like ``np.histogramdd``: ``(counts, [edges per dimension])``, the
    counts in float64. ``bins`` is one int for every dimension, or one int or edge
    array per dimension; ``range`` one ``(min, max)`` per dimension.

    Example:
        >>> import engine as en
        >>> h, edges = en.histogramdd(en.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0]]), bins=2)
        >>> h.tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    cols = _sample_columns(sample)
    d = len(cols)
    per_dim = [bins] * d if _is_count(bins) else list(bins)
    if len(per_dim) != d:
        raise ShapeError(f"histogramdd: the dimension of bins ({len(per_dim)}) must equal the "
                         f"dimension of the sample ({d}){at_user_line()}")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ShapeError(f"histogramdd: range needs one (min, max) per dimension ({d}), got "
                         f"{len(ranges)}{at_user_line()}")
    w = None if weights is None else creation.cast(
        shape_ops.reshape(as_tensor(weights), (-1,)), dtypes.float64)
    edges, flat, sizes = [], None, []
    for col, b, r in zip(cols, per_dim, ranges):
        if isinstance(b, str):
            raise InvalidArgumentError(f"histogramdd: bins must be ints or edges, got "
                                       f"{b!r}{at_user_line()}")
        e, _ = _bin_edges(col, b, r, None, "histogramdd")
        if r is not None and _is_count(b):
            e = creation.cast(e, dtypes.float64)   # numpy's linspace of the Python range
        edges.append(e)
        n = e.shape[0] - 1
        values, e64 = creation.cast(col, dtypes.float64), creation.cast(e, dtypes.float64)
        index = sorting.searchsorted(e64, values, side="right")   # 0: below, n + 1: above
        index = compare.where(compare.equal(values, e64[n:]), index - 1, index)
        flat = index if flat is None else flat * (n + 2) + index
        sizes.append(n + 2)
    total = int(np.prod(sizes))
    counts = _count(flat, total, w, cols[0])
    counts = shape_ops.reshape(creation.cast(counts, dtypes.float64), tuple(sizes))
    counts = counts[tuple(slice(1, -1) for _ in sizes)]
    if density:
        volume = None
        for k, e in enumerate(edges):
            shape = [1] * d
            shape[k] = e.shape[0] - 1
            width = shape_ops.reshape(diff(e), tuple(shape))
            volume = width if volume is None else volume * width
        counts = counts / reduce.sum(counts) / volume
    return counts, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The 2-D histogram of the points ``(x, y)`` (``np.histogram2d``):
    ``(counts, x_edges, y_edges)``; see :func:`histogramdd`.

    Example:
        >>> import engine as en
        >>> h, xe, ye = en.histogram2d(en.tensor([0.0, 1.0]), en.tensor([0.0, 1.0]), bins=2)
        >>> h.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):   # numpy's rule: one edge array for both
        bins = [bins, bins]
    counts, (xe, ye) = histogramdd([x, y], bins, range, density, weights)
    return counts, xe, ye

