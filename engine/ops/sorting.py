"""Sorting and searching: ``sort``, ``argsort`` (stable, ascending or descending),
``searchsorted``, and the ops whose result size depends on the data, ``nonzero`` and
``unique``, with the composites ``count_nonzero``, ``argwhere``, ``flatnonzero`` and the
Array API's ``unique_all`` / ``unique_counts`` / ``unique_inverse`` / ``unique_values``.

``nonzero`` and ``unique`` are ops with a static ``size`` param (the length of the
result: padded with a fill value or cut). Eagerly the public functions count the
result first when ``size`` is not given; while tracing the count is not known, so
they raise :class:`TracingError` unless ``size=`` is given, as ``jax.numpy`` does.

Example:
    >>> import engine as en
    >>> en.sort(en.tensor([3, 1, 2])).numpy()
    array([1, 2, 3])
    >>> [i.numpy().tolist() for i in en.nonzero(en.tensor([0, 5, 0, 7]))]
    [[1, 3]]
"""
import numpy as np

from .. import dtypes
from ..names import also_named as _also_named
from ..errors import (ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError,
                      TracingError, describe_inputs)
from ..modes import apply, current_mode
from ..op import Op, declare, register
from ..shapes import normalize_axis
from . import _rules, compare, creation, indexing, join, reduce, shape_ops
from ._args import at_user_line
from .cumulative import as_tensor, scatter_along, take_along, user_axes, user_axis

_SORTABLE = dtypes.ALL


def _check_sortable(name, x):
    if x[1] not in _SORTABLE:
        raise DTypeError(f"{name}: expected a real input, got {describe_inputs([x])}")


# ---- sort / argsort -------------------------------------------------------------------------
def _sort_eval(x, *, axis, descending):
    _check_sortable("sort", x)
    if not x[0]:
        raise ShapeError(f"sort: a 0-d input {describe_inputs([x])} has no axis to sort")
    normalize_axis(axis, len(x[0]), "sort")
    return x


def _sort_impl(x, *, axis, descending):
    out = np.sort(x, axis=axis, kind="stable")
    return np.flip(out, axis) if descending else out


def _argsort_values(x, axis, descending):
    """Stable ascending, or stable descending (equal values keep their order)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - flipped, axis)


def _sort_vjp(g, out, x, *, axis, descending):
    order = apply(argsort_op, x, axis=axis, descending=descending)
    return (scatter_along(creation.zeros_like(x), order, g, axis),)


def _real(be, x):
    """The standard sorts real numbers only: bools as int32 (False < True)."""
    return be.astype(x, dtypes.int32) if be.dtype_of(x) == dtypes.bool_ else x


def _sort_generic(be, x, *, axis, descending):
    out = be.xp.sort(_real(be, x), axis=axis, descending=descending, stable=True)
    return be.astype(out, dtypes.bool_) if be.dtype_of(x) == dtypes.bool_ else out


sort_op = register(Op("sort", _sort_impl, _sort_eval, _sort_vjp, n_inputs=1, dtypes=_SORTABLE,
                      generic=_sort_generic,
                      doc="Values sorted along ``axis`` (stable; largest first if descending)."))
declare(sort_op, onnx=("TopK", 0))


def _argsort_eval(x, *, axis, descending):
    _check_sortable("argsort", x)
    if not x[0]:
        raise ShapeError(f"argsort: a 0-d input {describe_inputs([x])} has no axis to sort")
    normalize_axis(axis, len(x[0]), "argsort")
    return (x[0], dtypes.int64)


def _argsort_impl(x, *, axis, descending):
    return _argsort_values(x, axis, descending).astype(np.int64, copy=False)


def _argsort_generic(be, x, *, axis, descending):
    return be.astype(be.xp.argsort(_real(be, x), axis=axis, descending=descending, stable=True),
                     dtypes.int64)


argsort_op = register(Op("argsort", _argsort_impl, _argsort_eval, None, n_inputs=1,
                         dtypes=_SORTABLE, generic=_argsort_generic,
                         doc="The indices that sort along ``axis`` (stable)."))
declare(argsort_op, onnx=("TopK", 1))


# numpy's kind= names; each gets the engine's stable sort, a valid result for every kind
# (numpy leaves the order of equal elements unspecified for the others).
_NUMPY_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _sort_flags(name, descending, kind, order):
    """``descending`` as a bool, refusing what numpy's positional ``kind`` would put there
    (``np.sort(x, -1, "quicksort")`` spelt ``en.sort(x, -1, "quicksort")`` must not sort
    descending), a ``kind`` numpy does not know and numpy's ``order`` (structured arrays)."""
    if not isinstance(descending, (bool, np.bool_)):
        raise ArgumentTypeError(
            f"{name}: descending must be True or False, got {descending!r} (numpy's third "
            f"argument is kind=: pass it by keyword){at_user_line()}")
    if kind not in _NUMPY_KINDS:
        raise InvalidArgumentError(
            f"{name}: kind must be one of {', '.join(map(repr, _NUMPY_KINDS[1:]))}, got "
            f"{kind!r}{at_user_line()}")
    if order is not None:
        raise ArgumentTypeError(f"{name}: order= sorts numpy's structured arrays, which "
                                f"tensors are not; got order={order!r}{at_user_line()}")
    return bool(descending)


