"""Shape helpers shared by the shape rules. Dims may be ``None`` (unknown at trace time)."""
import operator

import numpy as np

from .errors import AxisError, ShapeError


def broadcast_shapes(*shapes, op_name="broadcast"):
    """numpy broadcasting of several shapes; ``None`` dims stay unknown.

    Example:
        >>> broadcast_shapes((3, 1), (4,))
        (3, 4)
    """
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for i in range(-ndim, 0):
        dim = 1
        for s in shapes:
            if len(s) < -i:
                continue
            d = s[i]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d is None:
                continue
            elif dim is None:
                dim = d
            elif d != dim:
                raise ShapeError(
                    f"{op_name}: shapes {' and '.join(map(str, shapes))} cannot be broadcast together "
                    f"(dimension {i + ndim}: {dim} vs {d})")
        result.append(dim)
    return tuple(result)


def normalize_axis(axis, ndim, op_name):
    """Map a possibly negative axis into ``range(ndim)``, with a clear error."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        # numpy takes what operator.index takes (numpy ints, 0-d integer tensors)
        dtype = getattr(axis, "dtype", None)
        if isinstance(axis, bool) or dtype is None or np.dtype(dtype).kind not in "iu":
            raise ShapeError(f"{op_name}: axis must be an int, got {axis!r}")
        try:
            axis = operator.index(axis)
        except TypeError:
            raise ShapeError(f"{op_name}: axis must be an int, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise AxisError(f"{op_name}: axis {axis} is out of range for an input of rank {ndim}")
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim, op_name):
    """``None`` -> all axes; int or tuple -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (list, tuple)):
        axes = tuple(sorted(normalize_axis(a, ndim, op_name) for a in axis))
        if len(set(axes)) != len(axes):
            raise ShapeError(f"{op_name}: repeated axis in {axis!r}")
        return axes
    return (normalize_axis(axis, ndim, op_name),)


def reduced_shape(shape, axes, keepdims):
    """Shape after reducing ``axes`` (already normalized)."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def size_of(shape):
    """Number of elements, or ``None`` when a dim is unknown."""
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n
