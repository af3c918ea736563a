"""Mutable state: :class:`Variable`.

A variable holds a value that ``assign`` replaces. Reading it gives an
immutable tensor (the current value at the time of the read); assignment never
changes tensors read earlier. Reads are recorded on active tapes, and
trainable variables read under a tape are watched automatically.

A variable holds an array of its back end: the back end of the tensor (or
array) it was made from, numpy for Python data. Assigning a value from
another back end is an error, as mixing back ends in an op is.

``scatter_update`` rewrites chosen rows. It writes into the current array in
place when nothing else holds that array (no earlier read is alive, checked
by reference count) and copies it first otherwise, so earlier reads still
never change, and storing one row of a large buffer costs one row.

Example:
    >>> import engine as en
    >>> v = en.Variable([1.0, 2.0], name="w")
    >>> v.assign_add([1.0, 1.0]).numpy()
    array([2., 3.])
"""
import itertools
import sys
import threading
from typing import Any

import numpy as np

from . import backend as _backends
from .errors import ArgumentTypeError, DTypeError, EngineError, ShapeError, UnimplementedError
from .lifting import as_array
from .modes import current_mode, read_variable
from .numpy_conversion import check_conversion
from .recording import active_tapes
from .tensor import Tensor, TensorOps
from .transaction import LOGS as _TXN_LOGS, log_pointer, log_rows, write_rows

_ids = itertools.count()


class Variable(TensorOps):
    """A named, mutable, optionally trainable value usable wherever a tensor is."""

    __slots__ = ("_value", "name", "trainable", "shape", "dtype", "_uid", "_lock", "_backend",
                 "__weakref__")
    _value: Any      # the back end's array (a read-only ndarray on numpy)

    def __init__(self, initial, name=None, trainable=True, dtype=None):
        backend = _backend_of(initial)
        if not backend.numpy_arrays:
            source = initial._value if isinstance(initial, (Tensor, Variable)) else initial
            value = backend.asarray(source, dtype)    # a fresh copy of the back end's own
            self.shape, self.dtype = tuple(value.shape), backend.dtype_of(value)
        else:
            if isinstance(initial, Variable):
                initial = initial.numpy()
            value = as_array(initial.numpy() if isinstance(initial, Tensor) else initial, dtype)
            self.shape, self.dtype = value.shape, value.dtype
            value = np.array(value, copy=True)
            value.flags.writeable = False
        self._value = value
        self._backend = backend
        self._uid = next(_ids)
        self.name = name if name is not None else f"Variable:{self._uid}"
        self.trainable = bool(trainable)
        # Held for a read-modify-write (assign_add) and, by a compiled graph
        # that writes this variable, for the whole call; re-entrant, since a
        # py_function inside that call may assign the variable again.
        self._lock = threading.RLock()

    def read(self):
        """The current value as a tensor (recorded on tapes; traced in graphs)."""
        return read_variable(self)

    def value(self):
        return self.read()

    @property
    def backend(self):
        """The :class:`engine.backend.Backend` whose array the variable holds.

        Example:
            >>> import engine as en
            >>> en.Variable(en.tensor([1.0], backend="array_api_strict")).backend.name
            'array_api_strict'
        """
        return self._backend

    @property
    def device(self):
        """The device the variable's array lives on (its back end's)."""
        return self._backend.device

    def numpy(self):
        """The current value as a read-only numpy array."""
        if not self._backend.numpy_arrays:
            view = np.asarray(self._backend.to_numpy(self._value)).view()
            view.flags.writeable = False
            return view
        return self._value

    def __array__(self, dtype=None, copy=None):
        if active_tapes():   # a variable a tape differentiates: as a tensor's (numpy_conversion.py)
            check_conversion(self)
        v = self._value if self._backend.numpy_arrays else self.numpy()
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

    def scatter_update(self, indices, updates):
        """Write ``updates`` into the rows ``indices`` (along the first axis).

        ``indices`` is an integer or a 1-D integer array (negative counts from
        the end, as in numpy; with repeats the last write wins) and may be a
        traced tensor; ``updates`` has shape ``indices.shape + shape[1:]`` and
        the variable's dtype. Tensors read earlier keep their values. (A
        read made by another thread while the rows are being written may see
        them half-written, as with any in-place update; assign to share a
        variable between threads.) Returns the variable.

        Example:
            >>> import engine as en
            >>> h = en.Variable([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
            >>> h.scatter_update(1, [5.0, 6.0]).numpy()
            array([[0., 0.],
                   [5., 6.],
                   [0., 0.]])
        """
        return current_mode().assign_variable(self, updates, "scatter_update", indices)

    def _set(self, array):
        """Store a new value (called by modes after validation)."""
        if not self._backend.numpy_arrays:
            self._value = array     # the back end's own array, already checked
            return
        array = np.asarray(array)
        if array.flags.writeable:
            array.flags.writeable = False
        if _TXN_LOGS:    # a transaction is open somewhere: if in this thread, log the old array
            log = _TXN_LOGS.get(threading.get_ident())
            if log is not None:
                log_pointer(self, log)
        self._value = array

    def _scatter(self, indices, updates):
        """Store ``updates`` at rows ``indices`` (validated by the caller except the range)."""
        if not self._backend.in_place:
            raise UnimplementedError(
                f"Variable {self.name!r}.scatter_update: back end {self._backend.name} has no "
                "in-place updates; assign the whole value instead")
        check_scatter_range(self, indices)
        value = self._value
        # Write in place when only this variable refers to the array (the three
        # references: the attribute, ``value`` and getrefcount's argument) and the
        # array owns its memory; otherwise copy, so no earlier read changes.
        log = _TXN_LOGS.get(threading.get_ident()) if _TXN_LOGS else None
        if value.base is not None or sys.getrefcount(value) > 3:
            value = np.array(value, copy=True)
            if log is not None:
                log_pointer(self, log)
        elif log is not None:     # in place inside a transaction: keep the old rows
            log_rows(self, indices, log)
        write_rows(value, indices, updates)
        self._value = value

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ")
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype} value={body}>"

    def __reduce__(self):
        raise ArgumentTypeError("variables are not picklable; save their values with en.save")


