"""Max and average pooling written against the Array API namespace.

Each window tap is one strided slice of the padded input (the standard has
no window views), the max-pooling gradient sums by position
(:func:`engine.ops.index_generic.segment_sum`), and the average-pooling
gradient pads each tap's share back to the input's size (the standard has
no scatter). The numbers are those of the numpy kernels in ``pooling.py``
(same padding, same first-maximum rule on ties, same window sizes).

Example:
    >>> import engine as en
    >>> x = en.ones((1, 4, 4, 1), dtype="float64").to("array_api_strict")
    >>> en.max_pool2d(x).to("numpy").numpy().ravel().tolist()
    [1.0, 1.0, 1.0, 1.0]
"""
import math

from ..errors import EngineError
from .conv_generic import _dilate, _spatial, pad, tap
from .index_generic import segment_sum

_ONE = (1, 1)


def _lowest(be, x):
    """A pad that never wins a maximum: -inf, or an integer dtype's minimum."""
    xp = be.xp
    return xp.iinfo(x.dtype).min if xp.isdtype(x.dtype, "integral") else -math.inf


def _pooled(be, x, pool_size, strides, padding, dilation, ceil_mode, value=None):
    """The padded input (by default with values that never win a maximum) and the
    pooled (OH, OW)."""
    value = _lowest(be, x) if value is None else value
    (oh, ow), pads = _spatial("max_pool2d", x.shape[1:3], pool_size, strides, padding, dilation,
                              ceil_mode)
    return pad(be, x, pads, value), (oh, ow), pads


def _taps(x, pool_size, strides, dilation, out):
    return [tap(x, a * dilation[0], b * dilation[1], out, strides)
            for a in range(pool_size[0]) for b in range(pool_size[1])]


def max_pool2d(be, x, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    xpad, out, _ = _pooled(be, x, pool_size, strides, padding, dilation, ceil_mode)
    result = None
    for t in _taps(xpad, pool_size, strides, dilation, out):
        result = t if result is None else be.xp.maximum(result, t)
    return result


def _argmax(be, x, pool_size, strides, padding, dilation, ceil_mode):
    """Each window's first maximum: its (row, column) in the padded input."""
    xp = be.xp
    xpad, (oh, ow), pads = _pooled(be, x, pool_size, strides, padding, dilation, ceil_mode)
    taps = _taps(xpad, pool_size, strides, dilation, (oh, ow))
    k = xp.argmax(xp.stack(taps, axis=3), axis=3)           # (N, OH, OW, C), first max
    a, b = k // pool_size[1], k % pool_size[1]

    def grid(size, shape):
        return xp.reshape(xp.arange(size, dtype=xp.int64), shape)
    rows = grid(oh, (1, oh, 1, 1)) * strides[0] + a * dilation[0]
    cols = grid(ow, (1, 1, ow, 1)) * strides[1] + b * dilation[1]
    return rows, cols, xpad.shape, pads, grid


def _argmax_flat(be, x, pool_size, strides, padding, dilation, ceil_mode):
    """Flat indices into the padded input of each window's first maximum."""
    rows, cols, (n, hp, wp, c), pads, grid = _argmax(be, x, pool_size, strides, padding,
                                                     dilation, ceil_mode)
    flat = ((grid(n, (n, 1, 1, 1)) * hp + rows) * wp + cols) * c + grid(c, (1, 1, 1, c))
    return flat, (n, hp, wp, c), pads


def max_pool2d_grad(be, x, g, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    xp = be.xp
    x, g = be.promote(x, g)
    flat, (n, hp, wp, c), pads = _argmax_flat(be, x, pool_size, strides, padding, dilation,
                                              ceil_mode)
    dxp = segment_sum(be, xp.reshape(flat, (-1,)), xp.reshape(g, (-1,)), n * hp * wp * c)
    dxp = xp.reshape(dxp, (n, hp, wp, c))
    h, wd = x.shape[1:3]
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]


def max_pool2d_gather(be, x, u, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    xp = be.xp
    flat, _, pads = _argmax_flat(be, x, pool_size, strides, padding, dilation, ceil_mode)
    x, u = be.promote(x, u)
    up = pad(be, u, pads)
    return xp.reshape(xp.take(xp.reshape(up, (-1,)), xp.reshape(flat, (-1,))), tuple(flat.shape))


def max_pool2d_indices(be, x, *, pool_size, strides, padding, dilation=_ONE, ceil_mode=False):
    rows, cols, _, pads, _ = _argmax(be, x, pool_size, strides, padding, dilation, ceil_mode)
    return (rows - pads[0][0]) * x.shape[2] + (cols - pads[1][0])


def _divisor(be, x_shape, dtype, pool_size, strides, padding, ceil_mode, count_include_pad):
    """The window sizes (1, OH, OW, 1): the sum of the taps of a padded mask of ones."""
    xp = be.xp
    (oh, ow), pads = _spatial("avg_pool2d", x_shape[1:3], pool_size, strides, padding, _ONE,
                              ceil_mode)
    _, plain = _spatial("avg_pool2d", x_shape[1:3], pool_size, strides, padding)
    ones = xp.ones((1, x_shape[1], x_shape[2], 1), dtype=dtype)
    if count_include_pad and not isinstance(padding, str):
        ones = pad(be, ones, plain, 1.0)           # explicit pads count, ceil_mode's do not
        extra = tuple((b - p[0], a - p[1]) for (b, a), p in zip(pads, plain))
        mask = pad(be, ones, extra)
    else:
        mask = pad(be, ones, pads)
    total = None
    for t in _taps(mask, pool_size, strides, _ONE, (oh, ow)):
        total = t if total is None else total + t
    return total, pads, (oh, ow)


def avg_pool2d(be, x, *, pool_size, strides, padding, ceil_mode, count_include_pad):
    div, pads, out = _divisor(be, x.shape, x.dtype, pool_size, strides, padding, ceil_mode,
                              count_include_pad)
    xpad = pad(be, x, pads)
    total = None
    for t in _taps(xpad, pool_size, strides, _ONE, out):
        total = t if total is None else total + t
    return total / div


def avg_pool2d_grad(be, g, *, input_hw, pool_size, strides, padding, ceil_mode,
                    count_include_pad):
    n, oh, ow, c = g.shape
    div, pads, _ = _divisor(be, (n, input_hw[0], input_hw[1], c), g.dtype, pool_size, strides,
                            padding, ceil_mode, count_include_pad)
    share = g / div
    h, wd = input_hw
    hp, wp = h + sum(pads[0]), wd + sum(pads[1])
    total = None
    for a in range(pool_size[0]):
        for b in range(pool_size[1]):
            # The tap's share, spread by the stride and placed at its offset in the padded input.
            spread = _spread(be, share, strides)
            placed = pad(be, spread, ((a, hp - a - spread.shape[1]), (b, wp - b - spread.shape[2])))
            total = placed if total is None else total + placed
    if total is None:    # (a pool has at least one tap: the shape rule checks)
        raise EngineError("pooling: a window without taps (internal error)")
    return total[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]


def _spread(be, g, strides):
    return _dilate(be, _dilate(be, g, 1, strides[0]), 2, strides[1])
