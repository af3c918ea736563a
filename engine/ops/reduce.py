"""Reductions over axes: sum, mean, max, min, prod, argmax, argmin."""
import builtins
import math

import numpy as np

from .. import dtypes
from ..config import config
from ..cost_model import cost
from ..names import also_named as _also_named
from ..numerics import bitwise, c_ordered as _c_ordered
from ..errors import DTypeError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from .. import chunk_rules
from ..shapes import normalize_axes, reduced_shape
from . import compare, creation, native, shape_ops
from . import _rules


# numpy (and the standard) accumulate bools and small ints in the platform int
# (int64 here), small unsigned ints in uint64.
_SUM_DTYPES = {dt: np.sum(np.zeros(0, dt)).dtype for dt in dtypes.INTS | {dtypes.bool_}}


def _sum_dtype(dt):
    return _SUM_DTYPES.get(dt, dt)


def _mean_dtype(dt):
    return dt if dt in dtypes.INEXACT else dtypes.float64


def _reduction(name, impl, vjp, out_dtype, allowed=dtypes.ALL, what="any", nonempty=False,
               generic=None, takes_dtype=False):
    def abstract_eval(x, *, axis, keepdims):
        if x[1] not in allowed:
            raise DTypeError(f"{name}: expected {what} input, got {describe_inputs([x])}")
        axes = normalize_axes(axis, len(x[0]), name)
        if nonempty and any(x[0][a] == 0 for a in axes):
            raise ShapeError(f"{name}: cannot reduce over an empty axis of {describe_inputs([x])}")
        return (reduced_shape(x[0], axes, keepdims), out_dtype(x[1]))

    def kernel(x, *, axis, keepdims):
        out = impl(x, axis=axis, keepdims=keepdims)
        return np.asarray(out, dtype=out_dtype(x.dtype))

    def out_kernel(x, *, axis, keepdims, out):
        return impl(x, axis=axis, keepdims=keepdims, out=out)

    op = register(Op(name, kernel, abstract_eval, vjp, reduction=True, n_inputs=1,
                     dtypes=allowed, out_impl=out_kernel, generic=generic,
                     doc=f"``{name}`` over ``axis`` (all axes when None)."))

    def f(x, axis=None, keepdims=False):
        if isinstance(axis, list):
            axis = tuple(axis)
        return apply(op, x, axis=axis, keepdims=bool(keepdims))

    if takes_dtype:
        reduce_in_own_dtype = f

        # The variant taking a dtype replaces f, on purpose (its signature is wider).
        def f(x, axis=None, keepdims=False, dtype=None):  # type: ignore[misc]
            if dtype is None:
                return reduce_in_own_dtype(x, axis, keepdims)
            if name == "mean" and dtypes.as_dtype(dtype) not in dtypes.INEXACT:
                return _integer_mean(x, axis, keepdims, dtype)
            return _in_dtype(reduce_in_own_dtype, x, axis, keepdims, dtype)
    f.__name__ = f.__qualname__ = name     # Python's own errors name it as the user does
    f.__doc__ = f"""Reduce ``x`` by {name} over ``axis`` (int, tuple, or None for all).

    Example:
        >>> import engine as en
        >>> en.{name}(en.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).shape
        (2,)
    """
    return op, f


def _in_dtype(reduce_fn, x, axis, keepdims, dtype):
    """numpy's ``dtype=`` of sum, prod and mean: the input cast to ``dtype``, reduced,
    and the result in ``dtype`` (a narrow int accumulates in 64 bits and is cast back,
    which wraps as numpy's own accumulation does)."""
    dtype = dtypes.as_dtype(dtype)
    if getattr(x, "dtype", None) != dtype:
        x = creation.cast(x, dtype)
    out = reduce_fn(x, axis, keepdims)
    return out if out.dtype == dtype else creation.cast(out, dtype)


def _integer_mean(x, axis, keepdims, dtype):
    """numpy's mean with an integer ``dtype``: the sum taken in ``dtype`` (wrapping),
    divided by the count, and the quotient cast to ``dtype``."""
    dtype = dtypes.as_dtype(dtype)
    if getattr(x, "dtype", None) != dtype:
        x = creation.cast(x, dtype)
    if isinstance(axis, list):
        axis = tuple(axis)
    total = creation.cast(apply(sum_op, x, axis=axis, keepdims=bool(keepdims)), dtype)
    return creation.cast(total / _count(x, axis), dtype)


