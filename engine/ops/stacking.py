"""numpy's joining and splitting helpers as composites of ``concat``, ``reshape`` and
``split``: ``hstack``, ``vstack``, ``dstack``, ``column_stack``, ``block``, ``append``,
``array_split``, ``hsplit``, ``vsplit``, ``dsplit``.

Each is the ops it is made of, so it differentiates, traces and runs on every back
end with no rules of its own. The split points are static (Python ints), so every
split has a static shape.

Example:
    >>> import engine as en
    >>> a, b = en.tensor([1, 2]), en.tensor([3, 4])
    >>> en.vstack([a, b]).numpy()
    array([[1, 2],
           [3, 4]])
    >>> [t.tolist() for t in en.array_split(en.arange(5), 3)]
    [[0, 1], [2, 3], [4]]
"""
import operator

from ..errors import ShapeError
from . import join, misc, shape_ops
from .creation import cast
from ._args import at_user_line
from .cumulative import as_tensor, user_axis
from .manipulation import atleast_1d, atleast_2d, atleast_3d

__all__ = ["hstack", "vstack", "dstack", "column_stack", "block", "append", "array_split",
           "hsplit", "vsplit", "dsplit"]


def _tensors(name, tup):
    if not isinstance(tup, (list, tuple)) or not tup:
        raise ShapeError(f"{name}: needs a non-empty sequence of arrays, got "
                         f"{type(tup).__name__}{at_user_line()}")
    return [as_tensor(t) for t in tup]


def _cast_all(tensors, dtype):
    return tensors if dtype is None else [cast(t, dtype) for t in tensors]


def vstack(tup, *, dtype=None, casting="same_kind"):
    """Stack arrays row-wise: 1-D arrays become rows, like ``np.vstack``.

    Example:
        >>> import engine as en
        >>> en.vstack([en.ones((1, 2)), en.zeros(2)]).shape
        (2, 2)
    """
    return join.concat(_cast_all([atleast_2d(t) for t in _tensors("vstack", tup)], dtype), axis=0)


def hstack(tup, *, dtype=None, casting="same_kind"):
    """Stack arrays column-wise (along the first axis for 1-D arrays), like ``np.hstack``.

    Example:
        >>> import engine as en
        >>> en.hstack([en.tensor([1, 2]), en.tensor([3])]).tolist()
        [1, 2, 3]
    """
    tensors = [atleast_1d(t) for t in _tensors("hstack", tup)]
    return join.concat(_cast_all(tensors, dtype), axis=0 if tensors[0].ndim == 1 else 1)


def dstack(tup):
    """Stack arrays depth-wise, along a third axis, like ``np.dstack``.

    Example:
        >>> import engine as en
        >>> en.dstack([en.tensor([1, 2]), en.tensor([3, 4])]).shape
        (1, 2, 2)
    """
    return join.concat([atleast_3d(t) for t in _tensors("dstack", tup)], axis=2)


def column_stack(tup):
    """Stack 1-D arrays as the columns of a 2-D array (2-D arrays as they are), like
    ``np.column_stack``.

    Example:
        >>> import engine as en
        >>> en.column_stack([en.tensor([1, 2]), en.tensor([3, 4])]).tolist()
        [[1, 3], [2, 4]]
    """
    cols = [t if t.ndim >= 2 else shape_ops.reshape(t, (-1, 1))
            for t in _tensors("column_stack", tup)]
    return join.concat(cols, axis=1)


# ---- block -----------------------------------------------------------------------------------
def _depth(name, arrays, path=()):
    """The nesting depth of the lists in ``arrays`` (all leaves at the same depth)."""
    if isinstance(arrays, tuple):
        raise ShapeError(f"{name}: {_where(path)} is a tuple; only lists may nest{at_user_line()}")
    if not isinstance(arrays, list):
        return 0
    if not arrays:
        raise ShapeError(f"{name}: {_where(path)} is an empty list{at_user_line()}")
    depths = {_depth(name, a, path + (i,)) for i, a in enumerate(arrays)}
    if len(depths) != 1:
        raise ShapeError(f"{name}: the lists inside {_where(path)} nest to different "
                         f"depths {sorted(depths)}{at_user_line()}")
    return 1 + depths.pop()


def _where(path):
    return "arrays" + "".join(f"[{i}]" for i in path)


def _leaves(arrays):
    if isinstance(arrays, list):
        for a in arrays:
            yield from _leaves(a)
    else:
        yield arrays


def _assemble(arrays, depth, list_depth, ndim):
    if not isinstance(arrays, list):
        x = as_tensor(arrays)
        return shape_ops.reshape(x, (1,) * (ndim - x.ndim) + tuple(x.shape))
    parts = [_assemble(a, depth + 1, list_depth, ndim) for a in arrays]
    return join.concat(parts, axis=-(list_depth - depth))


