"""The ``array_api_strict`` back end: the Python Array API standard's reference
implementation, with nothing beyond the standard. Every op runs on it through
the kernels written against the namespace; it has no ``out=`` arguments, no
in-place fast paths and no fused loops, so graphs on it skip fusion and memory
planning (their kernels run one by one).

Example:
    >>> import engine as en
    >>> t = en.tensor([1.0, -2.0], backend="array_api_strict")
    >>> en.relu(t).to("numpy").numpy().tolist()
    [1.0, 0.0]
"""
import array_api_strict as xps
import numpy as np

from .. import dtypes
from ..errors import DTypeError
from ..lifting import as_array
from .base import Backend

# Every engine dtype but float16, which the standard (and array_api_strict) lacks.
_PAIRS = [(dt, getattr(xps, "bool" if dt == dtypes.bool_ else dt.name))
          for dt in dtypes.SUPPORTED if dt != dtypes.float16]
_TO_XP = {np_dt: xp_dt for np_dt, xp_dt in _PAIRS}
_TO_NP = {xp_dt: np_dt for np_dt, xp_dt in _PAIRS}


class ArrayAPIStrictBackend(Backend):
    name = "array_api_strict"
    xp = xps
    array_types = (type(xps.asarray(0)),)

    def asarray(self, data, dtype=None):
        if self.is_array(data):
            if dtype is not None and self.dtype_of(data) != dtypes.as_dtype(dtype):
                return self.astype(data, dtype)
            return xps.asarray(data, copy=True)
        # Python data follows numpy's defaults and checks (as numpy tensors do).
        return self.from_numpy(as_array(data, dtype))

    def from_numpy(self, array):
        dt = _TO_XP.get(array.dtype)
        if dt is None:
            raise DTypeError(f"unsupported dtype {array.dtype} on back end {self.name}; "
                             f"supported: {', '.join(d.name for d in _TO_XP)}")
        return xps.asarray(np.array(array, copy=True), dtype=dt)

    def to_numpy(self, array):
        # The standard's way out of a library: DLPack.
        return np.from_dlpack(array)

    def dtype_of(self, array):
        return _TO_NP[array.dtype]

    def dtype(self, dtype):
        dt = dtypes.as_dtype(dtype)
        if dt not in _TO_XP:
            raise DTypeError(f"back end {self.name} has no dtype {dt}")
        return _TO_XP[dt]

