"""Constant data for composites, on the back end of the tensor it meets.

A composite that needs a numpy constant (indices, coefficients) must not hand a
numpy tensor to an op whose other input lives on another back end (mixing back ends
is an error). :func:`constant_like` puts it where ``like`` lives: numpy data while
tracing or on the numpy back end, that back end's array elsewhere.

Example:
    >>> import engine as en, numpy as np
    >>> x = en.tensor([1.0, 2.0], backend="array_api_strict")
    >>> constant_like(x, np.array([3.0, 4.0])).backend.name
    'array_api_strict'
"""
import numpy as np

from ..backend import use as use_backend
from . import compare, creation, misc
from .manipulation import constant_for

__all__ = []


def constant_like(like, array):
    """The numpy ``array`` as a tensor on the back end of ``like``."""
    array = np.asarray(array)
    value = constant_for(like, array)
    if isinstance(value, np.ndarray):
        return misc.identity(value)
    # A tensor made on like's back end, with the foreign array as the other operand: the
    # op's result lives there (adding zero keeps every value, and the dtype).
    with use_backend(like.backend):
        base = creation.full(array.shape, False if array.dtype == np.bool_ else 0,
                             dtype=array.dtype)
    return compare.logical_or(base, value) if array.dtype == np.bool_ else base + value
