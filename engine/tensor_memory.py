"""ndarray's attributes about memory and bytes, as tensors answer them.

A tensor is a value, not a block of memory: a back end or a compiled graph may
lay its elements out as it likes. So of ndarray's memory attributes, tensors
give those that depend only on the dtype and shape (``itemsize``, ``nbytes``),
the ones that serialize the values (``tobytes``, ``tofile``, ``dump``,
``dumps``, ``item``, ``tolist``) and ``flat``, and refuse the rest by name
(:data:`REFUSED`), with the reason and a pointer to ``t.numpy()``, which is a
numpy array with all of them. The refusal is an
:class:`~engine.errors.UnsupportedAttributeError`, an ``AttributeError`` too, so
``hasattr(t, "strides")`` is False as it would be for any object without them.

Example:
    >>> import engine as en
    >>> t = en.tensor([[1.0, 2.0], [3.0, 4.0]], dtype="float32")
    >>> t.itemsize, t.nbytes, t.tobytes()[:4]
    (4, 16, b'\\x00\\x00\\x80?')
    >>> hasattr(t, "strides")
    False
"""
import pickle

import numpy as np

from . import ops as _ops
from .errors import TracingError, UnsupportedAttributeError, format_location, user_frame
from .lifting import TensorLike

# Refused methods that write: numpy runs them on a writable copy, np.array(t).
_ON_A_COPY = ("resize", "setfield", "setflags")

# ndarray's public names that tensors refuse on purpose, each with its reason.
REFUSED = {
    "base": "tensors do not say which memory they share (a write never reaches another "
            "tensor through shared memory)",
    "ctypes": "tensors expose no memory address for C code (the values may not be in "
              "host memory, or may not exist yet while tracing)",
    "data": "tensors expose no buffer of their memory (a graph or back end may lay the "
            "values out as it likes)",
    "flags": "tensors have no memory layout flags (contiguity, alignment, ownership)",
    "strides": "tensors have no strides: a back end or a compiled graph lays the values "
               "out as it likes",
    "byteswap": "tensors hold values in the machine's byte order and have no dtypes with "
                "another order; swapping the bytes of a value gives unrelated numbers",
    "getfield": "tensors have no structured dtypes whose fields to read, and do not "
                "reinterpret raw bytes",
    "setfield": "tensors have no structured dtypes whose fields to write, and do not "
                "reinterpret raw bytes",
    "setflags": "tensors have no memory flags to set (whether a tensor can be written is "
                "not a flag of its memory)",
    "resize": "resizing in place changes a tensor's shape, which other code (tapes, "
              "traced graphs) relies on; np.resize(t, shape) or en.pad make a new tensor",
}


def refusal(owner, name):
    """The error for reading ndarray's attribute ``name`` on ``owner`` (a tensor)."""
    numpy = f"np.array(t).{name}" if name in _ON_A_COPY else f"t.numpy().{name}"
    error = UnsupportedAttributeError(
        f"{type(owner).__name__}.{name} is not supported: {REFUSED[name]}. numpy's own "
        f"{name} works on a numpy copy of the values: {numpy}"
        f"\n  at {format_location(user_frame())}")
    error.name, error.obj = name, owner      # as Python's own AttributeError says
    return error


def _refused(name):
    def get(self):
        raise refusal(self, name)
    return property(get, doc=f"Refused: {REFUSED[name]}.")


