"""The supported dtypes and the promotion rule.

The engine supports float32, float64, int32, int64 and bool. Promotion follows
numpy 2 (NEP 50): Python scalars are *weak*, so ``x * 2.0`` keeps a float32
tensor float32, while two tensors promote as numpy promotes their dtypes.
"""
import numpy as np

from .errors import DTypeError

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")

SUPPORTED = (float32, float64, int32, int64, bool_)
FLOATS = frozenset((float32, float64))
INTS = frozenset((int32, int64))
NUMERIC = FLOATS | INTS
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
    return dtype in FLOATS


def result_type(*dtypes_or_scalars):
    """Promote dtypes, treating Python scalars as weak (numpy 2 rules).

    Example:
        >>> result_type(float32, 2.0)
        dtype('float32')
    """
    return np.result_type(*dtypes_or_scalars)


def scalar_dtype(value):
    """The dtype a lone Python scalar gets when it becomes a tensor."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    return float64
