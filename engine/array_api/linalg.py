"""The standard's ``linalg`` extension, on ``engine.linalg``.

Each function adapts the engine's of the same name to the standard's signature
(``vector_norm``'s ``ord``, ``matrix_norm``'s ``keepdims``...). A function the
engine lacks is not defined here.

Example:
    >>> import engine.array_api as xp
    >>> xp.linalg.matmul(xp.eye(2), xp.ones((2, 1))).shape
    (2, 1)
"""
import engine as _en

from . import _manipulation
from ._lookup import standard_function

__all__ = ["matmul", "matrix_transpose"]

matmul = _manipulation.matmul
matrix_transpose = _manipulation.matrix_transpose


def _define(name, make):
    fn = standard_function("linalg." + name)
    if fn is not None:
        globals()[name] = make(fn)
        __all__.append(name)


def _one(name, doc):
    def make(fn):
        def f(x, /):
            return fn(x)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = doc
        return f
    return make


def _two(name, doc):
    def make(fn):
        def f(x1, x2, /):
            return fn(x1, x2)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = doc
        return f
    return make


def _cholesky(fn):
    def cholesky(x, /, *, upper=False):
        """The Cholesky factor (lower, or upper with ``upper=True``) of each matrix."""
        lower = fn(x)
        return _manipulation.matrix_transpose(_en.conj(lower) if x.dtype.kind == "c"
                                              else lower) if upper else lower
    return cholesky


def _cross(fn):
    def cross(x1, x2, /, *, axis=-1):
        """The cross product of 3-vectors along ``axis``."""
        return fn(x1, x2, axis=axis)
    return cross


def _diagonal(fn):
    def diagonal(x, /, *, offset=0):
        """The diagonal ``offset`` of each matrix (the last two axes)."""
        return fn(x, offset=offset, axis1=-2, axis2=-1)
    return diagonal


def _matrix_norm(fn):
    def matrix_norm(x, /, *, keepdims=False, ord="fro"):   # noqa: A002
        """The norm of each matrix (the last two axes)."""
        return fn(x, ord=ord, axis=(-2, -1), keepdims=keepdims)
    return matrix_norm


def _matrix_power(fn):
    def matrix_power(x, n, /):
        """Each matrix to the integer power ``n``."""
        return fn(x, n)
    return matrix_power


def _with_rtol(name, doc):
    def make(fn):
        def f(x, /, *, rtol=None):
            return fn(x, rtol=rtol)
        f.__name__ = f.__qualname__ = name
        f.__doc__ = doc
        return f
    return make


def _qr(fn):
    def qr(x, /, *, mode="reduced"):
        """The QR factorisation of each matrix."""
        return fn(x, mode=mode)
    return qr


def _svd(fn):
    def svd(x, /, *, full_matrices=True):
        """The singular value decomposition ``(U, S, Vh)`` of each matrix."""
        return fn(x, full_matrices=full_matrices)
    return svd


def _tensordot(fn):
    def tensordot(x1, x2, /, *, axes=2):
        """The sum of products over ``axes``."""
        return fn(x1, x2, axes=axes)
    return tensordot


def _trace(fn):
    def trace(x, /, *, offset=0, dtype=None):
        """The sum of diagonal ``offset`` of each matrix (the last two axes)."""
        out = fn(x, offset=offset, axis1=-2, axis2=-1)
        return out if dtype is None or out.dtype == dtype else _en.cast(out, dtype)
    return trace


def _vecdot(fn):
    def vecdot(x1, x2, /, *, axis=-1):
        """The dot product of vectors along ``axis``."""
        return fn(x1, x2, axis=axis)
    return vecdot


def _vector_norm(fn):
    def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):   # noqa: A002
        """The vector norm over ``axis`` (all elements when None)."""
        if axis is None:
            out = fn(_en.reshape(x, (-1,)), ord=ord, axis=0)
            return _en.reshape(out, (1,) * x.ndim) if keepdims else out
        return fn(x, ord=ord, axis=tuple(axis) if isinstance(axis, list) else axis,
                  keepdims=keepdims)
    return vector_norm


for _name, _make in (
        ("cholesky", _cholesky), ("cross", _cross),
        ("det", _one("det", "The determinant of each matrix.")),
        ("diagonal", _diagonal),
        ("eigh", _one("eigh", "Eigenvalues and eigenvectors of each symmetric matrix.")),
        ("eigvalsh", _one("eigvalsh", "Eigenvalues of each symmetric matrix.")),
        ("inv", _one("inv", "The inverse of each matrix.")),
        ("matrix_norm", _matrix_norm), ("matrix_power", _matrix_power),
        ("matrix_rank", _with_rtol("matrix_rank", "The rank of each matrix.")),
        ("outer", _two("outer", "The outer product of two vectors.")),
        ("pinv", _with_rtol("pinv", "The pseudo-inverse of each matrix.")),
        ("qr", _qr),
        ("slogdet", _one("slogdet", "The sign and log of the absolute determinant.")),
        ("solve", _two("solve", "The solution ``x`` of ``x1 @ x = x2``.")),
        ("svd", _svd), ("svdvals", _one("svdvals", "The singular values of each matrix.")),
        ("tensordot", _tensordot), ("trace", _trace), ("vecdot", _vecdot),
        ("vector_norm", _vector_norm)):
    _define(_name, _make)
