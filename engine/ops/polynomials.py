"""1-D convolution and numpy's polynomial functions (coefficients highest power first),
as composites: ``convolve``, ``correlate``, ``poly``, ``polyadd``, ``polysub``,
``polymul``, ``polydiv``, ``polyder``, ``polyint``, ``polyval``, ``polyfit``, ``roots``.

A correlation gathers the sliding windows of the zero-padded first input (one
``take``) and multiplies them with the second (one ``matmul``), so gradients and
tracing come from those two ops. Two results have a length that depends on the
values and are computed eagerly only (a :class:`TracingError` inside a traced
function): ``polydiv``'s remainder, whose leading zeros numpy drops, and ``roots``,
which drops zero coefficients and needs general eigenvalues; the engine has no such
op, so the roots are numpy's values, without gradient.

Example:
    >>> import engine as en
    >>> en.convolve(en.tensor([1.0, 2.0, 3.0]), en.tensor([0.0, 1.0, 0.5])).tolist()
    [0.0, 1.0, 2.5, 4.0, 1.5]
"""
import numpy as np

from .. import dtypes
from ..lifting import TensorLike
from ..errors import InvalidArgumentError, ShapeError, TracingError, UnsupportedError
from ..modes import current_mode
from . import complex_parts, creation, join, linalg, linalg_functions, reduce, shape_ops
from ._args import at_user_line
from .cumulative import as_tensor
from .constants import constant_like
from .manipulation import take

__all__ = ["convolve", "correlate", "poly", "polyadd", "polysub", "polymul", "polydiv",
           "polyder", "polyint", "polyval", "polyfit", "roots"]


def _vector(x, name, what="input"):
    x = as_tensor(x)
    if x.ndim == 0:
        x = shape_ops.reshape(x, (1,))
    if x.ndim != 1:
        raise ShapeError(f"{name}: {what} must be 1-D, got shape {tuple(x.shape)}"
                         f"{at_user_line()}")
    return x


def _constant(like, array):
    return constant_like(like, array)


# ---- convolve / correlate ------------------------------------------------------------------
def _full_correlation(a, v):
    """``c[k] = sum_j a[k + j - (m - 1)] * v[j]`` for every overlap (no conjugation)."""
    n, m = a.shape[0], v.shape[0]
    dt = np.result_type(np.dtype(a.dtype), np.dtype(v.dtype))
    a, v = creation.cast(a, dt), creation.cast(v, dt)
    pad = _constant(a, np.zeros((m - 1,), dtype=dt))
    padded = join.concat([pad, a, pad], axis=0) if m > 1 else a
    windows = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    return linalg.matmul(take(padded, _constant(a, windows), axis=0), v)


def _mode_slice(full, n, m, mode, name):
    if mode in ("full", 2):
        return full
    short, long_ = min(n, m), max(n, m)
    if mode in ("valid", 0):
        start, length = short - 1, long_ - short + 1
    elif mode in ("same", 1):
        start, length = (short - 1) // 2 if n >= m else short // 2, long_
    else:
        raise InvalidArgumentError(f"{name}: mode must be 'full', 'same' or 'valid', got "
                                   f"{mode!r}{at_user_line()}")
    return full[start:start + length]


def _check_nonempty(a, v, name):
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ShapeError(f"{name}: an input is empty (shapes {tuple(a.shape)} and "
                         f"{tuple(v.shape)}){at_user_line()}")


def correlate(a, v, mode="valid"):
    """The cross-correlation of two 1-D sequences, ``c[k] = sum_n a[n + k] * conj(v[n])``
    (``np.correlate``), over the full overlap (``mode="full"``), ``a``'s longer length
    centred (``"same"``) or where they overlap completely (``"valid"``, the default).

    Example:
        >>> import engine as en
        >>> en.correlate(en.tensor([1.0, 2.0, 3.0]), en.tensor([0.0, 1.0, 0.5]), "full").tolist()
        [0.5, 2.0, 3.5, 3.0, 0.0]
    """
    a, v = _vector(a, "correlate"), _vector(v, "correlate")
    _check_nonempty(a, v, "correlate")
    if v.dtype in dtypes.COMPLEX:
        v = complex_parts.conj(v)
    full = _full_correlation(a, v)
    return _mode_slice(full, a.shape[0], v.shape[0], mode, "correlate")


