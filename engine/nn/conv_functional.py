"""1-D and 3-D convolutions and their transposes, channels-last, made of ``en.conv2d``.

Composites: a 1-D convolution is a 2-D one over images one pixel high; a 3-D
convolution sums, over the filter's depth taps, 2-D convolutions of the depth
slices that tap sees (one ``conv2d`` per tap, the depth slices folded into the
batch). So they differentiate (any order) and trace through ``conv2d``'s own
rules. Layouts follow ``en.conv2d``: inputs ``(N, L, C)`` / ``(N, D, H, W, C)``,
filters ``(K, C // groups, O)`` / ``(KD, KH, KW, C // groups, O)``; transposed
filters ``(K, O // groups, C)`` / ``(KD, KH, KW, O // groups, C)``.

``padding`` is "valid", "same", an int, one int per spatial dim, or one
``(before, after)`` pair per spatial dim.

Example:
    >>> import engine as en
    >>> F = en.nn.functional
    >>> F.conv1d(en.ones((2, 9, 3)), en.ones((3, 3, 4)), stride=2, padding=1).shape
    (2, 5, 4)
    >>> F.conv3d(en.ones((1, 4, 5, 5, 2)), en.ones((3, 3, 3, 2, 6)), padding="same").shape
    (1, 4, 5, 5, 6)
"""
import operator
from typing import Any

import numpy as np

from .. import dtypes, ops
from ..errors import DTypeError, ShapeError, describe_args
from ..ops._args import at_user_line
from ..ops.conv_geometry import out_and_pads, span
from ..tensor import Tensor, tensor
from ..variable import Variable


def _as_tensor(x):
    return x if isinstance(x, (Tensor, Variable)) else tensor(x)


def _ints(name, value, n, what, minimum):
    """An int or ``n`` ints (``>= minimum``) as a tuple of ``n`` Python ints."""
    values = (value,) * n if not isinstance(value, (tuple, list)) else tuple(value)
    try:
        out = tuple(operator.index(v) for v in values if not isinstance(v, bool))
    except TypeError:
        out = ()
    if len(out) != n or len(values) != n or any(v < minimum for v in out):
        kind = "positive" if minimum > 0 else "non-negative"
        raise ShapeError(f"{name}: {what} must be a {kind} int or {n} of them, got "
                         f"{value!r}{at_user_line()}")
    return out


def _pads(name, padding, n):
    """"valid", "same", or one ``(before, after)`` pair per spatial dim."""
    if isinstance(padding, str):
        if padding.lower() not in ("valid", "same"):
            raise ShapeError(f"{name}: padding must be 'valid', 'same', an int, {n} ints or "
                             f"{n} (before, after) pairs, got {padding!r}{at_user_line()}")
        return padding.lower()
    if isinstance(padding, (tuple, list)) and len(padding) == n and \
            all(isinstance(p, (tuple, list)) for p in padding):
        return tuple(_ints(name, p, 2, "padding", 0) for p in padding)
    return tuple((p, p) for p in _ints(name, padding, n, "padding", 0))


