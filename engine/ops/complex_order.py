"""numpy's order of complex numbers, for the comparisons and ``maximum`` / ``minimum`` /
``fmax`` / ``fmin`` on back ends whose namespace (the Array API standard's) orders real
numbers only, and for the compiled loops, which have no complex order.

numpy compares complex numbers lexicographically, real parts first, imaginary parts on
a tie; a NaN in an imaginary part stops the real parts from deciding (numpy's ``CLT``
and friends in ``npy_math``).

Example:
    >>> import numpy as np
    >>> np.less(np.array([1 + 5j, 2 + 0j]), np.array([2 + 0j, 2 + 1j])).tolist()
    [True, True]
"""
from .. import dtypes

_STRICT = {"less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge"}


def _compare(xp, how, x, y):
    """numpy's ``x how y`` on complex arrays, from their parts."""
    xr, xi, yr, yi = xp.real(x), xp.imag(x), xp.real(y), xp.imag(y)
    ordered = ~(xp.isnan(xi) | xp.isnan(yi))
    if how in ("lt", "le"):
        by_real = (xr < yr) & ordered
        by_imag = (xi < yi) if how == "lt" else (xi <= yi)
    else:
        by_real = (xr > yr) & ordered
        by_imag = (xi > yi) if how == "gt" else (xi >= yi)
    return by_real | ((xr == yr) & by_imag)


def comparison_kernel(name):
    """The generic kernel of comparison ``name`` (``"less"`` ...): the namespace's own
    for real inputs, numpy's lexicographic order for complex ones."""
    def kernel(be, x, y):
        x, y = be.promote(x, y)
        if be.dtype_of(x) in dtypes.COMPLEX:
            return _compare(be.xp, _STRICT[name], x, y)
        return be.function(name)(x, y)
    kernel.__name__ = name
    return kernel


def extremum_kernel(name, real_kernel):
    """The generic kernel of ``maximum``, ``minimum``, ``fmax`` or ``fmin``: ``real_kernel``
    for real inputs; for complex ones numpy's choice, the first input where it wins the
    order (``>=`` for the maxima), else the NaN-holding one (``maximum``, ``minimum``)
    or the other (``fmax``, ``fmin``)."""
    how = "ge" if name in ("maximum", "fmax") else "le"
    nan_ignoring = name.startswith("f")

    def kernel(be, x, y):
        x, y = be.promote(x, y)
        if be.dtype_of(x) not in dtypes.COMPLEX:
            return real_kernel(be, x, y)
        xp = be.xp
        first = _compare(xp, how, x, y)
        if nan_ignoring:
            first = first | xp.isnan(xp.real(y)) | xp.isnan(xp.imag(y))
        else:
            first = first | xp.isnan(xp.real(x)) | xp.isnan(xp.imag(x))
        return xp.where(first, x, y)
    kernel.__name__ = name
    return kernel


def real_only(form):
    """A scalar form (see ``engine.op.RULE_KINDS``) used for real inputs only: compiled
    loops have no order of complex numbers, so those keep numpy's kernel."""
    def choose(in_avals, out_dtype):
        return None if any(dt in dtypes.COMPLEX for _, dt in in_avals) else form
    return choose
