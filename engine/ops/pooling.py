"""Max and average pooling over 2-D windows of NHWC tensors.

``max_pool2d`` takes a window size, strides (default: the window), padding
("valid", "same", an int, a pair or ``((top, bottom), (left, right))``;
padded positions never win), dilation and ``ceil_mode`` (PyTorch's: round the
output size up). Its gradient ``max_pool2d_grad`` sends each window's
cotangent to the position of its maximum (the first on ties), and its adjoint
``max_pool2d_gather`` reads values at those positions; ``max_pool2d_indices``
gives the positions (``return_indices=True``), PyTorch's flat ``h * W + w``.

``avg_pool2d`` divides each window's sum by its size, counting the explicit
padding or not (``count_include_pad``; never the extra ``ceil_mode`` pads),
and ``avg_pool2d_grad`` spreads the cotangent back; they are linear and each
one's VJP is the other.

Windows are strided views or one strided slice per window tap (a loop over
the KH*KW taps, each step one vectorized pass), never a loop over pixels.

Example:
    >>> import engine as en
    >>> x = en.reshape(en.arange(16.0), (1, 4, 4, 1))
    >>> en.avg_pool2d(x, 2)[0, :, :, 0].numpy()
    array([[ 2.5,  4.5],
           [10.5, 12.5]])
"""
import numpy as np

from .. import chunk_rules, dtypes
from ..cost_model import cost
from ..errors import DomainError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from . import _rules, batch_split, max_pool_taps, native, pool_generic
from .conv import (_check_floats, _fold_batch, _need_known, _pad, _pair, _padding, _spatial,
                   _window_geometry, _windows)
from .conv_geometry import span

_ONE = (1, 1)


def _pool_eval(name, x, pool_size, strides, padding, others=(), dilation=_ONE, ceil_mode=False,
               integers=False):
    avals = [x, *others]
    if len(x[0]) != 4:
        raise ShapeError(f"{name}: expected an input (N, H, W, C), got {describe_inputs(avals)}")
    if integers and x[1] in dtypes.INTS:      # a maximum is exact on integers (PyTorch's too)
        dt = x[1]
    else:
        dt = _check_floats(name, avals)
    n, h, wd, c = x[0]
    (oh, ow), _ = _spatial(name, (h, wd), pool_size, strides, padding, avals, dilation, ceil_mode)
    return (n, oh, ow, c), dt


def _geometry(x_hw, pool_size, strides, padding, dilation, ceil_mode):
    return _spatial("max_pool2d", x_hw, pool_size, strides, padding, [], dilation, ceil_mode)


def _taps(pool_size, dilation):
    for a in range(pool_size[0]):
        for b in range(pool_size[1]):
            yield a, b, a * dilation[0], b * dilation[1]


# ---- max pooling ---------------------------------------------------------------------------------
# Max pooling takes integer inputs too (not its gradient ops): pads are the dtype's lowest value.
MAX_POOL_DTYPES = dtypes.FLOATS | dtypes.INTS


def lowest(dtype):
    """The value a pad of max pooling takes, so that it never wins: -inf, or an integer
    dtype's minimum."""
    return np.iinfo(dtype).min if np.dtype(dtype).kind in "iu" else -np.inf


def _native(name, x, *others, out=None, pool_size, strides, padding, dilation, ceil_mode):
    """The native kernel ``name``'s result (into ``out`` if given) for float inputs of
    one dtype, else None."""
    fast = native.kernel(name, x.dtype)
    if fast is None or any(o.dtype != x.dtype for o in others):
        return None
    _, pads = _geometry(x.shape[1:3], pool_size, strides, padding, dilation, ceil_mode)
    geo = _window_geometry(x.shape, pool_size, strides, pads, dilation)
    n, oh, ow = x.shape[0], geo[4], geo[5]
    taps = n * oh * ow * x.shape[3] * pool_size[0] * pool_size[1]   # values the windows read
    # The whole batch: its images split on the native threads (a native loop, no BLAS).
    return fast(x, *others, geo, out=out,
                threads=batch_split.threads(taps, cost.pool_split_min_taps, blas=False))


