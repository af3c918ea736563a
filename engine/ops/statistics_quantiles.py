"""Order statistics as composites: ``median``, ``quantile``, ``percentile`` and their
NaN-ignoring forms ``nanmedian``, ``nanquantile``, ``nanpercentile``.

The reduced axes go last and are merged into one, the values are sorted along it and
the quantiles are read from the sorted values by index (``take_along_axis``) and
interpolated, with every one of numpy's 13 ``method=`` rules. Sorting sends each
cotangent back to the element that landed at the index, so the gradient of a median
is 1 at the middle element (1/2 at each of the two middle ones), as in PyTorch.

``q`` is read as numbers (a tensor ``q`` must have values: eagerly, or a constant);
the indices then depend only on the shape, so the functions trace like any
composite. The NaN-ignoring forms count the non-NaN values of every slice (NaNs sort
last) and compute the indices from those counts with engine ops.

Example:
    >>> import engine as en
    >>> x = en.tensor([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]])
    >>> en.median(x, axis=1).tolist(), en.quantile(x, 0.25).item()
    ([2.0, 4.0], 2.25)
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidArgumentError, TracingError, describe_inputs
from ..lifting import TensorLike
from ..modes import current_mode
from . import compare, creation, cumulative, elementwise, math_unary, reduce, shape_ops, sorting
from ._args import at_user_line
from .cumulative import as_tensor, user_axes
from .constants import constant_like
from .manipulation import take_along_axis

__all__ = ["median", "quantile", "percentile", "nanmedian", "nanquantile", "nanpercentile"]

# numpy's methods: the continuous ones by Hyndman and Fan's (alpha, beta).
_CONTINUOUS = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5),
               "weibull": (0.0, 0.0), "median_unbiased": (1 / 3.0, 1 / 3.0),
               "normal_unbiased": (3 / 8.0, 3 / 8.0)}
_DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
METHODS = ("linear", "midpoint", "averaged_inverted_cdf") + tuple(_CONTINUOUS) + _DISCRETE


# ---- the input: reduced axes last, merged --------------------------------------------------
def _prepare(a, axis, name):
    """``(x, folded, axes)``: ``folded`` holds the kept axes first and the reduced ones
    merged into the last axis."""
    x = as_tensor(a)
    if x.dtype not in dtypes.REAL | {dtypes.bool_}:
        raise DTypeError(f"{name}: expected a real input, got "
                         f"{describe_inputs([(tuple(x.shape), x.dtype)])}{at_user_line()}")
    axes = user_axes(axis, x.ndim, name)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = shape_ops.transpose(x, tuple(kept + list(axes))) if x.ndim else x
    n = 1
    for i in axes:
        n *= x.shape[i]
    folded = shape_ops.reshape(moved, tuple(x.shape[i] for i in kept) + (n,))
    return x, folded, axes


def _finish(values, x, axes, q_shape, keepdims):
    """``values`` (kept axes..., quantiles) -> numpy's layout: the quantiles' shape first,
    then the kept axes (with ones for the reduced ones under ``keepdims``)."""
    kept_ndim = values.ndim - 1
    values = shape_ops.transpose(values, (kept_ndim,) + tuple(range(kept_ndim)))
    kept = tuple(1 if i in axes else x.shape[i] for i in range(x.ndim)) if keepdims else \
        tuple(x.shape[i] for i in range(x.ndim) if i not in axes)
    return shape_ops.reshape(values, tuple(q_shape) + kept)


def _quantiles(q, name, scale=1.0):
    """``(q as a float array, whether q was a Python number)``; refuses q outside [0, 1]."""
    weak = type(q) in (int, float)
    if isinstance(q, TensorLike):
        if not current_mode().is_concrete:
            raise TracingError(f"{name}: q must be numbers, known when the function is traced; "
                               f"got a traced tensor{at_user_line()}")
        q = q.numpy()
    q = np.asarray(q)
    if scale != 1.0:
        q = np.true_divide(q, scale)
    if q.dtype.kind not in "fiub":
        raise DTypeError(f"{name}: q must be real numbers, got {q.dtype}{at_user_line()}")
    if q.ndim > 2:
        raise InvalidArgumentError(f"{name}: q must be a scalar or 1-D, got shape {q.shape}"
                                   f"{at_user_line()}")
    bound = 100 if scale != 1.0 else 1
    if q.size and not (np.all(q >= 0) and np.all(q <= 1)):
        raise InvalidArgumentError(f"{name}: the quantiles must lie in [0, {bound}], got "
                                   f"{np.asarray(q) * scale}{at_user_line()}")
    return q, weak


def _check_method(method, name):
    if method not in METHODS:
        raise InvalidArgumentError(f"{name}: method={method!r} is not one of numpy's: "
                                   f"{', '.join(METHODS)}{at_user_line()}")


# ---- indices and weights: the same formulas on numbers (numpy) or on tensors (counts) ------
class _Numbers:
    floor, ceil, rint, where = np.floor, np.ceil, np.rint, np.where
    maximum, minimum = np.maximum, np.minimum


class _Tensors:
    floor, ceil, rint, where = math_unary.floor, math_unary.ceil, math_unary.rint, compare.where
    maximum, minimum = elementwise.maximum, elementwise.minimum


def _discrete_index(ops, index, take_previous):
    previous = ops.floor(index)
    gamma = index - previous
    return ops.maximum(ops.where(take_previous(gamma, index), previous, previous + 1), 0)


def _index_and_gamma(ops, method, n, q):
    """``(previous, next, gamma)``, numpy's ``_quantile`` rules: the result is
    ``previous`` value interpolated towards ``next`` by ``gamma`` (None for the
    discrete methods, which take ``previous``). ``n`` is the count of values."""
    if method in _DISCRETE:
        v = (n - 1) * q
        index = {"lower": lambda: ops.floor(v), "higher": lambda: ops.ceil(v),
                 "nearest": lambda: ops.rint(v),
                 "inverted_cdf": lambda: _discrete_index(ops, n * q - 1,
                                                         lambda g, i: g == 0),
                 "closest_observation": lambda: _discrete_index(
                     ops, n * q - 1 - 0.5, lambda g, i: (g == 0) & (ops.floor(i) % 2 == 1)),
                 }[method]()
        return ops.minimum(index, n - 1), None, None
    if method == "linear":
        v = (n - 1) * q
    elif method == "midpoint":
        v = 0.5 * (ops.floor((n - 1) * q) + ops.ceil((n - 1) * q))
    elif method == "averaged_inverted_cdf":
        v = n * q - 1
    else:
        alpha, beta = _CONTINUOUS[method]
        v = n * q + (alpha + q * (1 - alpha - beta)) - 1
    previous = ops.floor(v)
    above, below = v >= n - 1, v < 0
    previous = ops.where(above, n - 1, ops.where(below, 0, previous))
    following = ops.where(above, n - 1, ops.where(below, 0, previous + 1))
    gamma = v - previous
    if method == "averaged_inverted_cdf":
        gamma = ops.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = ops.where(v % 1 == 0, 0.0, 0.5)
    return previous, following, gamma


def _result_dtype(x_dtype, gamma_dtype, weak):
    if weak:
        return np.result_type(np.dtype(x_dtype), 0.0)
    return np.result_type(np.dtype(x_dtype), gamma_dtype)


def _interpolate(below, above, gamma, out_dtype):
    """numpy's ``_lerp``: from the nearer end, so gamma 0 and 1 give the ends exactly."""
    diff = creation.cast(above - below, out_dtype)
    low, high = creation.cast(below, out_dtype), creation.cast(above, out_dtype)
    return compare.where(gamma >= 0.5, high - diff * (1 - gamma), low + diff * gamma)


