"""Running reductions along one axis: ``cumsum``, ``cumprod``, ``cummax``, ``cummin``, and the
composites ``cumulative_sum`` / ``cumulative_prod`` (the Array API's, with
``include_initial``) and ``diff``.

The four ops take one normalized ``axis``; the public functions flatten first when
``axis`` is None, as numpy does. Their gradients are written in engine ops:

* ``cumsum``: the reversed running sum of the cotangent (``reverse=True``, one op);
* ``cumprod``: ``revcumsum(g * out) / x`` where ``x`` is not zero; the first zero of a
  row gets the running products of the row with that zero taken as 1 (after it every
  derivative holds the zero as a factor), and the second zero a form whose derivative
  is right, so first and second derivatives are exact at zeros, in O(n);
* ``cummax`` / ``cummin``: the cotangent goes to the position that holds the running
  extreme (the latest one on ties), a scatter along the axis.

Example:
    >>> import engine as en
    >>> en.cumsum(en.tensor([1, 2, 3])).numpy()
    array([1, 3, 6])
"""
import operator

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError, TracingError, describe_inputs
from ..lifting import TensorLike
from ..modes import apply
from ..op import Op, declare, register
from ..shapes import normalize_axes, normalize_axis
from ._args import at_user_line
from . import _rules, compare, creation, indexing, join, misc, shape_ops


def as_tensor(x):
    """``x`` itself when it is a tensor or variable, else a tensor of the current mode
    (an ``identity`` of the data, so lists and arrays become tensors while tracing too)."""
    return x if isinstance(x, TensorLike) else misc.identity(x)


def user_axis(axis, ndim, name):
    """``normalize_axis`` for an axis a user passed to a public function: numpy ints are
    ints, and the error names the user's line (the ops' own shape rules get it from
    the mode)."""
    try:
        axis = operator.index(axis)
    except TypeError:
        pass
    try:
        return normalize_axis(axis, ndim, name)
    except ShapeError as err:
        raise ShapeError(f"{err}{at_user_line()}") from None


def user_axes(axis, ndim, name):
    """``normalize_axes`` (None, an int or a tuple) for a user's ``axis``; see :func:`user_axis`."""
    if isinstance(axis, list):
        axis = tuple(axis)
    try:
        return normalize_axes(axis, ndim, name)
    except ShapeError as err:
        raise ShapeError(f"{err}{at_user_line()}") from None


def along(x, axis, item):
    """``x[..., item, ...]`` with ``item`` (an int, slice or index array) at ``axis``."""
    return indexing.getitem(x, (slice(None),) * axis + (item,))


def _accumulated_dtype(dt):
    # numpy accumulates bools and ints narrower than the platform int in the platform
    # int (unsigned ones in the platform uint), as its sum does.
    if dt == dtypes.bool_ or (dt.kind == "i" and dt.itemsize < 8):
        return dtypes.int64
    if dt.kind == "u" and dt.itemsize < 8:
        return dtypes.uint64
    return dt


def _scan_rule(name, allowed, what, out_dtype):
    def abstract_eval(x, *, axis, **params):
        if x[1] not in allowed:
            raise DTypeError(f"{name}: expected {what} input, got {describe_inputs([x])}")
        if not x[0]:
            raise ShapeError(f"{name}: a 0-d input {describe_inputs([x])} has no axis to "
                             "accumulate along")
        normalize_axis(axis, len(x[0]), name)
        return (x[0], out_dtype(x[1]))
    return abstract_eval


def _as_requested(out, dtype):
    """``out`` in the ``dtype`` the caller asked for. The op accumulates narrow ints in
    64 bits; cast back, the wrapped values are numpy's own (sums and products modulo
    2^bits do not depend on the width they were taken in)."""
    if dtype is None or out.dtype == dtypes.as_dtype(dtype):
        return out
    return creation.cast(out, dtype)


def _public(op, name):
    def f(x, axis=None, dtype=None):
        x = as_tensor(x)
        if dtype is not None:
            x = creation.cast(x, dtype)
        if axis is None:
            x, axis = shape_ops.reshape(x, (-1,)), 0
        return _as_requested(apply(op, x, axis=user_axis(axis, x.ndim, name)), dtype)
    return f


