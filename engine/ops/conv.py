"""2-D convolution on NHWC tensors, its two gradients and the transposed convolution.

``conv2d`` takes inputs shaped (N, H, W, C) and filters shaped
(KH, KW, C // groups, O) (TensorFlow's layouts), with strides, padding
("valid", "same", or explicit pads: an int, a pair, or
``((top, bottom), (left, right))``), dilation and groups. Its two gradients
are ops of their own, ``conv2d_backprop_input`` and ``conv2d_backprop_filter``;
the three are linear in each argument and each one's VJP is made of the other
two, so gradients of any order work. ``conv_transpose2d`` is
``conv2d_backprop_input`` with the output size worked out from the input
(PyTorch's ``output_padding`` picks among the sizes a strided convolution
maps to the same size).

The numpy kernels never loop over pixels: windows are strided views
(``sliding_window_view``, stepped by the dilation) copied into an im2col
matrix in the thread's scratch buffer (``engine.workspace``: no fresh pages
per call), and each convolution is one BLAS matrix product (one batched
product over the groups). Gradients that scatter loop over the KH*KW filter
taps only. Where a lowering supplies native kernels (``native.py``) and a
window holds few values (``runs_direct``: the CNN-sized 3x3 filters of up to
64 channels), a direct C loop runs instead, for conv2d, its filter gradient and
its stride-1 input gradient: no im2col copy, and none of BLAS's poor use of a
product only 16-32 columns wide. Pooling lives in ``pooling.py``.
"""
import contextlib

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import chunk_rules, dtypes, workspace
from ..cost_model import cost
from ..errors import DTypeError, ShapeError, TracingError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from . import _rules, batch_split, conv_generic, native
from . import shape_ops as _shapes
from .conv_geometry import nonnegative_pair, pair, padding_param, span, spatial as _geometry

_ONE = (1, 1)


# ---- shared helpers (pooling.py uses them too) -------------------------------------------------
def _pair(name, value, what):
    return pair(name, value, what)


def _padding(name, padding):
    return padding_param(name, padding)


def _spatial(name, hw, khw, strides, padding, avals, dilation=_ONE, ceil_mode=False):
    return _geometry(name, hw, khw, strides, padding, avals, dilation, ceil_mode)


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


def _check_cotangent_hw(name, g_hw, input_hw, khw, strides, padding, avals, dilation=_ONE):
    """Raise unless a cotangent's (height, width) is the convolution's output size."""
    (oh, ow), _ = _spatial(name, input_hw, khw, strides, padding, avals, dilation)
    _same(name, g_hw[0], oh, "cotangent height and the convolution's output height", avals)
    _same(name, g_hw[1], ow, "cotangent width and the convolution's output width", avals)


def _check_groups(name, groups, c, cg, o, avals):
    """``c`` input channels in ``groups`` groups of ``cg``; ``o`` filters, a multiple of groups."""
    if c is not None and cg is not None and c != cg * groups:
        raise ShapeError(f"{name}: input channels must be {groups} groups of the filters' "
                         f"{cg} input channels, got {describe_inputs(avals)}")
    if o is not None and o % groups:
        raise ShapeError(f"{name}: filter output channels ({o}) must be divisible by groups "
                         f"({groups}): {describe_inputs(avals)}")


def _pad(x, pads, value=0.0):
    if not any(pads[0] + pads[1]):
        return x
    return np.pad(x, ((0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)), constant_values=value)


def _windows(xp, khw, strides, dilation=_ONE):
    """A strided view (N, OH, OW, KH, KW, C) of the windows of a padded input."""
    ekh, ekw = span(khw[0], dilation[0]), span(khw[1], dilation[1])
    win = sliding_window_view(xp, (ekh, ekw), axis=(1, 2))[:, ::strides[0], ::strides[1]]
    if dilation != _ONE:
        win = win[..., ::dilation[0], ::dilation[1]]
    return win.transpose(0, 1, 2, 4, 5, 3)


def _need_known(name, sizes, what):
    if any(s is None for s in sizes):
        raise TracingError(f"{name}: the gradient needs the {what} {tuple(sizes)}, "
                           "which is not fully known while tracing")
    return tuple(int(s) for s in sizes)


def _params(strides, padding, dilation, groups):
    return dict(strides=strides, padding=padding, dilation=dilation, groups=groups)


# ---- conv2d ----------------------------------------------------------------------------------
def _conv2d_eval(x, w, *, strides, padding, dilation=_ONE, groups=1):
    avals = [x, w]
    _check_rank4("conv2d", avals, "an input (N, H, W, C) and filters (KH, KW, C // groups, O)")
    dt = _check_floats("conv2d", avals)
    n, h, wd, c = x[0]
    kh, kw, cg, o = w[0]
    _check_groups("conv2d", groups, c, cg, o, avals)
    (oh, ow), _ = _spatial("conv2d", (h, wd), (kh, kw), strides, padding, avals, dilation)
    return ((n, oh, ow, o), dt)