def _take(folded, index):
    """``folded[..., index]``: ``index`` (quantiles) for every kept position."""
    kept = tuple(folded.shape[:-1])
    if not isinstance(index, TensorLike):
        index = constant_like(folded, np.broadcast_to(
            np.asarray(index, dtype=np.int64).reshape((1,) * len(kept) + (-1,)),
            kept + (int(np.size(index)),)))
    return take_along_axis(folded, index, axis=-1)


# ---- the quantiles of sorted slices --------------------------------------------------------
def _sorted_quantiles(s, q, method, weak, counts=None):
    """Quantiles ``q`` (flat) of the sorted last axis of ``s``: ``(kept..., len(q))``.
    ``counts``: the number of leading values to use per slice (None: all of them)."""
    n = s.shape[-1]
    if counts is None:
        previous, following, gamma = _index_and_gamma(_Numbers, method, n, q)
        if gamma is None:
            return _take(s, previous)
        gamma_dtype = np.asarray(gamma).dtype
        gamma = constant_like(s, np.asarray(gamma, dtype=_result_dtype(
            s.dtype, gamma_dtype, weak)))
    else:
        qt = constant_like(s, np.asarray(q, dtype=np.float64).reshape(
            (1,) * (s.ndim - 1) + (-1,)))
        previous, following, gamma = _index_and_gamma(_Tensors, method, counts, qt)
        previous = creation.cast(elementwise.maximum(previous, 0), dtypes.int64)
        if gamma is None:
            return _take(s, previous)
        following = creation.cast(elementwise.maximum(following, 0), dtypes.int64)
        gamma_dtype = np.asarray(q).dtype if np.asarray(q).dtype.kind == "f" \
            else np.dtype(np.float64)
        gamma = creation.cast(gamma, _result_dtype(s.dtype, gamma_dtype, weak))
    out_dtype = _result_dtype(s.dtype, gamma_dtype, weak)
    return _interpolate(_take(s, previous), _take(s, following), gamma, out_dtype)


