"""The Python Array API standard (2024.12) namespace of the engine, with its
``linalg`` and ``fft`` extensions: what ``Tensor.__array_namespace__()`` returns.

The public ``engine`` namespace stays numpy's (``en.arccos``, ``en.sum(x, axis)``,
``en.transpose``); this package adapts it to the standard's names and signatures
(``xp.acos``, positional-only arrays, keyword-only ``axis``/``dtype``/``device``,
``correction=``, ``descending=``...). It defines no op of its own: every function
calls engine functions, so results are engine tensors that trace, differentiate
and run on every mode. A standard function the engine lacks is absent
(``hasattr`` tells the truth); ``tests/interop/array_api_xfails.txt`` lists what the
conformance suite still finds missing or different.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, 4.0, 9.0])
    >>> xp = x.__array_namespace__()
    >>> xp.sqrt(x).tolist(), xp.sum(x, dtype=xp.float32).dtype
    ([1.0, 2.0, 3.0], dtype('float32'))
"""
import math as _math

from . import _creation, _data_types, _elementwise, _manipulation, _statistics
from ._creation import *  # noqa: F401,F403
from ._data_types import (astype, bool, can_cast, complex64, complex128, finfo,  # noqa: F401,A004
                          float32, float64, iinfo, int8, int16, int32, int64, isdtype,
                          result_type, uint8, uint16, uint32, uint64)
from ._devices import Device, __array_namespace_info__  # noqa: F401
from ._elementwise import *  # noqa: F401,F403
from ._manipulation import *  # noqa: F401,F403
from ._statistics import *  # noqa: F401,F403
from . import fft, linalg  # noqa: E402

__array_api_version__ = "2024.12"

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float32", "float64", "complex64", "complex128"]
__all__ = sorted(set(_creation.__all__ + _elementwise.__all__ + _manipulation.__all__
                     + _statistics.__all__ + _DTYPES
                     + ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
                        "__array_namespace_info__", "e", "inf", "nan", "pi", "newaxis",
                        "fft", "linalg"]))