def _expand_back(g, x, axis, keepdims):
    """Reshape a reduced cotangent so it broadcasts against ``x``."""
    if keepdims:
        return g
    axes = normalize_axes(axis, x.ndim, "reduce")
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return shape_ops.reshape(g, tuple(-1 if d is None else d for d in shape))


def _sum_vjp(g, out, x, *, axis, keepdims):
    return (shape_ops.broadcast_to_shape_of(_expand_back(g, x, axis, keepdims), x),)


def _count(x, axis):
    axes = normalize_axes(axis, x.ndim, "mean")
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _mean_vjp(g, out, x, *, axis, keepdims):
    # Divided before it is broadcast: one division per reduced element, not one
    # per input element (the values are the same).
    g = _expand_back(g, x, axis, keepdims)
    axes = normalize_axes(axis, x.ndim, "mean")
    if any(x.shape[a] is None for a in axes):   # size known only at run time
        n = shape_ops.count(x, axes, dtype=g.dtype)
    else:   # builtins.max: this module defines its own max (the reduction)
        n = float(builtins.max(_count(x, axis), 1))
    return (shape_ops.broadcast_to_shape_of(g / n, x),)


def _extreme_vjp(g, out, x, *, axis, keepdims):
    # Ties share the gradient equally, like the elementwise maximum.
    out_b = _expand_back(out, x, axis, keepdims)
    mask = creation.cast(compare.equal(x, out_b), g.dtype)
    count = sum(mask, axis=axis, keepdims=True)
    return (mask / count * _expand_back(g, x, axis, keepdims),)


def _prod_vjp(g, out, x, *, axis, keepdims):
    # d prod / dx_j = product of the others. With no zero that is out / x_j.
    # With exactly one zero (at i): the product of the non-zeros at i, and
    # x_i * (non-zero product / x_j) elsewhere -- zero in value, but written
    # with x_i so that the second derivative is right too. With two or more
    # zeros every first derivative is zero; with exactly two (at i and k) the
    # one at i is written x_k * (non-zero product), again for the second
    # derivative (x_k is "the sum of the zeros minus x_i").
    gb = _expand_back(g, x, axis, keepdims)
    outb = _expand_back(out, x, axis, keepdims)
    nonzero = compare.not_equal(x, 0)
    is_zero = compare.logical_not(nonzero)
    safe_x = compare.where(nonzero, x, creation.ones_like(x))
    prod_nonzero = prod(safe_x, axis=axis, keepdims=True)
    zeros_count = sum(creation.cast(is_zero, dtypes.int64), axis=axis, keepdims=True)
    zero_value = sum(compare.where(nonzero, creation.zeros_like(x), x), axis=axis, keepdims=True)
    one_zero = compare.where(is_zero, shape_ops.broadcast_to(prod_nonzero, x.shape),
                         zero_value * prod_nonzero / safe_x)
    two_zeros = compare.where(is_zero, (zero_value - x) * prod_nonzero, creation.zeros_like(x))
    grad = compare.where(compare.equal(zeros_count, 0), outb / safe_x,
                         compare.where(compare.equal(zeros_count, 1), one_zero,
                                       compare.where(compare.equal(zeros_count, 2), two_zeros,
                                                     creation.zeros_like(x))))
    return (gb * grad,)


# numpy sums along the contiguous axis pairwise (error ~ log n), but down the
# leading axis of a C-ordered array it adds row after row (error ~ n): 60000 rows
# of float32 0.1 sum to 6003.5. Summing blocks of rows first, then the block sums,
# keeps the error near (block + n / block) ulps for the same single pass.
_BLOCK_ROWS = 256
# From this many rows (of a float array of 2 dims or more) the sum goes by blocks.
BLOCKED_FROM_ROWS = 4 * _BLOCK_ROWS


