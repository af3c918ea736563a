"""``sliding_window_view``: every window of a given shape, as numpy's
``np.lib.stride_tricks.sliding_window_view`` (PyTorch's ``Tensor.unfold`` with step 1).

numpy returns a read-only view that shares memory; here the windows are gathered into
a new tensor (one index array per windowed axis), so it traces, batches and
differentiates like any gather: the gradient adds each window's cotangent back, so an
element in several windows gets the sum over them.

Example:
    >>> import engine as en
    >>> en.sliding_window_view(en.arange(5), 3).numpy()
    array([[0, 1, 2],
           [1, 2, 3],
           [2, 3, 4]])
"""
import operator

import numpy as np

from ..errors import (InvalidArgumentError, ShapeError, ShapeTypeError, TracingError,
                      describe_inputs)
from . import indexing, shape_ops
from ._args import at_user_line
from .cumulative import as_tensor, user_axis


def _window_shape(window_shape):
    items = (window_shape,) if np.ndim(window_shape) == 0 else tuple(window_shape)
    try:
        return tuple(operator.index(w) for w in items)
    except TypeError:
        raise ShapeTypeError(f"sliding_window_view: window_shape must be integers, got "
                             f"{window_shape!r}{at_user_line()}") from None


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """All windows of ``window_shape`` that fit in ``x``, as numpy's
    ``sliding_window_view``: the windowed axes (all of them when ``axis`` is None, else
    those in ``axis``, which may repeat) shrink to the number of window positions, and
    the window's own axes are appended at the end, in order. The result is a new tensor
    (not a view), so ``writeable=True`` is refused.

    Example:
        >>> import engine as en
        >>> en.sliding_window_view(en.reshape(en.arange(6), (2, 3)), 2, axis=1).numpy()
        array([[[0, 1],
                [1, 2]],
        <BLANKLINE>
               [[3, 4],
                [4, 5]]])
    """
    if writeable:
        raise InvalidArgumentError(
            f"sliding_window_view: writeable=True asks for a view that writes through to "
            f"the input; the engine's windows are a new tensor{at_user_line()}")
    x = as_tensor(x)
    window = _window_shape(window_shape)
    if any(w < 0 for w in window):
        raise ShapeError(f"sliding_window_view: window_shape cannot contain negative values, "
                         f"got {window}{at_user_line()}")
    if axis is None:
        if len(window) != x.ndim:
            raise ShapeError(f"sliding_window_view: window_shape {window} must have one entry "
                             f"per axis of {describe_inputs([(tuple(x.shape), x.dtype)])} "
                             f"when axis is None{at_user_line()}")
        axes = tuple(range(x.ndim))
    else:
        items = (axis,) if np.ndim(axis) == 0 else tuple(axis)
        axes = tuple(user_axis(a, x.ndim, "sliding_window_view") for a in items)
        if len(axes) != len(window):
            raise ShapeError(f"sliding_window_view: window_shape {window} and axis {axis} "
                             f"must have the same length{at_user_line()}")
    sizes = list(x.shape)
    for a, w in zip(axes, window):
        if sizes[a] is not None and sizes[a] < w:
            raise ShapeError(f"sliding_window_view: window shape {window} cannot be larger "
                             f"than the input {describe_inputs([(tuple(x.shape), x.dtype)])} "
                             f"along axis {a}{at_user_line()}")
        sizes[a] = None if sizes[a] is None else sizes[a] - w + 1
    out = x
    for a, w in zip(axes, window):
        if out.shape[a] is None:
            raise TracingError(f"sliding_window_view: axis {a} of "
                               f"{describe_inputs([(tuple(x.shape), x.dtype)])} has an unknown "
                               f"size while tracing; windows need it known{at_user_line()}")
        n = out.shape[a] - w + 1
        # positions (n, w): row i holds i, i + 1, ..., i + w - 1
        index = np.arange(n)[:, None] + np.arange(w)[None, :]
        out = indexing.getitem(out, (slice(None),) * a + (index,))
        # the gather put (n, w) at axis a; the window axis goes to the end
        order = tuple(d for d in range(out.ndim) if d != a + 1) + (a + 1,)
        out = shape_ops.transpose(out, order)
    return out


__all__ = ["sliding_window_view"]