# ---- cumsum ---------------------------------------------------------------------------
def _cumsum_impl(x, *, axis, reverse=False):
    dt = _accumulated_dtype(x.dtype)
    if reverse:
        return np.flip(np.cumsum(np.flip(x, axis), axis=axis, dtype=dt), axis)
    return np.cumsum(x, axis=axis, dtype=dt)


def _cumsum_vjp(g, out, x, *, axis, reverse=False):
    return (apply(cumsum_op, g, axis=axis, reverse=not reverse),)


def _cumsum_generic(be, x, *, axis, reverse=False):
    xp = be.xp
    dt = _accumulated_dtype(be.dtype_of(x))
    if be.dtype_of(x) != dt:
        x = be.astype(x, dt)
    if reverse:
        return xp.flip(xp.cumulative_sum(xp.flip(x, axis=axis), axis=axis), axis=axis)
    return xp.cumulative_sum(x, axis=axis)


cumsum_op = register(Op("cumsum", _cumsum_impl,
                        _scan_rule("cumsum", dtypes.NUMERIC | {dtypes.bool_}, "numeric or bool",
                                   _accumulated_dtype),
                        _cumsum_vjp, n_inputs=1, dtypes=dtypes.NUMERIC | {dtypes.bool_},
                        generic=_cumsum_generic,
                        doc="Running sum along ``axis`` (from the end when ``reverse``)."))
declare(cumsum_op, onnx=("CumSum",))
_cumsum = _public(cumsum_op, "cumsum")


def cumsum(x, axis=None, dtype=None):
    """Running sum along ``axis`` (over the flattened input when None), like ``np.cumsum``.

    Example:
        >>> import engine as en
        >>> en.cumsum(en.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).numpy()
        array([[1., 2.],
               [4., 6.]])
    """
    return _cumsum(x, axis, dtype)


# ---- cumprod --------------------------------------------------------------------------
def _cumprod_impl(x, *, axis):
    return np.cumprod(x, axis=axis, dtype=_accumulated_dtype(x.dtype))


def _cumprod_vjp(g, out, x, *, axis):
    nonzero = compare.not_equal(x, 0)
    is_zero = compare.logical_not(nonzero)
    zeros_so_far = apply(cumsum_op, is_zero, axis=axis)
    first_zero = compare.logical_and(is_zero, compare.equal(zeros_so_far, 1))
    second_zero = compare.logical_and(is_zero, compare.equal(zeros_so_far, 2))
    one, zero = creation.ones_like(x), creation.zeros_like(x)
    # Where x is not zero: d/dx_k sum_j g_j out_j = sum_{j >= k} g_j out_j / x_k.
    safe_x = compare.where(nonzero, x, one)
    tail = apply(cumsum_op, g * out, axis=axis, reverse=True)
    grad = compare.where(nonzero, tail / safe_x, zero)
    # At the first zero k0: sum_{j >= k0} g_j prod_{i <= j, i != k0} x_i.
    out1 = apply(cumprod_op, compare.where(first_zero, one, x), axis=axis)
    at_first = compare.where(compare.greater_equal(zeros_so_far, 1), g * out1, zero)
    at_first = at_first.sum(axis=axis, keepdims=True)
    # At the second zero k1 the derivative is zero, but written as x_k0 times the products
    # without x_k0 and x_k1, so that its derivative by x_k0 (a second derivative) is right.
    # Later zeros: every derivative up to the second holds a zero as a factor.
    out2 = apply(cumprod_op, compare.where(compare.logical_or(first_zero, second_zero), one, x),
                 axis=axis)
    at_second = compare.where(compare.greater_equal(zeros_so_far, 2), g * out2, zero)
    first_value = compare.where(first_zero, x, zero).sum(axis=axis, keepdims=True)
    at_second = first_value * at_second.sum(axis=axis, keepdims=True)
    grad = compare.where(second_zero, shape_ops.broadcast_to_shape_of(at_second, x), grad)
    return (compare.where(first_zero, shape_ops.broadcast_to_shape_of(at_first, x), grad),)


def _cumprod_generic(be, x, *, axis):
    dt = _accumulated_dtype(be.dtype_of(x))
    if be.dtype_of(x) != dt:
        x = be.astype(x, dt)
    return be.xp.cumulative_prod(x, axis=axis)


