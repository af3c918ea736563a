"""A convolution and its filter gradient computed from one im2col matrix.

``conv2d(x, w)`` is the product ``cols @ w`` of the im2col matrix of ``x``
(N*OH*OW, KH*KW*C), and ``conv2d_backprop_filter(x, g)`` is ``cols.T @ g``
of the same matrix: a training step copied the same windows twice, once in
the forward and once in the filter gradient (0.3-0.4 ms each in the styles
CNN step). These kernels let a graph compute the matrix once, as a value of
its own (``graph/lowering/shared_columns.py`` rewrites the pair), where memory
planning gives it a buffer reused across calls.

Each kernel splits its images over the kernel threads exactly where the
convolution it replaces would (``batch_split``, the convolution's own work
measure), and each chunk's product is the one the convolution's kernel runs,
so results are the same bits as the ops'.

Example:
    >>> import numpy as np
    >>> x, w = np.ones((1, 3, 3, 1)), np.ones((2, 2, 1, 1))
    >>> geometry = dict(kernel_hw=(2, 2), strides=(1, 1), padding="valid", dilation=(1, 1))
    >>> cols = im2col_out(x, out=np.empty(columns_shape(x.shape, **geometry)), **geometry)
    >>> cols.shape, conv2d_columns_out(cols, w, out=np.empty((1, 2, 2, 1)), images=1).ravel().tolist()
    ((4, 4), [4.0, 4.0, 4.0, 4.0])
"""
import numpy as np

from . import batch_split
from .conv import _pad, _spatial, _windows, copy_windows


def columns_shape(x_shape, kernel_hw, strides, padding, dilation):
    """The im2col matrix's shape (N*OH*OW, KH*KW*C) for an input of ``x_shape``."""
    n, h, w, c = x_shape
    (oh, ow), _ = _spatial("im2col", (h, w), kernel_hw, strides, padding, [], dilation)
    return (n * oh * ow, kernel_hw[0] * kernel_hw[1] * c)


def _work(rows, k, o):
    """The multiply-adds of a product of ``rows`` x ``k`` by ``k`` x ``o`` (what a
    convolution measures to decide its split)."""
    return rows * k * o


def im2col_out(x, *, out, kernel_hw, strides, padding, dilation, split_work=0):
    """The windows of ``x`` (N, H, W, C) as rows of ``out`` (N*OH*OW, KH*KW*C), a
    C-contiguous array; the images split over the kernel threads where a convolution
    of ``split_work`` multiply-adds would split."""
    n = x.shape[0]
    _, pads = _spatial("im2col", x.shape[1:3], kernel_hw, strides, padding, [], dilation)
    win = _windows(_pad(x, pads), kernel_hw, strides, dilation)
    cols = out.reshape(win.shape)
    batch_split.run(n, split_work, lambda lo, hi: copy_windows(cols[lo:hi], win[lo:hi]))
    return out


def conv2d_columns_out(cols, w, *, out, images):
    """conv2d as ``cols @ w`` into ``out`` (N, OH, OW, O), ``images`` = N; the images
    split as the convolution's would."""
    k, o = cols.shape[1], w.shape[-1]
    wm = w.reshape(k, o)
    per_image = cols.shape[0] // images
    flat = out.reshape(-1, o) if out.flags.c_contiguous else None

    def chunk(lo, hi):
        rows = slice(lo * per_image, hi * per_image)
        if flat is not None:
            np.matmul(cols[rows], wm, out=flat[rows])
        else:
            out[lo:hi] = (cols[rows] @ wm).reshape(out[lo:hi].shape)
    batch_split.run(images, _work(cols.shape[0], k, o), chunk)
    return out


def filter_grad_columns_out(cols, g, *, out):
    """conv2d_backprop_filter as ``cols.T @ g`` into ``out`` (KH, KW, C, O), the
    images' partial sums added in order where they split (as the op's kernel does)."""
    n, o = g.shape[0], g.shape[-1]
    k = cols.shape[1]
    per_image = cols.shape[0] // n
    gm = g.reshape(-1, o)

    def chunk(lo, hi):
        rows = slice(lo * per_image, hi * per_image)
        return cols[rows].T @ gm[rows]
    parts = batch_split.run(n, _work(cols.shape[0], k, o), chunk)
    dw = parts[0]
    for part in parts[1:]:
        dw += part
    out[...] = dw.reshape(out.shape)
    return out
