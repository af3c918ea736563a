"""Checks of op arguments that are not tensors (shapes, axes, Python scalars).

They run in the op's public function, so they fail at the user's call, before
any work, with the same message eagerly and while tracing.
"""
import math
import operator

import numpy as np

from ..errors import ShapeTypeError, format_location, user_frame


def at_user_line():
    """``"\\n  at file:line in function"`` for the innermost frame outside the engine."""
    return f"\n  at {format_location(user_frame())}"


def int_tuple(name, values, what):
    """``values`` as a tuple of Python ints, refusing floats as numpy does.

    ``int(2.5)`` would truncate silently; ``operator.index`` accepts only
    integers (Python, numpy and 0-d integer tensors).

    Example:
        >>> int_tuple("ones", (2, np.int64(3)), "shape")
        (2, 3)
    """
    out = []
    for v in values:
        try:
            out.append(operator.index(v))
        except TypeError:
            raise ShapeTypeError(f"{name}: {what} {tuple(values)!r} holds {type(v).__name__} "
                                 f"{v!r}, which is not an integer{at_user_line()}") from None
    return tuple(out)


def is_one_index(value):
    """Whether ``value`` is one integer as numpy's ``operator.index`` takes it: a Python or
    numpy int, or a 0-d integer array or tensor (not a bool, not a sequence).

    Example:
        >>> is_one_index(np.int32(2)), is_one_index(np.array(3)), is_one_index((1, 2))
        (True, True, False)
    """
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    dtype = getattr(value, "dtype", None)
    return (getattr(value, "ndim", None) == 0 and dtype is not None
            and np.dtype(dtype).kind in "iu")


def one_or_many(value):
    """``(value,)`` for one integer (see :func:`is_one_index`), else ``tuple(value)``:
    numpy's reading of an ``axis`` or ``shift`` argument."""
    return (value,) if is_one_index(value) else tuple(value)


def int_beside(value, other):
    """A Python int that does not fit the integer dtype of ``other`` (the tensor it is
    compared with), replaced by a value that compares the same with every element.

    numpy 2 compares ``int32_array < 2**40`` exactly (all True) where arithmetic
    would overflow. An int that fits int64 becomes an int64 scalar (the comparison
    then runs in int64); a larger one becomes ``±2.0**64``, beyond every float64
    an int64 rounds to, so only its sign decides, as it should.
    """
    dtype = getattr(other, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):   # another back end's dtype
        dtype = getattr(dtype, "_np_dtype", None) or getattr(dtype, "numpy_dtype", None)
    if dtype is None or np.dtype(dtype).kind not in "iub":
        return value
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype if dtype.kind != "b" else np.int64)
    if info.min <= value <= info.max:
        return value
    if -2 ** 63 <= value < 2 ** 63:
        return np.asarray(value, dtype=np.int64)
    return np.asarray(math.copysign(2.0 ** 64, value))
