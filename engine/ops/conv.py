"""2-D convolution and max pooling on NHWC tensors.

``conv2d`` takes inputs shaped (N, H, W, C) and filters shaped (KH, KW, C, O)
(TensorFlow's layouts). Its two gradients are ops of their own,
``conv2d_backprop_input`` and ``conv2d_backprop_filter``; the three are
linear in each argument and each one's VJP is made of the other two, so
gradients of any order work. ``max_pool2d`` has ``max_pool2d_grad`` (send the
cotangent to the position of each window's maximum, the first one on ties)
and its adjoint ``max_pool2d_gather``.

The kernels never loop over pixels: windows are strided views
(``sliding_window_view``) copied into an im2col matrix in the thread's scratch
buffer (``engine.workspace``: no fresh pages per call), and each convolution
is one BLAS matrix product.
Padding is TensorFlow's: "valid" (none) or "same" (output size
``ceil(size / stride)``, the odd extra pad at the bottom/right).
"""
import contextlib

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import dtypes, workspace
from ..errors import DTypeError, ShapeError, TracingError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from . import conv_generic
from .conv_geometry import out_and_pads as _out_and_pads, spatial as _spatial  # noqa: F401

_PADDINGS = ("valid", "same")


# ---- shared helpers -----------------------------------------------------------
def _pair(name, value, what):
    if isinstance(value, (int, np.integer)):
        value = (int(value), int(value))
    try:
        a, b = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ShapeError(f"{name}: {what} must be an int or a pair of ints, got {value!r}") from None
    if a <= 0 or b <= 0:
        raise ShapeError(f"{name}: {what} must be positive, got {value!r}")
    return (a, b)


def _padding(name, padding):
    p = str(padding).lower()
    if p not in _PADDINGS:
        raise ShapeError(f"{name}: padding must be 'valid' or 'same', got {padding!r}")
    return p


def _check_rank4(name, avals, what):
    if any(len(shape) != 4 for shape, _ in avals):
        raise ShapeError(f"{name}: expected {what}, got {describe_inputs(avals)}")


def _check_floats(name, avals):
    if any(dt not in dtypes.FLOATS for _, dt in avals):
        raise DTypeError(f"{name}: expected floating-point inputs, got {describe_inputs(avals)}")
    return np.result_type(*[dt for _, dt in avals])


def _same(name, a, b, what, avals):
    if a is not None and b is not None and a != b:
        raise ShapeError(f"{name}: {what} differ ({a} vs {b}): {describe_inputs(avals)}")
    return a if a is not None else b


def _check_cotangent_hw(name, g_hw, input_hw, khw, strides, padding, avals):
    """Raise unless a cotangent's (height, width) is the convolution's output size."""
    (oh, ow), _ = _spatial(name, input_hw, khw, strides, padding, avals)
    _same(name, g_hw[0], oh, "cotangent height and the convolution's output height", avals)
    _same(name, g_hw[1], ow, "cotangent width and the convolution's output width", avals)


def _pad(x, pads, value=0.0):
    if not any(pads[0] + pads[1]):
        return x
    return np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=value)


def _windows(xp, khw, strides):
    """A strided view (N, OH, OW, KH, KW, C) of the windows of a padded input."""
    win = sliding_window_view(xp, khw, axis=(1, 2))[:, ::strides[0], ::strides[1]]
    return win.transpose(0, 1, 2, 4, 5, 3)


def _need_known(name, sizes, what):
    if any(s is None for s in sizes):
        raise TracingError(f"{name}: the gradient needs the {what} {tuple(sizes)}, "
                           "which is not fully known while tracing")
    return tuple(int(s) for s in sizes)


# ---- conv2d ----------------------------------------------------------------------
def _conv2d_eval(x, w, *, strides, padding):
    avals = [x, w]
    _check_rank4("conv2d", avals, "an input (N, H, W, C) and filters (KH, KW, C, O)")
    dt = _check_floats("conv2d", avals)
    n, h, wd, c = x[0]
    kh, kw, c2, o = w[0]
    _same("conv2d", c, c2, "input channels and filter input channels", avals)
    (oh, ow), _ = _spatial("conv2d", (h, wd), (kh, kw), strides, padding, avals)
    return ((n, oh, ow, o), dt)