def _backend_of(initial):
    """The back end whose array a variable made from ``initial`` holds: a tensor's or
    variable's own, a back end's array's, numpy for Python data and numpy arrays."""
    if isinstance(initial, (Tensor, Variable)) and initial._value is not None:
        return initial.backend
    if type(initial) is np.ndarray:
        return _backends.NUMPY
    return _backends.of_array(initial) or _backends.NUMPY


def check_scatter(var, index_aval, update_aval):
    """Raise a clear error unless ``var.scatter_update`` accepts these shapes and dtypes.

    ``index_aval`` and ``update_aval`` are ``(shape, dtype)``; a ``None`` dim
    (unknown while tracing) matches anything.
    """
    (ishape, idtype), (ushape, udtype) = index_aval, update_aval
    where = f"Variable {var.name!r}.scatter_update"
    if len(var.shape) == 0:
        raise ShapeError(f"{where}: a scalar variable has no rows; use assign")
    if np.dtype(idtype).kind not in "iu" or len(ishape) > 1:
        raise DTypeError(f"{where}: indices must be an integer scalar or 1-D integer array, "
                         f"got shape {tuple(ishape)} dtype {np.dtype(idtype)}")
    want = tuple(ishape) + tuple(var.shape[1:])
    if len(ushape) != len(want) or any(a is not None and b is not None and a != b
                                       for a, b in zip(ushape, want)):
        raise ShapeError(f"{where}: updates have shape {tuple(ushape)}; indices of shape "
                         f"{tuple(ishape)} into a variable of shape {var.shape} need {want}")
    if np.dtype(udtype) != var.dtype:
        raise DTypeError(f"{where}: updates have dtype {np.dtype(udtype)}, the variable's "
                         f"dtype is {var.dtype}")


def check_scatter_range(var, indices):
    """Raise before any write if an index is outside ``[-rows, rows)``."""
    rows = var.shape[0]
    indices = np.asarray(indices)
    if indices.size and (indices.min() < -rows or indices.max() >= rows):
        raise EngineError(f"Variable {var.name!r}.scatter_update: index "
                          f"{indices.tolist()} is out of range for {rows} rows")
