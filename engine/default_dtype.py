"""The default float dtype: what a float made without an explicit dtype is.

Unset (the default), the engine follows numpy for data and PyTorch and Keras for
models: ``en.tensor`` of Python numbers, ``zeros``, ``ones``, ``full``, ``eye``,
``arange`` and ``linspace`` give float64; random draws (``en.random``) and layer
parameters (``en.nn``) float32. ``en.set_default_dtype("float32")`` (PyTorch's
``torch.set_default_dtype``) makes all of them float32, ``"float64"`` all float64;
complex numbers follow as the matching complex dtype. numpy arrays and numpy
scalars keep their own dtype (``en.tensor(np.ones(3))`` is float64, as
``torch.tensor`` of a float64 array is), and so do tensors.

Example:
    >>> import engine as en
    >>> en.set_default_dtype("float32")
    >>> en.tensor([1.0, 2.0]).dtype, en.zeros(2).dtype, en.nn.Linear(2, 1).weight.dtype
    (dtype('float32'), dtype('float32'), dtype('float32'))
    >>> en.set_default_dtype(None)        # back to numpy's float64 for data
    >>> en.tensor([1.0, 2.0]).dtype
    dtype('float64')
"""
import numpy as np

from . import dtypes
from .config import config
from .errors import DTypeError, format_location, user_frame

_COMPLEX_OF = {np.dtype(np.float16): np.dtype(np.complex64),
               np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


def set_default_dtype(dtype):
    """Make ``dtype`` (a float dtype) the dtype of floats made without one; None unsets.

    Example:
        >>> import engine as en
        >>> en.set_default_dtype("float64")
        >>> en.random.normal((2,), seed=0).dtype
        dtype('float64')
        >>> en.set_default_dtype(None)
    """
    if dtype is None:
        config.default_float_dtype = None
        return
    try:
        dt = dtypes.as_dtype(dtype)
    except (DTypeError, TypeError):
        dt = None
    if dt is None or dt not in dtypes.FLOATS:
        raise DTypeError(f"en.set_default_dtype: expected a floating-point dtype "
                         f"({', '.join(sorted(str(d) for d in dtypes.FLOATS))}) or None, got {dtype!r}"
                         f"\n  at {format_location(user_frame())}")
    config.default_float_dtype = dt


def get_default_dtype():
    """The dtype set by :func:`set_default_dtype`, or None when unset.

    Example:
        >>> import engine as en
        >>> en.get_default_dtype() is None
        True
    """
    return config.default_float_dtype


def data_float(dtype=None):
    """``dtype`` given to a creation function (``zeros``, ``eye``...), or the float dtype
    its data gets: the default dtype when set, else numpy's float64."""
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    return config.default_float_dtype or dtypes.float64


def model_float(dtype=None):
    """``dtype`` given to a random draw or a layer, or the default dtype when set, else
    float32 (what PyTorch and Keras models compute in)."""
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    return config.default_float_dtype or dtypes.float32


def python_data_dtype(data):
    """The dtype for ``en.tensor(data)`` of Python numbers or lists when the default is
    set and they hold floats (or complex numbers); None to keep numpy's choice."""
    default = config.default_float_dtype
    if default is None or isinstance(data, (np.ndarray, np.generic, bool, int, str)):
        return None
    if isinstance(data, float):
        return default
    if isinstance(data, complex):
        return _COMPLEX_OF[default]
    if not isinstance(data, (list, tuple)):
        return None
    # Python floats become numpy float64 and complex numbers complex128: those, not numpy
    # arrays of another float dtype inside the lists, take the default.
    found = np.asarray(data).dtype
    if found == np.float64:
        return default
    if found == np.complex128:
        return _COMPLEX_OF[default]
    return None
