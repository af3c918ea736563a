"""numpy kernels for complex inputs where numpy's own miss the standard's values.

The Array API standard gives complex ``expm1`` C99's special values
(``expm1(+inf + 0j)`` is ``+inf + 0j``, ``expm1(-inf + inf j)`` is ``-1 + 0j``).
numpy's complex ``expm1`` turns those into NaN and loses the sign of a zero.
The op calls this kernel only for complex inputs, so real inputs keep numpy's
ufunc.

Example:
    >>> import numpy as np
    >>> complex(expm1(np.array(complex(np.inf, 0.0))))
    (inf+0j)
"""
import numpy as np


def expm1(z):
    """``exp(z) - 1`` of a complex array, accurate near 0, with C99's special values.

    The finite part uses ``expm1(x) cos(y) - 2 sin(y/2)**2 + i exp(x) sin(y)``
    (no cancellation near 0); an infinite or NaN component goes through ``exp``,
    whose special values are C99's, and a zero imaginary part stays that zero.
    """
    z = np.asarray(z)
    x, y = z.real, z.imag
    out = np.empty(z.shape, z.dtype)
    with np.errstate(all="ignore"):
        out.real = np.expm1(x) * np.cos(y) - 2 * np.square(np.sin(y / 2))
        out.imag = np.where(y == 0, y, np.exp(x) * np.sin(y))
        finite = np.isfinite(x) & np.isfinite(y)
        if not finite.all():
            out[~finite] = np.exp(z[~finite]) - 1
    return out

