"""Kernels for the error function ``erf`` and its complement ``erfc``.

numpy has neither. These follow W. J. Cody, "Rational Chebyshev approximations
for the error function", Math. Comp. 23 (1969) 631-638 (the SPECFUN ``CALERF``
routine): three rational approximations, on ``|x| <= 0.46875`` (erf), on
``0.46875 < |x| <= 4`` and on ``|x| > 4`` (erfc, scaled by ``exp(-x*x)``). In
float64 they agree with ``math.erf`` / ``math.erfc`` to a few units in the last
place, tails of erfc included (tests/test_erf.py).

float32 ``erf`` is computed in float32 (:func:`erf_float32`, ten times faster than
going through float64 on a transformer's activations): ``x P(x*x)`` below 1 and
``1 - exp(-x*x) Q(1/|x|)`` from 1 to 4 (erf rounds to 1 beyond), two polynomials
fitted for relative error (about 4e-8 and 7e-8); the result is within 2 units in
the last place of ``math.erf`` (tests/ops/test_erf_float32.py). float32 ``erfc``,
float16 and the other back ends' kernels go through float64.

The math is written once against an array namespace ``xp`` (numpy, or a back
end's ``be.xp``): numpy evaluates each approximation only on its own elements,
a namespace without boolean-mask assignment evaluates both on every element
and selects with ``where``.
"""
import numpy as np

_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)
_SQRPI = 5.6418958354775628695e-1      # 1 / sqrt(pi)
SMALL = 0.46875                        # the first interval ends here
_MIDDLE = 4.0                          # the second interval ends here
_BIG = 27.3                            # erfc(x) underflows float64 beyond this (27.23)


def erf_small(x):
    """erf on ``|x| <= 0.46875`` (Cody's first interval), for any array type."""
    z = x * x
    num, den = _A[4] * z, z
    for i in range(3):
        num = (num + _A[i]) * z
        den = (den + _B[i]) * z
    return x * (num + _A[3]) / (den + _B[3])


def erfc_large(xp, y):
    """erfc on ``y > 0.46875`` (Cody's second and third intervals)."""
    # Second interval: a rational function of y (clamped to it, as below).
    ym = xp.clip(y, SMALL, _MIDDLE)
    num, den = _C[8] * ym, ym
    for i in range(7):
        num = (num + _C[i]) * ym
        den = (den + _D[i]) * ym
    middle = (num + _C[7]) / (den + _D[7])
    # Third interval: a rational function of 1 / y**2 (y clamped below _BIG, beyond
    # which erfc is 0 in float64, so y*y neither overflows nor turns inf - inf into NaN).
    yc = xp.clip(y, _MIDDLE, _BIG)
    z = 1.0 / (yc * yc)
    num, den = _P[5] * z, z
    for i in range(4):
        num = (num + _P[i]) * z
        den = (den + _Q[i]) * z
    tail = (_SQRPI - z * (num + _P[4]) / (den + _Q[4])) / yc
    r = xp.where(y <= _MIDDLE, middle, tail)
    # exp(-y*y) as exp(-s*s) * exp(-(y - s)(y + s)) with s = y rounded down to a
    # sixteenth: s*s is exact, so the large exponent loses no digits.
    yc = xp.clip(y, 0.0, _BIG)
    s = xp.trunc(16.0 * yc) / 16.0
    r = xp.exp(-s * s) * xp.exp(-(yc - s) * (yc + s)) * r
    return xp.where(y < _BIG, r, 0.0 * r)


# float32 erf: erf(x) / x = P(x*x) on |x| < 1; exp(x*x) erfc(x) = Q(1/x) on 1 <= x <= 4.
# Fitted (Lawson's iteratively reweighted least squares on Chebyshev nodes) for relative
# error: 4.0e-8 and 6.6e-8 in exact arithmetic, under 2 ulps evaluated in float32.
_P32 = (1.1283791226777433, -0.37612327049139527, 0.1128018673540055, -0.026711491520655984,
        0.00491775303407152, -0.0005632215454723502)