def _weighted(s_values, order, weights, folded_shape, q, axes, x):
    """numpy's weighted ``inverted_cdf``: the first value whose share of the total
    weight reaches ``q``."""
    w = as_tensor(weights)
    if tuple(w.shape) != tuple(x.shape):
        if w.ndim != 1 or len(axes) != 1 or w.shape[0] != x.shape[axes[0]]:
            raise InvalidArgumentError(
                f"quantile: weights of shape {tuple(w.shape)} must have the input's shape "
                f"{tuple(x.shape)} or be 1-D along the one reduced axis{at_user_line()}")
        w = shape_ops.broadcast_to(w, folded_shape)
    else:
        kept = [i for i in range(x.ndim) if i not in axes]
        w = shape_ops.reshape(shape_ops.transpose(w, tuple(kept + list(axes))), folded_shape)
    w = take_along_axis(creation.cast(w, dtypes.float64), order, axis=-1)
    cdf = cumulative.cumsum(w, axis=-1)
    cdf = cdf / cdf[..., -1:]
    if q.dtype.kind == "f":
        cdf = creation.cast(cdf, q.dtype)
    cdf = compare.where(compare.equal(cdf, 0), -1.0, cdf)
    qt = constant_like(s_values, np.asarray(q).reshape(-1))
    below = compare.less(shape_ops.expand_dims(cdf, -2), shape_ops.reshape(qt, (-1, 1)))
    index = reduce.sum(creation.cast(below, dtypes.int64), axis=-1)
    return take_along_axis(s_values, elementwise.minimum(index, s_values.shape[-1] - 1),
                           axis=-1)


def _quantile(name, a, q, axis, method, keepdims, weights, interpolation, nan_aware,
              scale=1.0):
    if interpolation is not None:
        method = interpolation   # numpy's old name of the keyword
    _check_method(method, name)
    q, weak = _quantiles(q, name, scale)
    x, folded, axes = _prepare(a, axis, name)
    flat_q = q.reshape(-1)
    if weights is not None:
        if method != "inverted_cdf":
            raise InvalidArgumentError(f"{name}: only method='inverted_cdf' takes weights, "
                                       f"got method={method!r}{at_user_line()}")
        order = sorting.argsort(folded, axis=-1)
        values = _weighted(take_along_axis(folded, order, axis=-1), order, weights,
                           tuple(folded.shape), flat_q, axes, x)
        return _finish(_mark_nans(values, folded, nan_aware), x, axes, q.shape, keepdims)
    s = sorting.sort(folded, axis=-1)
    if s.shape[-1] == 0:
        dt = _result_dtype(s.dtype, np.float64 if method not in _DISCRETE else s.dtype, weak)
        values = creation.full(tuple(s.shape[:-1]) + (flat_q.size,), float("nan"), dtype=dt)
    elif nan_aware and s.dtype in dtypes.INEXACT:
        counts = reduce.sum(creation.cast(compare.logical_not(math_unary.isnan(s)),
                                          dtypes.float64), axis=-1, keepdims=True)
        values = _sorted_quantiles(s, flat_q, method, weak, counts)
        values = compare.where(compare.equal(counts, 0), float("nan"), values)
    else:
        values = _mark_nans(_sorted_quantiles(s, flat_q, method, weak), s, nan_aware)
    return _finish(values, x, axes, q.shape, keepdims)


def _mark_nans(values, s, nan_aware):
    """NaN where a slice holds a NaN (NaNs sort last), as numpy's quantiles."""
    if nan_aware or s.dtype not in dtypes.INEXACT or s.shape[-1] == 0:
        return values
    return compare.where(math_unary.isnan(reduce.max(s, axis=-1, keepdims=True)),
                         float("nan"), values)