def block(arrays):
    """Assemble an array from nested lists of blocks, like ``np.block``: the innermost
    lists join along the last axis, the next ones along the one before, and so on.

    Example:
        >>> import engine as en
        >>> en.block([[en.eye(2), en.zeros((2, 1))], [en.ones((1, 3))]]).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    list_depth = _depth("block", arrays)
    leaves = [as_tensor(a) for a in _leaves(arrays)]
    ndim = max([list_depth] + [t.ndim for t in leaves])
    if list_depth == 0:
        return misc.identity(leaves[0])        # numpy returns a copy
    return _assemble(arrays, 0, list_depth, ndim)


def append(arr, values, axis=None):
    """``arr`` with ``values`` joined at the end of ``axis`` (both flattened when None),
    like ``np.append``.

    Example:
        >>> import engine as en
        >>> en.append(en.tensor([[1, 2]]), [3, 4]).tolist()
        [1, 2, 3, 4]
    """
    arr, values = as_tensor(arr), as_tensor(values)
    if axis is None:
        return join.concat([shape_ops.reshape(arr, (-1,)), shape_ops.reshape(values, (-1,))])
    return join.concat([arr, values], axis=axis)


# ---- splitting -------------------------------------------------------------------------------
def _bounds(n, points):
    """numpy's split points on an axis of ``n`` as section bounds ``[0, ..., n]``."""
    points = [operator.index(i) for i in points]
    return [0, *(min(max(i + (n if i < 0 else 0), 0), n) for i in points), n]


def _split(name, x, indices_or_sections, axis, equal):
    x = as_tensor(x)
    axis = user_axis(axis, x.ndim, name)
    n = x.shape[axis]
    try:
        sections = operator.index(indices_or_sections)
    except TypeError:
        sections = None
    if sections is not None:
        if sections <= 0:
            raise ShapeError(f"{name}: the number of sections must be larger than 0, got "
                             f"{sections}{at_user_line()}")
        each, extra = divmod(n, sections)
        if equal and extra:
            raise ShapeError(f"{name}: an axis of length {n} does not split into {sections} "
                             f"equal sections{at_user_line()}")
        return list(join.split(x, [each + 1] * extra + [each] * (sections - extra), axis=axis))
    bounds = _bounds(n, indices_or_sections)
    if all(a <= b for a, b in zip(bounds[:-1], bounds[1:])):
        return list(join.split(x, [b - a for a, b in zip(bounds[:-1], bounds[1:])], axis=axis))
    # Split points that go backwards: numpy slices each section (an empty one there).
    head = (slice(None),) * axis
    return [x[head + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:])]


def array_split(ary, indices_or_sections, axis=0):
    """Split ``ary`` into sections along ``axis``, like ``np.array_split``: an int gives
    that many sections (the first ones one longer when it does not divide), a list the
    split points.

    Example:
        >>> import engine as en
        >>> [t.tolist() for t in en.array_split(en.arange(6), [2, 5])]
        [[0, 1], [2, 3, 4], [5]]
    """
    return _split("array_split", ary, indices_or_sections, axis, equal=False)


def _split_at(name, ary, indices_or_sections, min_ndim, axis):
    ary = as_tensor(ary)
    if ary.ndim < min_ndim:
        raise ShapeError(f"{name}: needs an array of at least {min_ndim} dimensions, got "
                         f"shape {tuple(ary.shape)}{at_user_line()}")
    return _split(name, ary, indices_or_sections, axis, equal=True)


def hsplit(ary, indices_or_sections):
    """Split ``ary`` column-wise (1-D arrays along their one axis), like ``np.hsplit``.

    Example:
        >>> import engine as en
        >>> [t.shape for t in en.hsplit(en.ones((2, 4)), 2)]
        [(2, 2), (2, 2)]
    """
    ary = as_tensor(ary)
    return _split_at("hsplit", ary, indices_or_sections, 1, 1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split ``ary`` row-wise (along axis 0; at least 2-D), like ``np.vsplit``.

    Example:
        >>> import engine as en
        >>> [t.shape for t in en.vsplit(en.ones((4, 2)), [1])]
        [(1, 2), (3, 2)]
    """
    return _split_at("vsplit", ary, indices_or_sections, 2, 0)


def dsplit(ary, indices_or_sections):
    """Split ``ary`` depth-wise (along axis 2; at least 3-D), like ``np.dsplit``.

    Example:
        >>> import engine as en
        >>> [t.shape for t in en.dsplit(en.ones((1, 2, 4)), 2)]
        [(1, 2, 2), (1, 2, 2)]
    """
    return _split_at("dsplit", ary, indices_or_sections, 3, 2)