def convolve(a, v, mode="full"):
    """The discrete linear convolution of two 1-D sequences (``np.convolve``), over the
    full overlap (``mode="full"``, the default), the longer length centred (``"same"``)
    or where they overlap completely (``"valid"``).

    Example:
        >>> import engine as en
        >>> en.convolve(en.tensor([1, 2, 3]), en.tensor([1, 1]), "valid").tolist()
        [3, 5]
    """
    a, v = _vector(a, "convolve"), _vector(v, "convolve")
    _check_nonempty(a, v, "convolve")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    full = _full_correlation(a, v[::-1])
    return _mode_slice(full, a.shape[0], v.shape[0], mode, "convolve")


# ---- building and combining polynomials --------------------------------------------------
def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots (``np.poly``);
    complex roots in conjugate pairs give real coefficients. A square matrix (numpy's
    characteristic polynomial) needs general eigenvalues, which the engine lacks: it
    raises :class:`UnsupportedError`.

    Example:
        >>> import engine as en
        >>> en.poly(en.tensor([1.0, 2.0])).tolist()
        [1.0, -3.0, 2.0]
    """
    z = as_tensor(seq_of_zeros)
    if z.ndim == 0:
        z = shape_ops.reshape(z, (1,))
    if z.ndim != 1:
        raise UnsupportedError(f"poly: the characteristic polynomial of a matrix needs "
                               f"general eigenvalues, which the engine has no op for; pass "
                               f"the roots (1-D), got shape {tuple(z.shape)}{at_user_line()}")
    if z.dtype not in dtypes.INEXACT:
        z = creation.cast(z, dtypes.float64)
    a = _constant(z, np.ones((1,), dtype=np.dtype(z.dtype)))
    zero = _constant(z, np.zeros((1,), dtype=np.dtype(z.dtype)))
    for k in range(z.shape[0]):   # a(x) (x - z_k): numpy's convolve with [1, -z_k]
        a = join.concat([a, zero], axis=0) - z[k] * join.concat([zero, a], axis=0)
    if z.dtype in dtypes.COMPLEX and current_mode().is_concrete:
        roots_ = np.asarray(z.numpy())
        if np.all(np.sort(roots_) == np.sort(roots_.conjugate())):
            a = complex_parts.real(a)
    return a


def _aligned(a1, a2, name):
    a1, a2 = _vector(a1, name), _vector(a2, name)
    d = a2.shape[0] - a1.shape[0]
    if d > 0:
        a1 = join.concat([_constant(a1, np.zeros((d,), np.dtype(a1.dtype))), a1], axis=0)
    elif d < 0:
        a2 = join.concat([_constant(a2, np.zeros((-d,), np.dtype(a2.dtype))), a2], axis=0)
    return a1, a2


def polyadd(a1, a2):
    """The sum of two polynomials (``np.polyadd``), the shorter padded with leading zeros.

    Example:
        >>> import engine as en
        >>> en.polyadd(en.tensor([1, 2]), en.tensor([9, 5, 4])).tolist()
        [9, 6, 6]
    """
    a1, a2 = _aligned(a1, a2, "polyadd")
    return a1 + a2


def polysub(a1, a2):
    """The difference of two polynomials (``np.polysub``).

    Example:
        >>> import engine as en
        >>> en.polysub(en.tensor([2, 10, -2]), en.tensor([3, 10, -4])).tolist()
        [-1, 0, 2]
    """
    a1, a2 = _aligned(a1, a2, "polysub")
    return a1 - a2


def polymul(a1, a2):
    """The product of two polynomials (``np.polymul``): their convolution.

    Example:
        >>> import engine as en
        >>> en.polymul(en.tensor([1.0, 2.0]), en.tensor([1.0, -1.0])).tolist()
        [1.0, 1.0, -2.0]
    """
    return convolve(_vector(a1, "polymul"), _vector(a2, "polymul"))


def polydiv(u, v):
    """The quotient and remainder of polynomial division (``np.polydiv``), in floating
    point. The remainder's leading (near) zeros are dropped as numpy drops them, which
    depends on the values: eager only.

    Example:
        >>> import engine as en
        >>> q, r = en.polydiv(en.tensor([3.0, 5.0, 2.0]), en.tensor([2.0, 1.0]))
        >>> q.tolist(), r.tolist()
        ([1.5, 1.75], [0.25])
    """
    u, v = _vector(u, "polydiv"), _vector(v, "polydiv")
    if not current_mode().is_concrete:
        raise TracingError(f"polydiv: the length of the remainder depends on the values "
                           f"(numpy drops its leading zeros), which are not known while "
                           f"tracing{at_user_line()}")
    dt = np.result_type(np.dtype(u.dtype), np.dtype(v.dtype), np.float64)
    u, v = creation.cast(u, dt), creation.cast(v, dt)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    r, quotient = u, []
    for k in range(m - n + 1):
        d = scale * r[k]
        quotient.append(shape_ops.reshape(d, (1,)))
        parts = [r[:k]] if k else []
        parts += [r[k:k + n + 1] - d * v, r[k + n + 1:]]
        r = join.concat(parts, axis=0)
    q = join.concat(quotient, axis=0) if quotient else \
        _constant(u, np.zeros((1,), dtype=dt))
    while r.shape[0] > 1 and np.allclose(np.asarray(r[0].numpy()), 0, rtol=1e-14):
        r = r[1:]
    return q, r


# ---- calculus and evaluation ---------------------------------------------------------------
def polyder(p, m=1):
    """The ``m``-th derivative of the polynomial ``p`` (``np.polyder``).

    Example:
        >>> import engine as en
        >>> en.polyder(en.tensor([1.0, 1.0, 1.0, 1.0])).tolist()
        [3.0, 2.0, 1.0]
    """
    m = int(m)
    if m < 0:
        raise InvalidArgumentError(f"polyder: the order m must be non-negative, got {m}"
                                   f"{at_user_line()}")
    p = _vector(p, "polyder")
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:-1] * _constant(p, np.arange(n, 0, -1))
    return p


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of ``p`` (``np.polyint``), with the integration
    constants ``k`` (one, or one per integration; zeros by default).

    Example:
        >>> import engine as en
        >>> en.polyint(en.tensor([3.0, 2.0, 1.0]), k=5.0).tolist()
        [1.0, 1.0, 1.0, 5.0]
    """
    m = int(m)
    if m < 0:
        raise InvalidArgumentError(f"polyint: the order m must be non-negative, got {m}"
                                   f"{at_user_line()}")
    p = as_tensor(p)
    if m == 0:
        return p
    p = _vector(p, "polyint")
    if k is None:
        k = np.zeros(m, float)
    k = shape_ops.reshape(k, (-1,)) if isinstance(k, TensorLike) else \
        np.atleast_1d(np.asarray(k, dtype=float))
    if k.shape[0] == 1 and m > 1:
        k = shape_ops.broadcast_to(k, (m,)) if isinstance(k, TensorLike) else np.repeat(k, m)
    if k.shape[0] < m:
        raise InvalidArgumentError(f"polyint: k must be a scalar or a sequence of at least "
                                   f"m={m} values{at_user_line()}")
    for i in range(m):
        n = p.shape[0]
        ki = k[i:i + 1] if isinstance(k, TensorLike) else _constant(p, k[i:i + 1])
        divided = p / _constant(p, np.arange(n, 0, -1))
        p = join.concat([divided, creation.cast(ki, divided.dtype)], axis=0)
    return p