cumprod_op = register(Op("cumprod", _cumprod_impl,
                         _scan_rule("cumprod", dtypes.NUMERIC | {dtypes.bool_}, "numeric or bool",
                                    _accumulated_dtype),
                         _cumprod_vjp, n_inputs=1, dtypes=dtypes.NUMERIC | {dtypes.bool_},
                         generic=_cumprod_generic, doc="Running product along ``axis``."))
declare(cumprod_op, onnx=None)   # ONNX has CumSum only
_cumprod = _public(cumprod_op, "cumprod")


def cumprod(x, axis=None, dtype=None):
    """Running product along ``axis`` (over the flattened input when None), like
    ``np.cumprod``; its gradient is exact at zeros.

    Example:
        >>> import engine as en
        >>> en.cumprod(en.tensor([1.0, 2.0, 3.0])).numpy()
        array([1., 2., 6.])
    """
    return _cumprod(x, axis, dtype)


# ---- cummax / cummin --------------------------------------------------------------------
def _extreme_scan(name, ufunc, fill):
    def impl(x, *, axis):
        return ufunc.accumulate(x, axis=axis)

    def vjp(g, out, x, *, axis):
        # The position holding the running extreme: the latest k <= j with x_k == out_k.
        # Positions 0, 1, ... along the axis, made from x (so on x's back end, any shape).
        ones = creation.cast(creation.ones_like(x), dtypes.int64)
        positions = apply(cumsum_op, ones, axis=axis) - 1
        held = compare.where(compare.equal(x, out), positions, creation.zeros_like(positions))
        source = apply(cummax_op, held, axis=axis)
        return (scatter_along(creation.zeros_like(x), source, g, axis),)

    def generic(be, x, *, axis):
        # The standard has no running maximum: log2(n) steps of "extreme with the
        # values s places before" (s = 1, 2, 4, ...), padded with the identity.
        xp = be.xp
        dt = be.dtype_of(x)
        work = be.astype(x, dtypes.int32) if dt == dtypes.bool_ else x
        pad_value = fill(be.dtype_of(work))
        n = x.shape[axis]
        lead = (slice(None),) * axis
        s = 1
        while s < n:
            pad_shape = work.shape[:axis] + (s,) + work.shape[axis + 1:]
            shifted = xp.concat([xp.full(pad_shape, pad_value, dtype=work.dtype),
                                 work[lead + (slice(0, n - s), Ellipsis)]], axis=axis)
            work = getattr(xp, ufunc.__name__)(work, shifted)
            s *= 2
        return xp.astype(work, xp.bool) if dt == dtypes.bool_ else work

    op = register(Op(name, impl, _scan_rule(name, dtypes.ALL, "any", lambda d: d), vjp,
                     n_inputs=1, dtypes=dtypes.ALL, generic=generic,
                     doc=f"Running {name[3:]}imum along ``axis``."))
    declare(op, onnx=None)
    return op


def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


cummax_op = _extreme_scan("cummax", np.maximum, _lowest)
cummin_op = _extreme_scan("cummin", np.minimum, _highest)
_cummax = _public(cummax_op, "cummax")
_cummin = _public(cummin_op, "cummin")


def cummax(x, axis=None, return_indices=False):
    """Running maximum along ``axis`` (``np.maximum.accumulate``; flattened when None).
    The gradient goes to the element holding the maximum (the latest one on ties).
    With ``return_indices``, ``(values, indices)`` as PyTorch's ``torch.cummax``: the
    index along ``axis`` of the element holding each running maximum (the latest on
    ties; after a NaN, the latest NaN's).

    Example:
        >>> import engine as en
        >>> en.cummax(en.tensor([1, 3, 2, 5])).numpy()
        array([1, 3, 3, 5])
        >>> en.cummax(en.tensor([1, 3, 3, 2]), return_indices=True)[1].numpy()
        array([0, 1, 2, 2])
    """
    out = _cummax(x, axis)
    return (out, _held_indices(x, out, axis)) if return_indices else out