@contextlib.contextmanager
def _patches(x, khw, strides, pads):
    """The im2col matrix (N*OH*OW, KH*KW*C) of the windows of ``x`` padded by
    ``pads``, valid inside the ``with``: copied into the thread's scratch (see
    ``engine.workspace``)."""
    win = _windows(_pad(x, pads), khw, strides)
    with workspace.borrow(win.shape, win.dtype) as cols:
        np.copyto(cols, win)
        n, oh, ow, kh, kw, c = win.shape
        yield cols.reshape(n * oh * ow, kh * kw * c)


def _conv2d_out(x, w, *, strides, padding, out):
    kh, kw, c, o = w.shape
    _, pads = _spatial("conv2d", x.shape[1:3], (kh, kw), strides, padding, [])
    with _patches(x, (kh, kw), strides, pads) as cols:
        if out.flags.c_contiguous:
            np.matmul(cols, w.reshape(kh * kw * c, o), out=out.reshape(-1, o))
        else:
            out[...] = (cols @ w.reshape(kh * kw * c, o)).reshape(out.shape)
    return out


def _conv2d_impl(x, w, *, strides, padding):
    (n, oh, ow, o), dt = _conv2d_eval((x.shape, x.dtype), (w.shape, w.dtype),
                                      strides=strides, padding=padding)
    return _conv2d_out(x, w, strides=strides, padding=padding,
                       out=np.empty((n, oh, ow, o), dt))


def _conv2d_vjp(g, out, x, w, *, strides, padding):
    input_hw = _need_known("conv2d", x.shape[1:3], "input height and width")
    kernel_hw = _need_known("conv2d", w.shape[:2], "filter height and width")
    gx = conv2d_backprop_input(g, w, input_hw, strides, padding)
    gw = conv2d_backprop_filter(x, g, kernel_hw, strides, padding)
    return gx, gw


conv2d_op = register(Op("conv2d", _conv2d_impl, _conv2d_eval, _conv2d_vjp, n_inputs=2,
                        dtypes=dtypes.FLOATS, out_impl=_conv2d_out, generic=conv_generic.conv2d,
                        doc="2-D convolution (cross-correlation), NHWC input, HWIO filters."))
declare(conv2d_op, onnx=("Conv",), fold_cost="im2col")


def conv2d(x, w, stride=1, padding="valid"):
    """2-D convolution of ``x`` (N, H, W, C) with filters ``w`` (KH, KW, C, O).

    ``stride`` is an int or an (h, w) pair; ``padding`` is "valid" or "same".
    Like TensorFlow's ``conv2d``, this is a cross-correlation (no kernel flip).

    Example:
        >>> import engine as en
        >>> en.conv2d(en.zeros((1, 5, 5, 3)), en.zeros((3, 3, 3, 8)), padding="same").shape
        (1, 5, 5, 8)
    """
    return apply(conv2d_op, x, w, strides=_pair("conv2d", stride, "stride"),
                 padding=_padding("conv2d", padding))


# ---- conv2d_backprop_input ----------------------------------------------------------
def _bp_input_eval(g, w, *, input_hw, strides, padding):
    name = "conv2d_backprop_input"
    avals = [g, w]
    _check_rank4(name, avals, "a cotangent (N, OH, OW, O) and filters (KH, KW, C, O)")
    dt = _check_floats(name, avals)
    n, gh, gw, o = g[0]
    kh, kw, c, o2 = w[0]
    _same(name, o, o2, "cotangent channels and filter output channels", avals)
    _check_cotangent_hw(name, (gh, gw), input_hw, (kh, kw), strides, padding, avals)
    return ((n, input_hw[0], input_hw[1], c), dt)