class MemoryAttributes(TensorLike):
    """ndarray's memory and serialization attributes (mixed into tensors and variables)."""

    __slots__ = ()

    # -- what depends only on dtype and shape -------------------------------------------------
    @property
    def itemsize(self):
        """Bytes per element, numpy's ``dtype.itemsize``.

        Example:
            >>> import engine as en
            >>> en.tensor([1, 2]).itemsize
            8
        """
        return self.dtype.itemsize

    @property
    def nbytes(self):
        """Bytes the elements take, ``size * itemsize`` (as numpy's, whatever the layout).

        Example:
            >>> import engine as en
            >>> en.tensor([[1.0, 2.0]], dtype="float32").nbytes
            8
        """
        size = self.size
        if size is None:
            raise TracingError(f"{type(self).__name__}.nbytes: the shape {self.shape} is not "
                               f"known while tracing\n  at {format_location(user_frame())}")
        return size * self.itemsize

    # -- the values, serialized ---------------------------------------------------------------
    def item(self, *args):
        """The element at ``args`` (a flat index or one index per axis; none for a single
        element) as a Python scalar, as numpy's ``item``.

        Example:
            >>> import engine as en
            >>> en.tensor([[1, 2], [3, 4]]).item(1, 0)
            3
        """
        return self.numpy().item(*args)

    def tolist(self):
        """The values as nested Python lists of Python scalars.

        Example:
            >>> import engine as en
            >>> en.tensor([[1, 2]]).tolist()
            [[1, 2]]
        """
        return self.numpy().tolist()

    def tobytes(self, order="C"):
        """The values' bytes in ``order`` ('C' or 'F'), as numpy's ``tobytes``.

        Example:
            >>> import engine as en
            >>> en.tensor([1, 2], dtype="int8").tobytes()
            b'\\x01\\x02'
        """
        return self.numpy().tobytes(order)

    def tofile(self, fid, sep="", format="%s"):
        """Write the values to ``fid`` (a path or an open file), as numpy's ``tofile``.

        Example:
            >>> import engine as en, io, tempfile, os
            >>> path = os.path.join(tempfile.mkdtemp(), "t.txt")
            >>> en.tensor([1, 2]).tofile(path, sep=",")
            >>> open(path).read()
            '1,2'
        """
        self.numpy().tofile(fid, sep=sep, format=format)

    def dumps(self):
        """The tensor pickled (``pickle.loads`` gives it back), as numpy's ``dumps``.

        Example:
            >>> import engine as en, pickle
            >>> pickle.loads(en.tensor([1.0]).dumps())
            tensor([1.], shape=(1,), dtype=float64)
        """
        return pickle.dumps(self, protocol=2)

    def dump(self, file):
        """Pickle the tensor to ``file`` (a path or a file open for binary writing).

        Example:
            >>> import engine as en, io, pickle
            >>> buffer = io.BytesIO()
            >>> en.tensor([1.0]).dump(buffer)
            >>> pickle.loads(buffer.getvalue()).tolist()
            [1.0]
        """
        data = self.dumps()
        if hasattr(file, "write"):
            file.write(data)
            return
        with open(file, "wb") as f:
            f.write(data)

    # -- flat ---------------------------------------------------------------------------------
    @property
    def flat(self):
        """The elements in row-major order, indexable (``t.flat[3]``, ``t.flat[::2]``)
        and writable (``t.flat[i] = v``), as numpy's ``flat``.

        Example:
            >>> import engine as en
            >>> en.tensor([[1, 2], [3, 4]]).flat[1:3].tolist()
            [2, 3]
        """
        return FlatIter(self)

    @flat.setter
    def flat(self, value):
        # numpy: ``a.flat = v`` writes v's elements into every place, repeating them.
        FlatIter(self)[...] = value


for _name in REFUSED:      # the refusals, one property each (hasattr(t, name) is False)
    setattr(MemoryAttributes, _name, _refused(_name))
del _name


class FlatIter:
    """What ``t.flat`` gives: ``t``'s elements in row-major order. Reading an index gives
    ``t.ravel()[index]``; writing one writes those places of ``t`` (``t.put``), values
    repeated as needed, as numpy's ``flatiter``."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base

    def __len__(self):
        return self.base.size

    def __iter__(self):
        return iter(_ops.reshape(self.base, (-1,)))

    def __getitem__(self, index):
        return _ops.reshape(self.base, (-1,))[index]

    def __setitem__(self, index, value):
        size = self.base.size
        if size is None:
            raise TracingError("flat: writing needs the tensor's size, which is not known "
                               f"while tracing\n  at {format_location(user_frame())}")
        places = np.arange(size)[index if index is not Ellipsis else slice(None)]
        self.base.put(np.ravel(places), value)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.base.ravel(), dtype=dtype)

    def copy(self):
        """The elements as a new 1-D tensor."""
        return self.base.ravel().copy()

    def __repr__(self):
        return f"<flat iterator of {self.base!r}>"