def cummin(x, axis=None, return_indices=False):
    """Running minimum along ``axis`` (``np.minimum.accumulate``; flattened when None);
    ``return_indices`` as for :func:`cummax` (PyTorch's ``torch.cummin``).

    Example:
        >>> import engine as en
        >>> en.cummin(en.tensor([3, 1, 2])).numpy()
        array([3, 1, 1])
    """
    out = _cummin(x, axis)
    return (out, _held_indices(x, out, axis)) if return_indices else out


def _held_indices(x, out, axis):
    """The index along ``axis`` of the element each running extreme ``out`` comes from:
    the latest ``k <= j`` with ``x_k == out_j`` or ``x_k`` NaN (PyTorch's choice)."""
    x = as_tensor(x)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    axis = user_axis(axis, x.ndim, "cummax")
    ones = creation.cast(creation.ones_like(x), dtypes.int64)
    positions = apply(cumsum_op, ones, axis=axis) - 1
    held = compare.equal(x, out)
    if x.dtype in dtypes.INEXACT:   # a NaN holds the extreme from where it is
        held = compare.logical_or(held, compare.not_equal(x, x))
    held = compare.where(held, positions, creation.zeros_like(positions))
    return apply(cummax_op, held, axis=axis)


def scatter_along(x, index, updates, axis):
    """``x`` with ``updates`` added at ``index`` along ``axis`` (``index`` and ``updates``
    shaped like ``x`` except along ``axis``): the adjoint of :func:`take_along`."""
    return indexing.scatter_add(x, along_axis_index(index, axis, x.shape), updates)


def along_axis_index(index, axis, shape):
    """The numpy index ``(i0, ..., index, ..., ik)`` that takes ``index`` along ``axis``
    and every other position of ``index``'s own shape (broadcasting aranges)."""
    nd = len(shape)
    ishape = tuple(index.shape)
    items = []
    for a in range(nd):
        if a == axis:
            items.append(index)
            continue
        n = ishape[a]
        if n is None:
            raise TracingError(f"take_along_axis: dimension {a} of the index {ishape} is "
                               "unknown while tracing")
        items.append(np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (nd - a - 1)))
    return tuple(items)


def take_along(x, index, axis):
    """``x`` at ``index`` along ``axis`` (numpy's ``take_along_axis`` for a normalized axis)."""
    return indexing.getitem(x, along_axis_index(index, axis, x.shape))


# ---- composites ---------------------------------------------------------------------------
def _with_initial(out, axis, value):
    """``out`` with one slice of ``value`` put before the first along ``axis``."""
    shape = tuple(out.shape)
    if None in shape:
        raise TracingError(f"cumulative: include_initial needs a static shape, got {shape}")
    first = creation.full(shape[:axis] + (1,) + shape[axis + 1:], value, dtype=out.dtype)
    return join.concat([first, out], axis=axis)


def _cumulative(name, op, initial):
    def f(x, axis=None, dtype=None, include_initial=False):
        x = as_tensor(x)
        if axis is None:
            if x.ndim != 1:
                raise ShapeError(f"{name}: axis is required for an input of rank {x.ndim} "
                                 f"(shape {tuple(x.shape)})")
            axis = 0
        if x.ndim == 0:
            raise ShapeError(f"{name}: a 0-d input has no axis to accumulate along")
        axis = user_axis(axis, x.ndim, name)
        if dtype is not None:
            x = creation.cast(x, dtype)
        out = _as_requested(apply(op, x, axis=axis), dtype)
        return _with_initial(out, axis, initial) if include_initial else out
    return f


_cumulative_sum = _cumulative("cumulative_sum", cumsum_op, 0)
_cumulative_prod = _cumulative("cumulative_prod", cumprod_op, 1)


def cumulative_sum(x, axis=None, dtype=None, include_initial=False):
    """The Array API's running sum (numpy 2's ``np.cumulative_sum``): ``axis`` may be
    omitted for 1-D input only; ``include_initial`` puts a 0 first.

    Example:
        >>> import engine as en
        >>> en.cumulative_sum(en.tensor([1, 2, 3]), include_initial=True).numpy()
        array([0, 1, 3, 6])
    """
    return _cumulative_sum(x, axis, dtype, include_initial)


def cumulative_prod(x, axis=None, dtype=None, include_initial=False):
    """The Array API's running product (``np.cumulative_prod``); ``include_initial``
    puts a 1 first.

    Example:
        >>> import engine as en
        >>> en.cumulative_prod(en.tensor([2, 3]), include_initial=True).numpy()
        array([1, 2, 6])
    """
    return _cumulative_prod(x, axis, dtype, include_initial)