def _bp_input_impl(g, w, *, input_hw, strides, padding):
    kh, kw, c, o = w.shape
    n, oh, ow, _ = g.shape
    (h, wd), (sh, sw) = input_hw, strides
    _, pads = _spatial("conv2d_backprop_input", input_hw, (kh, kw), strides, padding, [])
    dt = np.result_type(g.dtype, w.dtype)
    if strides == (1, 1):
        # A "full" correlation of the cotangent with the filters flipped in
        # space and with in/out channels swapped: one im2col product, faster
        # than the scatter below (68 against 90 ms on the benchmark's shape).
        flipped = w[::-1, ::-1].transpose(0, 1, 3, 2).reshape(kh * kw * o, c)
        full = ((kh - 1 - pads[0][0], kh - 1 - pads[0][1]),
                (kw - 1 - pads[1][0], kw - 1 - pads[1][1]))
        with _patches(g, (kh, kw), strides, full) as cols:
            return (cols @ flipped).reshape(n, h, wd, c)   # dtype: result_type(g, w)
    # Strided: one matrix product gives every window's input cotangent
    # (col2im, in the thread's scratch), then each filter tap adds its slice.
    dxp = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c), dtype=dt)
    with workspace.borrow((n * oh * ow, kh * kw * c), dt) as cols:
        np.matmul(g.reshape(-1, o), w.reshape(kh * kw * c, o).T, out=cols)
        cols = cols.reshape(n, oh, ow, kh, kw, c)
        for a in range(kh):
            for b in range(kw):
                dxp[:, a:a + sh * (oh - 1) + 1:sh, b:b + sw * (ow - 1) + 1:sw] += cols[:, :, :, a, b]
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]


def _bp_input_vjp(u, out, g, w, *, input_hw, strides, padding):
    kernel_hw = _need_known("conv2d_backprop_input", w.shape[:2], "filter height and width")
    return (conv2d(u, w, strides, padding),
            conv2d_backprop_filter(u, g, kernel_hw, strides, padding))


conv2d_backprop_input_op = register(Op(
    "conv2d_backprop_input", _bp_input_impl, _bp_input_eval, _bp_input_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=conv_generic.conv2d_backprop_input, doc="Gradient of conv2d with respect to its input."))
declare(conv2d_backprop_input_op, onnx=None, fold_cost="im2col_input_grad")


def conv2d_backprop_input(g, w, input_hw, stride=1, padding="valid"):
    """The input gradient of ``conv2d`` for cotangent ``g`` and filters ``w``.

    ``input_hw`` is the (height, width) of the convolution's input.

    Example:
        >>> import engine as en
        >>> en.ops.conv2d_backprop_input(en.ones((1, 3, 3, 2)), en.ones((3, 3, 4, 2)), (5, 5)).shape
        (1, 5, 5, 4)
    """
    hw = tuple(int(v) for v in input_hw)
    return apply(conv2d_backprop_input_op, g, w, input_hw=hw,
                 strides=_pair("conv2d_backprop_input", stride, "stride"),
                 padding=_padding("conv2d_backprop_input", padding))


# ---- conv2d_backprop_filter ---------------------------------------------------------
def _bp_filter_eval(x, g, *, kernel_hw, strides, padding):
    name = "conv2d_backprop_filter"
    avals = [x, g]
    _check_rank4(name, avals, "an input (N, H, W, C) and a cotangent (N, OH, OW, O)")
    dt = _check_floats(name, avals)
    n, h, wd, c = x[0]
    n2, gh, gw, o = g[0]
    _same(name, n, n2, "batch sizes", avals)
    _check_cotangent_hw(name, (gh, gw), (h, wd), kernel_hw, strides, padding, avals)
    return ((kernel_hw[0], kernel_hw[1], c, o), dt)


def _bp_filter_impl(x, g, *, kernel_hw, strides, padding):
    kh, kw = kernel_hw
    c, o = x.shape[3], g.shape[3]
    _, pads = _spatial("conv2d_backprop_filter", x.shape[1:3], kernel_hw, strides, padding, [])
    with _patches(x, kernel_hw, strides, pads) as cols:
        return (cols.T @ g.reshape(-1, o)).reshape(kh, kw, c, o)


