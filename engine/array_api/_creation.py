"""The standard's creation functions, on the engine's creation ops.

``empty`` returns zeros (its contents are unspecified by the standard, and
uninitialised memory would only be a hazard); ``copy=False`` shares the memory of
an engine tensor of the requested dtype or of a numpy array (a write through
either is seen by both, as numpy's ``asarray``), and refuses where a copy is needed.

Example:
    >>> import engine.array_api as xp
    >>> xp.full((2,), 3).dtype, xp.asarray([1.5, 2]).dtype
    (dtype('int64'), dtype('float64'))
"""
import numpy as np

import engine as _en
from engine import dtypes as _dt
from engine.tensor import wrap

from engine.errors import InvalidArgumentError
from engine.devices import check_device
from ._lookup import standard_function


def _dtype(dtype, default):
    return default if dtype is None else _dt.as_dtype(dtype)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """A tensor from a tensor, a Python scalar or nested sequence, or a buffer.

    ``copy=True`` always copies; ``copy=False`` never does (ValueError when it would
    have to); ``None`` copies only when needed.

    Example:
        >>> import engine.array_api as xp
        >>> xp.asarray([[1, 2], [3, 4]], dtype=xp.int8).dtype
        dtype('int8')
    """
    check_device(device, "asarray")
    dtype = None if dtype is None else _dt.as_dtype(dtype)
    if isinstance(obj, _en.Tensor):
        if dtype is None or dtype == obj.dtype:
            return _en.identity(obj) if copy else obj
        if copy is False:
            raise InvalidArgumentError(f"asarray: converting {obj.dtype} to {dtype} needs a copy, "
                             "but copy=False")
        return _en.cast(obj, dtype)
    if copy is False:
        if not isinstance(obj, np.ndarray) and not hasattr(obj, "__array__") \
                and not hasattr(obj, "__buffer__"):
            raise InvalidArgumentError(f"asarray: a {type(obj).__name__} cannot become a tensor "
                             "without a copy, but copy=False")
        arr = np.asarray(obj)
        if dtype is not None and arr.dtype != dtype:
            raise InvalidArgumentError(f"asarray: converting {arr.dtype} to {np.dtype(dtype)} "
                                       "needs a copy, but copy=False")
        return _shared(arr)
    if dtype is None and _is_python_data(obj):
        arr = np.asarray(obj)
        if arr.dtype == object:
            raise _en.DTypeError(f"asarray: cannot make a tensor of {type(obj).__name__} "
                                 "data (mixed or too large values)")
        return _en.tensor(arr)
    return _en.tensor(obj, dtype=dtype)


def _is_python_data(obj):
    return isinstance(obj, (list, tuple, bool, int, float, complex))


def zeros(shape, *, dtype=None, device=None):
    """A tensor of zeros (float64 unless ``dtype``)."""
    check_device(device, "zeros")
    return _en.zeros(shape, dtype=_dtype(dtype, _dt.float64))


def ones(shape, *, dtype=None, device=None):
    """A tensor of ones (float64 unless ``dtype``)."""
    check_device(device, "ones")
    return _en.ones(shape, dtype=_dtype(dtype, _dt.float64))


def empty(shape, *, dtype=None, device=None):
    """A tensor whose values are unspecified: zeros (uninitialised memory would only be
    a hazard)."""
    check_device(device, "empty")
    return _en.zeros(shape, dtype=_dtype(dtype, _dt.float64))


def full(shape, fill_value, *, dtype=None, device=None):
    """A tensor filled with ``fill_value``; the dtype follows the value's kind."""
    check_device(device, "full")
    if isinstance(fill_value, _en.Tensor):
        fill_value = fill_value.item()
    return _en.full(shape, fill_value, dtype=dtype)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros with the shape (and, unless given, the dtype) of ``x``."""
    check_device(device, "zeros_like")
    if dtype is None or _dt.as_dtype(dtype) == x.dtype:
        return _en.zeros_like(x)
    return _en.zeros(x.shape, dtype=_dt.as_dtype(dtype))


def ones_like(x, /, *, dtype=None, device=None):
    """Ones with the shape (and, unless given, the dtype) of ``x``."""
    check_device(device, "ones_like")
    if dtype is None or _dt.as_dtype(dtype) == x.dtype:
        return _en.ones_like(x)
    return _en.ones(x.shape, dtype=_dt.as_dtype(dtype))


def empty_like(x, /, *, dtype=None, device=None):
    """A tensor shaped like ``x`` with unspecified values (zeros)."""
    check_device(device, "empty_like")
    return zeros_like(x, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` in the shape (and, unless given, the dtype) of ``x``."""
    check_device(device, "full_like")
    return _en.full(x.shape, fill_value, dtype=_dtype(dtype, x.dtype))


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in ``[start, stop)``."""
    check_device(device, "arange")
    return _en.arange(start, stop, step, dtype=dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """A matrix with ones on diagonal ``k``."""
    check_device(device, "eye")
    return _en.eye(n_rows, n_cols, dtype=_dtype(dtype, _dt.float64), k=k)


def from_dlpack(x, /, *, device=None, copy=None):
    """A tensor from any object with ``__dlpack__`` (a numpy array, a torch tensor...).

    Example:
        >>> import numpy as np, engine.array_api as xp
        >>> xp.from_dlpack(np.arange(3)).tolist()
        [0, 1, 2]
    """
    check_device(device, "from_dlpack")
    if isinstance(x, _en.Tensor):
        return _en.identity(x) if copy else x
    arr = np.from_dlpack(x, copy=copy)
    if copy is False:
        return _shared(arr)     # the exporter's memory itself, as the standard asks
    return _en.tensor(arr)


def _shared(arr):
    """A tensor on ``arr``'s memory itself (``copy=False``): writes through either are
    seen by both; read-only memory stays read-only (the tensor copies on its first write)."""
    if type(arr) is not np.ndarray or arr.dtype.kind not in "biufc":
        return _en.tensor(arr)
    return wrap(arr)


_linspace = standard_function("linspace")
if _linspace is not None:
    def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
        """``num`` evenly spaced values from ``start`` to ``stop``."""
        check_device(device, "linspace")
        if dtype is None:
            dtype = _dt.complex128 if complex in (type(start), type(stop)) else _dt.float64
        return _linspace(start, stop, num, endpoint=endpoint, dtype=dtype)

_meshgrid = standard_function("meshgrid")
if _meshgrid is not None:
    def meshgrid(*arrays, indexing="xy"):
        """Coordinate matrices from coordinate vectors."""
        return list(_meshgrid(*arrays, indexing=indexing))

_tril = standard_function("tril")
if _tril is not None:
    def tril(x, /, *, k=0):
        """The lower triangle of the last two axes (below diagonal ``k``)."""
        return _tril(x, k=k)

_triu = standard_function("triu")
if _triu is not None:
    def triu(x, /, *, k=0):
        """The upper triangle of the last two axes (above diagonal ``k``)."""
        return _triu(x, k=k)

__all__ = [n for n in ("asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                       "empty_like", "full_like", "arange", "eye", "from_dlpack", "linspace",
                       "meshgrid", "tril", "triu") if n in globals()]
