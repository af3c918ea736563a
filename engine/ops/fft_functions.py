"""The public transforms of :mod:`engine.fft`, with numpy's arguments: ``fft``,
``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` (``n``, ``axis``), ``fft2``,
``ifft2``, ``rfft2``, ``irfft2`` and ``fftn``, ``ifftn``, ``rfftn``, ``irfftn``
(``s``, ``axes``); ``norm`` is "backward" (the default, also for None), "ortho" or
"forward". Each checks its arguments, puts them in the canonical form of the
registry ops (:mod:`engine.ops.fft_transforms`: negative axes, one length or None
per axis) and applies one op; ``hfft`` and ``ihfft`` are ``irfft`` and ``rfft`` of
the conjugate with the dual norm, as in numpy.

Result dtypes are numpy's: complex64 from float16, float32 and complex64 input,
complex128 from the others (ints and bools are transformed as float64); the real
results of ``irfft`` and ``hfft`` are the matching real dtype.

Example:
    >>> import engine as en
    >>> x = en.tensor([0.0, 1.0, 0.0, -1.0])
    >>> [round(abs(v), 6) for v in en.fft.rfft(x).tolist()]
    [0.0, 2.0, 0.0]
"""
import numpy as np

from .. import dtypes
from ..errors import DomainError, DTypeError, ShapeError, describe_args
from ..lifting import TensorLike
from ..modes import apply, current_mode
from ._args import at_user_line
from .complex_parts import conj
from .fft_transforms import _DUAL, NORMS, fft_op, ifft_op, irfft_op, rfft_op

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn"]


def _lifted(x):
    return x if isinstance(x, TensorLike) else current_mode().lift([x])[0]


def _norm(name, norm):
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise DomainError(f"{name}: norm must be one of {NORMS} (or None), got {norm!r}"
                          f"{at_user_line()}")
    return norm


def _length(name, n):
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ShapeError(f"{name}: the number of data points must be a positive integer, got "
                         f"{n!r}{at_user_line()}")
    return int(n)


def _axis(name, axis, x):
    nd = x.ndim
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
            or not -nd <= axis < nd:
        raise ShapeError(f"{name}: axis {axis!r} is out of range for input "
                         f"{describe_args([x])}{at_user_line()}")
    return int(axis) - nd if axis >= 0 else int(axis)


def _one_axis(name, x, n, axis):
    return dict(s=(_length(name, n),), axes=(_axis(name, axis, x),))


def _many_axes(name, x, s, axes, default=None):
    """``(s, axes)`` as the ops hold them: numpy's rules (axes None: the last len(s)
    axes, or ``default``, or all; s None: the input's lengths)."""
    if axes is None:
        if s is not None:
            axes = tuple(range(-len(tuple(s)), 0))
        else:
            axes = default if default is not None else tuple(range(-x.ndim, 0))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(_axis(name, a, x) for a in axes)
    if not axes or len(set(axes)) != len(axes):
        raise ShapeError(f"{name}: axes must name one or more distinct axes, got {axes} for "
                         f"input {describe_args([x])}{at_user_line()}")
    s = (None,) * len(axes) if s is None else tuple(_length(name, n) for n in s)
    if len(s) != len(axes):
        raise ShapeError(f"{name}: s={s} and axes={axes} differ in length{at_user_line()}")
    return dict(s=s, axes=axes)


# ---- one axis -----------------------------------------------------------------------------------
def fft(x, n=None, axis=-1, norm=None):
    """The discrete Fourier transform of ``x`` along ``axis`` (``n``: cut or zero-pad
    to that length first), as ``numpy.fft.fft``.

    Example:
        >>> import engine as en
        >>> en.fft.fft(en.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
        [(10+0j), (-2+2j), (-2+0j), (-2-2j)]
    """
    x = _lifted(x)
    return apply(fft_op, x, norm=_norm("fft", norm), **_one_axis("fft", x, n, axis))


def ifft(x, n=None, axis=-1, norm=None):
    """The inverse discrete Fourier transform along ``axis``, as ``numpy.fft.ifft``.

    Example:
        >>> import engine as en
        >>> en.fft.ifft(en.fft.fft(en.tensor([1.0, 2.0]))).tolist()
        [(1+0j), (2+0j)]
    """
    x = _lifted(x)
    return apply(ifft_op, x, norm=_norm("ifft", norm), **_one_axis("ifft", x, n, axis))


def rfft(x, n=None, axis=-1, norm=None):
    """The DFT of real ``x`` along ``axis``: the ``n // 2 + 1`` non-negative
    frequencies, as ``numpy.fft.rfft``.

    Example:
        >>> import engine as en
        >>> en.fft.rfft(en.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
        [(10+0j), (-2+2j), (-2+0j)]
    """
    x = _lifted(x)
    return apply(rfft_op, x, norm=_norm("rfft", norm), **_one_axis("rfft", x, n, axis))