def _in_blocks(shape, dtype, axes):
    """Whether ``_blocked_sum`` sums over ``axes`` of a ``shape`` and ``dtype`` value in
    blocks of rows (else in one np.add.reduce)."""
    return (axes == (0,) and len(shape) >= 2 and shape[0] >= BLOCKED_FROM_ROWS and
            dtype in dtypes.FLOATS) or _wide(shape, dtype, axes)


# Down two or more leading axes onto a short trailing block (a convolution's bias
# gradient: (N, H, W, C) summed to C), numpy's inner loop runs only C long: 1.0 ms for
# (64, 28, 28, 16) float32. Rows laid side by side, cost.wide_sum_row_elements at a
# time, are summed with long inner loops, then the side-by-side sums folded: 0.085 ms,
# and fewer float32 rounding steps in a row (R / k against R).
def _wide(shape, dtype, axes):
    """Whether ``_blocked_sum`` sums ``axes`` with rows side by side (:func:`_wide_sum`)."""
    lead = len(axes)
    if lead < 2 or axes != tuple(range(lead)) or lead >= len(shape) or \
            dtype not in dtypes.FLOATS or None in shape:
        return False
    trailing = math.prod(shape[lead:])       # (np.prod of a tuple: 3 us a call)
    return 0 < trailing <= cost.wide_sum_max_trailing and \
        trailing * math.prod(shape[:lead]) >= cost.wide_sum_min_elements


