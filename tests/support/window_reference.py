"""A convolution computed window by window in float64: the independent reference the
convolution kernels' tests compare against (NHWC input, HWIO filters, explicit pads).

Example:
    >>> import numpy as np
    >>> x, w = np.ones((1, 3, 3, 1)), np.ones((2, 2, 1, 1))
    >>> loop_conv(x, w, (1, 1), ((0, 0), (0, 0)))[0, :, :, 0].tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""
import itertools

import numpy as np

import engine as en
from support.finite_diff import numeric_grad


def loop_conv(x, w, strides, pads, dilation=(1, 1), groups=1):
    """Grouped cross-correlation of ``x`` (N, H, W, C) with ``w`` (KH, KW, C / groups, O),
    each output window an einsum over its taps, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    kh, kw, cg, o = w.shape
    eh, ew = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh = (xp.shape[1] - eh) // strides[0] + 1
    ow = (xp.shape[2] - ew) // strides[1] + 1
    og = o // groups
    out = np.zeros((x.shape[0], oh, ow, o))
    for i, j, gr in itertools.product(range(oh), range(ow), range(groups)):
        win = xp[:, i * strides[0]:i * strides[0] + eh:dilation[0],
                 j * strides[1]:j * strides[1] + ew:dilation[1], gr * cg:(gr + 1) * cg]
        out[:, i, j, gr * og:(gr + 1) * og] = np.einsum(
            "nabc,abco->no", win, w[..., gr * og:(gr + 1) * og].astype(np.float64))
    return out


def check_strided_conv_gradients(x, w, cotangent):
    """``en.grad`` of ``sum(conv2d(x, w, stride=2, padding="same") * cotangent)`` with
    respect to the input and the filters against central differences (float64 arrays):
    the input and filter gradients of a strided, padded convolution."""
    def loss(xt, wt):
        return en.sum(en.conv2d(xt, wt, stride=2, padding="same") * en.tensor(cotangent))
    gx, gw = en.grad(loss, argnums=(0, 1))(en.tensor(x), en.tensor(w))
    np.testing.assert_allclose(gx.numpy(), numeric_grad(loss, (x, w), 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw.numpy(), numeric_grad(loss, (x, w), 1), rtol=1e-6, atol=1e-7)
