"""The address of a numpy array's data, for a C kernel called through ctypes, read fast.

``x.ctypes.data`` builds a ctypes helper object on every call: about 1 us, which for a
kernel of a few microseconds (``c_rows``: a row reduction called twice per softmax) is
a large part of its call. CPython's ``id(x)`` is the array object's address, and numpy
keeps the data pointer at a fixed offset in that object (``PyArrayObject_fields.data``,
right after the object header); reading it there costs about 0.1 us. The offset is found
once, at import, by probing arrays whose addresses ``.ctypes.data`` gives; where no offset
gives them all (another Python build, another numpy), :func:`data` is ``.ctypes.data``.

Example:
    >>> import numpy as np
    >>> x = np.zeros(3)
    >>> data(x) == x.ctypes.data
    True
"""
import ctypes

import numpy as np

_read = ctypes.c_void_p.from_address


def _offset():
    """The offset of the data pointer in an array object, or None where none is found."""
    probes = [np.zeros(k + 1, dtype) for k, dtype in enumerate((np.float32, np.float64,
                                                                 np.int8, np.int64))]
    probes.append(probes[1][1:])        # a view: its own data pointer, into another's data
    # (the pointer follows the object header: refcount and type, plus what a build adds)
    for offset in range(8, 72, 8):
        if all(_read(id(p) + offset).value == p.ctypes.data for p in probes):
            return offset
    return None


_OFFSET = _offset()


def _fast(x):
    """The address of the numpy array ``x``'s first value, read in the array object."""
    return _read(id(x) + _OFFSET).value


def _slow(x):
    """The address of the numpy array ``x``'s first value (``x.ctypes.data``)."""
    return x.ctypes.data


data = _slow if _OFFSET is None else _fast
