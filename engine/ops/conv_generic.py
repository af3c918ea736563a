"""Convolution and max pooling written against the Array API namespace.

The standard has no strided window views and no scatter, so the window matrix
(im2col) is the concatenation of one strided slice per filter tap, the input
gradient is a stride-1 correlation of the zero-dilated cotangent with the
flipped filters, and the pooling gradient sums by position
(:func:`engine.ops.index_generic.segment_sum`). The numbers are those of the
numpy kernels in ``conv.py`` (same padding, same first-maximum rule on ties).

Example:
    >>> import engine as en
    >>> x = en.ones((1, 4, 4, 1), dtype="float64").to("array_api_strict")
    >>> en.conv2d(x, en.ones((3, 3, 1, 1)).to("array_api_strict")).to("numpy").numpy().ravel().tolist()
    [9.0, 9.0, 9.0, 9.0]
"""
import math

from .conv_geometry import spatial
from .index_generic import segment_sum


def _spatial(name, hw, khw, strides, padding):
    return spatial(name, hw, khw, strides, padding, [])


def _pad(be, x, pads, value=0.0):
    """``x`` (N, H, W, C) padded in H and W with ``value``."""
    xp = be.xp
    for axis, (before, after) in ((1, pads[0]), (2, pads[1])):
        if before or after:
            parts = []
            for width in (before, after):
                shape = list(x.shape)
                shape[axis] = width
                parts.append(xp.full(tuple(shape), value, dtype=x.dtype))
            x = xp.concat([parts[0], x, parts[1]], axis=axis)
    return x


def _tap(x, a, b, out_hw, strides):
    """The (N, OH, OW, C) slice that filter tap (a, b) reads from a padded input."""
    (oh, ow), (sh, sw) = out_hw, strides
    return x[:, a:a + sh * (oh - 1) + 1:sh, b:b + sw * (ow - 1) + 1:sw, :]


def _cols(be, x, khw, strides, pads):
    """The im2col matrix (N*OH*OW, KH*KW*C) of ``x`` padded by ``pads``."""
    xp = be.xp
    x = _pad(be, x, pads)
    n, hp, wp, c = x.shape
    oh = (hp - khw[0]) // strides[0] + 1
    ow = (wp - khw[1]) // strides[1] + 1
    taps = [_tap(x, a, b, (oh, ow), strides) for a in range(khw[0]) for b in range(khw[1])]
    cols = xp.concat(taps, axis=3) if len(taps) > 1 else taps[0]
    return xp.reshape(cols, (n * oh * ow, khw[0] * khw[1] * c)), (n, oh, ow)


def conv2d(be, x, w, *, strides, padding):
    x, w = be.promote(x, w)
    kh, kw, c, o = w.shape
    _, pads = _spatial("conv2d", x.shape[1:3], (kh, kw), strides, padding)
    cols, (n, oh, ow) = _cols(be, x, (kh, kw), strides, pads)
    out = be.xp.matmul(cols, be.xp.reshape(w, (kh * kw * c, o)))
    return be.xp.reshape(out, (n, oh, ow, o))


def conv2d_backprop_filter(be, x, g, *, kernel_hw, strides, padding):
    x, g = be.promote(x, g)
    c, o = x.shape[3], g.shape[3]
    _, pads = _spatial("conv2d_backprop_filter", x.shape[1:3], kernel_hw, strides, padding)
    cols, _ = _cols(be, x, kernel_hw, strides, pads)
    out = be.xp.matmul(be.xp.matrix_transpose(cols), be.xp.reshape(g, (-1, o)))
    return be.xp.reshape(out, (kernel_hw[0], kernel_hw[1], c, o))


def _dilate(be, g, axis, stride):
    """``stride - 1`` zeros between the entries of ``g`` along ``axis``."""
    if stride == 1:
        return g
    xp = be.xp
    size = g.shape[axis]
    spread = xp.stack([g] + [xp.zeros_like(g)] * (stride - 1), axis=axis + 1)
    shape = list(g.shape)
    shape[axis] = size * stride
    spread = xp.reshape(spread, tuple(shape))
    index = [slice(None)] * g.ndim
    index[axis] = slice(0, (size - 1) * stride + 1)
    return spread[tuple(index)]