def _sort_args(name, x, axis):
    x = as_tensor(x)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    return x, user_axis(axis, x.ndim, name) if x.ndim else axis


def sort(x, axis=-1, descending=False, stable=True, *, kind=None, order=None):
    """``x`` sorted along ``axis`` (the flattened input when None), like ``np.sort``;
    ``descending`` puts the largest first. The sort is always stable, so
    ``stable=False`` (the Array API's hint) and numpy's ``kind`` change nothing. The
    gradient sends each cotangent back to the element that landed there.

    Example:
        >>> import engine as en
        >>> en.sort(en.tensor([[3.0, 1.0], [0.0, 2.0]]), axis=0).numpy()
        array([[0., 1.],
               [3., 2.]])
    """
    descending = _sort_flags("sort", descending, kind, order)
    x, axis = _sort_args("sort", x, axis)
    return apply(sort_op, x, axis=axis, descending=descending)


def argsort(x, axis=-1, descending=False, stable=True, *, kind=None, order=None):
    """The indices that sort ``x`` along ``axis`` (stable: equal values keep their
    order, also when ``descending``), like ``np.argsort(kind="stable")``; numpy's other
    kinds get the same stable order.

    Example:
        >>> import engine as en
        >>> en.argsort(en.tensor([2, 1, 2, 0]), descending=True).numpy()
        array([0, 2, 1, 3])
    """
    descending = _sort_flags("argsort", descending, kind, order)
    x, axis = _sort_args("argsort", x, axis)
    return apply(argsort_op, x, axis=axis, descending=descending)


# ---- searchsorted ---------------------------------------------------------------------------
def _searchsorted_eval(a, v, *, side):
    if a[1] not in _SORTABLE or v[1] not in _SORTABLE:
        raise DTypeError(f"searchsorted: expected real inputs, got {describe_inputs([a, v])}")
    if len(a[0]) != 1:
        raise ShapeError(f"searchsorted: the sorted array must be 1-D, got "
                         f"{describe_inputs([a, v])}")
    if side not in ("left", "right"):
        raise ShapeError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return (v[0], dtypes.int64)


def _searchsorted_impl(a, v, *, side):
    return np.asarray(np.searchsorted(a, v, side=side), dtype=np.int64)


def _searchsorted_generic(be, a, v, *, side):
    a, v = be.promote(_real(be, a), _real(be, v))
    if v.ndim == 0:   # the standard searches arrays
        out = be.xp.searchsorted(a, be.xp.reshape(v, (1,)), side=side)
        return be.astype(be.xp.reshape(out, ()), dtypes.int64)
    return be.astype(be.xp.searchsorted(a, v, side=side), dtypes.int64)


searchsorted_op = register(Op("searchsorted", _searchsorted_impl, _searchsorted_eval, None,
                              n_inputs=2, dtypes=_SORTABLE, generic=_searchsorted_generic,
                              doc="Where ``v`` would go in the sorted 1-D ``a``."))
declare(searchsorted_op, onnx=None)


def searchsorted(a, v, side="left", sorter=None):
    """Indices at which the values ``v`` would be inserted into the sorted 1-D ``a`` to
    keep it sorted, like ``np.searchsorted`` (``sorter``: the indices that sort ``a``).

    Example:
        >>> import engine as en
        >>> en.searchsorted(en.tensor([1, 3, 5]), en.tensor([0, 3, 6]), side="right").numpy()
        array([0, 2, 3])
    """
    if sorter is not None:
        a = indexing.getitem(as_tensor(a), sorter if not isinstance(sorter, list)
                             else np.asarray(sorter, dtype=np.int64))
    return apply(searchsorted_op, a, v, side=side)


# ---- nonzero --------------------------------------------------------------------------------
def _static_size(name, size):
    try:
        size = int(size)
    except TypeError:
        raise ShapeError(f"{name}: size must be an int, got {size!r}") from None
    if size < 0:
        raise ShapeError(f"{name}: size must be non-negative, got {size}")
    return size


def _nonzero_eval(x, *, size, fill_value):
    if not x[0]:
        raise ShapeError(f"nonzero: a 0-d input {describe_inputs([x])} has no positions; "
                         "use en.atleast_1d or reshape it to (1,)")
    return tuple(((size,), dtypes.int64) for _ in x[0])


