"""numpy kernels of max pooling's gradient and its adjoint, one pass per window tap.

Each window's maximum is found as ``max_pool2d`` finds it (a running maximum
over the KH*KW taps); then the taps are walked in row-major order, and a tap
claims a window where it equals the maximum and no earlier tap has claimed it
(the first maximum wins ties, as ``argmax`` and PyTorch's rule). A tap is a
strided view of the padded input whose positions are all distinct, so the
gradient adds into it with one vectorized pass: no flat indices, no
``bincount`` in float64 (the CNN step's pooling gradients went from 15 ms to a
few). Windows holding a NaN fall back to the flat-index kernels in
``pooling.py`` (NaN equals nothing, so no tap would claim the window).
"""
import numpy as np

from .conv import _pad, _spatial, _windows


def _tap_slices(pool_size, strides, dilation, out_hw):
    """``(a, b, rows, cols)`` per tap: the slices of the padded input a tap reads."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, strides, dilation
    for a in range(pool_size[0]):
        for b in range(pool_size[1]):
            yield (a, b, slice(a * dh, a * dh + sh * (oh - 1) + 1, sh),
                   slice(b * dw, b * dw + sw * (ow - 1) + 1, sw))


def _claims(x, pool_size, strides, padding, dilation, ceil_mode, lowest):
    """The padded input, its pads, and per tap ``(rows, cols, claimed)``: the windows
    whose first maximum the tap holds. None where a window's maximum is NaN."""
    _, pads = _spatial("max_pool2d", x.shape[1:3], pool_size, strides, padding, [], dilation,
                       ceil_mode)
    xp = _pad(x, pads, lowest)
    win = _windows(xp, pool_size, strides, dilation)        # (N, OH, OW, KH, KW, C) view
    peak = win[:, :, :, 0, 0].copy()
    for a in range(pool_size[0]):
        for b in range(pool_size[1]):
            if a or b:
                np.maximum(peak, win[:, :, :, a, b], out=peak)
    if peak.dtype.kind == "f" and np.isnan(peak).any():
        return None
    taken = np.zeros(peak.shape, dtype=bool)
    claims = []
    for a, b, rows, cols in _tap_slices(pool_size, strides, dilation, peak.shape[1:3]):
        hit = win[:, :, :, a, b] == peak
        hit &= ~taken
        taken |= hit
        claims.append((rows, cols, hit))
    return xp.shape, pads, claims


def grad(x, g, lowest, *, pool_size, strides, padding, dilation, ceil_mode):
    """``max_pool2d_grad``: ``g`` added at each window's first maximum; None on NaN."""
    found = _claims(x, pool_size, strides, padding, dilation, ceil_mode, lowest)
    if found is None:
        return None
    shape, pads, claims = found
    dxp = np.zeros(shape, dtype=np.result_type(x.dtype, g.dtype))
    masked = _masker(g)
    for rows, cols, hit in claims:
        tap = dxp[:, rows, cols]
        tap += masked(hit)
    if not any(pads[0] + pads[1]):
        return dxp
    h, wd = x.shape[1:3]
    return dxp[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd].copy()


def gather(x, u, lowest, *, pool_size, strides, padding, dilation, ceil_mode):
    """``max_pool2d_gather``: the values of ``u`` at each window's first maximum of
    ``x``; None on NaN."""
    found = _claims(x, pool_size, strides, padding, dilation, ceil_mode, lowest)
    if found is None:
        return None
    _, pads, claims = found
    up = _pad(u.astype(np.result_type(x.dtype, u.dtype), copy=False), pads)
    out = np.zeros(claims[0][2].shape, dtype=up.dtype)
    finite = bool(np.isfinite(up).all()) if up.dtype.kind == "f" else True
    for rows, cols, hit in claims:
        values = up[:, rows, cols]
        out += values * hit if finite else np.where(hit, values, up.dtype.type(0))
    return out


def _masker(values):
    """``hit -> values where hit, else 0``: a product with the mask (ten times faster
    than numpy's masked ufuncs), or ``where`` when an inf would turn 0 * inf into NaN."""
    if values.dtype.kind != "f" or np.isfinite(values).all():
        return lambda hit: values * hit
    zero = values.dtype.type(0)
    return lambda hit: np.where(hit, values, zero)
