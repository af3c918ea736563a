"""``trunc_divide``: division rounded toward zero, C's ``/`` on integers and PyTorch's
``torch.div(a, b, rounding_mode="trunc")``; numpy has floor division only.

Integers: ``(x1 - fmod(x1, x2)) // x2``, exact (``fmod`` is C's remainder, with the sign
of ``x1``, so the difference is a multiple of ``x2`` nearer zero than ``x1``); division
by zero gives 0, as numpy's integer division does. Floats: ``trunc(x1 / x2)``, as PyTorch.
Result dtypes are numpy's for ``floor_divide`` (two bools divide as int8).

Example:
    >>> import engine as en
    >>> en.trunc_divide(en.tensor([7, -7, 7, -7]), en.tensor([2, 2, -2, -2])).numpy()
    array([ 3, -3, -3,  3])
"""
import numpy as np

from .. import dtypes
from ..errors import ShapeError
from ..lifting import TensorLike
from ..shapes import broadcast_shapes
from . import creation, math_binary, math_unary
from ._args import at_user_line
from .cumulative import as_tensor


def _is_exact(v):
    """Whether ``v`` is an integer or bool tensor or number (exact division applies)."""
    if isinstance(v, TensorLike):
        return v.dtype in dtypes.INTS or v.dtype == dtypes.bool_
    return np.asarray(v).dtype.kind in "iub"


def _no_bools(v):
    # numpy divides two bools in its int8 loop; the engine's fmod takes numbers only.
    if isinstance(v, TensorLike) and v.dtype == dtypes.bool_:
        return creation.cast(v, dtypes.int8)
    return v


def trunc_divide(x1, x2):
    """``x1 / x2`` rounded toward zero, elementwise with broadcasting: C's integer ``/``
    and PyTorch's ``div(rounding_mode="trunc")`` (``floor_divide`` rounds down instead).
    Integers divide exactly (by zero: 0); floats give ``trunc(x1 / x2)``.

    Example:
        >>> import engine as en
        >>> en.trunc_divide(en.tensor([-7.5, 7.5]), 2.0).numpy()
        array([-3.,  3.])
    """
    if not isinstance(x1, TensorLike) and not isinstance(x2, TensorLike):
        x1 = as_tensor(x1)
    try:   # fail before any work, naming this function
        broadcast_shapes(np.shape(x1), np.shape(x2), op_name="trunc_divide")
    except ShapeError as err:
        raise ShapeError(f"{err}{at_user_line()}") from None
    if _is_exact(x1) and _is_exact(x2):
        x1, x2 = _no_bools(x1), _no_bools(x2)
        if not isinstance(x1, TensorLike) and not isinstance(x2, TensorLike):
            x1 = as_tensor(x1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return math_binary.floor_divide(x1 - math_binary.fmod(x1, x2), x2)
    return math_unary.trunc(x1 / x2)


__all__ = ["trunc_divide"]
