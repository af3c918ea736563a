"""Matrix products: ``matmul`` (batched, numpy semantics) and the composites ``dot``, ``outer``."""
import numpy as np

from .. import dtypes
from ..cost_model import cost
from ..errors import DTypeError, ShapeError, TracingError, describe_inputs
from ..lifting import TensorLike
from ..modes import current_mode
from ..numerics import NUMERICS, bitwise
from ..op import Op, declare, register
from .. import chunk_rules
from ..shapes import broadcast_shapes
from ._args import at_user_line
from ._define import call, unbroadcast
from . import elementwise, reduce, shape_ops
from . import _rules


def _matmul_eval(x, y):
    if x[1] not in dtypes.NUMERIC or y[1] not in dtypes.NUMERIC:
        raise DTypeError(f"matmul: expected numeric inputs, got {describe_inputs([x, y])}")
    xs, ys = x[0], y[0]
    if not xs or not ys:
        raise ShapeError(f"matmul: inputs must have at least one dimension, got {describe_inputs([x, y])}")
    xm = xs if len(xs) > 1 else (1,) + xs
    ym = ys if len(ys) > 1 else ys + (1,)
    k1, k2 = xm[-1], ym[-2]
    if k1 is not None and k2 is not None and k1 != k2:
        raise ShapeError(f"matmul: contracting dimensions differ ({k1} vs {k2}) for "
                         f"{describe_inputs([x, y])}")
    batch = broadcast_shapes(xm[:-2], ym[:-2], op_name="matmul")
    shape = batch + ((xm[-2],) if len(xs) > 1 else ()) + ((ym[-1],) if len(ys) > 1 else ())
    return (shape, np.result_type(x[1], y[1]))


def _matmul_vjp(g, out, x, y, needs=(True, True)):
    xs, ys = x.shape, y.shape
    if len(xs) == 1 and len(ys) == 1:            # inner product -> scalar
        return g * y, g * x
    if len(xs) == 1:                              # (k) @ (..., k, n) -> (..., n)
        gx = matmul(shape_ops.expand_dims(g, -2), _mT(y))      # (..., 1, k)
        # Summed over the batch dims and the 1, not reshaped to (-1, k): -1 beside k = 0
        # has no single answer, and (0,) @ (0, n) must have a gradient too.
        gx = reduce.sum(gx, axis=tuple(range(gx.ndim - 1)))
        gy = shape_ops.expand_dims(x, -1) * shape_ops.expand_dims(g, -2)  # (..., k, n)
        return gx, unbroadcast(gy, ys)
    if len(ys) == 1:                              # (..., m, k) @ (k) -> (..., m)
        gx = shape_ops.expand_dims(g, -1) * y                       # (..., m, k)
        gy = matmul(_mT(x), shape_ops.expand_dims(g, -1))       # (..., k, 1)
        gy = reduce.sum(gy, axis=tuple(range(gy.ndim - 2)) + (gy.ndim - 1,))
        return unbroadcast(gx, xs), gy
    gx = gy = None
    if needs[0]:
        # An input that is a transposed matrix gets its gradient made transposed
        # too ((y gᵀ)ᵀ for g yᵀ): the transpose's own gradient is then a
        # contiguous array, not a strided view that every later add must walk.
        gx = _mT(matmul(y, _mT(g))) if _transposed(x) else matmul(g, _mT(y))
        gx = unbroadcast(gx, xs)
    if needs[1]:
        if _rows_product(x, y):
            # A matrix applied to a batch of matrices (a layer's weight): its gradient
            # is one product over every row of the batch, not a product per matrix of
            # the batch summed after (one BLAS call of full depth, no batched result).
            gy = matmul(_mT(_as_rows(x)), _as_rows(g))
        else:
            gy = _mT(matmul(_mT(g), x)) if _transposed(y) else matmul(_mT(x), g)
        gy = unbroadcast(gy, ys)
    return gx, gy


def _rows_product(x, y):
    """Whether ``x @ y`` is a stack of matrices ``x`` (batch dims, all static and
    nonzero) times one matrix ``y``: then it is ``x``'s rows, flattened, times ``y``."""
    shape = tuple(x.shape)
    return len(y.shape) == 2 and len(shape) > 2 and None not in shape and 0 not in shape


def _as_rows(a):
    """``a`` of shape ``(..., m, k)`` as the matrix of its rows, ``(... * m, k)``."""
    return shape_ops.reshape(a, (-1, a.shape[-1]))