def conv2d_backprop_input(be, g, w, *, input_hw, strides, padding):
    xp = be.xp
    g, w = be.promote(g, w)
    kh, kw, c, o = w.shape
    h, wd = input_hw
    _, pads = _spatial("conv2d_backprop_input", input_hw, (kh, kw), strides, padding)
    hp, wp = h + sum(pads[0]), wd + sum(pads[1])
    gd = _dilate(be, _dilate(be, g, 1, strides[0]), 2, strides[1])
    # dx_padded[i] = sum_a gd[i - a] w[a]: a stride-1 correlation of gd, padded by
    # k - 1 before (and to the padded input size after), with the filters flipped.
    full = ((kh - 1, hp - gd.shape[1]), (kw - 1, wp - gd.shape[2]))
    flipped = xp.reshape(xp.permute_dims(w[::-1, ::-1, ...], (0, 1, 3, 2)), (kh * kw * o, c))
    cols, (n, _, _) = _cols(be, gd, (kh, kw), (1, 1), full)
    dxp = xp.reshape(xp.matmul(cols, flipped), (n, hp, wp, c))
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]


def _pooled(be, x, pool_size, strides, padding):
    """The padded input (padding is -inf) and the pooled (OH, OW)."""
    (oh, ow), pads = _spatial("max_pool2d", x.shape[1:3], pool_size, strides, padding)
    return _pad(be, x, pads, -math.inf), (oh, ow), pads


def max_pool2d(be, x, *, pool_size, strides, padding):
    xpad, (oh, ow), _ = _pooled(be, x, pool_size, strides, padding)
    out = None
    for a in range(pool_size[0]):
        for b in range(pool_size[1]):
            tap = _tap(xpad, a, b, (oh, ow), strides)
            out = tap if out is None else be.xp.maximum(out, tap)
    return out


def _argmax_flat(be, x, pool_size, strides, padding):
    """Flat indices into the padded input of each window's first maximum."""
    xp = be.xp
    xpad, (oh, ow), pads = _pooled(be, x, pool_size, strides, padding)
    n, hp, wp, c = xpad.shape
    ph, pw = pool_size
    taps = [_tap(xpad, a, b, (oh, ow), strides) for a in range(ph) for b in range(pw)]
    k = xp.argmax(xp.stack(taps, axis=3), axis=3)           # (N, OH, OW, C), first max
    a, b = k // pw, k % pw

    def grid(size, shape):
        return xp.reshape(xp.arange(size, dtype=xp.int64), shape)
    rows = grid(oh, (1, oh, 1, 1)) * strides[0] + a
    cols = grid(ow, (1, 1, ow, 1)) * strides[1] + b
    flat = ((grid(n, (n, 1, 1, 1)) * hp + rows) * wp + cols) * c + grid(c, (1, 1, 1, c))
    return flat, (n, hp, wp, c), pads


def max_pool2d_grad(be, x, g, *, pool_size, strides, padding):
    xp = be.xp
    x, g = be.promote(x, g)
    flat, (n, hp, wp, c), pads = _argmax_flat(be, x, pool_size, strides, padding)
    dxp = segment_sum(be, xp.reshape(flat, (-1,)), xp.reshape(g, (-1,)), n * hp * wp * c)
    dxp = xp.reshape(dxp, (n, hp, wp, c))
    h, wd = x.shape[1:3]
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]


def max_pool2d_gather(be, x, u, *, pool_size, strides, padding):
    xp = be.xp
    flat, _, pads = _argmax_flat(be, x, pool_size, strides, padding)
    x, u = be.promote(x, u)
    up = _pad(be, u, pads)
    return xp.reshape(xp.take(xp.reshape(up, (-1,)), xp.reshape(flat, (-1,))), tuple(flat.shape))