def _into(name, impl):
    """The ``out_impl`` of a pooling op: the native kernel writes into the graph's buffer
    (no fresh pages each call), else ``impl``'s result is copied in."""
    def out_impl(*arrays, out, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
        params = dict(pool_size=pool_size, strides=strides, padding=padding,
                      dilation=dilation, ceil_mode=ceil_mode)
        if _native(name, *arrays, out=out, **params) is None:
            out[...] = impl(*arrays, **params)
        return out
    out_impl.__name__ = f"_{name}_out"
    return out_impl


def _max_pool_impl(x, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    out = _native("max_pool2d", x, pool_size=pool_size, strides=strides, padding=padding,
                  dilation=dilation, ceil_mode=ceil_mode)
    if out is not None:
        return out
    _, pads = _geometry(x.shape[1:3], pool_size, strides, padding, dilation, ceil_mode)
    win = _windows(_pad(x, pads, lowest(x.dtype)), pool_size, strides, dilation)
    # A running maximum over the KH*KW taps: each step is one vectorized pass.
    out = win[:, :, :, 0, 0].copy()
    for a, b, _, _ in _taps(pool_size, _ONE):
        if a or b:
            np.maximum(out, win[:, :, :, a, b], out=out)
    return out


def _argmax_flat(x, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    """Flat indices, into the padded input, of each window's (first) maximum."""
    _, pads = _geometry(x.shape[1:3], pool_size, strides, padding, dilation, ceil_mode)
    xp = _pad(x, pads, lowest(x.dtype))
    win = _windows(xp, pool_size, strides, dilation)
    n, oh, ow, ph, pw, c = win.shape
    k = win.reshape(n, oh, ow, ph * pw, c).argmax(axis=3)        # (N, OH, OW, C)
    a, b = np.divmod(k, pw)
    rows = np.arange(oh).reshape(1, oh, 1, 1) * strides[0] + a * dilation[0]
    cols = np.arange(ow).reshape(1, 1, ow, 1) * strides[1] + b * dilation[1]
    _, hp, wp, _ = xp.shape
    flat = ((np.arange(n).reshape(n, 1, 1, 1) * hp + rows) * wp + cols) * c \
        + np.arange(c).reshape(1, 1, 1, c)
    return flat, xp.shape, pads, (rows, cols)


def _max_pool_vjp(g, out, x, **params):
    return (apply(max_pool2d_grad_op, x, g, **params),)


max_pool2d_op = register(Op(
    "max_pool2d", _max_pool_impl,
    lambda x, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False: _pool_eval(
        "max_pool2d", x, pool_size, strides, padding, (), dilation, ceil_mode, integers=True),
    _max_pool_vjp, n_inputs=1, dtypes=MAX_POOL_DTYPES, generic=pool_generic.max_pool2d,
    out_impl=_into("max_pool2d", _max_pool_impl),
    doc="Maximum over 2-D windows of an NHWC input."))
declare(max_pool2d_op, onnx=("MaxPool",), fold_cost="windows", chunks=chunk_rules.leading)


def _pool_grad_eval(x, g, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    shape, dt = _pool_eval("max_pool2d_grad", x, pool_size, strides, padding, [g], dilation,
                           ceil_mode)
    if len(g[0]) != 4 or any(a is not None and b is not None and a != b
                             for a, b in zip(shape, g[0])):
        raise ShapeError(f"max_pool2d_grad: the cotangent must have the pooled shape {shape}, "
                         f"got {describe_inputs([x, g])}")
    return (x[0], dt)


def _pool_grad_impl(x, g, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    dx = _native("max_pool2d_grad", x, g, pool_size=pool_size, strides=strides,
                 padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    if dx is not None:
        return dx
    # One pass per window tap (max_pool_taps.py); the flat-index scatter below is kept for
    # windows whose maximum is NaN.
    dx = max_pool_taps.grad(x, g, lowest(x.dtype), pool_size=pool_size, strides=strides,
                            padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    return dx if dx is not None else pool_grad_flat(x, g, pool_size, strides, padding,
                                                     dilation, ceil_mode)


def pool_grad_flat(x, g, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    """``max_pool2d_grad`` by flat argmax indices and a scatter (NaN maxima included)."""
    flat, (n, hp, wp, c), pads, _ = _argmax_flat(x, pool_size, strides, padding, dilation,
                                                 ceil_mode)
    dxp = np.bincount(flat.ravel(), weights=g.ravel(), minlength=n * hp * wp * c)
    dxp = dxp.reshape(n, hp, wp, c)
    h, wd = x.shape[1:3]
    dx = dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]
    return dx.astype(np.result_type(x.dtype, g.dtype))


def _pool_grad_vjp(u, out, x, g, **params):
    # Linear in g; piecewise constant in x (the argmax positions), so no x gradient.
    return (None, apply(max_pool2d_gather_op, x, u, **params))


max_pool2d_grad_op = register(Op(
    "max_pool2d_grad", _pool_grad_impl, _pool_grad_eval, _pool_grad_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=pool_generic.max_pool2d_grad,
    out_impl=_into("max_pool2d_grad", _pool_grad_impl),
    doc="Gradient of max_pool2d: each window's cotangent goes to its maximum."))
declare(max_pool2d_grad_op, onnx=None, fold_cost="windows")


def _gather_eval(x, u, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    shape, dt = _pool_eval("max_pool2d_gather", x, pool_size, strides, padding, [u], dilation,
                           ceil_mode)
    if len(u[0]) != 4 or any(a is not None and b is not None and a != b
                             for a, b in zip(x[0], u[0])):
        raise ShapeError(f"max_pool2d_gather: the values must be shaped like the input, "
                         f"got {describe_inputs([x, u])}")
    return (shape, dt)


def _gather_impl(x, u, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    out = _native("max_pool2d_gather", x, u, pool_size=pool_size, strides=strides,
                  padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    if out is not None:
        return out
    out = max_pool_taps.gather(x, u, lowest(x.dtype), pool_size=pool_size, strides=strides,
                               padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    return out if out is not None else gather_flat(x, u, pool_size, strides, padding, dilation,
                                                   ceil_mode)


def gather_flat(x, u, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    """``max_pool2d_gather`` by flat argmax indices (NaN maxima included)."""
    flat, _, pads, _ = _argmax_flat(x, pool_size, strides, padding, dilation, ceil_mode)
    up = _pad(u.astype(np.result_type(x.dtype, u.dtype), copy=False), pads)
    return up.reshape(-1)[flat]


def _gather_vjp(v, out, x, u, **params):
    return (None, apply(max_pool2d_grad_op, x, v, **params))


max_pool2d_gather_op = register(Op(
    "max_pool2d_gather", _gather_impl, _gather_eval, _gather_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=pool_generic.max_pool2d_gather,
    doc="The values of ``u`` at each max_pool2d window's maximum of ``x``."))
declare(max_pool2d_gather_op, onnx=None, fold_cost="windows")


def _indices_eval(x, **params):
    shape, _ = _pool_eval("max_pool2d_indices", x, params["pool_size"], params["strides"],
                          params["padding"], (), params.get("dilation", _ONE),
                          params.get("ceil_mode", False), integers=True)
    return (shape, dtypes.int64)


def _indices_impl(x, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    _, _, pads, (rows, cols) = _argmax_flat(x, pool_size, strides, padding, dilation, ceil_mode)
    # Positions in the unpadded input, flattened per (image, channel) plane as PyTorch does.
    return ((rows - pads[0][0]) * x.shape[2] + (cols - pads[1][0])).astype(np.int64)


max_pool2d_indices_op = register(Op(
    "max_pool2d_indices", _indices_impl, _indices_eval, None, n_inputs=1, differentiable=False,
    dtypes=MAX_POOL_DTYPES, generic=pool_generic.max_pool2d_indices,
    doc="Where each max_pool2d window's maximum is: ``h * W + w`` in its (image, channel) plane."))
declare(max_pool2d_indices_op, onnx=("MaxPoolIndices",), fold_cost="windows")


def _pool_params(name, pool_size, strides, padding, dilation=1, ceil_mode=False):
    pool = _pair(name, pool_size, "pool_size")
    strides = pool if strides is None else _pair(name, strides, "strides")
    if not isinstance(ceil_mode, (bool, np.bool_)):
        raise DomainError(f"{name}: ceil_mode must be True or False, got {ceil_mode!r}")
    padding, dilation = _padding(name, padding), _pair(name, dilation, "dilation")
    if not isinstance(padding, str):
        for (before, after), k, d in zip(padding, pool, dilation):
            if max(before, after) > span(k, d) // 2:
                raise ShapeError(f"{name}: pads {padding} must be at most half the window "
                                 f"({pool}, dilation {dilation}), so no window is all padding")
    return dict(pool_size=pool, strides=strides, padding=padding, dilation=dilation,
                ceil_mode=bool(ceil_mode))


def max_pool2d(x, pool_size=2, strides=None, padding="valid", dilation=1, ceil_mode=False,
               return_indices=False):
    """Maximum over (pool_size) windows of an NHWC input, moved by ``strides``.

    ``strides`` defaults to ``pool_size``; padding takes the forms ``conv2d``
    does, and padded positions never win. ``dilation`` spaces the window's
    taps; ``ceil_mode`` rounds the output size up (PyTorch's rule). The
    gradient goes to each window's maximum (the first on ties). With
    ``return_indices`` also returns where each maximum is, ``h * W + w`` in
    the input's (image, channel) plane (int64, as PyTorch's).

    Example:
        >>> import engine as en
        >>> en.max_pool2d(en.zeros((1, 4, 4, 3))).shape
        (1, 2, 2, 3)
        >>> en.max_pool2d(en.zeros((1, 5, 5, 3)), 2, ceil_mode=True).shape
        (1, 3, 3, 3)
    """
    params = _pool_params("max_pool2d", pool_size, strides, padding, dilation, ceil_mode)
    out = apply(max_pool2d_op, x, **params)
    if return_indices:
        return out, apply(max_pool2d_indices_op, x, **params)
    return out


# ---- average pooling ------------------------------------------------------------------------------
def _window_counts_1d(size, k, s, out, before, explicit_after, include_pad):
    """How many positions of each window along one dim count in its mean."""
    starts = np.arange(out) * s - before
    lo, hi = (-before, size + explicit_after) if include_pad else (0, size)
    return np.minimum(starts + k, hi) - np.maximum(starts, lo)


def window_sizes(x_shape, pool_size, strides, padding, ceil_mode, count_include_pad, dtype):
    """The (1, OH, OW, 1) window sizes the sums divide by (separable: rows times columns)."""
    (oh, ow), pads = _spatial("avg_pool2d", x_shape[1:3], pool_size, strides, padding, [], _ONE,
                              ceil_mode)
    _, plain = _spatial("avg_pool2d", x_shape[1:3], pool_size, strides, padding, [], _ONE, False)
    include = count_include_pad and not isinstance(padding, str)
    rows = _window_counts_1d(x_shape[1], pool_size[0], strides[0], oh, pads[0][0], plain[0][1],
                             include)
    cols = _window_counts_1d(x_shape[2], pool_size[1], strides[1], ow, pads[1][0], plain[1][1],
                             include)
    return np.multiply.outer(rows, cols).astype(dtype).reshape(1, oh, ow, 1), pads


def _avg_params_eval(name, x, params, others=()):
    return _pool_eval(name, x, params["pool_size"], params["strides"], params["padding"],
                      others, _ONE, params["ceil_mode"])


def _avg_pool_eval(x, **params):
    return _avg_params_eval("avg_pool2d", x, params)


def _avg_pool_impl(x, *, pool_size, strides, padding, ceil_mode, count_include_pad):
    div, pads = window_sizes(x.shape, pool_size, strides, padding, ceil_mode, count_include_pad,
                         x.dtype)
    xp = _pad(x, pads)
    (oh, ow), (sh, sw) = div.shape[1:3], strides
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    for a, b, _, _ in _taps(pool_size, _ONE):
        out += xp[:, a:a + sh * (oh - 1) + 1:sh, b:b + sw * (ow - 1) + 1:sw]
    out /= div
    return out


def _avg_pool_vjp(g, out, x, **params):
    hw = _need_known("avg_pool2d", x.shape[1:3], "input height and width")
    return (apply(avg_pool2d_grad_op, g, input_hw=hw, **params),)


avg_pool2d_op = register(Op(
    "avg_pool2d", _avg_pool_impl, _avg_pool_eval, _avg_pool_vjp, n_inputs=1,
    dtypes=dtypes.FLOATS, generic=pool_generic.avg_pool2d,
    doc="Mean over 2-D windows of an NHWC input."))
declare(avg_pool2d_op, onnx=("AveragePool",), fold_cost="windows")


def _avg_grad_eval(g, *, input_hw, **params):
    n, c = (g[0][0], g[0][3]) if len(g[0]) == 4 else (None, None)
    x = ((n, input_hw[0], input_hw[1], c), g[1])
    shape, dt = _avg_params_eval("avg_pool2d_grad", x, params)
    if len(g[0]) != 4 or any(a is not None and b is not None and a != b
                             for a, b in zip(shape, g[0])):
        raise ShapeError(f"avg_pool2d_grad: the cotangent must have the pooled shape {shape}, "
                         f"got {describe_inputs([g])}")
    return (x[0], dt)


def _avg_grad_impl(g, *, input_hw, pool_size, strides, padding, ceil_mode, count_include_pad):
    n, oh, ow, c = g.shape
    x_shape = (n, input_hw[0], input_hw[1], c)
    div, pads = window_sizes(x_shape, pool_size, strides, padding, ceil_mode, count_include_pad,
                         g.dtype)
    share = g / div
    (h, wd), (sh, sw) = input_hw, strides
    dxp = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c), g.dtype)
    for a, b, _, _ in _taps(pool_size, _ONE):
        dxp[:, a:a + sh * (oh - 1) + 1:sh, b:b + sw * (ow - 1) + 1:sw] += share
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]


def _avg_grad_vjp(u, out, g, *, input_hw, **params):
    return (apply(avg_pool2d_op, u, **params),)


avg_pool2d_grad_op = register(Op(
    "avg_pool2d_grad", _avg_grad_impl, _avg_grad_eval, _avg_grad_vjp, n_inputs=1,
    dtypes=dtypes.FLOATS, generic=pool_generic.avg_pool2d_grad,
    doc="Gradient of avg_pool2d: each window's cotangent, divided by its size, to its inputs."))
declare(avg_pool2d_grad_op, onnx=None, fold_cost="windows")


def avg_pool2d(x, pool_size=2, strides=None, padding="valid", ceil_mode=False,
               count_include_pad=True):
    """Mean over (pool_size) windows of an NHWC input, moved by ``strides``.

    ``strides`` defaults to ``pool_size``; padding takes the forms ``conv2d``
    does. Explicit pads count in each window's size when
    ``count_include_pad`` (PyTorch's default); with "same" padding the padded
    positions are left out (TensorFlow's rule). ``ceil_mode`` rounds the
    output size up (PyTorch's rule); its extra pads never count.

    Example:
        >>> import engine as en
        >>> en.avg_pool2d(en.ones((1, 3, 3, 1)), 2, 1, padding=1)[0, :, :, 0].numpy()
        array([[0.25, 0.5 , 0.5 , 0.25],
               [0.5 , 1.  , 1.  , 0.5 ],
               [0.5 , 1.  , 1.  , 0.5 ],
               [0.25, 0.5 , 0.5 , 0.25]])
    """
    params = _pool_params("avg_pool2d", pool_size, strides, padding, 1, ceil_mode)
    del params["dilation"]
    return apply(avg_pool2d_op, x, count_include_pad=bool(count_include_pad), **params)



# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
# Pooling is linear in the values it moves (max pooling's argmax positions are piecewise
# constant in x), and every image pools on its own: a vmap batch folds into N.
declare(max_pool2d_op, jvp=lambda primals, tangents, out, **params: apply(
    max_pool2d_gather_op, primals[0], tangents[0], **params))
for _op in (max_pool2d_grad_op, max_pool2d_gather_op):
    declare(_op, jvp=_rules.jvp_linear(_op, linear=(1,)))
for _op in (avg_pool2d_op, avg_pool2d_grad_op):
    declare(_op, jvp=_rules.jvp_linear(_op))
for _op in (max_pool2d_op, max_pool2d_indices_op, avg_pool2d_op, avg_pool2d_grad_op):
    declare(_op, batch=_fold_batch(_op, (0,)))
for _op in (max_pool2d_grad_op, max_pool2d_gather_op):
    declare(_op, batch=_fold_batch(_op, (0, 1)))


def _pool_taps(windows):
    """What a split max-pooling kernel counts (engine/ops/batch_split.py): the values its
    windows read, from the shape of ``windows`` (the output, or the gradient's cotangent)."""
    def work(ins, out, params):
        shape = windows(ins, out)
        if any(s is None for s in shape):
            return 0, cost.pool_split_min_taps
        taps = int(np.prod(shape, dtype=np.int64)) * params["pool_size"][0] * \
            params["pool_size"][1]
        return taps, cost.pool_split_min_taps, False
    return work


for _op in (max_pool2d_op, max_pool2d_gather_op):
    batch_split.declare(_op, _pool_taps(lambda ins, out: out))
batch_split.declare(max_pool2d_grad_op, _pool_taps(lambda ins, out: ins[1]))

__all__ = ["max_pool2d", "max_pool2d_op", "max_pool2d_grad_op", "max_pool2d_gather_op",
           "max_pool2d_indices_op", "avg_pool2d", "avg_pool2d_op", "avg_pool2d_grad_op"]