def _wide_sum(x, lead):
    """The sum over the first ``lead`` axes of ``x``, rows side by side."""
    tail = x.shape[lead:]
    flat = x.reshape((-1, int(np.prod(tail))))
    rows, t = flat.shape
    k = builtins.max(1, cost.wide_sum_row_elements // t)
    full = rows // k * k
    total = flat[:full].reshape(full // k, k * t).sum(axis=0).reshape(k, t).sum(axis=0)
    if full < rows:
        total += flat[full:].sum(axis=0)
    return total.reshape(tail)


def _leading_native(x, lead, keepdims, out):
    """The sum over the first ``lead`` axes of the C-contiguous float32 or float64 ``x``
    by the native kernel (graph/lowering/c/c_colsum.py: float64 sums, rounded once, so
    more accurate than :func:`_wide_sum`), or None where it does not apply (another
    dtype or layout, an ``out`` of another dtype, no kernel): the caller's numpy sum runs.
    Its rows go in :func:`_leading_sum_parts` parts, a count from the shape alone, so the
    bits never depend on threads."""
    if not isinstance(x, np.ndarray) or x.dtype not in _ROW_DTYPES or \
            not x.flags.c_contiguous or (out is not None and out.dtype != x.dtype):
        return None
    fn = native.kernel("sum_leading", x.dtype)
    if fn is None:
        return None
    tail = x.shape[lead:]
    flat = x.reshape((-1, math.prod(tail)))
    threads = config.fusion_threads is None or config.fusion_threads > 1
    done = fn(flat, _leading_sum_parts(x.size), out=out, threads=threads)
    if done is None or out is not None:
        return done
    return done.reshape(((1,) * lead if keepdims else ()) + tail)


def _leading_sum_parts(size):
    """How many row ranges the native leading-axes sum of ``size`` values takes (each
    summed on its own, then the ranges' sums in order): one per
    ``cost.colsum_part_elements``, at most ``cost.colsum_max_parts``."""
    return builtins.max(1, builtins.min(int(cost.colsum_max_parts),
                                        size // int(cost.colsum_part_elements)))


# numpy reduces over the last axis one row at a time, its reduce loop set up again per
# row: max over (32, 4, 32, 32) float32, rows of 32, takes 0.22 ms (1.6 ns an element). A
# native kernel (graph/lowering/c/c_rows.py) runs all the rows in one loop with numpy's
# results (a sum in numpy's pairwise order, bit for bit) where the array is not small
# (cost.row_reduce_min_elements: the call costs about 1 us more than numpy's) and the rows
# are not long (cost.row_extreme_max_length, cost.row_sum_max_length). Eager and graph
# mode both reach it here.
_ROW_DTYPES = frozenset({dtypes.float32, dtypes.float64})


def _row_reduce(name, x, axis, keepdims, out):
    """``x`` reduced over its last axis by the native kernel ``name``, or None where it
    does not apply (another axis or dtype, a strided ``x``, rows too long or too few
    values, an ``out`` of another dtype (numpy would reduce in that dtype), no kernel:
    the caller's numpy reduction runs)."""
    if not isinstance(x, np.ndarray) or x.size < cost.row_reduce_min_elements or \
            x.dtype not in _ROW_DTYPES or not x.ndim or not x.flags.c_contiguous or \
            not _rows_fit(x.shape, name) or (out is not None and out.dtype != x.dtype):
        return None
    last = x.ndim - 1
    if not (axis == last or axis == -1 or normalize_axes(axis, x.ndim, name) == (last,)):
        return None
    fn = native.kernel(name, x.dtype)
    done = None if fn is None else fn(x, out)
    if done is None or out is not None or not keepdims:
        return done
    return done.reshape(x.shape[:-1] + (1,))


def _rows_fit(shape, name):
    """Whether rows of ``shape[-1]`` values are short enough for the kernel ``name``."""
    longest = cost.row_sum_max_length if name == "reduce_last_sum" else \
        cost.row_extreme_max_length
    return 0 < shape[-1] <= longest


def _row_extreme(name, numpy_reduce):
    """max's or min's kernel: the native row kernel ``name`` where it applies, else
    ``numpy_reduce``."""
    def kernel(x, axis=None, keepdims=False, out=None):
        done = _row_reduce(name, x, axis, keepdims, out)
        if done is not None:
            return done
        return numpy_reduce(x, axis=axis, keepdims=keepdims, out=out)
    kernel.__name__ = numpy_reduce.__name__
    return kernel


def _blocked_sum(x, axis=None, keepdims=False, out=None):
    x = _c_ordered(x)
    done = _row_reduce("reduce_last_sum", x, axis, keepdims, out)
    if done is not None:
        return done
    axes = normalize_axes(axis, x.ndim, "sum")
    if not _in_blocks(x.shape, x.dtype, axes):
        # np.sum is add.reduce behind ~1 µs of argument handling
        return np.add.reduce(x, axis=axis, keepdims=keepdims, out=out)
    if axes != (0,):
        done = _leading_native(x, len(axes), keepdims, out)
        if done is not None:
            return done
        total = _wide_sum(x, len(axes))
        if keepdims:
            total = total.reshape((1,) * len(axes) + total.shape)
        if out is None:
            return total
        out[...] = total
        return out
    n = x.shape[0]
    k = n // _BLOCK_ROWS
    blocks = x[:k * _BLOCK_ROWS].reshape((k, _BLOCK_ROWS) + x.shape[1:]).sum(axis=1)
    if k * _BLOCK_ROWS < n:
        blocks[0] += x[k * _BLOCK_ROWS:].sum(axis=0)
    total = blocks.sum(axis=0)
    if keepdims:
        total = total.reshape((1,) + x.shape[1:])
    if out is None:
        return total
    out[...] = total
    return out


class LeadingSum:
    """``sum(x, axis=0)`` of a float ``x`` of ``length`` rows of ``shape``, given one row
    at a time (``add(t, row)``, the rows in any order): the blocks of ``_blocked_sum``,
    so rows given in order give its bits, kept in one row per block (a scan adds up a
    per-step result this way, ``graph/passes/scan_sums.py``).

    Example:
        >>> x = np.arange(12.0).reshape(4, 3)
        >>> s = LeadingSum(4, (3,), x.dtype)
        >>> for t in range(4):
        ...     s.add(t, x[t])
        >>> s.total().tolist()
        [18.0, 22.0, 26.0]
    """

    __slots__ = ("_length", "_full", "_blocks", "_rest")

    def __init__(self, length, shape, dtype):
        shape = tuple(shape)
        blocked = len(shape) >= 1 and length >= BLOCKED_FROM_ROWS and \
            np.dtype(dtype) in dtypes.FLOATS
        k = length // _BLOCK_ROWS if blocked else 0
        self._length, self._full = length, k * _BLOCK_ROWS
        self._blocks = np.zeros((k,) + shape, dtype)
        self._rest = np.zeros(shape, dtype)   # the rows after the last whole block

    def add(self, t, row):
        """Add row ``t``."""
        acc = self._blocks[t // _BLOCK_ROWS] if t < self._full else self._rest
        np.add(acc, row, out=acc)

    def total(self):
        """The sum of the rows added."""
        if not len(self._blocks):
            return self._rest
        if self._full < self._length:
            self._blocks[0] += self._rest
        return self._blocks.sum(axis=0)


def _blocked_mean(x, axis=None, keepdims=False, out=None):
    # float16 is summed in float32 (numpy's mean does): in float16 a count or a sum over
    # 65504 is inf.
    if x.dtype not in dtypes.FLOATS or x.dtype == dtypes.float16:
        return np.mean(_c_ordered(x), axis=axis, keepdims=keepdims, out=out)
    total = _blocked_sum(x, axis=axis, keepdims=keepdims, out=out)
    count = 1
    for a in normalize_axes(axis, x.ndim, "mean"):
        count *= x.shape[a]
    return np.true_divide(total, count, out=total if isinstance(total, np.ndarray) else None)


def _generic_reduction(name, compute_dtype, out_dtype):
    """A reduction written against the namespace. The standard's reductions take
    only some dtypes (no bool sums, no integer means): the input is cast to
    ``compute_dtype(dtype)`` first and the result to the engine's dtype after."""
    def kernel(be, x, *, axis, keepdims):
        dt = be.dtype_of(x)
        work = compute_dtype(dt)
        if work != dt:
            x = be.astype(x, work)
        out = getattr(be.xp, name)(x, axis=axis, keepdims=keepdims)
        target = out_dtype(dt)
        return out if be.dtype_of(out) == target else be.astype(out, target)
    kernel.__name__ = f"{name}_generic"
    return kernel


def _same(d):
    return d


def _int_for_bool(d):
    return dtypes.int64 if d == dtypes.bool_ else d


def _sum_static_kernel(in_avals, out_aval, params, into_buffer):
    # _blocked_sum's choice made once from the traced avals: where it would call
    # np.add.reduce (no long leading axis to sum in blocks), the generated code calls it
    # itself. A full sum into a fresh result keeps the generic kernel, which returns a
    # 0-d array where np.add.reduce returns a scalar.
    ((shape, dtype),) = in_avals
    if None in shape or np.dtype(out_aval[1]) != np.dtype(dtype) or \
            not (into_buffer or out_aval[0]) or bitwise():   # (bitwise: _c_ordered first)
        return None
    axes = normalize_axes(params["axis"], len(shape), "sum")
    if _in_blocks(shape, np.dtype(dtype), axes) or _rows_may_apply(shape, dtype, axes):
        return None
    return np.add.reduce


def _rows_may_apply(shape, dtype, axes):
    """Whether ``_blocked_sum`` may sum a value of ``shape`` and ``dtype`` over ``axes``
    with the native row kernel (it decides at each call: the value's layout, the
    settings then)."""
    return bool(shape) and axes == (len(shape) - 1,) and np.dtype(dtype) in _ROW_DTYPES and \
        _rows_fit(shape, "reduce_last_sum") and \
        int(np.prod(shape)) >= cost.row_reduce_min_elements and \
        native.kernel("reduce_last_sum", dtype) is not None


sum_op, sum = _reduction("sum", _blocked_sum, _sum_vjp, _sum_dtype,
                         generic=_generic_reduction("sum", _sum_dtype, _sum_dtype),
                         takes_dtype=True)
declare(sum_op, onnx=("reduce", "ReduceSum"), chunks=chunk_rules.reduction("sum"),
        static_kernel=_sum_static_kernel)
mean_op, mean = _reduction("mean", _blocked_mean, _mean_vjp, _mean_dtype,
                           allowed=dtypes.NUMERIC | {dtypes.bool_}, what="numeric or bool",
                           generic=_generic_reduction("mean", _mean_dtype, _mean_dtype),
                           takes_dtype=True)
declare(mean_op, onnx=("reduce", "ReduceMean"),
        chunks=chunk_rules.reduction("sum", partial="sum", divide=True))
max_op, max = _reduction("max", _row_extreme("reduce_last_max", np.max), _extreme_vjp, _same,
                         nonempty=True, generic=_generic_reduction("max", _int_for_bool, _same))
_also_named(max, numpy="amax")
declare(max_op, onnx=("reduce", "ReduceMax"), chunks=chunk_rules.reduction("max"))
min_op, min = _reduction("min", _row_extreme("reduce_last_min", np.min), _extreme_vjp, _same,
                         nonempty=True, generic=_generic_reduction("min", _int_for_bool, _same))
_also_named(min, numpy="amin")
declare(min_op, onnx=("reduce", "ReduceMin"), chunks=chunk_rules.reduction("min"))
prod_op, prod = _reduction("prod", np.prod, _prod_vjp, _sum_dtype, allowed=dtypes.NUMERIC,
                           what="numeric",
                           generic=_generic_reduction("prod", _sum_dtype, _sum_dtype),
                           takes_dtype=True)
declare(prod_op, onnx=("reduce", "ReduceProd"), chunks=chunk_rules.reduction("prod"))


def _arg_reduction(name, impl):
    def abstract_eval(x, *, axis, keepdims):
        shape = x[0]
        if axis is None:
            if any(d == 0 for d in shape):
                raise ShapeError(f"{name}: empty input {describe_inputs([x])}")
            return ((1,) * len(shape) if keepdims else (), dtypes.int64)
        axes = normalize_axes(axis, len(shape), name)
        if len(axes) != 1:
            raise ShapeError(f"{name}: axis must be a single int, got {axis!r}")
        if shape[axes[0]] == 0:
            raise ShapeError(f"{name}: cannot reduce over an empty axis of {describe_inputs([x])}")
        return (reduced_shape(shape, axes, keepdims), dtypes.int64)

    def kernel(x, *, axis, keepdims):
        return np.asarray(impl(x, axis=axis, keepdims=keepdims), dtype=np.int64)

    def generic(be, x, *, axis, keepdims):
        if be.dtype_of(x) == dtypes.bool_:
            x = be.astype(x, dtypes.int64)
        if x.ndim == 0:   # the standard's argmax needs an axis to index
            x = be.xp.reshape(x, (1,))
            axis = None if axis is None else 0
            keepdims = False
        out = getattr(be.xp, name)(x, axis=axis, keepdims=keepdims)
        return be.astype(out, dtypes.int64)

    op = register(Op(name, kernel, abstract_eval, None, reduction=True, n_inputs=1,
                     dtypes=dtypes.NUMERIC | {dtypes.bool_}, generic=generic,
                     doc=f"Index of the {name[3:]}imum along ``axis`` (flat index when None)."))

    def f(x, axis=None, keepdims=False):
        return apply(op, x, axis=axis, keepdims=bool(keepdims))
    f.__name__ = f.__qualname__ = name     # Python's own errors name it as the user does
    f.__doc__ = op.doc
    return op, f


argmax_op, argmax = _arg_reduction("argmax", np.argmax)
declare(argmax_op, onnx=("arg_reduce", "ArgMax"), chunks=chunk_rules.reduction(None))
argmin_op, argmin = _arg_reduction("argmin", np.argmin)
declare(argmin_op, onnx=("arg_reduce", "ArgMin"), chunks=chunk_rules.reduction(None))


# ---- forward mode (see engine.op.RULE_KINDS) ------------------------------------------------
# sum and mean are linear. max, min and prod use the rule the reduction flag implies
# (the tangent summed against the VJP of ones), and every reduction batches by its flag.
declare(sum_op, jvp=_rules.jvp_linear(sum_op))
declare(mean_op, jvp=_rules.jvp_linear(mean_op))

# The compiled lowering writes these as loops summing in float64 (graph/lowering/numba/numba_source.py).
declare(sum_op, numba_form="reduce_sum")
declare(mean_op, numba_form="reduce_mean")
# (the C lowering's whole graphs: graph/lowering/c/c_batched.py; numba writes neither)
declare(max_op, numba_form="reduce_max")
declare(min_op, numba_form="reduce_min")