def _edge_slice(extra, x, axis):
    """``prepend`` / ``append`` of :func:`diff` as a tensor; a scalar becomes one slice."""
    if extra is None:
        return None
    shape = tuple(x.shape)
    shape = shape[:axis] + (1,) + shape[axis + 1:]
    if isinstance(extra, (bool, int, float, np.number)):
        # numpy broadcasts np.asarray(extra): a float64 slice for a Python float.
        return creation.full(shape, extra, dtype=np.asarray(extra).dtype)
    extra = as_tensor(extra)
    return shape_ops.broadcast_to(extra, shape) if extra.ndim == 0 else extra


def diff(x, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``, like ``np.diff`` (bools: ``!=``).

    Example:
        >>> import engine as en
        >>> en.diff(en.tensor([1, 4, 9, 16]), n=2).numpy()
        array([2, 2])
    """
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError(f"diff: the input must be at least 1-D, got shape {tuple(x.shape)}")
    axis = user_axis(axis, x.ndim, "diff")
    n = int(n)
    if n < 0:
        raise ShapeError(f"diff: the order n must be non-negative, got {n}")
    parts = [_edge_slice(prepend, x, axis), x, _edge_slice(append, x, axis)]
    parts = [p for p in parts if p is not None]
    if len(parts) > 1:
        x = join.concat(parts, axis=axis)
    for _ in range(n):
        later, earlier = along(x, axis, slice(1, None)), along(x, axis, slice(None, -1))
        x = compare.not_equal(later, earlier) if x.dtype == dtypes.bool_ else later - earlier
    return x


__all__ = ["cumsum", "cumsum_op", "cumprod", "cumprod_op", "cummax", "cummax_op", "cummin",
           "cummin_op", "cumulative_sum", "cumulative_prod", "diff"]


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
def _extreme_scan_jvp(op):
    def rule(primals, tangents, out, *, axis):
        # The tangent of the running extreme is the tangent at the position holding it
        # (the latest k <= j with x_k == out_k, as the VJP routes the cotangent).
        (x,), (t,) = primals, tangents
        ones = creation.cast(creation.ones_like(x), dtypes.int64)
        positions = apply(cumsum_op, ones, axis=axis) - 1
        held = compare.where(compare.equal(x, out), positions, creation.zeros_like(positions))
        return take_along(t, apply(cummax_op, held, axis=axis), axis % x.ndim)
    return rule


def _cumprod_jvp(primals, tangents, out, *, axis):
    # d out_j = sum_{k <= j} t_k prod_{i <= j, i != k} x_i, exact at zeros: before the
    # first zero it is out_j * sum_{k <= j} t_k / x_k; from the first zero k0 on, only
    # k = k0 is left, t_k0 times the running product without x_k0 (which a second zero
    # makes 0).
    (x,), (t,) = primals, tangents
    nonzero = compare.not_equal(x, 0)
    zeros_so_far = apply(cumsum_op, compare.logical_not(nonzero), axis=axis)
    first_zero = compare.logical_and(compare.logical_not(nonzero),
                                     compare.equal(zeros_so_far, 1))
    one, zero = creation.ones_like(x), creation.zeros_like(t)
    safe_x = compare.where(nonzero, x, one)
    before = out * apply(cumsum_op, compare.where(nonzero, t / safe_x, zero), axis=axis)
    t_first = apply(cumsum_op, compare.where(first_zero, t, zero), axis=axis)
    after = t_first * apply(cumprod_op, compare.where(first_zero, one, x), axis=axis)
    return compare.where(compare.equal(zeros_so_far, 0), before, after)


declare(cumsum_op, jvp=_rules.jvp_linear(cumsum_op))
declare(cumprod_op, jvp=_cumprod_jvp)
declare(cummax_op, jvp=_extreme_scan_jvp(cummax_op))
declare(cummin_op, jvp=_extreme_scan_jvp(cummin_op))
for _op in (cumsum_op, cumprod_op, cummax_op, cummin_op):
    declare(_op, batch=_rules.batch_with_axis(_op))