# ---- the public functions -----------------------------------------------------------------
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th quantiles of ``a`` over ``axis`` (all axes when None), like
    ``np.quantile``: the result has ``q``'s shape first, then the kept axes; a slice
    holding a NaN gives NaN. ``method`` is any of numpy's 13 (``"linear"`` by
    default; the discontinuous ones keep the input's dtype); ``weights`` go with
    ``method="inverted_cdf"``. ``overwrite_input`` changes nothing.

    Example:
        >>> import engine as en
        >>> en.quantile(en.tensor([1.0, 2.0, 3.0, 4.0]), [0.5, 1.0]).tolist()
        [2.5, 4.0]
    """
    _no_out("quantile", out)
    return _quantile("quantile", a, q, axis, method, keepdims, weights, interpolation, False)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th percentiles (``q`` in [0, 100]), like ``np.percentile``; see
    :func:`quantile`.

    Example:
        >>> import engine as en
        >>> float(en.percentile(en.tensor([1.0, 2.0, 3.0, 4.0]), 50))
        2.5
    """
    _no_out("percentile", out)
    return _quantile("percentile", a, q, axis, method, keepdims, weights, interpolation,
                     False, scale=100.0)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """The quantiles of the non-NaN values (``np.nanquantile``; NaN for a slice of NaNs
    only). Its gradient is zero at the NaNs.

    Example:
        >>> import engine as en
        >>> float(en.nanquantile(en.tensor([1.0, float("nan"), 3.0]), 0.5))
        2.0
    """
    _no_out("nanquantile", out)
    return _quantile("nanquantile", a, q, axis, method, keepdims, weights, interpolation,
                     True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """The percentiles of the non-NaN values (``np.nanpercentile``).

    Example:
        >>> import engine as en
        >>> float(en.nanpercentile(en.tensor([1.0, float("nan"), 3.0]), 100))
        3.0
    """
    _no_out("nanpercentile", out)
    return _quantile("nanpercentile", a, q, axis, method, keepdims, weights, interpolation,
                     True, scale=100.0)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median over ``axis`` (``np.median``): the middle value, or the mean of the
    two middle ones, in float64 for integer input; NaN for a slice holding a NaN. The
    gradient goes to the middle element(s), as in PyTorch.

    Example:
        >>> import engine as en
        >>> en.median(en.tensor([[3.0, 1.0, 2.0, 9.0]]), axis=1).tolist()
        [2.5]
    """
    _no_out("median", out)
    x, folded, axes = _prepare(a, axis, "median")
    s = sorting.sort(folded, axis=-1)
    n = s.shape[-1]
    dt = s.dtype if s.dtype in dtypes.INEXACT else dtypes.float64
    if n == 0:
        values = creation.full(tuple(s.shape[:-1]) + (1,), float("nan"), dtype=dt)
    elif n % 2:
        values = creation.cast(s[..., n // 2:n // 2 + 1], dt)
    else:   # numpy's mean of the two middle values
        pair = creation.cast(s[..., n // 2 - 1:n // 2 + 1], dt)
        values = _mean_of_pair(pair[..., :1], pair[..., 1:])
    return _finish(_mark_nans(values, s, False), x, axes, (), keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median of the non-NaN values (``np.nanmedian``; NaN for a slice of NaNs only).

    Example:
        >>> import engine as en
        >>> float(en.nanmedian(en.tensor([1.0, float("nan"), 3.0, 2.0])))
        2.0
    """
    _no_out("nanmedian", out)
    x = as_tensor(a)
    if x.dtype not in dtypes.INEXACT:
        return median(x, axis=axis, keepdims=keepdims)
    x, folded, axes = _prepare(x, axis, "nanmedian")
    s = sorting.sort(folded, axis=-1)
    if s.shape[-1] == 0:
        values = creation.full(tuple(s.shape[:-1]) + (1,), float("nan"), dtype=s.dtype)
        return _finish(values, x, axes, (), keepdims)
    # numpy's mean of the two middle non-NaN values (NaNs sort last), not the linear
    # quantile's interpolation: in float32 the two round differently.
    counts = reduce.sum(creation.cast(compare.logical_not(math_unary.isnan(s)), dtypes.int64),
                        axis=-1, keepdims=True)
    low = _take(s, elementwise.maximum((counts - 1) // 2, 0))
    high = _take(s, counts // 2)
    values = compare.where(counts % 2 == 1, low, _mean_of_pair(low, high))
    values = compare.where(compare.equal(counts, 0), float("nan"), values)
    return _finish(values, x, axes, (), keepdims)


def _mean_of_pair(low, high):
    """``(low + high) / 2`` as ``np.mean`` takes it: float16 summed in float32, so two
    large halves do not overflow."""
    if low.dtype == dtypes.float16:
        wide = creation.cast(low, dtypes.float32) + creation.cast(high, dtypes.float32)
        return creation.cast(wide / 2, dtypes.float16)
    return (low + high) / 2


def _no_out(name, out):
    if out is not None:
        raise InvalidArgumentError(f"{name}: out= is not supported; use the returned "
                                   f"tensor{at_user_line()}")