def _mT(a):
    nd = a.ndim
    return shape_ops.transpose(a, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _transposed(t):
    """Whether a concrete 2-D tensor's array is laid out column by column (the
    view of a transposed matrix). Unknown while tracing: False (graph mode has
    its own layout pass), except under ``en.config.numerics = "bitwise"``, where
    graph mode turns that pass off and follows eager mode's choice instead: a matrix
    is then taken as transposed where a transpose made it (eagerly, the view of a
    C-ordered matrix), so the gradient has eager's products, in eager's layout."""
    if not current_mode().is_concrete:
        return NUMERICS.value == "bitwise" and _made_by_transpose(t)
    a = t._value
    if type(a) is not np.ndarray:     # another back end's array: no layout to keep (and a
        return False                  # lazy one must not be computed here)
    return (a.ndim == 2 and a.shape[0] > 1 and a.shape[1] > 1
            and a.flags.f_contiguous and not a.flags.c_contiguous)


def _made_by_transpose(t):
    node = getattr(t, "_node", None)
    if node is None or node.op is not shape_ops.transpose_op or len(t.shape or ()) != 2:
        return False
    rows, cols = t.shape
    source = node.inputs[0] if node.inputs else None
    return rows is not None and cols is not None and rows > 1 and cols > 1 and \
        getattr(source, "op", None) is not shape_ops.transpose_op


def _matmul_impl(x, y):
    # For one- and two-dimensional operands np.dot is the same product with less
    # call overhead (0.55 vs 0.9 us on 4x4); batched products need np.matmul.
    if x.ndim <= 2 and y.ndim <= 2:
        return np.dot(x, y)
    if _stacked_rows(x, y):
        return np.matmul(x.reshape(-1, x.shape[-1]), y).reshape(x.shape[:-1] + y.shape[-1:])
    return np.matmul(x, y)


def _stacked_rows(x, y):
    """Whether ``x @ y`` is a C-contiguous stack of matrices times one matrix: one
    product of ``x``'s rows, which np.matmul would compute a matrix of the stack at a
    time ((32, 32, 256) @ (256, 64) float32 on one core: 0.35 ms as one product, 0.6
    as 32)."""
    return y.ndim == 2 and x.ndim > 2 and x.flags.c_contiguous and x.size > 0


# Above about this many multiply-adds np.matmul runs faster than np.dot (on numpy 2.4's
# OpenBLAS: (256, 64) @ (64, 64) 10.4 against 15.0 us, (1000, 196) @ (196, 784)^T 0.95
# against 1.09 ms); below it np.dot's smaller call overhead wins: cost.dot_out_max_work.


def _matmul_out(x, y, out):
    if NUMERICS.value == "bitwise" and x.ndim <= 2 and y.ndim <= 2:
        return _dot_out(x, y, out)
    # np.dot writes a small 2-D product into ``out`` with less call overhead than
    # np.matmul (1.8 against 2.2 us for (32, 64) @ (64, 64) float32, the step of a small
    # RNN); it takes only a C-contiguous ``out`` of the product's own dtype, as planned
    # buffers are. Anything else, and any larger product, goes to np.matmul.
    if x.ndim == 2 and y.ndim == 2 and out.dtype == x.dtype == y.dtype and \
            out.flags.c_contiguous and \
            x.shape[0] * x.shape[1] * y.shape[1] < cost.dot_out_max_work:
        return np.dot(x, y, out=out)
    if _stacked_rows(x, y) and out.flags.c_contiguous:
        np.matmul(x.reshape(-1, x.shape[-1]), y, out=out.reshape(-1, out.shape[-1]))
        return out
    return np.matmul(x, y, out=out)


def _dot_out(x, y, out):
    """Eager's kernel (np.dot) into ``out``: under ``en.config.numerics = "bitwise"`` a
    planned buffer must not change the product's bits, and np.matmul sums another way
    where an operand is not contiguous (a reversed vector)."""
    if out.flags.c_contiguous and out.dtype == x.dtype == y.dtype:
        return np.dot(x, y, out=out)
    out[...] = np.dot(x, y)
    return out


def _matmul_static_kernel(in_avals, out_aval, params, into_buffer):
    # The choices of _matmul_impl and _matmul_out, made once from the traced avals: the
    # generated code then calls np.dot or np.matmul itself.
    (x_shape, x_dtype), (y_shape, y_dtype) = in_avals
    if len(x_shape) != 2 or len(y_shape) != 2 or None in x_shape + y_shape:
        return None
    if not into_buffer:
        return np.dot
    if bitwise():
        return _dot_out
    same = np.dtype(out_aval[1]) == np.dtype(x_dtype) == np.dtype(y_dtype)
    small = x_shape[0] * x_shape[1] * y_shape[1] < cost.dot_out_max_work
    return np.dot if same and small else np.matmul


def _matmul_generic(be, x, y):
    return be.xp.matmul(*be.promote(x, y))


matmul_op = register(Op("matmul", _matmul_impl, _matmul_eval, _matmul_vjp, n_inputs=2,
                        out_impl=_matmul_out, vjp_needs=True, generic=_matmul_generic,
                        dtypes=dtypes.NUMERIC,
                        doc="Matrix product with numpy's ``@`` semantics (batched, 1-D promoted)."))
declare(matmul_op, onnx=("node", "MatMul"), fold_cost="contraction", chunks=chunk_rules.matmul,
        static_kernel=_matmul_static_kernel)
matmul = call(matmul_op)


def _ndim(v):
    return v.ndim if isinstance(v, TensorLike) else np.ndim(v)


def dot(x, y):
    """numpy's ``dot``: a product of scalars, the inner product of two vectors, the
    matrix product of matrices (and of a matrix and a vector), and for N-D inputs
    the sum over the last axis of ``x`` and the second-to-last of ``y``
    (``dot(x, y)[i, j, k] = sum(x[i, :] * y[j, :, k])``). A composite of ``mul``,
    ``matmul``, ``transpose`` and ``reshape``.

    Example:
        >>> import engine as en
        >>> float(en.dot(en.tensor([1.0, 2.0]), en.tensor([3.0, 4.0])))
        11.0
        >>> en.dot(en.ones((2, 3)), en.ones(3)).numpy()
        array([3., 3.])
    """
    xd, yd = _ndim(x), _ndim(y)
    if xd == 0 or yd == 0:
        return elementwise.mul(x, y)
    if yd == 1 or xd == 1 or (xd == 2 and yd == 2):
        return matmul(x, y)   # the same contraction as numpy's dot here (BLAS, no temporary)
    # (..., k) . (..., k, n): one matrix product of x as (A, k) and y as (k, B * n).
    xs, ys = tuple(x.shape), tuple(y.shape)
    if None in xs or None in ys:
        raise TracingError(f"dot: N-D inputs need static shapes, got {xs} and {ys}; use "
                           "en.matmul for batched products")
    k = xs[-1]
    if k != ys[-2]:
        raise ShapeError(f"dot: shapes {xs} and {ys} are not aligned: {k} (dim {xd - 1}) != "
                         f"{ys[-2]} (dim {yd - 2}){at_user_line()}")
    a = shape_ops.reshape(x, (int(np.prod(xs[:-1])), k))
    b = shape_ops.transpose(y, (yd - 2,) + tuple(range(yd - 2)) + (yd - 1,))
    b = shape_ops.reshape(b, (k, int(np.prod(ys[:-2] + ys[-1:]))))
    return shape_ops.reshape(matmul(a, b), xs[:-1] + ys[:-2] + ys[-1:])


def outer(x, y):
    """Outer product of two vectors: ``out[i, j] = x[i] * y[j]``."""
    column = shape_ops.expand_dims(shape_ops.reshape(x, (-1,)), 1)
    return elementwise.mul(column, shape_ops.reshape(y, (-1,)))


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
declare(matmul_op, jvp=_rules.jvp_bilinear(matmul_op))


def _matmul_batch(size, args, dims):
    """One batched matmul. A 1-D element becomes a matrix (a row of x, a column of y)
    and the batch axis leads; the element ranks are padded with 1s to broadcast."""
    (x, y), (dx, dy) = args, dims
    xr, yr = x.ndim - (dx is not None), y.ndim - (dy is not None)
    if dx is not None and dy is None and xr == 1 and yr <= 2:
        return matmul(_rules.move_to_front(x, dx), y), 0        # rows of a matrix: one GEMM
    if dx is not None and dy is None and xr >= 2 and yr == 2 and None not in tuple(x.shape):
        # Stacked matrices times one matrix: all their rows in one GEMM.
        x = _rules.move_to_front(x, dx)
        out = matmul(x.reshape((-1, x.shape[-1])), y)
        return out.reshape(tuple(x.shape[:-1]) + (y.shape[-1],)), 0
    if dx is None and yr == 1 and dy is not None:
        # x @ columns: (..., n, k) @ (k, B) puts the batch axis last.
        out = matmul(x, shape_ops.transpose(_rules.move_to_front(y, dy), (1, 0)))
        return out, out.ndim - 1
    squeeze = []
    if dx is not None:
        x = _rules.move_to_front(x, dx)
        if xr == 1:
            x, xr = shape_ops.expand_dims(x, 1), 2
            squeeze.append(-2)
    if dy is not None:
        y = _rules.move_to_front(y, dy)
        if yr == 1:
            y, yr = shape_ops.expand_dims(y, -1), 2
            squeeze.append(-1)
    rank = xr if xr >= yr else yr
    if dx is not None and xr < rank:
        x = x.reshape((size,) + (1,) * (rank - xr) + tuple(x.shape[1:]))
    if dy is not None and yr < rank:
        y = y.reshape((size,) + (1,) * (rank - yr) + tuple(y.shape[1:]))
    out = matmul(x, y)
    if squeeze:
        out = shape_ops.squeeze(out, tuple(a % out.ndim for a in squeeze))
    return out, 0


declare(matmul_op, batch=_matmul_batch)

# The compiled lowering writes these as loops or np.dot (graph/lowering/numba/numba_source.py).
declare(matmul_op, numba_form="dot")
