"""Scatter with a reduction along one axis: ``scatter_reduce`` (PyTorch's
``scatter_reduce`` / ``scatter_add``) and the composite ``index_add``.

``scatter_reduce(x, axis, index, src, reduce)`` returns a copy of ``x`` where every
element of ``src`` is combined into the position its ``index`` names along ``axis``
(the other coordinates are its own), as PyTorch's ``Tensor.scatter_reduce``::

    out[i][index[i][j][k]][k] = reduce(out[...], src[i][j][k])      # axis == 1

``reduce`` is ``"sum"``, ``"prod"``, ``"amax"``, ``"amin"`` (one op) or ``"mean"``
(a sum divided by the count). With ``include_self=False`` the values of ``x`` at
written positions take no part. numpy's ``np.add.at(x, idx, v)`` is the same scatter
with a numpy index; the engine's index-based ``en.scatter_add`` does that one for sums.

Gradients go to both ``x`` and ``src``: the sum passes the cotangent through, the
product multiplies by the other factors (exact when some are zero), and amax/amin
send it to the elements equal to the result, split evenly among ties, as PyTorch.

Example:
    >>> import engine as en
    >>> en.scatter_reduce(en.zeros(3), 0, en.tensor([0, 2, 0]), en.tensor([1.0, 2.0, 3.0]),
    ...                   "sum").numpy()
    array([4., 0., 2.])
"""
import numpy as np

from .. import dtypes
from ..errors import DTypeError, IndexShapeError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from ..shapes import normalize_axis
from . import _rules, compare, creation, indexing
from ._args import at_user_line
from .cumulative import as_tensor, take_along, user_axis

REDUCES = ("sum", "prod", "amax", "amin")
_UFUNCS = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
_DTYPES = dtypes.REAL | {dtypes.bool_}


def reduce_identity(reduce, dt):
    """The value a position starts from when ``include_self`` is False."""
    if reduce == "sum":
        return np.zeros((), dt)
    if reduce == "prod":
        return np.ones((), dt)
    if dt == dtypes.bool_:
        return np.asarray(reduce == "amin")
    if dt.kind == "f":
        return np.asarray(-np.inf if reduce == "amax" else np.inf, dt)
    info = np.iinfo(dt)
    return np.asarray(info.min if reduce == "amax" else info.max, dt)


# ---- the shape rule -----------------------------------------------------------------------
def _scatter_eval(x, index, src, *, axis, reduce, include_self):
    avals = [x, index, src]
    if reduce not in REDUCES:
        raise ShapeError(f"scatter_reduce: reduce must be one of {REDUCES}, got {reduce!r}")
    if x[1] not in _DTYPES:
        raise DTypeError(f"scatter_reduce: expected a real or bool input, got "
                         f"{describe_inputs(avals)}")
    if index[1] not in dtypes.INTS:
        raise DTypeError(f"scatter_reduce: index must be integers, got {describe_inputs(avals)}")
    if not np.can_cast(src[1], x[1], "same_kind"):
        raise DTypeError(f"scatter_reduce: cannot combine src of dtype {src[1]} into "
                         f"{describe_inputs([x])}")
    nd = len(x[0])
    if nd == 0 or len(index[0]) != nd or len(src[0]) != nd:
        raise ShapeError(f"scatter_reduce: input, index and src must have the same number of "
                         f"dimensions (at least one), got {describe_inputs(avals)}")
    ax = normalize_axis(axis, nd, "scatter_reduce")
    for d, (n, i, s) in enumerate(zip(x[0], index[0], src[0])):
        if i is not None and s is not None and i != s:
            raise ShapeError(f"scatter_reduce: index and src must have one shape, got "
                             f"{describe_inputs(avals)}")
        if d != ax and n is not None and i is not None and i > n:
            raise ShapeError(f"scatter_reduce: index is larger than the input along axis {d}: "
                             f"{describe_inputs(avals)}")
    return x


# ---- kernels ------------------------------------------------------------------------------
def _positions(index, axis):
    """The numpy index pairing ``index`` (along ``axis``) with its own other coordinates."""
    nd = index.ndim
    return tuple(index if a == axis else
                 np.arange(n).reshape((n,) + (1,) * (nd - a - 1))
                 for a, n in enumerate(index.shape))


