"""The real helpers of the FFT namespace: ``fftfreq``, ``rfftfreq`` (sample
frequencies) and ``fftshift``, ``ifftshift`` (moving the zero frequency to the
centre and back), as composites: the shifts are two slices and a concat per axis,
so they trace and their gradients (the opposite shift) come from those ops."""
import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ..lifting import TensorLike
from ..modes import current_mode
from ..shapes import normalize_axes
from ._args import at_user_line
from . import creation
from .join import concat


def _count(name, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
        raise ShapeError(f"{name}: n must be a positive integer, got {n!r}{at_user_line()}")
    return int(n)


def _scaled(k, n, d, dtype):
    dt = dtypes.float64 if dtype is None else dtypes.as_dtype(dtype)
    return creation.cast(k, dt) * (1.0 / (n * d))


def fftfreq(n, d=1.0, *, dtype=None):
    """The frequencies of an ``n``-point FFT with sample spacing ``d``:
    ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n)``.

    Example:
        >>> import engine as en
        >>> en.fft.fftfreq(4, d=0.5).numpy().tolist()
        [0.0, 0.5, -1.0, -0.5]
    """
    n = _count("fftfreq", n)
    k = concat([creation.arange(0, (n - 1) // 2 + 1), creation.arange(-(n // 2), 0)])
    return _scaled(k, n, d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None):
    """The non-negative frequencies of an ``n``-point real FFT: ``[0, ..., n//2] / (d * n)``.

    Example:
        >>> import engine as en
        >>> en.fft.rfftfreq(5).numpy().tolist()
        [0.0, 0.2, 0.4]
    """
    n = _count("rfftfreq", n)
    return _scaled(creation.arange(0, n // 2 + 1), n, d, dtype)


def _roll_halves(name, x, axes, inverse):
    x = x if isinstance(x, TensorLike) else current_mode().lift([x])[0]
    try:
        axes = normalize_axes(tuple(axes) if isinstance(axes, list) else axes, x.ndim, name)
    except ShapeError as err:
        raise ShapeError(f"{err}{at_user_line()}") from None
    for ax in axes:
        n = x.shape[ax]
        if n is None:
            raise ShapeError(f"{name}: axis {ax} has a size unknown at trace time{at_user_line()}")
        split = (n + 1) // 2 if not inverse else n // 2   # the first part moves to the end
        if n < 2:
            continue
        lead = (slice(None),) * ax
        x = concat([x[lead + (slice(split, n), Ellipsis)], x[lead + (slice(0, split), Ellipsis)]],
                   axis=ax)
    return x


def fftshift(x, axes=None):
    """Move the zero-frequency term to the centre of ``axes`` (all when None).

    Example:
        >>> import engine as en
        >>> en.fft.fftshift(en.fft.fftfreq(5)).numpy().tolist()
        [-0.4, -0.2, 0.0, 0.2, 0.4]
    """
    return _roll_halves("fftshift", x, axes, inverse=False)


def ifftshift(x, axes=None):
    """Undo :func:`fftshift`.

    Example:
        >>> import engine as en
        >>> en.fft.ifftshift(en.fft.fftshift(en.arange(5))).numpy().tolist()
        [0, 1, 2, 3, 4]
    """
    return _roll_halves("ifftshift", x, axes, inverse=True)
