"""Selecting by rank along one axis: ``topk`` (PyTorch's, ONNX's TopK) and
``argpartition`` (numpy's), with the composite ``partition``.

* ``topk(x, k, axis)`` gives the ``k`` largest (or smallest) values and their indices,
  largest first; equal values keep their order (the lower index first, as ONNX's TopK)
  and NaN counts as the largest value, as in PyTorch. The gradient goes back to the
  elements chosen.
* ``argpartition(x, kth, axis)``: indices that put the element of rank ``kth`` in its
  sorted place, every smaller one before it and every larger one after it, numpy's
  contract; the order within each side is unspecified (numpy's introselect on the numpy
  back end, a full sort on the others). ``partition`` gathers ``x`` with them, so its
  gradient is the gather's.

Example:
    >>> import engine as en
    >>> values, indices = en.topk(en.tensor([1.0, 5.0, 3.0, 4.0]), 2)
    >>> values.numpy(), indices.numpy()
    (array([5., 4.]), array([1, 3]))
"""
import operator

import numpy as np

from .. import dtypes
from ..cost_model import cost
from ..errors import DTypeError, ShapeError, ShapeTypeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from ..shapes import normalize_axis
from . import _rules, creation, shape_ops
from ._args import at_user_line
from .cumulative import as_tensor, scatter_along, take_along, user_axis
from .sorting import _argsort_values, _check_sortable, _real

_SELECTABLE = dtypes.REAL | {dtypes.bool_}   # PyTorch's topk orders real numbers only


def _slice_axis(a, axis, stop):
    return a[(slice(None),) * axis + (slice(0, stop), Ellipsis)]


# ---- topk ---------------------------------------------------------------------------------
def _topk_eval(x, *, k, axis, largest):
    if x[1] not in _SELECTABLE:
        raise DTypeError(f"topk: expected a real or bool input, got {describe_inputs([x])}")
    if not x[0]:
        raise ShapeError(f"topk: a 0-d input {describe_inputs([x])} has no axis to select along")
    ax = normalize_axis(axis, len(x[0]), "topk")
    n = x[0][ax]
    if k < 0 or (n is not None and k > n):
        raise ShapeError(f"topk: k={k} is out of range for axis {ax} of size {n} in "
                         f"{describe_inputs([x])}")
    shape = x[0][:ax] + (k,) + x[0][ax + 1:]
    return (shape, x[1]), (shape, dtypes.int64)


def _topk_impl(x, *, k, axis, largest):
    n = x.shape[axis]
    if n >= cost.topk_select_from and k * 4 <= n and x.size:
        order = _selected_order(x, k, axis, largest)
    else:
        order = _slice_axis(_argsort_values(x, axis, largest), axis, k)
    order = order.astype(np.int64, copy=False)
    return np.take_along_axis(x, order, axis), order


def _selected_order(x, k, axis, largest):
    """The order a stable sort gives the first ``k`` of, found by a partition: every
    element better than the k-th value, then the earliest ones equal to it."""
    rows = np.moveaxis(x, axis, -1)
    n = rows.shape[-1]
    at = n - k if largest else k - 1
    kth = np.partition(rows, at, axis=-1)[..., at:at + 1]        # NaN sorts last
    floats = rows.dtype.kind == "f"
    if floats:
        nan, kth_nan = np.isnan(rows), np.isnan(kth)
        better = ((rows > kth) | (nan & ~kth_nan)) if largest else \
            ((rows < kth) | (kth_nan & ~nan))
        tied = (rows == kth) | (nan & kth_nan)
    else:
        better = rows > kth if largest else rows < kth
        tied = rows == kth
    need = k - better.sum(axis=-1, keepdims=True)
    chosen = better | (tied & (np.cumsum(tied, axis=-1) <= need))
    picked = np.nonzero(chosen.reshape(-1, n))[1].reshape(rows.shape[:-1] + (k,))
    inner = _argsort_values(np.take_along_axis(rows, picked, -1), -1, largest)
    return np.moveaxis(np.take_along_axis(picked, inner, -1), -1, axis)


def _topk_generic(be, x, *, k, axis, largest):
    xp = be.xp
    order = xp.argsort(_real(be, x), axis=axis, descending=largest, stable=True)
    order = be.astype(_slice_axis(order, axis, k), dtypes.int64)
    return xp.take_along_axis(x, order, axis=axis), order


def _topk_vjp(g, out, x, *, k, axis, largest):
    return (scatter_along(creation.zeros_like(x), out[1], g[0], axis),)


def _topk_jvp(primals, tangents, out, *, k, axis, largest):
    return take_along(tangents[0], out[1], axis), None


topk_op = register(Op("topk", _topk_impl, _topk_eval, _topk_vjp, n_inputs=1,
                      multiple_results=True, dtypes=_SELECTABLE, generic=_topk_generic,
                      doc="The ``k`` largest (or smallest) values along ``axis`` and their "
                          "indices, in order (ties: the lower index first)."))
declare(topk_op, onnx=("TopKSelect",), jvp=_topk_jvp, batch=_rules.batch_with_axis(topk_op))