def _scatter_impl(x, index, src, *, axis, reduce, include_self):
    out = np.array(x, copy=True)
    where = _positions(index, axis)
    try:
        if not include_self:
            out[where] = reduce_identity(reduce, out.dtype)
        _UFUNCS[reduce].at(out, where, np.asarray(src).astype(out.dtype, copy=False))
    except IndexError as err:
        raise IndexShapeError(f"scatter_reduce: {err} (index along axis {axis} of "
                         f"{describe_inputs([(x.shape, x.dtype)])})") from None
    return out


def _scatter_generic(be, x, index, src, *, axis, reduce, include_self):
    # The standard has no scatter: compare every target position along the axis with
    # every index there (..., n, m) and reduce the matching values.
    xp = be.xp
    dt = be.dtype_of(x)
    work = be.astype(x, dtypes.int32) if dt == dtypes.bool_ else x
    wdt = be.dtype_of(work)
    n, m = x.shape[axis], index.shape[axis]
    idx = be.astype(index, dtypes.int64)
    idx = xp.where(idx < 0, idx + n, idx)
    vals = be.astype(src, wdt)
    # An index smaller than x off the axis: pad it with n (a position no target has).
    for d in range(x.ndim):
        extra = x.shape[d] - idx.shape[d]
        if d != axis and extra > 0:
            pad = idx.shape[:d] + (extra,) + idx.shape[d + 1:]
            idx = xp.concat([idx, xp.full(pad, n, dtype=idx.dtype)], axis=d)
            vals = xp.concat([vals, xp.zeros(pad, dtype=vals.dtype)], axis=d)
    if m == 0 or n == 0:
        return x
    xt, it, vt = (xp.moveaxis(a, axis, -1) for a in (work, idx, vals))
    targets = xp.reshape(xp.arange(n, dtype=xp.int64), (n, 1))
    hits = xp.expand_dims(it, axis=-2) == targets                      # (..., n, m)
    spread = xp.expand_dims(vt, axis=-2)
    fill = xp.asarray(reduce_identity(reduce, wdt).item(), dtype=xt.dtype)
    picked = xp.where(hits, spread, fill)
    if reduce == "sum":
        part, combine = xp.sum(picked, axis=-1, dtype=picked.dtype), xp.add
    elif reduce == "prod":
        part, combine = xp.prod(picked, axis=-1, dtype=picked.dtype), xp.multiply
    elif reduce == "amax":
        part, combine = xp.max(picked, axis=-1), xp.maximum
    else:
        part, combine = xp.min(picked, axis=-1), xp.minimum
    hit = xp.any(hits, axis=-1)
    base = xt if include_self else xp.where(hit, fill, xt)
    out = xp.moveaxis(xp.where(hit, combine(base, part), xt), -1, axis)
    return xp.astype(out, xp.bool) if dt == dtypes.bool_ else out


# ---- gradients ----------------------------------------------------------------------------
def _written(x, index, axis):
    """Bool, ``x``'s shape: True where the scatter writes."""
    marks = creation.zeros_like(x, dtype=dtypes.bool_)
    ones = creation.ones_like(index, dtype=dtypes.bool_)
    return apply(scatter_reduce_op, marks, index, ones, axis=axis, reduce="amax",
                 include_self=True)


def _sum_into(x_like, index, src, axis):
    return apply(scatter_reduce_op, x_like, index, src, axis=axis, reduce="sum",
                 include_self=True)