def _window_geometry(x_shape, khw, strides, pads, dilation):
    """The 14 sizes a native window kernel takes (``engine/ops/native.py``): the input's
    N, H, W, C, the windows' OH, OW, the taps, strides, dilation and the pads before."""
    oh, ow = ((x_shape[1 + i] + sum(pads[i]) - span(khw[i], dilation[i])) // strides[i] + 1
              for i in range(2))
    return (*x_shape, oh, ow, *khw, *strides, *dilation, pads[0][0], pads[1][0])


@contextlib.contextmanager
def _patches(x, khw, strides, pads, dilation=_ONE):
    """The im2col matrix (N*OH*OW, KH*KW*C) of the windows of ``x`` padded by
    ``pads``, valid inside the ``with``: copied into the thread's scratch (see
    ``engine.workspace``)."""
    win = _windows(_pad(x, pads), khw, strides, dilation)
    n, oh, ow, kh, kw, c = win.shape
    with workspace.borrow(win.shape, win.dtype) as cols:
        copy_windows(cols, win)
        yield cols.reshape(n * oh * ow, kh * kw * c)


def copy_windows(cols, win):
    """Copy the windows ``win`` (N, OH, OW, KH, KW, C), a strided view, into ``cols``."""
    kh, kw, c = win.shape[3:]
    if c == 1:
        # One channel: a copy per tap runs OW-long inner loops where the whole
        # view's copy runs KW-long ones (0.27 against 1.04 ms at 64x28x28, 3x3).
        for a in range(kh):
            for b in range(kw):
                cols[:, :, :, a, b] = win[:, :, :, a, b]
    else:
        np.copyto(cols, win)


@contextlib.contextmanager
def _group_patches(x, khw, strides, pads, dilation, groups):
    """The im2col matrices of each group, (G, N*OH*OW, KH*KW*C/G), in the scratch."""
    win = _windows(_pad(x, pads), khw, strides, dilation)
    n, oh, ow, kh, kw, c = win.shape
    cg = c // groups
    win = win.reshape(n, oh, ow, kh, kw, groups, cg).transpose(5, 0, 1, 2, 3, 4, 6)
    with workspace.borrow(win.shape, win.dtype) as cols:
        np.copyto(cols, win)
        yield cols.reshape(groups, n * oh * ow, kh * kw * cg)