_Q32 = (0.00025251224766475517, 0.5593252904166923, 0.040094493374390756,
        -0.46442006151158843, 0.48037443291698717, -0.21826944531761192,
        0.003341059440669381, 0.03832616494544256, -0.011440898555466704)
_P32_LESS_ONE = (_P32[0] - 1.0,) + _P32[1:]
_SPLIT32, _ONE32 = np.float32(1.0), np.float32(1.0)


def _horner32(coefs, t):
    """``sum(coefs[k] * t**k)`` in float32, in place on a new array."""
    r = np.full_like(t, coefs[-1])
    for c in coefs[-2::-1]:
        r *= t
        r += np.float32(c)
    return r


def erf_float32(x):
    """``erf(x)`` of a float32 array computed in float32 (both pieces on every element,
    then a select: cheaper than masking at these sizes)."""
    if x.ndim == 0:                  # numpy's 0-d results are scalars: no in-place ops
        return erf_float32(x.reshape(1)).reshape(())
    y = np.abs(x)
    # x + x (P(x*x) - 1): the leading x is exact, so P's rounding is scaled by 0.13.
    # (Clamped, so that large and infinite x raise no overflow or inf - inf warnings.)
    xs = np.clip(x, -_SPLIT32, _SPLIT32)
    small = _horner32(_P32_LESS_ONE, xs * xs)
    small *= xs
    small += xs
    yb = np.clip(y, _SPLIT32, np.float32(4.0))
    large = _horner32(_Q32, np.reciprocal(yb))
    yb *= yb
    np.negative(yb, out=yb)
    large *= np.exp(yb, out=yb)
    np.subtract(_ONE32, large, out=large)
    np.copysign(large, x, out=large)
    return np.where(y < _SPLIT32, small, large)      # NaN takes the large branch: NaN


def _numpy(x, out, complement):
    if not complement and x.dtype == np.float32:
        res = erf_float32(x)
        if out is None:
            return res
        np.copyto(out, res, casting="same_kind")
        return out
    xf = np.asarray(x, np.float64)
    y = np.abs(xf)
    small = y <= SMALL
    large = y > SMALL                      # NaN is in neither and stays NaN
    res = xf.copy()
    e = erf_small(xf[small])
    res[small] = 1.0 - e if complement else e
    xl = xf[large]
    c = erfc_large(np, y[large])
    if complement:
        res[large] = np.where(xl < 0, 2.0 - c, c)
    else:
        res[large] = np.copysign(1.0 - c, xl)
    if out is None:
        return res.astype(x.dtype, copy=False)
    np.copyto(out, res, casting="same_kind")
    return out


def erf_numpy(x, out=None):
    """``erf(x)`` for a float32 or float64 numpy array (written into ``out`` if given)."""
    return _numpy(x, out, complement=False)


def erfc_numpy(x, out=None):
    """``erfc(x) = 1 - erf(x)``, accurate where it is tiny (large ``x``)."""
    return _numpy(x, out, complement=True)


def _generic(be, x, complement):
    xp = be.xp
    dt = x.dtype
    xf = xp.astype(x, xp.float64)
    y = xp.abs(xf)
    # Each branch sees its own interval's values only (clamped), so none overflows.
    e = erf_small(xp.clip(xf, -SMALL, SMALL))
    c = erfc_large(xp, xp.clip(y, SMALL, None))
    if complement:
        res = xp.where(y <= SMALL, 1.0 - e, xp.where(xf < 0, 2.0 - c, c))
    else:
        res = xp.where(y <= SMALL, e, xp.where(xf < 0, c - 1.0, 1.0 - c))
    res = xp.where(xp.isnan(xf), xf, res)
    return xp.astype(res, dt)


def erf_generic(be, x):
    return _generic(be, x, complement=False)


def erfc_generic(be, x):
    return _generic(be, x, complement=True)
