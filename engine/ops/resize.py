"""``interpolate``: resizing NHWC images by nearest-neighbour or bilinear sampling
(PyTorch's ``interpolate`` rules for the source positions, ``align_corners`` too).

A composite: the source rows and columns of every output pixel are computed
once from the static sizes (numpy, a few numbers per row or column), then the
image is gathered along H and W (``getitem`` with integer arrays: the gradient
is a scatter-add) and, for bilinear, the two gathered neighbours are mixed
with their weights. No loop over pixels; gradients of any order and tracing
come from the ops.

Example:
    >>> import engine as en
    >>> x = en.reshape(en.arange(4.0), (1, 2, 2, 1))
    >>> en.interpolate(x, scale_factor=2)[0, :, :, 0].numpy()
    array([[0., 0., 1., 1.],
           [0., 0., 1., 1.],
           [2., 2., 3., 3.],
           [2., 2., 3., 3.]])
"""
import math

import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, ShapeError, describe_args
from ._args import at_user_line
from . import elementwise as ew, indexing
from .nn import _tensor

_MODES = ("nearest", "nearest-exact", "bilinear")


def _scales(name, size, scale_factor, hw):
    """The output (height, width) and the scale factors PyTorch samples with."""
    if (size is None) == (scale_factor is None):
        raise DomainError(f"{name}: give exactly one of size and scale_factor{at_user_line()}")
    if size is not None:
        out = (size, size) if isinstance(size, (int, np.integer)) else tuple(size)
        if len(out) != 2 or not all(isinstance(v, (int, np.integer)) and v > 0 for v in out):
            raise DomainError(f"{name}: size must be a positive int or a pair of them, got "
                              f"{size!r}{at_user_line()}")
        return tuple(int(v) for v in out), tuple(hw[i] / out[i] for i in range(2))
    factors = (scale_factor,) * 2 if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
    if len(factors) != 2 or not all(isinstance(f, (int, float)) and f > 0 for f in factors):
        raise DomainError(f"{name}: scale_factor must be a positive number or a pair of them, "
                          f"got {scale_factor!r}{at_user_line()}")
    out = tuple(int(math.floor(hw[i] * factors[i])) for i in range(2))
    if min(out) < 1:
        raise ShapeError(f"{name}: scale_factor {scale_factor!r} leaves no pixel of an input "
                         f"of size {tuple(hw)}{at_user_line()}")
    return out, tuple(1.0 / f for f in factors)


def _nearest(size, out, scale, exact):
    dst = np.arange(out, dtype=np.float64)
    src = np.floor((dst + 0.5) * scale if exact else dst * scale)
    return np.minimum(src, size - 1).astype(np.int64)


def _linear(size, out, scale, align_corners):
    """(first source index, second source index, weight of the second) along one dim."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src), size - 1).astype(np.int64)
    i1 = np.minimum(i0 + 1, size - 1)
    return i0, i1, src - i0


def _along(x, axis, index):
    """``x`` gathered at ``index`` (a numpy int array) along ``axis``."""
    return indexing.getitem(x, (slice(None),) * axis + (index,))


def _weighted(x, lam, axis):
    """``x`` times the per-row (or per-column) weights ``lam``, broadcast along ``axis``;
    the weights become a constant on ``x``'s back end."""
    shape = [1, 1, 1, 1]
    shape[axis] = len(lam)
    weights = np.asarray(lam, dtype=x.dtype).reshape(shape)
    # (as getitem moves its numpy index arrays to a concrete x's back end)
    return ew.mul(x, indexing._on_backend_of(x, [weights])[0])


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """``x`` (N, H, W, C) resized to ``size`` (an int or (height, width)) or by
    ``scale_factor`` (a number or a pair; the output is ``floor(size * factor)``).

    ``mode``: "nearest" (PyTorch's: source ``floor(dst * in / out)``),
    "nearest-exact" (pixel centres: ``floor((dst + 0.5) * in / out)``) or
    "bilinear"; ``align_corners`` (bilinear only) maps the corner pixels'
    centres onto each other instead of the images' edges. The nearest modes
    take any dtype (a uint8 image stays uint8), bilinear floating-point
    inputs. The spatial sizes must be known (also when tracing).

    Example:
        >>> import engine as en
        >>> x = en.reshape(en.arange(4.0), (1, 2, 2, 1))
        >>> en.interpolate(x, size=3, mode="bilinear", align_corners=True)[0, :, :, 0].numpy()
        array([[0. , 0.5, 1. ],
               [1. , 1.5, 2. ],
               [2. , 2.5, 3. ]])
    """
    name = "interpolate"
    x = _tensor(x)
    if mode not in _MODES:
        raise DomainError(f"{name}: mode must be one of {_MODES}, got {mode!r}{at_user_line()}")
    # Nearest sampling only gathers, so it takes any dtype (uint8 images, masks, labels);
    # bilinear mixes neighbours with fractional weights.
    if mode == "bilinear" and x.dtype not in dtypes.FLOATS:
        raise DTypeError(f"{name}: bilinear mode needs a floating-point input, got "
                         f"{describe_args([x])}; cast it (nearest modes take any dtype)"
                         f"{at_user_line()}")
    if x.ndim != 4 or None in tuple(x.shape[1:3]):
        raise ShapeError(f"{name}: expected an NHWC input with known height and width, got "
                         f"{describe_args([x])}{at_user_line()}")
    if align_corners is not None and mode != "bilinear":
        raise DomainError(f"{name}: align_corners is for bilinear mode only{at_user_line()}")
    hw = tuple(x.shape[1:3])
    out, scales = _scales(name, size, scale_factor, hw)
    if mode != "bilinear":
        exact = mode == "nearest-exact"
        for axis in (1, 2):
            x = _along(x, axis, _nearest(hw[axis - 1], out[axis - 1], scales[axis - 1], exact))
        return x
    for axis in (1, 2):
        i0, i1, lam = _linear(hw[axis - 1], out[axis - 1], scales[axis - 1], bool(align_corners))
        first, second = _along(x, axis, i0), _along(x, axis, i1)
        x = ew.add(_weighted(first, 1.0 - lam, axis), _weighted(second, lam, axis))
    return x


__all__ = ["interpolate"]
