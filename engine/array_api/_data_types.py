"""The standard's dtypes and data type functions: ``astype``, ``can_cast``, ``finfo``,
``iinfo``, ``isdtype``, ``result_type``.

The dtype objects are the engine's (numpy dtypes), so ``x.dtype == xp.float32``
holds for every engine tensor.

Example:
    >>> import engine.array_api as xp
    >>> xp.isdtype(xp.int8, "integral"), xp.result_type(xp.int8, xp.uint8)
    (True, dtype('int16'))
"""
import builtins as _builtins
from collections import namedtuple

import numpy as np

import engine as _en
from engine import dtypes as _dt
from engine.devices import check_device
from engine.errors import DTypeError, InvalidArgumentError

bool = _dt.bool_   # noqa: A001  (the standard's name)
int8, int16, int32, int64 = _dt.int8, _dt.int16, _dt.int32, _dt.int64
uint8, uint16, uint32, uint64 = _dt.uint8, _dt.uint16, _dt.uint32, _dt.uint64
float32, float64 = _dt.float32, _dt.float64
complex64, complex128 = _dt.complex64, _dt.complex128

#: The dtypes of each kind ``isdtype`` and ``__array_namespace_info__().dtypes`` know.
KINDS = {
    "bool": (bool,),
    "signed integer": (int8, int16, int32, int64),
    "unsigned integer": (uint8, uint16, uint32, uint64),
    "real floating": (float32, float64),
    "complex floating": (complex64, complex128),
}
KINDS["integral"] = KINDS["signed integer"] + KINDS["unsigned integer"]
KINDS["numeric"] = KINDS["integral"] + KINDS["real floating"] + KINDS["complex floating"]


def _dtype_of(value, fn):
    """The engine dtype of a dtype or a tensor argument, or a DTypeError naming ``fn``."""
    if isinstance(value, _en.Tensor):
        return value.dtype
    try:
        return _dt.as_dtype(value)
    except DTypeError as err:
        raise DTypeError(f"{fn}: {err}") from None


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` converted to ``dtype``; with ``copy=False`` and the same dtype, ``x`` itself.

    Example:
        >>> import engine.array_api as xp
        >>> xp.astype(xp.asarray([1.7, -2.2]), xp.int32).tolist()
        [1, -2]
    """
    check_device(device, "astype")
    dtype = _dtype_of(dtype, "astype")
    if x.dtype in _dt.COMPLEX and dtype not in _dt.COMPLEX:
        raise DTypeError(f"astype: a complex array ({x.dtype}) cannot be cast to the real "
                         f"dtype {dtype}; take xp.real or xp.abs first")
    if x.dtype == dtype:
        return _en.identity(x) if copy else x
    return _en.cast(x, dtype)


def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or an array) promotes to ``to`` without losing values
    (numpy's safe casting, which contains the standard's promotion table).

    Example:
        >>> import engine.array_api as xp
        >>> xp.can_cast(xp.int8, xp.int16), xp.can_cast(xp.float64, xp.float32)
        (True, False)
    """
    return _builtins.bool(np.can_cast(_dtype_of(from_, "can_cast"), _dtype_of(to, "can_cast")))

finfo_object = namedtuple("finfo_object", "bits eps max min smallest_normal dtype")
iinfo_object = namedtuple("iinfo_object", "bits max min dtype")


def finfo(type, /):   # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating dtype (of its real part, for a complex one).

    Example:
        >>> import engine.array_api as xp
        >>> xp.finfo(xp.float32).bits
        32
    """
    dt = _dtype_of(type, "finfo")
    if dt not in _dt.INEXACT:
        raise DTypeError(f"finfo: expected a floating dtype, got {dt}")
    info = np.finfo(dt)
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), np.dtype(info.dtype))


def iinfo(type, /):   # noqa: A002
    """Machine limits of an integer dtype.

    Example:
        >>> import engine.array_api as xp
        >>> xp.iinfo(xp.uint8).max
        255
    """
    dt = _dtype_of(type, "iinfo")
    if dt not in _dt.INTS:
        raise DTypeError(f"iinfo: expected an integer dtype, got {dt}")
    info = np.iinfo(dt)
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dt)


def isdtype(dtype, kind):
    """Whether ``dtype`` is ``kind``: a dtype, a kind name (``"integral"``,
    ``"real floating"``...) or a tuple of them.

    Example:
        >>> import engine.array_api as xp
        >>> xp.isdtype(xp.float32, ("integral", "real floating"))
        True
    """
    dtype = _dtype_of(dtype, "isdtype")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in KINDS:
                raise InvalidArgumentError(f"isdtype: unknown kind {k!r}; known: {', '.join(KINDS)}")
            if dtype in KINDS[k]:
                return True
        elif dtype == _dtype_of(k, "isdtype"):
            return True
    return False


def result_type(*arrays_and_dtypes):
    """The dtype the arguments promote to; Python scalars are weak (they take the
    other arguments' dtype of their kind).

    Example:
        >>> import engine.array_api as xp
        >>> xp.result_type(xp.float32, 1.0), xp.result_type(xp.int8, xp.uint8)
        (dtype('float32'), dtype('int16'))
    """
    if not arrays_and_dtypes:
        raise InvalidArgumentError("result_type: at least one array or dtype is required")
    strong = []
    weak = []
    for a in arrays_and_dtypes:
        if type(a) in (_builtins.bool, int, float, complex):
            weak.append(a)
        else:
            strong.append(_dtype_of(a, "result_type"))
    if not strong:
        raise InvalidArgumentError("result_type: at least one array or dtype is required beside "
                         "Python scalars")
    return _dt.result_type(*strong, *weak)
