"""``engine.fft``: the FFT namespace (numpy's ``numpy.fft`` names, the Python Array
API's ``fft`` extension).

Here so far: the sample frequencies ``fftfreq``, ``rfftfreq`` and the shifts
``fftshift``, ``ifftshift``, which work on real tensors, in both modes, with
gradients. The transforms themselves (``fft``, ``rfft``, ...) produce complex
values and join this namespace with the engine's complex dtypes.

Example:
    >>> import engine as en
    >>> en.fft.fftfreq(4).numpy().tolist()
    [0.0, 0.25, -0.5, -0.25]
"""
from .ops.fft_shift import fftfreq, fftshift, ifftshift, rfftfreq

__all__ = ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]