def _bp_filter_vjp(u, out, x, g, *, kernel_hw, strides, padding):
    input_hw = _need_known("conv2d_backprop_filter", x.shape[1:3], "input height and width")
    return (conv2d_backprop_input(g, u, input_hw, strides, padding),
            conv2d(x, u, strides, padding))


conv2d_backprop_filter_op = register(Op(
    "conv2d_backprop_filter", _bp_filter_impl, _bp_filter_eval, _bp_filter_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=conv_generic.conv2d_backprop_filter, doc="Gradient of conv2d with respect to its filters."))
declare(conv2d_backprop_filter_op, onnx=None, fold_cost="im2col_filter_grad")


def conv2d_backprop_filter(x, g, kernel_hw, stride=1, padding="valid"):
    """The filter gradient of ``conv2d`` for input ``x`` and cotangent ``g``.

    ``kernel_hw`` is the (height, width) of the filters.

    Example:
        >>> import engine as en
        >>> en.ops.conv2d_backprop_filter(en.ones((1, 5, 5, 4)), en.ones((1, 3, 3, 2)), (3, 3)).shape
        (3, 3, 4, 2)
    """
    khw = _pair("conv2d_backprop_filter", kernel_hw, "kernel size")
    return apply(conv2d_backprop_filter_op, x, g, kernel_hw=khw,
                 strides=_pair("conv2d_backprop_filter", stride, "stride"),
                 padding=_padding("conv2d_backprop_filter", padding))


# ---- max pooling ------------------------------------------------------------------------
def _pool_eval(name, x, pool_size, strides, padding, others=()):
    avals = [x, *others]
    if len(x[0]) != 4:
        raise ShapeError(f"{name}: expected an input (N, H, W, C), got {describe_inputs(avals)}")
    dt = _check_floats(name, avals)
    n, h, wd, c = x[0]
    (oh, ow), _ = _spatial(name, (h, wd), pool_size, strides, padding, avals)
    return (n, oh, ow, c), dt


def _max_pool_impl(x, *, pool_size, strides, padding):
    _, pads = _spatial("max_pool2d", x.shape[1:3], pool_size, strides, padding, [])
    win = _windows(_pad(x, pads, -np.inf), pool_size, strides)
    # A running maximum over the KH*KW taps: each step is one vectorized pass.
    out = win[:, :, :, 0, 0].copy()
    for a in range(pool_size[0]):
        for b in range(pool_size[1]):
            if a or b:
                np.maximum(out, win[:, :, :, a, b], out=out)
    return out


def _argmax_flat(x, pool_size, strides, padding):
    """Flat indices, into the padded input, of each window's (first) maximum."""
    _, pads = _spatial("max_pool2d", x.shape[1:3], pool_size, strides, padding, [])
    xp = _pad(x, pads, -np.inf)
    win = _windows(xp, pool_size, strides)
    n, oh, ow, ph, pw, c = win.shape
    k = win.reshape(n, oh, ow, ph * pw, c).argmax(axis=3)        # (N, OH, OW, C)
    a, b = np.divmod(k, pw)
    rows = np.arange(oh).reshape(1, oh, 1, 1) * strides[0] + a
    cols = np.arange(ow).reshape(1, 1, ow, 1) * strides[1] + b
    _, hp, wp, _ = xp.shape
    flat = ((np.arange(n).reshape(n, 1, 1, 1) * hp + rows) * wp + cols) * c \
        + np.arange(c).reshape(1, 1, 1, c)
    return flat, xp.shape, pads


def _max_pool_vjp(g, out, x, *, pool_size, strides, padding):
    return (apply(max_pool2d_grad_op, x, g, pool_size=pool_size, strides=strides,
                  padding=padding),)


max_pool2d_op = register(Op(
    "max_pool2d", _max_pool_impl,
    lambda x, *, pool_size, strides, padding: _pool_eval("max_pool2d", x, pool_size, strides,
                                                         padding),
    _max_pool_vjp, n_inputs=1, dtypes=dtypes.FLOATS, generic=conv_generic.max_pool2d,
    doc="Maximum over 2-D windows of an NHWC input."))