def _group_filters(w, groups):
    """Filters (KH, KW, Cg, O) as one matrix per group, (G, KH*KW*Cg, O/G)."""
    kh, kw, cg, o = w.shape
    return w.reshape(kh * kw * cg, groups, o // groups).transpose(1, 0, 2)


def _conv2d_out(x, w, *, strides, padding, out, dilation=_ONE, groups=1):
    kh, kw, cg, o = w.shape
    _, pads = _spatial("conv2d", x.shape[1:3], (kh, kw), strides, padding, [], dilation)
    work = out.size * kh * kw * cg
    direct = _direct("conv_direct", x, w, groups, kh * kw * cg, o)
    # A direct loop takes the whole batch (its images split on the native threads).
    if direct is not None and direct(
            x, w, _window_geometry(x.shape, (kh, kw), strides, pads, dilation), out=out,
            threads=batch_split.threads(work, blas=False)) is not None:
        return out      # (None: the kernel's library is still being built)
    blas = direct is None
    batch_split.run(x.shape[0], work, lambda lo, hi: _conv2d_images(
        x[lo:hi], w, strides, pads, dilation, groups, out[lo:hi]),
        image_bytes=_columns_bytes(out, kh * kw * cg, x.dtype) if blas else 0, blas=blas)
    return out


def _columns_bytes(out, taps, dtype):
    """The bytes of one image's im2col rows: its output pixels times the filter taps."""
    return out.shape[1] * out.shape[2] * taps * np.dtype(dtype).itemsize


def runs_direct(dtype, groups, taps, outputs, filter_grad=False):
    """Whether a convolution (or its input or filter gradient) of ``taps`` values per
    window (KH*KW*C; KH*KW*O for the input gradient) and ``outputs`` channels summed per
    pixel (O; C for the input gradient) runs the native direct loop rather than im2col
    and one BLAS product: where a native kernel is registered (``engine/ops/native.py``),
    without groups, ``taps`` at most ``cost.conv_direct_max_taps``, ``outputs`` whole
    blocks of the kernel's vector width (its ``block``: a partial block runs scalar) and,
    for a filter gradient, ``taps * outputs`` at most ``cost.conv_direct_filter_max_sums``
    (its cotangent is read again for every few taps)."""
    fast = native.kernel("conv_direct", dtype)
    if groups != 1 or taps > cost.conv_direct_max_taps or fast is None or \
            outputs % getattr(fast, "block", 1):
        return False
    return not filter_grad or taps * outputs <= cost.conv_direct_filter_max_sums


def _direct(name, x, other, groups, taps, outputs):
    """The native direct-loop kernel ``name`` where :func:`runs_direct` (and both inputs
    have one dtype), else None."""
    if x.dtype != other.dtype or not runs_direct(x.dtype, groups, taps, outputs,
                                                 name == "conv_filter_direct"):
        return None
    return native.kernel(name, x.dtype)


def _conv2d_images(x, w, strides, pads, dilation, groups, out):
    """conv2d of the images ``x`` into ``out`` (the kernel of one chunk of a batch)."""
    kh, kw, cg, o = w.shape
    direct = _direct("conv_direct", x, w, groups, kh * kw * cg, o)
    if direct is not None and direct(x, w, _window_geometry(
            x.shape, (kh, kw), strides, pads, dilation), out=out) is not None:
        return out      # (None: the kernel's library is still being built)
    if groups == 1:
        with _patches(x, (kh, kw), strides, pads, dilation) as cols:
            if out.flags.c_contiguous:
                np.matmul(cols, w.reshape(kh * kw * cg, o), out=out.reshape(-1, o))
            else:
                out[...] = (cols @ w.reshape(kh * kw * cg, o)).reshape(out.shape)
        return out
    with _group_patches(x, (kh, kw), strides, pads, dilation, groups) as cols:
        res = np.matmul(cols, _group_filters(w, groups))             # (G, M, O/G)
        out[...] = res.transpose(1, 0, 2).reshape(out.shape)
    return out


def _conv2d_impl(x, w, *, strides, padding, dilation=_ONE, groups=1):
    (n, oh, ow, o), dt = _conv2d_eval((x.shape, x.dtype), (w.shape, w.dtype), strides=strides,
                                      padding=padding, dilation=dilation, groups=groups)
    return _conv2d_out(x, w, strides=strides, padding=padding, dilation=dilation, groups=groups,
                       out=np.empty((n, oh, ow, o), dt))


def _conv2d_vjp(g, out, x, w, *, strides, padding, dilation=_ONE, groups=1,
                needs=(True, True)):
    # ``needs``: eagerly a first layer's images need no gradient, and its input
    # gradient (a whole transposed convolution) is skipped, as a graph's DCE drops it.
    p = _params(strides, padding, dilation, groups)
    gx = gw = None
    if needs[0]:
        input_hw = _need_known("conv2d", x.shape[1:3], "input height and width")
        gx = apply(conv2d_backprop_input_op, g, w, input_hw=input_hw, **p)
    if needs[1]:
        kernel_hw = _need_known("conv2d", w.shape[:2], "filter height and width")
        gw = apply(conv2d_backprop_filter_op, x, g, kernel_hw=kernel_hw, **p)
    return gx, gw


conv2d_op = register(Op("conv2d", _conv2d_impl, _conv2d_eval, _conv2d_vjp, n_inputs=2,
                        vjp_needs=True,
                        dtypes=dtypes.FLOATS, out_impl=_conv2d_out, generic=conv_generic.conv2d,
                        doc="2-D convolution (cross-correlation), NHWC input, HWIO filters."))
declare(conv2d_op, onnx=("Conv",), fold_cost="im2col", chunks=chunk_rules.leading)


def _conv_params(name, stride, padding, dilation, groups):
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ShapeError(f"{name}: groups must be a positive int, got {groups!r}")
    return _params(_pair(name, stride, "stride"), _padding(name, padding),
                   _pair(name, dilation, "dilation"), int(groups))


def conv2d(x, w, stride=1, padding="valid", dilation=1, groups=1):
    """2-D convolution of ``x`` (N, H, W, C) with filters ``w`` (KH, KW, C // groups, O).

    ``stride`` and ``dilation`` are ints or (h, w) pairs. ``padding`` is
    "valid", "same" (TensorFlow's: output ``ceil(size / stride)``), an int
    (zeros on every side), an (h, w) pair, or ``((top, bottom), (left, right))``.
    ``groups`` splits the channels: group ``i`` of the filters (O // groups
    of them) sees input channels ``i * C // groups`` on. Like TensorFlow's
    ``conv2d``, this is a cross-correlation (no kernel flip).

    Example:
        >>> import engine as en
        >>> en.conv2d(en.zeros((1, 5, 5, 3)), en.zeros((3, 3, 3, 8)), padding="same").shape
        (1, 5, 5, 8)
        >>> en.conv2d(en.zeros((1, 5, 5, 4)), en.zeros((3, 3, 2, 6)), padding=1, dilation=2,
        ...           groups=2).shape
        (1, 3, 3, 6)
    """
    return apply(conv2d_op, x, w, **_conv_params("conv2d", stride, padding, dilation, groups))


# ---- conv2d_backprop_input ----------------------------------------------------------------------
def _bp_input_eval(g, w, *, input_hw, strides, padding, dilation=_ONE, groups=1):
    name = "conv2d_backprop_input"
    avals = [g, w]
    _check_rank4(name, avals, "a cotangent (N, OH, OW, O) and filters (KH, KW, C // groups, O)")
    dt = _check_floats(name, avals)
    n, gh, gw, o = g[0]
    kh, kw, cg, o2 = w[0]
    _same(name, o, o2, "cotangent channels and filter output channels", avals)
    _check_groups(name, groups, None, cg, o2, avals)
    _check_cotangent_hw(name, (gh, gw), input_hw, (kh, kw), strides, padding, avals, dilation)
    return ((n, input_hw[0], input_hw[1], None if cg is None else cg * groups), dt)


def _bp_input_impl(g, w, *, input_hw, strides, padding, dilation=_ONE, groups=1):
    return _bp_input(g, w, input_hw, strides, padding, dilation, groups, None)


def _bp_input(g, w, input_hw, strides, padding, dilation, groups, out):
    """The input gradient by the form the shapes pick; the native one writes into
    ``out`` when given (the others return a fresh array)."""
    kh, kw, cg, o = w.shape
    _, pads = _spatial("conv2d_backprop_input", input_hw, (kh, kw), strides, padding, [],
                       dilation)
    if strides == _ONE and dilation == _ONE and max(pads[0]) < kh and max(pads[1]) < kw:
        dx = _bp_input_direct(g, w, input_hw, pads, groups, out)
        if dx is not None:
            return dx
    fast = native.kernel("col2im", np.result_type(g.dtype, w.dtype))
    if fast is not None and groups == 1 and \
            cg <= cost.conv_input_grad_native_scatter_ratio * o:
        dx = _bp_input_native(fast, g, w, input_hw, strides, pads, dilation, out)
        if dx is not None:
            return dx
    if strides == _ONE and dilation == _ONE and groups == 1 and \
            max(pads[0]) < kh and max(pads[1]) < kw and \
            o <= cost.conv_input_grad_scatter_ratio * cg:
        return _bp_input_full(g, w, input_hw, pads)
    return _bp_input_scatter(g, w, input_hw, strides, pads, dilation, groups)


def _bp_input_direct(g, w, input_hw, pads, groups, out):
    """The input gradient as :func:`_bp_input_full`'s correlation by the native direct
    loop (no im2col of the cotangent, no col2im), into ``out`` where given; None where
    the shapes or dtypes rule it out (see :func:`_direct`) or its library is not built."""
    kh, kw, c, o = w.shape
    direct = _direct("conv_direct", g, w, groups, kh * kw * o, c)
    if direct is None:
        return None
    flipped = w[::-1, ::-1].transpose(0, 1, 3, 2)                        # (KH, KW, O, C)
    full = ((kh - 1 - pads[0][0], kh - 1 - pads[0][1]),
            (kw - 1 - pads[1][0], kw - 1 - pads[1][1]))
    geo = _window_geometry(g.shape, (kh, kw), _ONE, full, _ONE)
    return direct(g, flipped, geo, out=out,
                  threads=batch_split.threads(g.size * kh * kw * c, blas=False))


def _bp_input_full(g, w, input_hw, pads):
    """A "full" correlation of the cotangent with the filters flipped in space and
    with in/out channels swapped: one im2col product of the cotangent. Its im2col
    has KH*KW*O columns against the scatter's KH*KW*C, but the scatter's adds into
    (N, H, W, C) slices are slow where C is small yet above 1 (numpy's inner loops
    run C long): it is chosen unless O > 4 C (13.6 against 1.1 ms for 16 channels
    back to 1 at batch 64, 28x28; 13 against 18 for 32 back to 16 at 14x14)."""
    kh, kw, c, o = w.shape
    n = g.shape[0]
    h, wd = input_hw
    flipped = w[::-1, ::-1].transpose(0, 1, 3, 2).reshape(kh * kw * o, c)
    full = ((kh - 1 - pads[0][0], kh - 1 - pads[0][1]),
            (kw - 1 - pads[1][0], kw - 1 - pads[1][1]))
    dx = np.empty((n, h, wd, c), np.result_type(g.dtype, w.dtype))

    def images(lo, hi):       # a chunk of images (engine/ops/batch_split.py)
        with _patches(g[lo:hi], (kh, kw), _ONE, full) as cols:
            np.matmul(cols, flipped, out=dx[lo:hi].reshape(-1, c))
    batch_split.run(n, n * h * wd * c * kh * kw * o, images)
    return dx


def _bp_input_out(g, w, *, out, input_hw, strides, padding, dilation=_ONE, groups=1):
    """``conv2d_backprop_input`` into the graph's buffer ``out`` (the C col2im writes
    there: no fresh pages each call)."""
    dx = _bp_input(g, w, input_hw, strides, padding, dilation, groups, out)
    if dx is not out:
        out[...] = dx
    return out


def _bp_input_native(fast, g, w, input_hw, strides, pads, dilation, out=None):
    """One matrix product gives every window's input cotangent, (N*OH*OW, KH*KW*C), and a
    native col2im adds each into place in one pass (``engine/ops/native.py``): no im2col
    of the cotangent and no numpy adds C channels long. None where the kernel is not
    built."""
    kh, kw, c, o = w.shape
    n = g.shape[0]
    dt = np.result_type(g.dtype, w.dtype)
    work = g.size * kh * kw * c
    image_bytes = _columns_bytes(g, kh * kw * c, dt)      # its (product's) columns
    if batch_split.threads(work) < 2 and len(batch_split.blocks(n, image_bytes)) < 2:
        return _col2im_images(fast, g, w, input_hw, strides, pads, dilation, out)
    # Split or in blocks: each chunk of images writes its rows of one C-contiguous result.
    def chunk(lo, hi, rows):
        return _col2im_images(fast, g[lo:hi], w, input_hw, strides, pads, dilation, rows)
    return batch_split.run_into(out, (n, *input_hw, c), dt, n, work, chunk,
                                image_bytes=image_bytes)


def _col2im_images(fast, g, w, input_hw, strides, pads, dilation, out):
    """The native input gradient of the images of ``g`` (one chunk of a batch)."""
    kh, kw, c, o = w.shape
    dt = np.result_type(g.dtype, w.dtype)
    geo = _window_geometry((g.shape[0], *input_hw, c), (kh, kw), strides, pads, dilation)
    with workspace.borrow((g.size // o, kh * kw * c), dt) as cols:
        np.matmul(g.reshape(-1, o), w.reshape(kh * kw * c, o).T, out=cols)
        return fast(cols, geo, out=out)


def _bp_input_scatter(g, w, input_hw, strides, pads, dilation, groups):
    """One matrix product (per group) gives every window's input cotangent (col2im,
    in the thread's scratch), then each filter tap adds its slice."""
    kh, kw, cg, o = w.shape
    c = cg * groups
    n, oh, ow, _ = g.shape
    (h, wd), (sh, sw), (dh, dw) = input_hw, strides, dilation
    dt = np.result_type(g.dtype, w.dtype)
    dxp = np.zeros((n, h + sum(pads[0]), wd + sum(pads[1]), c), dtype=dt)
    og = o // groups
    with workspace.borrow((groups, n * oh * ow, kh * kw * cg), dt) as cols:
        g_groups = g.reshape(-1, groups, og).transpose(1, 0, 2)                 # (G, M, Og)
        np.matmul(g_groups, _group_filters(w, groups).transpose(0, 2, 1), out=cols)
        taps = cols.reshape(groups, n, oh, ow, kh, kw, cg)
        for a in range(kh):
            for b in range(kw):
                rows = slice(a * dh, a * dh + sh * (oh - 1) + 1, sh)
                cols_ = slice(b * dw, b * dw + sw * (ow - 1) + 1, sw)
                if groups == 1:
                    tap = taps[0, :, :, :, a, b]
                else:   # (G, N, OH, OW, Cg) -> (N, OH, OW, C)
                    tap = taps[:, :, :, :, a, b].transpose(1, 2, 3, 0, 4).reshape(n, oh, ow, c)
                dxp[:, rows, cols_] += tap
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd]


def _bp_input_vjp(u, out, g, w, *, input_hw, strides, padding, dilation=_ONE, groups=1):
    kernel_hw = _need_known("conv2d_backprop_input", w.shape[:2], "filter height and width")
    p = _params(strides, padding, dilation, groups)
    return (apply(conv2d_op, u, w, **p),
            apply(conv2d_backprop_filter_op, u, g, kernel_hw=kernel_hw, **p))


conv2d_backprop_input_op = register(Op(
    "conv2d_backprop_input", _bp_input_impl, _bp_input_eval, _bp_input_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=conv_generic.conv2d_backprop_input, out_impl=_bp_input_out,
    doc="Gradient of conv2d with respect to its input (a transposed convolution)."))
declare(conv2d_backprop_input_op, onnx=("ConvTranspose",), fold_cost="im2col_input_grad",
        chunks=chunk_rules.leading)


def conv2d_backprop_input(g, w, input_hw, stride=1, padding="valid", dilation=1, groups=1):
    """The input gradient of ``conv2d`` for cotangent ``g`` and filters ``w``.

    ``input_hw`` is the (height, width) of the convolution's input; the other
    arguments are the convolution's.

    Example:
        >>> import engine as en
        >>> en.ops.conv2d_backprop_input(en.ones((1, 3, 3, 2)), en.ones((3, 3, 4, 2)), (5, 5)).shape
        (1, 5, 5, 4)
    """
    hw = tuple(int(v) for v in input_hw)
    return apply(conv2d_backprop_input_op, g, w, input_hw=hw,
                 **_conv_params("conv2d_backprop_input", stride, padding, dilation, groups))


# ---- conv2d_backprop_filter ----------------------------------------------------------------------
def _bp_filter_eval(x, g, *, kernel_hw, strides, padding, dilation=_ONE, groups=1):
    name = "conv2d_backprop_filter"
    avals = [x, g]
    _check_rank4(name, avals, "an input (N, H, W, C) and a cotangent (N, OH, OW, O)")
    dt = _check_floats(name, avals)
    n, h, wd, c = x[0]
    n2, gh, gw, o = g[0]
    _same(name, n, n2, "batch sizes", avals)
    if c is not None and c % groups:
        raise ShapeError(f"{name}: input channels ({c}) must be divisible by groups "
                         f"({groups}): {describe_inputs(avals)}")
    _check_groups(name, groups, None, None, o, avals)
    _check_cotangent_hw(name, (gh, gw), (h, wd), kernel_hw, strides, padding, avals, dilation)
    return ((kernel_hw[0], kernel_hw[1], None if c is None else c // groups, o), dt)


def _bp_filter_impl(x, g, *, kernel_hw, strides, padding, dilation=_ONE, groups=1):
    return _bp_filter(x, g, kernel_hw, strides, padding, dilation, groups, None)


def _bp_filter_out(x, g, *, out, kernel_hw, strides, padding, dilation=_ONE, groups=1):
    """``conv2d_backprop_filter`` into the graph's buffer ``out``. Having an ``out_impl``
    also tells memory planning that the result is never a view of ``x`` or ``g``, so
    that their buffers are planned even where the filter gradient is a graph output."""
    return _bp_filter(x, g, kernel_hw, strides, padding, dilation, groups, out)


def _bp_filter(x, g, kernel_hw, strides, padding, dilation, groups, out):
    """The filter gradient, written into ``out`` where given (else a fresh array)."""
    _, pads = _spatial("conv2d_backprop_filter", x.shape[1:3], kernel_hw, strides, padding, [],
                       dilation)
    taps = kernel_hw[0] * kernel_hw[1] * (x.shape[3] // groups)
    direct = _direct("conv_filter_direct", x, g, groups, taps, g.shape[3])
    if direct is not None:  # the whole batch: its images split on the native threads
        dw = direct(x, g, _window_geometry(x.shape, kernel_hw, strides, pads, dilation),
                    out=out, threads=batch_split.threads(g.size * taps, blas=False))
        if dw is not None:  # (None: the kernel's library is still being built)
            return dw
    blas = direct is None
    # Split: each chunk of images gives its part of the sum over the batch, added in order.
    parts = batch_split.run(x.shape[0], g.size * taps, lambda lo, hi: _bp_filter_images(
        x[lo:hi], g[lo:hi], kernel_hw, strides, pads, dilation, groups,
        out if lo == 0 else None),
        image_bytes=_columns_bytes(g, taps, x.dtype) if blas else 0, blas=blas)
    dw = parts[0]
    for part in parts[1:]:
        dw += part
    return dw


def _bp_filter_images(x, g, kernel_hw, strides, pads, dilation, groups, out=None):
    """The filter gradient summed over the images of ``x`` and ``g``, written into
    ``out`` where given (else a fresh array)."""
    kh, kw = kernel_hw
    c, o = x.shape[3], g.shape[3]
    direct = _direct("conv_filter_direct", x, g, groups, kh * kw * c, o)
    dw = None if direct is None else direct(
        x, g, _window_geometry(x.shape, kernel_hw, strides, pads, dilation), out=out)
    if dw is not None:      # (None: the kernel's library is still being built)
        return dw
    if groups == 1:
        with _patches(x, kernel_hw, strides, pads, dilation) as cols:
            if out is None or not out.flags.c_contiguous:
                dw = (cols.T @ g.reshape(-1, o)).reshape(kh, kw, c, o)
                return dw if out is None else _copy_into(out, dw)
            np.matmul(cols.T, g.reshape(-1, o), out=out.reshape(kh * kw * c, o))
            return out
    cg, og = c // groups, o // groups
    with _group_patches(x, kernel_hw, strides, pads, dilation, groups) as cols:
        g_groups = g.reshape(-1, groups, og).transpose(1, 0, 2)                 # (G, M, Og)
        dw = np.matmul(cols.transpose(0, 2, 1), g_groups)                       # (G, KHKWCg, Og)
    dw = dw.reshape(groups, kh, kw, cg, og).transpose(1, 2, 3, 0, 4).reshape(kh, kw, cg, o)
    return dw if out is None else _copy_into(out, dw)


def _copy_into(out, value):
    out[...] = value
    return out


def _bp_filter_vjp(u, out, x, g, *, kernel_hw, strides, padding, dilation=_ONE, groups=1):
    input_hw = _need_known("conv2d_backprop_filter", x.shape[1:3], "input height and width")
    p = _params(strides, padding, dilation, groups)
    return (apply(conv2d_backprop_input_op, g, u, input_hw=input_hw, **p),
            apply(conv2d_op, x, u, **p))


conv2d_backprop_filter_op = register(Op(
    "conv2d_backprop_filter", _bp_filter_impl, _bp_filter_eval, _bp_filter_vjp, n_inputs=2,
    dtypes=dtypes.FLOATS, generic=conv_generic.conv2d_backprop_filter, out_impl=_bp_filter_out,
    doc="Gradient of conv2d with respect to its filters."))
declare(conv2d_backprop_filter_op, onnx=None, fold_cost="im2col_filter_grad",
        chunks=chunk_rules.leading_reduce)


def conv2d_backprop_filter(x, g, kernel_hw, stride=1, padding="valid", dilation=1, groups=1):
    """The filter gradient of ``conv2d`` for input ``x`` and cotangent ``g``.

    ``kernel_hw`` is the (height, width) of the filters; the other arguments
    are the convolution's.

    Example:
        >>> import engine as en
        >>> en.ops.conv2d_backprop_filter(en.ones((1, 5, 5, 4)), en.ones((1, 3, 3, 2)), (3, 3)).shape
        (3, 3, 4, 2)
    """
    khw = _pair("conv2d_backprop_filter", kernel_hw, "kernel size")
    return apply(conv2d_backprop_filter_op, x, g, kernel_hw=khw,
                 **_conv_params("conv2d_backprop_filter", stride, padding, dilation, groups))


# ---- conv_transpose2d ------------------------------------------------------------------------------
def _transposed_size(name, size, k, s, d, padding, extra):
    """The output size of a transposed convolution along one dim (PyTorch's rule)."""
    if padding == "same":
        return size * s
    before, after = (0, 0) if padding == "valid" else padding
    out = (size - 1) * s - before - after + span(k, d) + extra
    if out < 1:
        raise ShapeError(f"{name}: the output would have size {out} along a spatial dim "
                         f"(input {size}, window {span(k, d)}, stride {s}, padding {padding!r})")
    return out


def conv_transpose2d(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """Transposed convolution of ``x`` (N, H, W, C) with filters ``w`` (KH, KW, O // groups, C):
    the input gradient of ``conv2d`` with the same arguments (PyTorch's
    ``conv_transpose2d``, TensorFlow's ``conv2d_transpose`` layout).

    The output is ``(H - 1) * stride - top - bottom + dilation * (KH - 1) + 1
    + output_padding`` high (``H * stride + output_padding`` for "same"), and
    the same across; ``output_padding`` (< stride) picks among the
    sizes a strided convolution maps to ``H``. ``padding`` takes the forms
    ``conv2d`` does.

    Example:
        >>> import engine as en
        >>> en.conv_transpose2d(en.ones((1, 4, 4, 3)), en.ones((3, 3, 2, 3)), stride=2,
        ...                     padding=1, output_padding=1).shape
        (1, 8, 8, 2)
    """
    name = "conv_transpose2d"
    p = _conv_params(name, stride, padding, dilation, groups)
    extra = nonnegative_pair(name, output_padding, "output_padding")
    if any(e >= s for e, s in zip(extra, p["strides"])):
        # (PyTorch also allows e < dilation; then the output is no convolution's input size.)
        raise ShapeError(f"{name}: output_padding {extra} must be smaller than the stride "
                         f"{p['strides']}")
    shape = getattr(x, "shape", np.shape(x))
    ws = getattr(w, "shape", np.shape(w))
    if len(shape) != 4 or len(ws) != 4:
        raise ShapeError(f"{name}: expected an input (N, H, W, C) and filters "
                         f"(KH, KW, O // groups, C), got shapes {tuple(shape)} and {tuple(ws)}")
    hw = _need_known(name, shape[1:3], "input height and width")
    khw = _need_known(name, ws[:2], "filter height and width")
    if p["padding"] == "same" and any(extra):
        raise ShapeError(f"{name}: 'same' padding gives an output of input * stride; "
                         f"output_padding must be 0, got {output_padding!r}")
    pads = (p["padding"],) * 2 if isinstance(p["padding"], str) else p["padding"]
    out_hw = tuple(_transposed_size(name, hw[i], khw[i], p["strides"][i], p["dilation"][i],
                                    pads[i], extra[i]) for i in range(2))
    return apply(conv2d_backprop_input_op, x, w, input_hw=out_hw, **p)



# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
# Convolutions are bilinear (for any padding, dilation and groups).
for _op in (conv2d_op, conv2d_backprop_input_op, conv2d_backprop_filter_op):
    declare(_op, jvp=_rules.jvp_bilinear(_op))


def _fold(size, x, d):
    """A batch of NHWC inputs as one: the batch axis merged into N (broadcast first when
    the input is the same for every element)."""
    if d is None:
        x = apply(_shapes.broadcast_to_op, x, shape=(size,) + tuple(x.shape))
    else:
        x = _rules.move_to_front(x, d)
    return x.reshape((-1,) + tuple(x.shape[2:]))


def _unfold(size, out):
    return out.reshape((size, -1) + tuple(out.shape[1:])), 0


def _fold_batch(op, folded):
    """The batching rule of an op whose images are independent: the inputs at ``folded``
    are NHWC batches (merged with the vmap batch), the others must be unbatched (else
    the op runs once per element: batched filters, a filter gradient summed over N)."""
    def rule(size, args, dims, **params):
        if any(d is not None for i, d in enumerate(dims) if i not in folded):
            return NotImplemented
        args = [_fold(size, a, d) if i in folded else a
                for i, (a, d) in enumerate(zip(args, dims))]
        return _unfold(size, apply(op, *args, **params))
    rule.__name__ = f"{op.name}_batch"
    return rule


# What a split kernel counts (engine/ops/batch_split.py): multiply-adds, the output (or
# cotangent) times each filter's taps and input channels; and whether it calls BLAS (not
# the direct loop, as runs_direct decides for float32 where the graph's dtype is unknown).
def _blas(taps, outputs, groups, filter_grad=False):
    return outputs is None or \
        not runs_direct(np.dtype(np.float32), groups, taps, outputs, filter_grad)


batch_split.declare(conv2d_op, lambda ins, out, p: (
    _size(out) * _size(ins[1][:3]), None, _blas(_size(ins[1][:3]), out[3], p.get("groups", 1))))
batch_split.declare(conv2d_backprop_input_op, lambda ins, out, p: (
    _size(ins[0]) * _size(ins[1][:3]), None,
    p["strides"] != _ONE or p.get("dilation", _ONE) != _ONE or
    _blas(_size(ins[1][:2]) * _size(ins[1][3:]), ins[1][2], p.get("groups", 1))))
batch_split.declare(conv2d_backprop_filter_op, lambda ins, out, p: (
    _size(ins[1]) * _size(out[:3]), None,
    _blas(_size(out[:3]), ins[1][3], p.get("groups", 1), filter_grad=True)))


def _size(shape):
    """The elements of a static shape (0 where a size is unknown: nothing splits)."""
    return 0 if any(s is None for s in shape) else int(np.prod(shape, dtype=np.int64))


declare(conv2d_op, batch=_fold_batch(conv2d_op, (0,)))
declare(conv2d_backprop_input_op, batch=_fold_batch(conv2d_backprop_input_op, (0,)))


__all__ = ["conv2d", "conv2d_op", "conv2d_backprop_input", "conv2d_backprop_input_op",
           "conv2d_backprop_filter", "conv2d_backprop_filter_op", "conv_transpose2d"]


def _bp_filter_batch(size, args, dims, *, groups=1, **params):
    # One filter gradient per element: the batch becomes groups of channels, the
    # elements' images side by side in C and their cotangents in O (numpy layout
    # (N, H, W, B*C) and (N, OH, OW, B*O)); the grouped result (KH, KW, Cg, B*O)
    # holds each element's gradient in its slice of O.
    x, g = (_rules.move_to_front(a, d) if d is not None else
            apply(_shapes.broadcast_to_op, a, shape=(size,) + tuple(a.shape))
            for a, d in zip(args, dims))
    if None in tuple(x.shape) or None in tuple(g.shape):
        return NotImplemented
    b, n, h, w, c = x.shape
    o = g.shape[4]
    x = x.transpose((1, 2, 3, 0, 4)).reshape((n, h, w, b * c))
    g = g.transpose((1, 2, 3, 0, 4)).reshape((n,) + tuple(g.shape[2:4]) + (b * o,))
    dw = apply(conv2d_backprop_filter_op, x, g, groups=groups * b, **params)
    kh, kw, cg = dw.shape[:3]
    return dw.reshape((kh, kw, cg, b, o)).transpose((3, 0, 1, 2, 4)), 0


declare(conv2d_backprop_filter_op, batch=_bp_filter_batch)
