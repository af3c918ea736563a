"""The numpy back end: the default, with every fast path (out= kernels, in-place
updates, fused block loops, buffer reuse). Op kernels on numpy are ``op.impl``,
so eager dispatch calls them directly."""
import numpy as np

from .. import dtypes
from ..lifting import as_array
from .base import Backend


class NumpyBackend(Backend):
    name = "numpy"
    xp = np
    array_types = (np.ndarray,)
    numpy_arrays = True
    out_kernels = True
    buffer_reuse = True
    in_place = True
    fused_loops = True
    compiled_lowerings = True
    numpy_promotion = True

    def asarray(self, data, dtype=None):
        value = as_array(data, dtype)
        if value is data or np.may_share_memory(value, data):
            value = value.copy()
        return value

    def from_numpy(self, array):
        return np.array(array, copy=True)

    def to_numpy(self, array):
        return array

    def dtype_of(self, array):
        return array.dtype

    def dtype(self, dtype):
        return dtypes.as_dtype(dtype)

    def astype(self, array, dtype):
        return array.astype(dtype)

    def may_share_memory(self, a, b):
        return np.may_share_memory(a, b)