def topk(x, k, axis=-1, largest=True, sorted=True):
    """The ``k`` largest values of ``x`` along ``axis`` (the smallest with
    ``largest=False``) and their indices, as PyTorch's ``torch.topk(input, k, dim)``:
    largest first (smallest first), equal values in their order along the axis, NaN
    above every number. The values are always sorted, so ``sorted=False`` changes
    nothing. Gradients go to the chosen elements.

    Example:
        >>> import engine as en
        >>> values, indices = en.topk(en.tensor([[3, 1, 2], [0, 5, 4]]), 2, largest=False)
        >>> values.numpy()
        array([[1, 2],
               [0, 4]])
        >>> indices.numpy()
        array([[1, 2],
               [0, 2]])
    """
    x = as_tensor(x)
    try:
        k = operator.index(k)
    except TypeError:
        raise ShapeTypeError(f"topk: k must be an integer, got {k!r}{at_user_line()}") from None
    if x.ndim == 0:
        raise ShapeError(f"topk: a 0-d input has no axis to select along; got "
                         f"{describe_inputs([(tuple(x.shape), x.dtype)])}{at_user_line()}")
    axis = user_axis(axis, x.ndim, "topk")
    n = x.shape[axis]
    if k < 0 or (n is not None and k > n):
        raise ShapeError(f"topk: k={k} is out of range for axis {axis} of size {n} in "
                         f"{describe_inputs([(tuple(x.shape), x.dtype)])}{at_user_line()}")
    return apply(topk_op, x, k=k, axis=axis, largest=bool(largest))


# ---- argpartition / partition ---------------------------------------------------------------
def _argpartition_eval(x, *, kth, axis):
    _check_sortable("argpartition", x)
    if not x[0]:
        raise ShapeError(f"argpartition: a 0-d input {describe_inputs([x])} has no axis")
    ax = normalize_axis(axis, len(x[0]), "argpartition")
    n = x[0][ax]
    if n is not None and any(not 0 <= k < n for k in kth):
        raise ShapeError(f"argpartition: kth {kth} is out of range for axis {ax} of size {n} "
                         f"in {describe_inputs([x])}")
    return (x[0], dtypes.int64)


def _argpartition_impl(x, *, kth, axis):
    if x.shape[axis] == 0:
        return np.zeros(x.shape, np.int64)
    return np.argpartition(x, kth, axis=axis).astype(np.int64, copy=False)


def _argpartition_generic(be, x, *, kth, axis):
    # A sorted order is a partition around every rank.
    return be.astype(be.xp.argsort(_real(be, x), axis=axis, stable=True), dtypes.int64)


argpartition_op = register(Op("argpartition", _argpartition_impl, _argpartition_eval, None,
                              n_inputs=1, dtypes=dtypes.ALL, generic=_argpartition_generic,
                              doc="Indices that put the elements of ranks ``kth`` in their "
                                  "sorted places along ``axis``, smaller ones before."))
declare(argpartition_op, onnx=None, batch=_rules.batch_with_axis(argpartition_op))


def _kth_tuple(kth, n):
    """``kth`` (an int or a sequence) as sorted non-negative ints, checked against ``n``."""
    items = list(np.atleast_1d(np.asarray(kth.numpy() if hasattr(kth, "numpy") else kth)))
    if not items or any(np.asarray(k).dtype.kind not in "iu" for k in items):
        raise ShapeTypeError(f"partition: kth must be an integer or a sequence of integers, "
                             f"got {kth!r}{at_user_line()}")
    out = []
    for k in (int(k) for k in items):
        if n is not None and not -n <= k < n:
            raise ShapeError(f"partition: kth {k} is out of bounds for an axis of size {n}"
                             f"{at_user_line()}")
        out.append(k % n if n else k)
    return tuple(sorted(set(out)))


def _partition_args(x, kth, axis):
    x = as_tensor(x)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    if x.ndim == 0:
        raise ShapeError(f"partition: a 0-d input has no axis to partition along"
                         f"{at_user_line()}")
    axis = user_axis(axis, x.ndim, "partition")
    return x, axis, _kth_tuple(kth, x.shape[axis])


def argpartition(x, kth, axis=-1, kind="introselect", order=None):
    """Indices that partition ``x`` along ``axis`` (flattened when None) around the
    ranks ``kth`` (an int or a sequence, negative counting from the end), as
    ``np.argpartition``: ``x[i]`` for the returned ``i`` at position ``kth`` is the
    element a sort would put there, the ones before it are not larger and the ones
    after it not smaller; their order is unspecified.

    Example:
        >>> import engine as en
        >>> x = en.tensor([7, 1, 5, 3])
        >>> int(x[en.argpartition(x, 1)[1]])
        3
    """
    if order is not None:
        raise ShapeError(f"argpartition: order= (structured arrays) is not supported"
                         f"{at_user_line()}")
    x, axis, kth = _partition_args(x, kth, axis)
    return apply(argpartition_op, x, kth=kth, axis=axis)


def partition(x, kth, axis=-1, kind="introselect", order=None):
    """A copy of ``x`` partitioned along ``axis`` (flattened when None) around the
    ranks ``kth``, as ``np.partition``: the element at ``kth`` is the one a sort would
    put there, smaller ones before it, larger ones after (in unspecified order). The
    gradient goes back to the moved elements.

    Example:
        >>> import engine as en
        >>> float(en.partition(en.tensor([7.0, 1.0, 5.0, 3.0]), 2)[2])
        5.0
    """
    if order is not None:
        raise ShapeError(f"partition: order= (structured arrays) is not supported"
                         f"{at_user_line()}")
    x, axis, kth = _partition_args(x, kth, axis)
    return take_along(x, apply(argpartition_op, x, kth=kth, axis=axis), axis)


__all__ = ["topk", "topk_op", "argpartition", "argpartition_op", "partition"]
