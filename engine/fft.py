"""``engine.fft``: the FFT namespace (numpy's ``numpy.fft`` names, the Python Array
API's ``fft`` extension).

The transforms ``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` (one
axis), ``fft2``, ``ifft2``, ``rfft2``, ``irfft2`` and ``fftn``, ``ifftn``,
``rfftn``, ``irfftn`` take numpy's arguments and give numpy's dtypes; the sample
frequencies ``fftfreq``, ``rfftfreq`` and the shifts ``fftshift``, ``ifftshift``
are composites of real ops. All run in both modes and differentiate: gradients
flow through the complex values with JAX's convention, so a real loss of
transforms (``sum(real(fft(x)) ** 2)``) has the gradient finite differences give.

Example:
    >>> import engine as en
    >>> en.fft.fftfreq(4).numpy().tolist()
    [0.0, 0.25, -0.5, -0.25]
"""
from .ops.fft_functions import (fft, fft2, fftn, hfft, ifft, ifft2, ifftn, ihfft,  # noqa: F401
                                irfft, irfft2, irfftn, rfft, rfft2, rfftn)
from .ops.fft_functions import __all__ as _TRANSFORMS
from .ops.fft_shift import fftfreq, fftshift, ifftshift, rfftfreq

__all__ = _TRANSFORMS + ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]
