"""Convolution written against the Array API namespace.

The standard has no strided window views and no scatter, so the window matrix
(im2col) is the concatenation of one strided slice per filter tap, and the
input gradient is a stride-1 correlation of the zero-dilated cotangent with
the flipped (and dilated) filters. Groups run one matrix product each. The
numbers are those of the numpy kernels in ``conv.py``. Pooling is in
``pool_generic.py``; both share the padding and tap helpers here.

Example:
    >>> import engine as en
    >>> x = en.ones((1, 4, 4, 1), dtype="float64").to("array_api_strict")
    >>> en.conv2d(x, en.ones((3, 3, 1, 1)).to("array_api_strict")).to("numpy").numpy().ravel().tolist()
    [9.0, 9.0, 9.0, 9.0]
"""
from .conv_geometry import span, spatial

_ONE = (1, 1)


def _spatial(name, hw, khw, strides, padding, dilation=_ONE, ceil_mode=False):
    return spatial(name, hw, khw, strides, padding, [], dilation, ceil_mode)


def pad(be, x, pads, value=0.0):
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


def tap(x, a, b, out_hw, strides):
    """The (N, OH, OW, C) slice that the window tap at offset (a, b) reads from a padded input."""
    (oh, ow), (sh, sw) = out_hw, strides
    return x[:, a:a + sh * (oh - 1) + 1:sh, b:b + sw * (ow - 1) + 1:sw, :]


def out_hw(padded_hw, khw, strides, dilation=_ONE):
    return tuple((padded_hw[i] - span(khw[i], dilation[i])) // strides[i] + 1 for i in range(2))


def _cols(be, x, khw, strides, pads, dilation=_ONE):
    """The im2col matrix (N*OH*OW, KH*KW*C) of ``x`` padded by ``pads``."""
    xp = be.xp
    x = pad(be, x, pads)
    n, hp, wp, c = x.shape
    oh, ow = out_hw((hp, wp), khw, strides, dilation)
    taps = [tap(x, a * dilation[0], b * dilation[1], (oh, ow), strides)
            for a in range(khw[0]) for b in range(khw[1])]
    cols = xp.concat(taps, axis=3) if len(taps) > 1 else taps[0]
    return xp.reshape(cols, (n * oh * ow, khw[0] * khw[1] * c)), (n, oh, ow)


def _channels(be, x, groups):
    """``x``'s last axis cut into ``groups`` equal parts."""
    size = x.shape[-1] // groups
    return [x[..., i * size:(i + 1) * size] for i in range(groups)]


def _per_group(be, fn, groups, *pairs):
    """``fn`` on each group's slices, results joined along the last axis."""
    parts = [fn(*args) for args in zip(*[_channels(be, v, groups) for v in pairs])]
    return parts[0] if groups == 1 else be.xp.concat(parts, axis=-1)


def conv2d(be, x, w, *, strides, padding, dilation=_ONE, groups=1):
    x, w = be.promote(x, w)
    kh, kw, cg, _ = w.shape
    _, pads = _spatial("conv2d", x.shape[1:3], (kh, kw), strides, padding, dilation)

    def one(xg, wg):
        cols, (n, oh, ow) = _cols(be, xg, (kh, kw), strides, pads, dilation)
        out = be.xp.matmul(cols, be.xp.reshape(wg, (kh * kw * cg, wg.shape[3])))
        return be.xp.reshape(out, (n, oh, ow, wg.shape[3]))
    return _per_group(be, one, groups, x, w)


def conv2d_backprop_filter(be, x, g, *, kernel_hw, strides, padding, dilation=_ONE, groups=1):
    x, g = be.promote(x, g)
    _, pads = _spatial("conv2d_backprop_filter", x.shape[1:3], kernel_hw, strides, padding,
                       dilation)

    def one(xg, gg):
        cols, _ = _cols(be, xg, kernel_hw, strides, pads, dilation)
        out = be.xp.matmul(be.xp.matrix_transpose(cols), be.xp.reshape(gg, (-1, gg.shape[3])))
        return be.xp.reshape(out, (kernel_hw[0], kernel_hw[1], xg.shape[3], gg.shape[3]))
    return _per_group(be, one, groups, x, g)


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


def conv2d_backprop_input(be, g, w, *, input_hw, strides, padding, dilation=_ONE, groups=1):
    xp = be.xp
    g, w = be.promote(g, w)
    kh, kw, cg, _ = w.shape
    h, wd = input_hw
    _, pads = _spatial("conv2d_backprop_input", input_hw, (kh, kw), strides, padding, dilation)
    hp, wp = h + sum(pads[0]), wd + sum(pads[1])
    gd = _dilate(be, _dilate(be, g, 1, strides[0]), 2, strides[1])
    # dx_padded[i] = sum_a gd[i - d a] w[a]: a stride-1 correlation of gd, padded by the
    # window's span - 1 before (and to the padded input size after), with the filters
    # flipped and dilated.
    ekh, ekw = span(kh, dilation[0]), span(kw, dilation[1])
    full = ((ekh - 1, hp - gd.shape[1]), (ekw - 1, wp - gd.shape[2]))

    def one(gg, wg):
        og = wg.shape[3]
        flipped = xp.reshape(xp.permute_dims(wg[::-1, ::-1, ...], (0, 1, 3, 2)),
                             (kh * kw * og, cg))
        cols, (n, _, _) = _cols(be, gg, (kh, kw), _ONE, full, dilation)
        return xp.reshape(xp.matmul(cols, flipped), (n, hp, wp, cg))
    dxp = _per_group(be, one, groups, gd, w)
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]