def _weights(out, x, index, src, axis, reduce, include_self):
    """``(wx, wsrc)``: d out / d x (x's shape) and d out[target] / d src (src's shape)."""
    kept = None if include_self else compare.logical_not(_written(x, index, axis))
    one, zero = creation.ones_like(x), creation.zeros_like(x)
    if reduce == "sum":
        return (one if kept is None else compare.where(kept, one, zero),
                creation.ones_like(src))
    if reduce in ("amax", "amin"):
        # The elements equal to the result share its cotangent evenly (PyTorch's rule).
        self_is = compare.equal(x, out)
        if kept is not None:
            self_is = compare.logical_and(self_is, kept)
        self_is = creation.cast(self_is, x.dtype)
        src_is = creation.cast(compare.equal(src, take_along(out, index, axis)), x.dtype)
        count = _sum_into(self_is, index, src_is, axis)
        share = compare.where(compare.equal(count, 0), zero, one / compare.where(
            compare.equal(count, 0), one, count))
        return self_is * share, src_is * take_along(share, index, axis)
    # prod: each factor's derivative is the product of the other factors at its target,
    # from the product of the non-zero factors and the number of zeros there. Where that
    # is zero, it is written as a zero factor times the rest, so that its own derivative
    # (a second derivative) is right too, as cumprod's.
    xs = x if kept is None else compare.where(kept, x, one)
    x_zero, s_zero = compare.equal(xs, 0), compare.equal(src, 0)
    zeros = _sum_into(creation.cast(x_zero, dtypes.int64), index,
                      creation.cast(s_zero, dtypes.int64), axis)
    zero_sum = _sum_into(compare.where(x_zero, xs, zero), index,
                         compare.where(s_zero, src, creation.zeros_like(src)), axis)
    safe_x = compare.where(x_zero, one, xs)
    safe_s = compare.where(s_zero, creation.ones_like(src), src)
    product = apply(scatter_reduce_op, safe_x, index, safe_s, axis=axis, reduce="prod",
                    include_self=True)

    def others(f, is_zero, safe, n_zeros, prod, zsum):
        none = creation.zeros_like(prod)
        rest = prod / safe
        if_nonzero = compare.where(compare.equal(n_zeros, 0), rest,
                                   compare.where(compare.equal(n_zeros, 1), zsum * rest, none))
        if_zero = compare.where(compare.equal(n_zeros, 1), prod,
                                compare.where(compare.equal(n_zeros, 2), (zsum - f) * prod, none))
        return compare.where(is_zero, if_zero, if_nonzero)
    wx = others(xs, x_zero, safe_x, zeros, product, zero_sum)
    if kept is not None:
        wx = compare.where(kept, wx, zero)
    ws = others(src, s_zero, safe_s, take_along(zeros, index, axis),
                take_along(product, index, axis), take_along(zero_sum, index, axis))
    return wx, ws


def _scatter_vjp(g, out, x, index, src, *, axis, reduce, include_self):
    wx, ws = _weights(out, x, index, src, axis, reduce, include_self)
    return g * wx, None, take_along(g, index, axis) * ws


def _scatter_jvp(primals, tangents, out, *, axis, reduce, include_self):
    (x, index, src), (tx, _, ts) = primals, tangents
    if tx is None and ts is None:
        return None
    wx, ws = _weights(out, x, index, src, axis, reduce, include_self)
    total = creation.zeros_like(out) if tx is None else tx * wx
    return total if ts is None else _sum_into(total, index, ts * ws, axis)


scatter_reduce_op = register(Op(
    "scatter_reduce", _scatter_impl, _scatter_eval, _scatter_vjp, n_inputs=3, dtypes=_DTYPES,
    generic=_scatter_generic,
    doc="A copy of ``x`` with ``src`` combined (sum, prod, amax, amin) into the positions "
        "``index`` names along ``axis``."))


def _scatter_batch(size, args, dims, *, axis, reduce, include_self):
    # Every operand gets the batch axis first (an unbatched one is broadcast).
    full = _rules.all_batched_first(size, args, dims)
    return apply(scatter_reduce_op, *full, axis=axis + 1, reduce=reduce,
                 include_self=include_self), 0


# ONNX's ScatterElements reduces with add and mul from opset 16, max and min from 18.
ONNX_REDUCTIONS = {"sum": ("add", 16), "prod": ("mul", 16), "amax": ("max", 18),
                   "amin": ("min", 18)}
declare(scatter_reduce_op, onnx=("ScatterReduce", ONNX_REDUCTIONS), jvp=_scatter_jvp,
        batch=_scatter_batch)


# ---- public functions ---------------------------------------------------------------------
def _shape_text(t):
    return describe_inputs([(tuple(t.shape), t.dtype)])


def _src_tensor(src, index, x):
    """``src`` as a tensor of ``index``'s shape: a number fills it (PyTorch's ``value``);
    a larger tensor is cut to it (PyTorch reads only that part)."""
    if isinstance(src, (bool, int, float, np.number)):
        return creation.full(tuple(index.shape), src, dtype=x.dtype)
    src = as_tensor(src)
    if src.ndim == index.ndim and tuple(src.shape) != tuple(index.shape) and all(
            s is not None and i is not None and s >= i for s, i in zip(src.shape, index.shape)):
        src = indexing.getitem(src, tuple(slice(0, i) for i in index.shape))
    return src


def _index(name, index):
    index = as_tensor(np.asarray(index) if isinstance(index, (list, tuple)) else index)
    if index.dtype not in dtypes.INTS:
        raise DTypeError(f"{name}: index must be integers, got {_shape_text(index)}"
                         f"{at_user_line()}")
    return index