def irfft(x, n=None, axis=-1, norm=None):
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default
    ``2 * (m - 1)`` for ``m`` input bins) along ``axis``, as ``numpy.fft.irfft``.

    Example:
        >>> import engine as en
        >>> en.fft.irfft(en.fft.rfft(en.tensor([1.0, 2.0, 3.0]))).shape
        (2,)
    """
    x = _lifted(x)
    return apply(irfft_op, x, norm=_norm("irfft", norm), **_one_axis("irfft", x, n, axis))


def hfft(x, n=None, axis=-1, norm=None):
    """The DFT of a signal with Hermitian symmetry given by its first half ``x``: a
    real result of length ``n`` (default ``2 * (m - 1)``), as ``numpy.fft.hfft``.

    Example:
        >>> import engine as en
        >>> en.fft.hfft(en.tensor([1.0, 2.0, 3.0])).tolist()
        [8.0, -2.0, 0.0, -2.0]
    """
    x = _lifted(x)
    params = _one_axis("hfft", x, n, axis)
    return apply(irfft_op, conj(x), norm=_DUAL[_norm("hfft", norm)], **params)


def ihfft(x, n=None, axis=-1, norm=None):
    """The inverse of :func:`hfft` for real ``x``: ``n // 2 + 1`` complex bins, as
    ``numpy.fft.ihfft``.

    Example:
        >>> import engine as en
        >>> en.real(en.fft.ihfft(en.tensor([8.0, -2.0, 0.0, -2.0]))).tolist()
        [1.0, 2.0, 3.0]
    """
    x = _lifted(x)
    if x.dtype in dtypes.COMPLEX:
        raise DTypeError(f"ihfft: expected a real input, got {describe_args([x])}"
                         f"{at_user_line()}")
    params = _one_axis("ihfft", x, n, axis)
    return conj(apply(rfft_op, x, norm=_DUAL[_norm("ihfft", norm)], **params))


# ---- several axes -------------------------------------------------------------------------------
def fftn(x, s=None, axes=None, norm=None):
    """The DFT over ``axes`` (default: all, or the last ``len(s)``), as ``numpy.fft.fftn``.

    Example:
        >>> import engine as en
        >>> en.fft.fftn(en.ones((2, 2))).tolist()
        [[(4+0j), 0j], [0j, 0j]]
    """
    x = _lifted(x)
    return apply(fft_op, x, norm=_norm("fftn", norm), **_many_axes("fftn", x, s, axes))


def ifftn(x, s=None, axes=None, norm=None):
    """The inverse DFT over ``axes``, as ``numpy.fft.ifftn``."""
    x = _lifted(x)
    return apply(ifft_op, x, norm=_norm("ifftn", norm), **_many_axes("ifftn", x, s, axes))


def rfftn(x, s=None, axes=None, norm=None):
    """The DFT of real ``x`` over ``axes``, the last one halved, as ``numpy.fft.rfftn``."""
    x = _lifted(x)
    return apply(rfft_op, x, norm=_norm("rfftn", norm), **_many_axes("rfftn", x, s, axes))


def irfftn(x, s=None, axes=None, norm=None):
    """The inverse of :func:`rfftn` (real output), as ``numpy.fft.irfftn``."""
    x = _lifted(x)
    return apply(irfft_op, x, norm=_norm("irfftn", norm), **_many_axes("irfftn", x, s, axes))


def fft2(x, s=None, axes=(-2, -1), norm=None):
    """:func:`fftn` over the last two axes, as ``numpy.fft.fft2``.

    Example:
        >>> import engine as en
        >>> en.fft.fft2(en.ones((2, 3))).shape
        (2, 3)
    """
    x = _lifted(x)
    return apply(fft_op, x, norm=_norm("fft2", norm), **_many_axes("fft2", x, s, axes))


def ifft2(x, s=None, axes=(-2, -1), norm=None):
    """:func:`ifftn` over the last two axes, as ``numpy.fft.ifft2``."""
    x = _lifted(x)
    return apply(ifft_op, x, norm=_norm("ifft2", norm), **_many_axes("ifft2", x, s, axes))


def rfft2(x, s=None, axes=(-2, -1), norm=None):
    """:func:`rfftn` over the last two axes, as ``numpy.fft.rfft2``."""
    x = _lifted(x)
    return apply(rfft_op, x, norm=_norm("rfft2", norm), **_many_axes("rfft2", x, s, axes))


def irfft2(x, s=None, axes=(-2, -1), norm=None):
    """:func:`irfftn` over the last two axes, as ``numpy.fft.irfft2``."""
    x = _lifted(x)
    return apply(irfft_op, x, norm=_norm("irfft2", norm), **_many_axes("irfft2", x, s, axes))