declare(max_pool2d_op, onnx=("MaxPool",), fold_cost="windows")


def _pool_grad_eval(x, g, *, pool_size, strides, padding):
    shape, dt = _pool_eval("max_pool2d_grad", x, pool_size, strides, padding, [g])
    if len(g[0]) != 4 or any(a is not None and b is not None and a != b
                             for a, b in zip(shape, g[0])):
        raise ShapeError(f"max_pool2d_grad: the cotangent must have the pooled shape {shape}, "
                         f"got {describe_inputs([x, g])}")
    return (x[0], dt)


def _pool_grad_impl(x, g, *, pool_size, strides, padding):
    flat, (n, hp, wp, c), pads = _argmax_flat(x, pool_size, strides, padding)
    dxp = np.bincount(flat.ravel(), weights=g.ravel(), minlength=n * hp * wp * c)
    dxp = dxp.reshape(n, hp, wp, c)
    h, wd = x.shape[1:3]
    dx = dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]
    return dx.astype(np.result_type(x.dtype, g.dtype))


def _pool_grad_vjp(u, out, x, g, *, pool_size, strides, padding):
    # Linear in g; piecewise constant in x (the argmax positions), so no x gradient.
    return (None, apply(max_pool2d_gather_op, x, u, pool_size=pool_size, strides=strides,
                        padding=padding))


max_pool2d_grad_op = register(Op(
    "max_pool2d_grad", _pool_grad_impl, _pool_grad_eval, _pool_grad_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=conv_generic.max_pool2d_grad,
    doc="Gradient of max_pool2d: each window's cotangent goes to its maximum."))
declare(max_pool2d_grad_op, onnx=None, fold_cost="windows")


def _gather_eval(x, u, *, pool_size, strides, padding):
    shape, dt = _pool_eval("max_pool2d_gather", x, pool_size, strides, padding, [u])
    if len(u[0]) != 4 or any(a is not None and b is not None and a != b
                             for a, b in zip(x[0], u[0])):
        raise ShapeError(f"max_pool2d_gather: the values must be shaped like the input, "
                         f"got {describe_inputs([x, u])}")
    return (shape, dt)


def _gather_impl(x, u, *, pool_size, strides, padding):
    flat, _, pads = _argmax_flat(x, pool_size, strides, padding)
    up = _pad(u.astype(np.result_type(x.dtype, u.dtype), copy=False), pads)
    return up.reshape(-1)[flat]


def _gather_vjp(v, out, x, u, *, pool_size, strides, padding):
    return (None, apply(max_pool2d_grad_op, x, v, pool_size=pool_size, strides=strides,
                        padding=padding))


max_pool2d_gather_op = register(Op(
    "max_pool2d_gather", _gather_impl, _gather_eval, _gather_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=conv_generic.max_pool2d_gather,
    doc="The values of ``u`` at each max_pool2d window's maximum of ``x``."))
declare(max_pool2d_gather_op, onnx=None, fold_cost="windows")


def max_pool2d(x, pool_size=2, strides=None, padding="valid"):
    """Maximum over (pool_size) windows of an NHWC input, moved by ``strides``.

    ``strides`` defaults to ``pool_size``; "same" padding ignores the padded
    positions. The gradient goes to each window's maximum (the first on ties).

    Example:
        >>> import engine as en
        >>> en.max_pool2d(en.zeros((1, 4, 4, 3))).shape
        (1, 2, 2, 3)
    """
    pool = _pair("max_pool2d", pool_size, "pool_size")
    strides = pool if strides is None else _pair("max_pool2d", strides, "strides")
    return apply(max_pool2d_op, x, pool_size=pool, strides=strides,
                 padding=_padding("max_pool2d", padding))


__all__ = ["conv2d", "conv2d_op", "conv2d_backprop_input", "conv2d_backprop_input_op",
           "conv2d_backprop_filter", "conv2d_backprop_filter_op", "max_pool2d",
           "max_pool2d_op", "max_pool2d_grad_op", "max_pool2d_gather_op"]