def _fit(values, size, fill):
    """``values`` (1-D) cut or padded with ``fill`` to ``size``."""
    if len(values) >= size:
        return np.ascontiguousarray(values[:size])
    return np.concatenate([values, np.full(size - len(values), fill, dtype=values.dtype)])


def _nonzero_impl(x, *, size, fill_value):
    return tuple(_fit(np.asarray(i, dtype=np.int64), size, fill_value) for i in np.nonzero(x))


def _fit_generic(be, values, size, fill):
    xp = be.xp
    n = values.shape[0]
    if n >= size:
        return values[:size]
    return xp.concat([values, xp.full((size - n,), fill, dtype=values.dtype)])


def _nonzero_generic(be, x, *, size, fill_value):
    return tuple(_fit_generic(be, be.astype(i, dtypes.int64), size, fill_value)
                 for i in be.xp.nonzero(x))


nonzero_op = register(Op("nonzero", _nonzero_impl, _nonzero_eval, None, multiple_results=True,
                         n_inputs=1, dtypes=dtypes.ALL, generic=_nonzero_generic,
                         doc="Indices of the non-zero elements, one array per dimension, "
                             "cut or padded to ``size``."))
declare(nonzero_op, onnx=("NonZero",))


def _concrete_count(name, x, count):
    """``count(x)`` as a Python int where values exist; a TracingError while tracing."""
    if not current_mode().is_concrete:
        raise TracingError(
            f"{name}: the size of the result depends on the values of "
            f"{getattr(x, '_describe', lambda: repr(x))()}, which are not known while tracing; "
            f"pass size= (a static bound; the result is padded with fill_value) or compute it "
            f"eagerly{at_user_line()}")
    return int(count(x))


def nonzero(x, size=None, fill_value=0):
    """The indices of the non-zero elements of ``x``, a tuple of one int64 tensor per
    dimension, like ``np.nonzero``. With ``size`` the tensors have exactly that length
    (cut, or padded with ``fill_value``), which is what makes it traceable.

    Example:
        >>> import engine as en
        >>> rows, cols = en.nonzero(en.tensor([[0, 1], [2, 0]]), size=3, fill_value=-1)
        >>> rows.numpy(), cols.numpy()
        (array([ 0,  1, -1]), array([ 1,  0, -1]))
    """
    return _nonzero(x, size, fill_value, "nonzero")


def _nonzero(x, size, fill_value, name):
    x = as_tensor(x)
    if size is None:
        size = _concrete_count(name, x, count_nonzero)
    return apply(nonzero_op, x, size=_static_size(name, size), fill_value=int(fill_value))


def flatnonzero(x, size=None, fill_value=0):
    """Indices of the non-zero elements of the flattened ``x`` (``np.flatnonzero``)."""
    return _nonzero(shape_ops.reshape(as_tensor(x), (-1,)), size, fill_value, "flatnonzero")[0]


def argwhere(x, size=None, fill_value=0):
    """The indices of the non-zero elements as rows, shape ``(n, x.ndim)`` (``np.argwhere``;
    a 0-d input gives ``(1, 0)`` when non-zero and ``(0, 0)`` when zero, as numpy's).

    Example:
        >>> import engine as en
        >>> en.argwhere(en.tensor([[0, 1], [2, 0]])).numpy()
        array([[0, 1],
               [1, 0]])
    """
    x = as_tensor(x)
    if x.ndim == 0:
        # numpy: the rows of the one-element vector, without its (one) column
        return argwhere(shape_ops.reshape(x, (1,)), size, fill_value)[:, :0]
    return join.stack(list(_nonzero(x, size, fill_value, "argwhere")), axis=1)


def count_nonzero(x, axis=None, keepdims=False):
    """The number of non-zero elements over ``axis`` (all when None), int64, like
    ``np.count_nonzero``.

    Example:
        >>> import engine as en
        >>> int(en.count_nonzero(en.tensor([[0, 1], [2, 3]])))
        3
    """
    x = as_tensor(x)
    if axis is not None:
        axis = user_axes(axis, x.ndim, "count_nonzero")
    return reduce.sum(creation.cast(compare.not_equal(x, 0), dtypes.int64), axis=axis,
                      keepdims=keepdims)


# ---- unique ---------------------------------------------------------------------------------
def _unique_eval(x, *, size, fill_value, equal_nan):
    return (((size,), x[1]), ((size,), dtypes.int64), (x[0], dtypes.int64),
            ((size,), dtypes.int64))


