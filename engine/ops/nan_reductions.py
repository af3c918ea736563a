"""numpy's NaN-ignoring reductions as composites: ``nansum``, ``nanprod``, ``nanmean``,
``nanvar``, ``nanstd``, ``nanmax``, ``nanmin``, ``nanargmax``, ``nanargmin``,
``nancumsum``, ``nancumprod``, and ``nan_to_num``.

Each replaces the NaNs by the reduction's identity with ``where`` and reduces, so the
gradient is the plain reduction's at the other places and exactly zero at the NaNs
(``where`` sends no cotangent to the branch it did not take). Integer and bool inputs
hold no NaN: they reduce as the plain reductions do, as in numpy.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, float("nan"), 3.0])
    >>> float(en.nansum(x)), float(en.nanmean(x)), float(en.nanmax(x))
    (4.0, 2.0, 3.0)
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidArgumentError, describe_inputs
from ..modes import current_mode
from . import compare, complex_parts, creation, cumulative, elementwise, math_unary, reduce
from ._args import at_user_line
from .cumulative import as_tensor, user_axes, user_axis
from .subgradients import root_with_zero_subgradient

__all__ = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
           "nanargmax", "nanargmin", "nancumsum", "nancumprod", "nan_to_num"]


def _checked(x, name):
    x = as_tensor(x)
    if x.dtype not in dtypes.NUMERIC | {dtypes.bool_}:
        raise DTypeError(f"{name}: expected a numeric input, got "
                         f"{describe_inputs([(tuple(x.shape), x.dtype)])}{at_user_line()}")
    return x


def _axis(axis, x, name):
    if isinstance(axis, list):
        axis = tuple(axis)
    user_axes(axis, x.ndim, name)   # the error names the user's line
    return axis


def _has_nans(x):
    return x.dtype in dtypes.INEXACT


def _filled(x, value):
    """``x`` with its NaNs replaced by ``value`` (``x`` itself when it cannot hold NaN)."""
    if not _has_nans(x):
        return x
    return compare.where(math_unary.isnan(x), value, x)


def _not_nan_count(x, axis, keepdims, dtype):
    mask = compare.logical_not(math_unary.isnan(x)) if _has_nans(x) else \
        compare.equal(x, x)
    return reduce.sum(creation.cast(mask, dtype), axis=axis, keepdims=keepdims)


def nansum(a, axis=None, dtype=None, keepdims=False):
    """The sum over ``axis`` treating NaNs as zero (``np.nansum``; all-NaN gives 0).

    Example:
        >>> import engine as en
        >>> en.nansum(en.tensor([[1.0, float("nan")], [2.0, 3.0]]), axis=1).tolist()
        [1.0, 5.0]
    """
    x = _checked(a, "nansum")
    axis = _axis(axis, x, "nansum")
    return reduce.sum(_filled(x, 0), axis=axis, keepdims=keepdims, dtype=dtype)


def nanprod(a, axis=None, dtype=None, keepdims=False):
    """The product over ``axis`` treating NaNs as one (``np.nanprod``).

    Example:
        >>> import engine as en
        >>> float(en.nanprod(en.tensor([2.0, float("nan"), 3.0])))
        6.0
    """
    x = _checked(a, "nanprod")
    axis = _axis(axis, x, "nanprod")
    return reduce.prod(_filled(x, 1), axis=axis, keepdims=keepdims, dtype=dtype)


def _mean_dtype(x, dtype):
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    return x.dtype if x.dtype in dtypes.INEXACT else dtypes.float64


def nanmean(a, axis=None, dtype=None, keepdims=False):
    """The mean of the non-NaN elements over ``axis`` (``np.nanmean``; an all-NaN
    slice gives NaN). Integer inputs give float64.

    Example:
        >>> import engine as en
        >>> en.nanmean(en.tensor([[1.0, float("nan")], [2.0, 4.0]]), axis=1).tolist()
        [1.0, 3.0]
    """
    x = _checked(a, "nanmean")
    axis = _axis(axis, x, "nanmean")
    dt = _mean_dtype(x, dtype)
    total = reduce.sum(creation.cast(_filled(x, 0), dt), axis=axis, keepdims=keepdims)
    count = _not_nan_count(x, axis, keepdims, total.dtype if total.dtype.kind != "c"
                           else dtypes.float64)
    return elementwise.div(total, count)


def nanvar(a, axis=None, dtype=None, ddof=0, keepdims=False, *, mean=None, correction=None):
    """The variance of the non-NaN elements (``np.nanvar``): squared deviations from
    their mean, divided by ``count - ddof``; NaN where that is not positive.
    ``mean`` (numpy's keyword) is the precomputed mean, with ``keepdims=True``'s shape.

    Example:
        >>> import engine as en
        >>> float(en.nanvar(en.tensor([1.0, float("nan"), 3.0])))
        1.0
    """
    x = _checked(a, "nanvar")
    axis = _axis(axis, x, "nanvar")
    if correction is not None:
        if ddof not in (0, None) and ddof != correction:
            raise InvalidArgumentError(f"nanvar: ddof={ddof} and correction={correction} "
                                       f"disagree; pass one{at_user_line()}")
        ddof = correction
    dt = _mean_dtype(x, dtype)
    xf = creation.cast(x, dt)
    count = _not_nan_count(x, axis, True, dtypes.float64 if dt.kind == "c" else dt)
    if mean is None:
        mean = elementwise.div(reduce.sum(_filled(xf, 0), axis=axis, keepdims=True), count)
    # zero where x itself is NaN only: an inf's NaN deviation must stay (numpy's NaN)
    centered = compare.where(math_unary.isnan(xf), 0, xf - mean) if _has_nans(xf) else \
        xf - mean
    if dt.kind == "c":
        re, im = complex_parts.real(centered), complex_parts.imag(centered)
        squares = re * re + im * im
    else:
        squares = centered * centered
    total = reduce.sum(squares, axis=axis, keepdims=keepdims)
    dof = _not_nan_count(x, axis, keepdims, total.dtype) - ddof
    positive = compare.greater(dof, 0)
    safe = compare.where(positive, dof, creation.ones_like(dof))
    return compare.where(positive, elementwise.div(total, safe), float("nan"))


def nanstd(a, axis=None, dtype=None, ddof=0, keepdims=False, *, mean=None, correction=None):
    """``sqrt(nanvar(...))`` (``np.nanstd``); its gradient is 0 where the spread is 0.

    Example:
        >>> import engine as en
        >>> float(en.nanstd(en.tensor([1.0, float("nan"), 3.0])))
        1.0
    """
    _axis(axis, _checked(a, "nanstd"), "nanstd")   # errors name nanstd
    return root_with_zero_subgradient(
        nanvar(a, axis, dtype, ddof, keepdims, mean=mean, correction=correction))


def _extreme(x, axis, keepdims, name, pick):
    """nanmax / nanmin: the NaNs become the reduction's identity (-inf / inf); a slice
    of NaNs only gives NaN, as in numpy."""
    x = _checked(x, name)
    axis = _axis(axis, x, name)
    if not _has_nans(x):
        return pick(x, axis=axis, keepdims=keepdims)
    nan = math_unary.isnan(x)
    fill = float("-inf") if pick is reduce.max else float("inf")
    out = pick(compare.where(nan, fill, x), axis=axis, keepdims=keepdims)
    all_nan = compare.equal(_not_nan_count(x, axis, keepdims, dtypes.int64), 0)
    return compare.where(all_nan, float("nan"), out)


def nanmax(a, axis=None, keepdims=False):
    """The maximum ignoring NaNs (``np.nanmax``; NaN for a slice of NaNs only).

    Example:
        >>> import engine as en
        >>> en.nanmax(en.tensor([[1.0, float("nan")], [float("nan"), float("nan")]]),
        ...           axis=1).tolist()
        [1.0, nan]
    """
    return _extreme(a, axis, keepdims, "nanmax", reduce.max)


def nanmin(a, axis=None, keepdims=False):
    """The minimum ignoring NaNs (``np.nanmin``; NaN for a slice of NaNs only).

    Example:
        >>> import engine as en
        >>> float(en.nanmin(en.tensor([3.0, float("nan"), 1.0])))
        1.0
    """
    return _extreme(a, axis, keepdims, "nanmin", reduce.min)


def _arg_extreme(x, axis, keepdims, name, pick):
    x = _checked(x, name)
    if axis is not None:
        axis = user_axis(axis, x.ndim, name)
    if not _has_nans(x):
        return pick(x, axis=axis, keepdims=keepdims)
    nan = math_unary.isnan(x)
    if current_mode().is_concrete:
        # numpy refuses a slice of NaNs only; its answer would be an arbitrary index.
        all_nan = reduce.min(creation.cast(nan, dtypes.int64), axis=axis) if x.size else None
        if all_nan is not None and bool(np.any(np.asarray(all_nan.numpy()))):
            raise InvalidArgumentError(f"{name}: all-NaN slice encountered in "
                                       f"{describe_inputs([(tuple(x.shape), x.dtype)])}"
                                       f"{at_user_line()}")
    fill = float("-inf") if pick is reduce.argmax else float("inf")
    return pick(compare.where(nan, fill, x), axis=axis, keepdims=keepdims)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """The index of the maximum ignoring NaNs (``np.nanargmax``). A slice of NaNs only
    raises :class:`InvalidArgumentError` eagerly, as numpy's ValueError; inside a
    traced function the values are not known, and such a slice gives index 0.

    Example:
        >>> import engine as en
        >>> int(en.nanargmax(en.tensor([1.0, float("nan"), 3.0])))
        2
    """
    _no_out("nanargmax", out)
    return _arg_extreme(a, axis, keepdims, "nanargmax", reduce.argmax)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """The index of the minimum ignoring NaNs (``np.nanargmin``; see :func:`nanargmax`).

    Example:
        >>> import engine as en
        >>> int(en.nanargmin(en.tensor([float("nan"), 2.0, 1.0])))
        2
    """
    _no_out("nanargmin", out)
    return _arg_extreme(a, axis, keepdims, "nanargmin", reduce.argmin)


def _no_out(name, out):
    if out is not None:
        raise InvalidArgumentError(f"{name}: out= is not supported; use the returned "
                                   f"tensor{at_user_line()}")


def nancumsum(a, axis=None, dtype=None):
    """The running sum treating NaNs as zero (``np.nancumsum``; flattened when ``axis``
    is None).

    Example:
        >>> import engine as en
        >>> en.nancumsum(en.tensor([1.0, float("nan"), 3.0])).tolist()
        [1.0, 1.0, 4.0]
    """
    x = _checked(a, "nancumsum")
    if axis is not None:
        user_axis(axis, x.ndim, "nancumsum")
    return cumulative.cumsum(_filled(x, 0), axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None):
    """The running product treating NaNs as one (``np.nancumprod``).

    Example:
        >>> import engine as en
        >>> en.nancumprod(en.tensor([2.0, float("nan"), 3.0])).tolist()
        [2.0, 2.0, 6.0]
    """
    x = _checked(a, "nancumprod")
    if axis is not None:
        user_axis(axis, x.ndim, "nancumprod")
    return cumulative.cumprod(_filled(x, 1), axis=axis, dtype=dtype)


def _replace_non_finite(x, nan, posinf, neginf):
    info = np.finfo(np.dtype(x.dtype))
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    x = compare.where(math_unary.isnan(x), nan, x)
    x = compare.where(compare.logical_and(math_unary.isinf(x), compare.greater(x, 0)), posinf, x)
    return compare.where(compare.logical_and(math_unary.isinf(x), compare.less(x, 0)), neginf, x)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN replaced by ``nan``, +inf by ``posinf`` (the largest finite value
    of the dtype by default) and -inf by ``neginf`` (the most negative), like
    ``np.nan_to_num``; a complex input has both parts replaced. Integer and bool inputs
    come back unchanged. The gradient is 1 at the finite places and 0 at the replaced.
    ``copy`` changes nothing (a tensor is never written in place here).

    Example:
        >>> import engine as en
        >>> en.nan_to_num(en.tensor([float("nan"), float("inf"), 1.0]), posinf=9.0).tolist()
        [0.0, 9.0, 1.0]
    """
    x = as_tensor(x)
    if x.dtype not in dtypes.INEXACT:
        return x
    if x.dtype in dtypes.COMPLEX:
        re = _replace_non_finite(complex_parts.real(x), nan, posinf, neginf)
        im = _replace_non_finite(complex_parts.imag(x), nan, posinf, neginf)
        return re + im * 1j   # a weak 1j keeps complex64 complex64
    return _replace_non_finite(x, nan, posinf, neginf)

