"""Mutable state: :class:`Variable`.

A variable holds a value that ``assign`` replaces. Reading it gives an
immutable tensor (the current value at the time of the read); assignment never
changes tensors read earlier. Reads are recorded on active tapes, and
trainable variables read under a tape are watched automatically.

Example:
    >>> import engine as en
    >>> v = en.Variable([1.0, 2.0], name="w")
    >>> v.assign_add([1.0, 1.0]).numpy()
    array([2., 3.])
"""
import itertools
import threading

import numpy as np

from .errors import DTypeError, ShapeError
from .lifting import as_array
from .modes import current_mode
from .tensor import Tensor, TensorOps

_ids = itertools.count()


class Variable(TensorOps):
    """A named, mutable, optionally trainable value usable wherever a tensor is."""

    __slots__ = ("_value", "name", "trainable", "shape", "dtype", "_uid", "_lock", "__weakref__")

    def __init__(self, initial, name=None, trainable=True, dtype=None):
        if isinstance(initial, Variable):
            initial = initial.numpy()
        value = as_array(initial.numpy() if isinstance(initial, Tensor) else initial, dtype)
        self._value = np.array(value, copy=True)
        self._value.flags.writeable = False
        self._uid = next(_ids)
        self.name = name if name is not None else f"Variable:{self._uid}"
        self.trainable = bool(trainable)
        self.shape = value.shape
        self.dtype = value.dtype
        self._lock = threading.Lock()

    def read(self):
        """The current value as a tensor (recorded on tapes; traced in graphs)."""
        return current_mode().read_variable(self)

    def value(self):
        return self.read()

    def numpy(self):
        """The current value as a read-only numpy array."""
        return self._value

    def __array__(self, dtype=None, copy=None):
        v = self._value
        return v.astype(dtype) if dtype is not None and v.dtype != dtype else (v.copy() if copy else v)

    def __float__(self): return float(self._value)
    def __int__(self): return int(self._value)
    def __bool__(self): return bool(self._value)

    def _check_new_value(self, value, what):
        if tuple(value.shape) != tuple(self.shape):
            raise ShapeError(f"Variable {self.name!r}.{what}: shape {tuple(value.shape)} does "
                             f"not match the variable's shape {self.shape}")
        if value.dtype != self.dtype:
            raise DTypeError(f"Variable {self.name!r}.{what}: dtype {value.dtype} does not match "
                             f"the variable's dtype {self.dtype}")

    def assign(self, value):
        """Replace the value (same shape and dtype). Returns the variable."""
        return current_mode().assign_variable(self, value, "assign")

    def assign_add(self, delta):
        """``self = self + delta``. Returns the variable."""
        return current_mode().assign_variable(self, delta, "assign_add")

    def assign_sub(self, delta):
        """``self = self - delta``. Returns the variable."""
        return current_mode().assign_variable(self, delta, "assign_sub")

    def _set(self, array):
        """Store a new value (called by modes after validation)."""
        array = np.asarray(array)
        if array.flags.writeable:
            array.flags.writeable = False
        self._value = array

    def __repr__(self):
        body = np.array2string(self._value, separator=", ")
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype} value={body}>"

    def __reduce__(self):
        raise TypeError("variables are not picklable; save their values with en.save")