def _check(name, x, w, rank, groups, transposed):
    """Validate ranks, dtypes and channels before any work, naming ``name``."""
    x, w = _as_tensor(x), _as_tensor(w)
    if x.dtype not in dtypes.FLOATS or w.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: expected floating-point inputs and filters, got "
                         f"{describe_args([x, w])}{at_user_line()}")
    if x.ndim != rank + 2 or w.ndim != rank + 2:
        raise ShapeError(f"{name}: expected inputs of rank {rank + 2} (batch, {rank} spatial "
                         f"dims, channels) and filters of rank {rank + 2}, got "
                         f"{describe_args([x, w])}{at_user_line()}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ShapeError(f"{name}: groups must be a positive int, got {groups!r}{at_user_line()}")
    c, per_group, o = x.shape[-1], w.shape[-2], w.shape[-1]
    if transposed:      # filters (..., O // groups, C): the input channels are the last dim
        per_group, o = o, None
        ok = c is None or per_group is None or c == per_group
    else:
        ok = c is None or per_group is None or c == per_group * groups
    if not ok or (o is not None and o % groups) or (transposed and c is not None and c % groups):
        raise ShapeError(f"{name}: the input's {c} channels do not fit the filters in {groups} "
                         f"group(s), got {describe_args([x, w])}{at_user_line()}")
    if any(d is None for d in x.shape[1:] + w.shape):
        raise ShapeError(f"{name}: the spatial sizes, channels and filter shape must be known, "
                         f"got {describe_args([x, w])}{at_user_line()}")
    return x, w


def _flat_pads(padding):
    return padding if isinstance(padding, str) else ((0, 0),) + tuple(padding)


# ---- 1-D: images one pixel high ---------------------------------------------------------
def conv1d(x, w, stride=1, padding="valid", dilation=1, groups=1):
    """1-D convolution of ``x`` (N, L, C) with filters ``w`` (K, C // groups, O).

    The arguments mean what they mean for :func:`engine.conv2d`, one value per
    spatial dim (a cross-correlation, as PyTorch's ``conv1d``).

    Example:
        >>> import engine as en
        >>> x = en.tensor([[[1.0], [2.0], [3.0], [4.0]]])            # (1, 4, 1)
        >>> en.nn.functional.conv1d(x, en.ones((2, 1, 1))).numpy().ravel()
        array([3., 5., 7.])
    """
    name = "conv1d"
    x, w = _check(name, x, w, 1, groups, transposed=False)
    stride, = _ints(name, stride, 1, "stride", 1)
    dilation, = _ints(name, dilation, 1, "dilation", 1)
    pads = _pads(name, padding, 1)
    y = ops.conv2d(ops.expand_dims(x, 1), ops.expand_dims(w, 0), stride=(1, stride),
                   padding=_flat_pads(pads), dilation=(1, dilation), groups=groups)
    return ops.squeeze(y, 1)


def conv_transpose1d(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """Transposed 1-D convolution of ``x`` (N, L, C) with filters ``w`` (K, O // groups, C):
    the input gradient of :func:`conv1d` (see :func:`engine.conv_transpose2d`).

    Example:
        >>> import engine as en
        >>> en.nn.functional.conv_transpose1d(en.ones((1, 4, 3)), en.ones((3, 2, 3)),
        ...                                   stride=2, padding=1, output_padding=1).shape
        (1, 8, 2)
    """
    name = "conv_transpose1d"
    x, w = _check(name, x, w, 1, groups, transposed=True)
    stride, = _ints(name, stride, 1, "stride", 1)
    dilation, = _ints(name, dilation, 1, "dilation", 1)
    extra, = _ints(name, output_padding, 1, "output_padding", 0)
    pads = _pads(name, padding, 1)
    y = ops.conv_transpose2d(ops.expand_dims(x, 1), ops.expand_dims(w, 0), stride=(1, stride),
                             padding=_flat_pads(pads), output_padding=(0, extra),
                             dilation=(1, dilation), groups=groups)
    return ops.squeeze(y, 1)


# ---- 3-D: one conv2d per depth tap ------------------------------------------------------
def _depth_params(name, stride, padding, dilation):
    strides = _ints(name, stride, 3, "stride", 1)
    dilations = _ints(name, dilation, 3, "dilation", 1)
    pads = _pads(name, padding, 3)
    depth_pad = pads if isinstance(pads, str) else pads[0]
    plane_pad = pads if isinstance(pads, str) else pads[1:]
    return strides, dilations, depth_pad, plane_pad


def conv3d(x, w, stride=1, padding="valid", dilation=1, groups=1):
    """3-D convolution of ``x`` (N, D, H, W, C) with filters ``w`` (KD, KH, KW, C // groups, O).

    ``stride``, ``dilation``: an int or three; ``padding`` as in the module
    docstring. Computed as the sum over the KD depth taps of ``en.conv2d`` of
    the depth slices each tap reads.

    Example:
        >>> import engine as en
        >>> en.nn.functional.conv3d(en.ones((1, 3, 3, 3, 1)), en.ones((3, 3, 3, 1, 1))).numpy()
        array([[[[[27.]]]]])
    """
    name = "conv3d"
    x, w = _check(name, x, w, 3, groups, transposed=False)
    (sd, *s_hw), (dd, *d_hw), depth_pad, plane_pad = _depth_params(name, stride, padding,
                                                                   dilation)
    n_depth, kd = x.shape[1], w.shape[0]
    out_d, before, after = out_and_pads(name, n_depth, kd, sd, depth_pad,
                                        [(tuple(x.shape), x.dtype), (tuple(w.shape), w.dtype)], dd)
    if before or after:
        x = ops.pad(x, ((0, 0), (before, after), (0, 0), (0, 0), (0, 0)))
    plane = tuple(x.shape[2:])
    total: Any = None
    for k in range(kd):
        start = k * dd
        # The depth slices this tap reads, one per output depth, folded into the batch.
        sl = x[:, start:start + sd * (out_d - 1) + 1:sd]
        y = ops.conv2d(ops.reshape(sl, (-1,) + plane), w[k], stride=tuple(s_hw),
                       padding=plane_pad, dilation=tuple(d_hw), groups=groups)
        y = ops.reshape(y, (-1, out_d) + tuple(y.shape[1:]))
        total = y if total is None else ops.add(total, y)
    return total


def conv_transpose3d(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """Transposed 3-D convolution of ``x`` (N, D, H, W, C) with filters ``w``
    (KD, KH, KW, O // groups, C): the input gradient of :func:`conv3d` (PyTorch's
    ``conv_transpose3d``). Each output size is ``(size - 1) * stride - before -
    after + dilation * (k - 1) + 1 + output_padding``.

    Example:
        >>> import engine as en
        >>> en.nn.functional.conv_transpose3d(en.ones((1, 2, 3, 3, 4)), en.ones((3, 3, 3, 2, 4)),
        ...                                   stride=2, padding=1, output_padding=1).shape
        (1, 4, 6, 6, 2)
    """
    name = "conv_transpose3d"
    x, w = _check(name, x, w, 3, groups, transposed=True)
    (sd, *s_hw), (dd, *d_hw), depth_pad, plane_pad = _depth_params(name, stride, padding,
                                                                   dilation)
    ed, *e_hw = _ints(name, output_padding, 3, "output_padding", 0)
    if ed >= sd:
        raise ShapeError(f"{name}: output_padding {output_padding!r} must be smaller than the "
                         f"stride {stride!r}{at_user_line()}")
    n_depth, kd = x.shape[1], w.shape[0]
    full = (n_depth - 1) * sd + span(kd, dd)      # every depth a tap writes, before cropping
    if depth_pad == "same":
        if ed:
            raise ShapeError(f"{name}: 'same' padding gives an output of input * stride; "
                             f"output_padding must be 0, got {output_padding!r}{at_user_line()}")
        out_d, before = n_depth * sd, max(full - n_depth * sd, 0) // 2
    else:
        before, after = (0, 0) if depth_pad == "valid" else depth_pad
        out_d = full - before - after + ed
        if out_d < 1:
            raise ShapeError(f"{name}: the output would have depth {out_d} (input {n_depth}, "
                             f"window {span(kd, dd)}, stride {sd}, padding {padding!r})"
                             f"{at_user_line()}")
    plane = tuple(x.shape[2:])
    total: Any = None
    for k in range(kd):
        y = ops.conv_transpose2d(ops.reshape(x, (-1,) + plane), w[k], stride=tuple(s_hw),
                                 padding=plane_pad, output_padding=tuple(e_hw),
                                 dilation=tuple(d_hw), groups=groups)
        y = ops.reshape(y, (-1, n_depth) + tuple(y.shape[1:]))
        # Input depth i lands on output depth i * sd + k * dd: spread by the stride, shift.
        if sd > 1:
            y = ops.pad(ops.expand_dims(y, 2), ((0, 0), (0, 0), (0, sd - 1)) + ((0, 0),) * 3)
            y = ops.reshape(y, (-1, n_depth * sd) + tuple(y.shape[3:]))
            y = y[:, :(n_depth - 1) * sd + 1]
        lead = k * dd
        y = ops.pad(y, ((0, 0), (lead, full - lead - y.shape[1])) + ((0, 0),) * 3)
        total = y if total is None else ops.add(total, y)
    if before + out_d > full:     # output_padding past the last tap: zeros
        total = ops.pad(total, ((0, 0), (0, before + out_d - full)) + ((0, 0),) * 3)
    return total[:, before:before + out_d]


__all__ = ["conv1d", "conv3d", "conv_transpose1d", "conv_transpose3d"]