def polyval(p, x):
    """The polynomial ``p`` at ``x`` by Horner's rule (``np.polyval``).

    Example:
        >>> import engine as en
        >>> en.polyval(en.tensor([3.0, 0.0, 1.0]), en.tensor([5.0, 1.0])).tolist()
        [76.0, 4.0]
    """
    p, x = _vector(p, "polyval", "p"), as_tensor(x)
    y = creation.zeros_like(x)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial of degree ``deg`` through ``(x, y)`` (``np.polyfit``;
    ``y`` may hold one data set per column), weighted by ``w``; with ``full`` also
    ``(residuals, rank, singular values, rcond)``, with ``cov`` the covariance of the
    coefficients. Differentiable in ``x``, ``y`` and ``w``.

    Example:
        >>> import engine as en
        >>> [round(c, 10) for c in en.polyfit(en.tensor([0.0, 1.0, 2.0]),
        ...                                   en.tensor([1.0, 3.0, 5.0]), 1).tolist()]
        [2.0, 1.0]
    """
    order = int(deg) + 1
    x, y = as_tensor(x), as_tensor(y)
    x = x if x.dtype in dtypes.INEXACT else creation.cast(x, dtypes.float64)
    y = y if y.dtype in dtypes.INEXACT else creation.cast(y, dtypes.float64)
    if deg < 0:
        raise InvalidArgumentError(f"polyfit: expected deg >= 0, got {deg}{at_user_line()}")
    if x.ndim != 1 or x.shape[0] == 0:
        raise ShapeError(f"polyfit: expected a non-empty 1-D x, got shape {tuple(x.shape)}"
                         f"{at_user_line()}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise ShapeError(f"polyfit: expected a 1-D or 2-D y with x's length {x.shape[0]}, "
                         f"got shape {tuple(y.shape)}{at_user_line()}")
    if rcond is None:
        rcond = x.shape[0] * float(np.finfo(np.dtype(x.dtype)).eps)
    powers = _constant(x, np.arange(order - 1, -1, -1).astype(np.dtype(x.dtype)))
    lhs = shape_ops.reshape(x, (-1, 1)) ** powers   # numpy's vander(x, order)
    rhs = y
    if w is not None:
        w = as_tensor(w)
        if w.ndim != 1 or w.shape[0] != x.shape[0]:
            raise ShapeError(f"polyfit: expected a 1-D w with x's length, got shape "
                             f"{tuple(w.shape)}{at_user_line()}")
        lhs = lhs * shape_ops.reshape(w, (-1, 1))
        rhs = rhs * (shape_ops.reshape(w, (-1, 1)) if rhs.ndim == 2 else w)
    scale = (reduce.sum(lhs * lhs, axis=0)) ** 0.5
    lhs = lhs / scale
    c, resids, rank, s = linalg_functions.lstsq(lhs, rhs, rcond=rcond)
    c = c / (shape_ops.reshape(scale, (-1, 1)) if c.ndim == 2 else scale)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        base = linalg_functions.inv(linalg.matmul(shape_ops.transpose(lhs, (1, 0)), lhs))
        base = base / (shape_ops.reshape(scale, (-1, 1)) * shape_ops.reshape(scale, (1, -1)))
        if cov == "unscaled":
            fac = 1.0
        else:
            if x.shape[0] <= order:
                raise InvalidArgumentError(f"polyfit: the fit needs more data points than "
                                           f"the order ({order}) to scale the covariance"
                                           f"{at_user_line()}")
            fac = resids / (x.shape[0] - order)
        if y.ndim == 1:
            return c, base * fac
        return c, shape_ops.reshape(base, tuple(base.shape) + (1,)) * fac
    return c


def roots(p):
    """The roots of the polynomial ``p`` (``np.roots``), as numpy computes them: the
    eigenvalues of the companion matrix after dropping leading and trailing zero
    coefficients. The count depends on the values and the engine has no general
    eigenvalue op, so this runs eagerly only, on numpy's values, without gradient.

    Example:
        >>> import engine as en
        >>> sorted(en.roots(en.tensor([1.0, -3.0, 2.0])).tolist())
        [1.0, 2.0]
    """
    p = _vector(p, "roots")
    if not current_mode().is_concrete:
        raise TracingError(f"roots: the number of roots depends on the values (zero "
                           f"coefficients are dropped), which are not known while tracing"
                           f"{at_user_line()}")
    return constant_like(p, np.roots(np.asarray(p.numpy())))
