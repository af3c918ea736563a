"""Turning op arguments that are not tensors into arrays, shared by every mode."""
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes
from .errors import DTypeError, ScalarOverflowError, describe_args, format_location, user_frame

if TYPE_CHECKING:
    from .backend.base import Backend

# complex last: the hot paths test ``type(x) in WEAK_SCALAR_TYPES`` and floats come first.
WEAK_SCALAR_TYPES = (bool, int, float, complex)


class TensorLike:
    """The base class of :class:`engine.tensor.Tensor` and :class:`engine.variable.Variable`.

    The op definitions sit below both (the tensor's operators call them), so
    they recognise an engine value with ``isinstance(x, TensorLike)`` instead
    of importing the classes.
    """

    __slots__ = ()

    if TYPE_CHECKING:
        # What every tensor and variable has, declared for the type checker only (Tensor and
        # Variable hold shape and dtype in slots; the mixins between define the rest), so
        # the mixins and code that narrows with isinstance(x, TensorLike) are checked.
        # A traced tensor's shape may hold None for a dimension not known yet.
        shape: tuple[Any, ...]
        dtype: np.dtype[Any]

        @property
        def ndim(self) -> int: ...
        @property
        def size(self) -> int | None: ...
        @property
        def backend(self) -> Backend: ...
        def numpy(self) -> np.ndarray: ...
        def __getitem__(self, index: Any) -> Any: ...
        def __setitem__(self, index: Any, value: Any) -> None: ...


NESTED_TYPES = (list, tuple)


def holds_tensors(value):
    """Whether the Python list or tuple ``value`` holds an engine tensor or variable at any
    depth. Such a list is stacked through the engine (``engine.ops.join.stack_nested``),
    so that it keeps its gradient and traces, instead of being read as constant data.

    Example:
        >>> holds_tensors([1.0, [2.0, 3.0]])
        False
    """
    # The element types in one pass at C speed: en.tensor(list of a million floats) must
    # not pay a Python loop over its elements.
    kinds = set(map(type, value))
    if kinds <= _PLAIN:
        return False
    if any(issubclass(k, TensorLike) for k in kinds):
        return True
    if list in kinds or tuple in kinds:
        return any(holds_tensors(v) for v in value if type(v) in NESTED_TYPES)
    return False


_PLAIN = {float, int, bool, complex, str, type(None)}


def weak_scalar_array(value, others):
    """A 0-d array for the Python scalar ``value``, typed weakly against ``others``.

    ``others`` are the dtypes of the op's other inputs: ``float32 * 2.0`` stays
    float32, as numpy 2 does it.

    Example:
        >>> weak_scalar_array(2.0, [np.dtype("float32")]).dtype
        dtype('float32')
    """
    if not others:
        return np.asarray(value, dtype=dtypes.scalar_dtype(value))
    key = (type(value), *others)
    dtype = _WEAK_DTYPES.get(key)
    if dtype is None:
        # The promoted dtype depends on the scalar's kind, not its value (numpy 2),
        # except for ints too large for an int dtype, which np.asarray then rejects.
        dtype = np.result_type(*others, value)
        _WEAK_DTYPES[key] = dtype
    return np.asarray(value, dtype=dtype)


_WEAK_DTYPES: dict[object, np.dtype] = {}


def lift_scalars(args):
    """Replace every Python scalar in ``args`` by a weakly typed 0-d array."""
    others = [a.dtype for a in args if type(a) not in WEAK_SCALAR_TYPES]
    return [weak_scalar_array(a, others) if type(a) in WEAK_SCALAR_TYPES else a for a in args]


def as_array(value, dtype=None):
    """numpy array from user data, checked against the supported dtypes.

    Python floats become float64, ints int64 and complex numbers complex128
    (numpy's defaults); numpy arrays keep their dtype, which must be one the
    engine supports.
    """
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        return np.asarray(value, dtype=dtype)
    arr = np.asarray(value)
    if arr.dtype not in dtypes.ALL:
        if arr.dtype.kind in "fc":   # longdouble, clongdouble
            hint = " (pass dtype='float64' or 'complex128' to convert)"
        else:
            hint = ""
        raise DTypeError(f"unsupported dtype {arr.dtype}{hint}; supported: {dtypes.names()}")
    return arr


def caller_can_write(arr):
    """True unless nobody holding ``arr`` can change its memory.

    That is: ``arr`` and every array it is a view of are read-only, and the
    memory at the bottom is not a writable buffer (a ``bytearray``, a writable
    ``mmap``). A read-only view of a writable array counts as writable: its
    base can still be written. Tensors may share memory only with arrays for
    which this is False.

    Example:
        >>> a = np.zeros(3)
        >>> v = a[:]
        >>> v.flags.writeable = False
        >>> caller_can_write(v), caller_can_write(np.frombuffer(b"12345678"))
        (True, False)
    """
    while True:
        if arr.flags.writeable:
            return True
        base = arr.base
        if base is None:
            return False
        if not isinstance(base, np.ndarray):
            try:
                return not memoryview(base).readonly
            except TypeError:
                return True
        arr = base


def lift_error(op, args, err):
    """The error to raise when an op's arguments cannot become tensors: ``err``
    again, naming the op, every argument and the user's line.

    An unsupported dtype (a float16 or complex array) stays a ``DTypeError``; a
    Python int too large for the tensor beside it (``int32_tensor + 2**40``)
    becomes a ``ScalarOverflowError`` (an ``OverflowError``, as in numpy).
    """
    kind = type(err) if isinstance(err, DTypeError) else ScalarOverflowError
    return kind(f"{op.name}: {err}; arguments {describe_args(args)}\n"
                f"  at {format_location(user_frame())}")
