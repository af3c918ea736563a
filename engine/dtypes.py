"""The supported dtypes, their kinds, and the promotion rule.

The engine supports the Python Array API standard's dtypes -- bool, int8/16/32/64,
uint8/16/32/64, float32/64, complex64/128 -- and float16 (storage and
elementwise math). Engine dtypes are numpy dtypes.

Promotion follows numpy 2 (NEP 50), which agrees with the standard's table
wherever the standard defines one and makes numpy's choice where it does not
(``int64 + uint64`` is float64, ``int32 + float32`` float64). Python scalars
are *weak*: ``x * 2.0`` keeps a float32 tensor float32, ``int8_tensor + 1``
stays int8, while two tensors promote as numpy promotes their dtypes.

Gradients flow through the real floating dtypes only (:data:`FLOATS`).

Example:
    >>> result_type(int8, uint8), result_type(float32, 2.0)
    (dtype('int16'), dtype('float32'))
"""
import numpy as np

from .errors import DTypeError

bool_ = np.dtype("bool")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

SUPPORTED = (float32, float64, int32, int64, bool_,
             int8, int16, uint8, uint16, uint32, uint64, float16, complex64, complex128)
SIGNED_INTS: frozenset[np.dtype] = frozenset((int8, int16, int32, int64))
UNSIGNED_INTS: frozenset[np.dtype] = frozenset((uint8, uint16, uint32, uint64))
INTS = SIGNED_INTS | UNSIGNED_INTS
#: The real floating dtypes: the ones gradients flow through.
FLOATS = frozenset((float16, float32, float64))
COMPLEX = frozenset((complex64, complex128))
INEXACT = FLOATS | COMPLEX
#: Real numbers: the dtypes ordered comparisons and min/max have always taken.
REAL = FLOATS | INTS
NUMERIC = REAL | COMPLEX
ALL = frozenset(SUPPORTED)

_BY_NAME = {d.name: d for d in SUPPORTED}
_BY_NAME["bool_"] = bool_


def as_dtype(spec):
    """Turn a dtype spec (name, numpy dtype, numpy scalar type) into a supported ``np.dtype``.

    Example:
        >>> as_dtype("float32")
        dtype('float32')
    """
    if spec is None:
        return None
    if isinstance(spec, np.dtype) and spec in ALL:
        return spec
    if isinstance(spec, str) and spec in _BY_NAME:
        return _BY_NAME[spec]
    try:
        dt = np.dtype(spec)
    except TypeError:
        raise DTypeError(f"not a dtype: {spec!r}; supported: {names()}") from None
    if dt not in ALL:
        raise DTypeError(f"unsupported dtype {dt}; supported: {names()}")
    return dt


def names():
    return ", ".join(d.name for d in SUPPORTED)


def is_float(dtype):
    """Whether ``dtype`` is a real floating dtype (one gradients flow through)."""
    return dtype in FLOATS


def result_type(*dtypes_or_scalars):
    """Promote dtypes, treating Python scalars as weak (numpy 2 rules).

    Example:
        >>> result_type(float32, 2.0)
        dtype('float32')
    """
    return np.result_type(*dtypes_or_scalars)


def float_result(dtype):
    """The dtype a floating-point function (``exp``, ``sin``...) returns for an input of
    ``dtype``: the dtype itself when inexact, else numpy's choice (int8 and bool give
    float16, int16 float32, wider integers float64).

    Example:
        >>> float_result(int64), float_result(float32)
        (dtype('float64'), dtype('float32'))
    """
    if dtype in INEXACT:
        return dtype
    return _FLOAT_RESULT[dtype]


# numpy's loops for a float-only ufunc (np.exp) on each non-float dtype.
_FLOAT_RESULT = {d: np.exp(np.zeros(0, d)).dtype for d in INTS | {bool_}}


def scalar_dtype(value):
    """The dtype a lone Python scalar gets when it becomes a tensor."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return complex128
    return float64