def _unique_impl(x, *, size, fill_value, equal_nan):
    values, index, inverse, counts = np.unique(x.reshape(-1), return_index=True,
                                               return_inverse=True, return_counts=True,
                                               equal_nan=equal_nan)
    fill = fill_value if fill_value is not None else (values[0] if len(values) else 0)
    return (_fit(values, size, np.asarray(fill).astype(x.dtype)),
            _fit(index.astype(np.int64), size, 0),
            np.asarray(inverse, dtype=np.int64).reshape(x.shape),
            _fit(counts.astype(np.int64), size, 0))


def _unique_generic(be, x, *, size, fill_value, equal_nan):
    xp = be.xp
    flat = xp.reshape(x, (-1,))
    values, index, inverse, counts = xp.unique_all(flat)
    if fill_value is not None:
        fill = np.asarray(fill_value)
    else:
        fill = be.to_numpy(values[0]) if values.shape[0] else np.asarray(0)
    fill = fill.astype(be.dtype_of(x)).item()
    return (_fit_generic(be, values, size, fill),
            _fit_generic(be, be.astype(index, dtypes.int64), size, 0),
            xp.reshape(be.astype(inverse, dtypes.int64), tuple(x.shape)),
            _fit_generic(be, be.astype(counts, dtypes.int64), size, 0))


unique_op = register(Op("unique", _unique_impl, _unique_eval, None, multiple_results=True,
                        n_inputs=1, dtypes=dtypes.ALL, generic=_unique_generic,
                        doc="Sorted unique values of the flattened input with their first "
                            "indices, the inverse and the counts, cut or padded to ``size``."))
declare(unique_op, onnx=None)


def _unique_all(x, size, fill_value, equal_nan=True):
    x = as_tensor(x)
    if size is None:
        size = _concrete_count("unique", x, lambda t: len(np.unique(
            np.asarray(t.numpy()).reshape(-1), equal_nan=equal_nan)))
    return apply(unique_op, x, size=_static_size("unique", size),
                 fill_value=None if fill_value is None else fill_value.item()
                 if hasattr(fill_value, "item") else fill_value, equal_nan=bool(equal_nan))


def unique(x, return_index=False, return_inverse=False, return_counts=False, axis=None,
           equal_nan=True, size=None, fill_value=None):
    """The sorted unique values of ``x`` (flattened), like ``np.unique``, and optionally the
    index of each one's first occurrence, the inverse (``values[inverse]`` is ``x``, in
    ``x``'s shape) and the counts. ``size`` fixes the number of values (padded with
    ``fill_value``, by default the smallest value; indices and counts with 0), which
    makes it traceable.

    Example:
        >>> import engine as en
        >>> values, counts = en.unique(en.tensor([3, 1, 3]), return_counts=True)
        >>> values.numpy(), counts.numpy()
        (array([1, 3]), array([1, 2]))
    """
    if axis is not None:
        raise ShapeError("unique: axis= is not supported; the input is flattened")
    values, index, inverse, counts = _unique_all(x, size, fill_value, equal_nan)
    extra = [t for flag, t in [(return_index, index), (return_inverse, inverse),
                               (return_counts, counts)] if flag]
    return tuple([values] + extra) if extra else values


_also_named(unique, array_api=("unique_all", "unique_counts", "unique_inverse", "unique_values"))


def unique_all(x, size=None, fill_value=None):
    """``(values, indices, inverse_indices, counts)``, the Array API's ``unique_all``
    (numpy's ``np.unique_all``; NaNs count as distinct)."""
    return _unique_all(x, size, fill_value, equal_nan=False)


def unique_counts(x, size=None, fill_value=None):
    """``(values, counts)``, the Array API's ``unique_counts``."""
    values, _, _, counts = _unique_all(x, size, fill_value, equal_nan=False)
    return values, counts


def unique_inverse(x, size=None, fill_value=None):
    """``(values, inverse_indices)``, the Array API's ``unique_inverse``."""
    values, _, inverse, _ = _unique_all(x, size, fill_value, equal_nan=False)
    return values, inverse


def unique_values(x, size=None, fill_value=None):
    """The sorted unique values, the Array API's ``unique_values``."""
    return _unique_all(x, size, fill_value, equal_nan=False)[0]


__all__ = ["sort", "sort_op", "argsort", "argsort_op", "searchsorted", "searchsorted_op",
           "nonzero", "nonzero_op", "flatnonzero", "argwhere", "count_nonzero", "unique",
           "unique_op", "unique_all", "unique_counts", "unique_inverse", "unique_values"]


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
def _sort_jvp(primals, tangents, out, *, axis, descending):
    # Sorting permutes: the tangent is permuted the same way (stable, so ties as the VJP).
    (x,), (t,) = primals, tangents
    order = apply(argsort_op, x, axis=axis, descending=descending)
    return take_along(t, order, axis % x.ndim)


declare(sort_op, jvp=_sort_jvp)
for _op in (sort_op, argsort_op):
    declare(_op, batch=_rules.batch_with_axis(_op))