def scatter_reduce(x, axis, index, src, reduce, include_self=True):
    """A copy of ``x`` with ``src`` combined into the positions ``index`` names along
    ``axis`` (PyTorch's ``torch.scatter_reduce(input, dim, index, src, reduce)``;
    ``reduce="sum"`` is its ``scatter_add``). ``index`` has ``x``'s rank, at most
    ``x``'s size off ``axis``; ``src`` has ``index``'s shape (or is a number, or larger
    and cut). ``reduce``: ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``;
    with ``include_self=False`` written positions forget ``x``'s value. Negative
    indices count from the end, as numpy's. Gradients reach ``x`` and ``src`` (for
    amax/amin the elements equal to the result, ties sharing evenly).

    Example:
        >>> import engine as en
        >>> x = en.tensor([[1.0, 5.0], [2.0, 0.0]])
        >>> en.scatter_reduce(x, 1, en.tensor([[0, 0], [1, 1]]), en.tensor([[4.0, 3.0],
        ...                   [6.0, 7.0]]), "amax").numpy()
        array([[4., 5.],
               [2., 7.]])
    """
    x = as_tensor(x)
    index = _index("scatter_reduce", index)
    if x.ndim == 0 or index.ndim != x.ndim:
        raise ShapeError(f"scatter_reduce: index must have the input's rank (at least one), "
                         f"got input {_shape_text(x)} and index {_shape_text(index)}"
                         f"{at_user_line()}")
    axis = user_axis(axis, x.ndim, "scatter_reduce")
    src = _src_tensor(src, index, x)
    if reduce == "mean":
        if x.dtype == dtypes.bool_:
            raise DTypeError(f"scatter_reduce: reduce='mean' needs numbers, got {_shape_text(x)}"
                             f"{at_user_line()}")
        return _scatter_mean(x, axis, index, src, include_self)
    if reduce not in REDUCES:
        raise ShapeError(f"scatter_reduce: reduce must be one of {REDUCES + ('mean',)}, got "
                         f"{reduce!r}{at_user_line()}")
    return apply(scatter_reduce_op, x, index, src, axis=axis, reduce=reduce,
                 include_self=bool(include_self))


def _scatter_mean(x, axis, index, src, include_self):
    """The sum over the values that meet at a position, divided by their number
    (integers: floor division, as PyTorch)."""
    total = apply(scatter_reduce_op, x, index, src, axis=axis, reduce="sum",
                  include_self=bool(include_self))
    counts = apply(scatter_reduce_op, creation.ones_like(x, dtype=dtypes.int64), index,
                   creation.ones_like(index, dtype=dtypes.int64), axis=axis, reduce="sum",
                   include_self=bool(include_self))
    counts = compare.where(compare.equal(counts, 0), creation.ones_like(counts), counts)
    if x.dtype in dtypes.FLOATS:
        return total / creation.cast(counts, x.dtype)
    return total // creation.cast(counts, x.dtype)


def index_add(x, axis, index, source, alpha=1):
    """A copy of ``x`` with the slices of ``source`` added at the positions ``index``
    (1-D) names along ``axis``, repeated positions adding up (PyTorch's
    ``torch.index_add(input, dim, index, source, alpha=1)``; ``source`` is ``x``'s shape
    with ``len(index)`` along ``axis``, and is multiplied by ``alpha`` first).

    Example:
        >>> import engine as en
        >>> en.index_add(en.zeros((3, 2)), 0, en.tensor([0, 2, 0]),
        ...              en.ones((3, 2))).numpy()
        array([[2., 2.],
               [0., 0.],
               [1., 1.]])
    """
    x, source = as_tensor(x), as_tensor(source)
    index = _index("index_add", index)
    if x.ndim == 0:
        raise ShapeError(f"index_add: the input needs at least one dimension, got "
                         f"{_shape_text(x)}{at_user_line()}")
    axis = user_axis(axis, x.ndim, "index_add")
    want = tuple(x.shape[:axis]) + (index.shape[0] if index.ndim == 1 else None,) + \
        tuple(x.shape[axis + 1:])
    if index.ndim != 1 or tuple(source.shape) != want:
        raise ShapeError(f"index_add: index must be 1-D and source of shape {want} (the "
                         f"input's, with len(index) along axis {axis}); got input "
                         f"{_shape_text(x)}, index {_shape_text(index)}, source "
                         f"{_shape_text(source)}{at_user_line()}")
    if alpha != 1:
        source = source * alpha
    return indexing.scatter_add(x, (slice(None),) * axis + (index,), source)


__all__ = ["scatter_reduce", "scatter_reduce_op", "index_add"]
