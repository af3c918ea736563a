"""numpy's array-manipulation functions as composites of registered ops (each one is
the ops it is made of, so it differentiates, traces and runs on every back end with
no rules of its own): ``flip``, ``roll``, ``tile``, ``repeat``, ``tril`` / ``triu``,
``diagonal``, ``diag``, ``trace``, ``moveaxis``, ``swapaxes``, ``broadcast_arrays``,
``unstack``, ``meshgrid``, ``take``, ``take_along_axis``, ``atleast_1d/2d/3d``;
and the op ``put_along_axis`` (a functional ``np.put_along_axis``: a new tensor).

Index arrays and masks made here from static shapes are numpy constants; ``getitem``
moves index arrays to the back end of a concrete tensor it indexes, and masks are
moved there with :func:`constant_for`.

Example:
    >>> import engine as en
    >>> en.roll(en.arange(5), 2).numpy()
    array([3, 4, 0, 1, 2])
    >>> en.tril(en.ones((2, 2))).numpy()
    array([[1., 0.],
           [1., 1.]])
"""
import operator

import numpy as np

from .. import dtypes
from ..names import also_named as _also_named
from ..errors import DTypeError, ShapeError, TracingError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from ..shapes import broadcast_shapes, normalize_axis
from . import _rules, compare, creation, indexing, join, reduce, shape_ops
from ._args import at_user_line, int_tuple, one_or_many
from .cumulative import along, as_tensor, cumsum_op, take_along, user_axes, user_axis


def constant_for(x, array):
    """The numpy constant ``array`` as data on the back end of the concrete tensor ``x``
    (a numpy array there, or while tracing; that back end's array elsewhere)."""
    return indexing._on_backend_of(x, [array])[0]


def _static(name, shape):
    shape = tuple(shape)
    if None in shape:
        raise TracingError(f"{name}: needs a static shape, got {shape} while tracing")
    return shape


# ---- reordering ----------------------------------------------------------------------------
def flip(x, axis=None):
    """``x`` with the order of the elements reversed along ``axis`` (all axes when None),
    like ``np.flip``.

    Example:
        >>> import engine as en
        >>> en.flip(en.tensor([[1, 2], [3, 4]]), axis=1).numpy()
        array([[2, 1],
               [4, 3]])
    """
    x = as_tensor(x)
    axes = user_axes(axis, x.ndim, "flip")
    if not axes:
        return x
    return indexing.getitem(x, tuple(slice(None, None, -1) if a in axes else slice(None)
                                     for a in range(x.ndim)))


def roll(x, shift, axis=None):
    """Shift the elements of ``x`` by ``shift`` places along ``axis`` (over the flattened
    input when None), wrapping around, like ``np.roll``.

    Example:
        >>> import engine as en
        >>> en.roll(en.tensor([[1, 2, 3]]), -1, axis=1).numpy()
        array([[2, 3, 1]])
    """
    x = as_tensor(x)
    if axis is None:
        shape = _static("roll", x.shape)
        return shape_ops.reshape(roll(shape_ops.reshape(x, (-1,)), shift, 0), shape)
    shifts, axes = one_or_many(shift), one_or_many(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ShapeError(f"roll: {len(shifts)} shifts for {len(axes)} axes{at_user_line()}")
    total: dict[int, int] = {}   # the shift per axis (an axis named twice adds up)
    for s, a in zip(int_tuple("roll", shifts, "shift"), axes):
        a = user_axis(a, x.ndim, "roll")
        total[a] = total.get(a, 0) + s
    for a, s in total.items():
        n = _static("roll", x.shape)[a]
        s = s % n if n else 0
        if s:
            x = join.concat([along(x, a, slice(n - s, None)), along(x, a, slice(0, n - s))], axis=a)
    return x


def moveaxis(x, source, destination):
    """Move axes of ``x`` to new positions, the others keeping their order (``np.moveaxis``).

    Example:
        >>> import engine as en
        >>> en.moveaxis(en.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    x = as_tensor(x)
    src, dst = one_or_many(source), one_or_many(destination)
    if len(src) != len(dst):
        raise ShapeError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         f"have the same number of elements{at_user_line()}")
    src = [user_axis(a, x.ndim, "moveaxis") for a in src]
    dst = [user_axis(a, x.ndim, "moveaxis") for a in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError(f"moveaxis: repeated axis in {source!r} or {destination!r}")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return shape_ops.transpose(x, tuple(order))


def swapaxes(x, axis1, axis2):
    """``x`` with two axes exchanged (``np.swapaxes``)."""
    x = as_tensor(x)
    a = user_axis(axis1, x.ndim, "swapaxes")
    b = user_axis(axis2, x.ndim, "swapaxes")
    order = list(range(x.ndim))
    order[a], order[b] = b, a
    return shape_ops.transpose(x, tuple(order))


# ---- repetition ----------------------------------------------------------------------------
def tile(x, reps):
    """``x`` repeated ``reps`` times along each axis, like ``np.tile``.

    Example:
        >>> import engine as en
        >>> en.tile(en.tensor([1, 2]), (2, 2)).numpy()
        array([[1, 2, 1, 2],
               [1, 2, 1, 2]])
    """
    x = as_tensor(x)
    reps = int_tuple("tile", tuple(reps) if isinstance(reps, (list, tuple)) else (reps,), "reps")
    if any(r < 0 for r in reps):
        raise ShapeError(f"tile: negative repetitions {reps}{at_user_line()}")
    shape = _static("tile", x.shape)
    nd = max(len(reps), len(shape))
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - len(shape)) + shape
    paired = tuple(d for s in shape for d in (1, s))
    wide = tuple(d for r, s in zip(reps, shape) for d in (r, s))
    out = shape_ops.broadcast_to(shape_ops.reshape(x, paired), wide)
    return shape_ops.reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(x, repeats, axis=None):
    """Each element of ``x`` repeated ``repeats`` times along ``axis`` (over the flattened
    input when None), like ``np.repeat``; ``repeats`` is an int or one count per element
    (concrete: the result's size depends on it).

    Example:
        >>> import engine as en
        >>> en.repeat(en.tensor([1, 2]), [1, 3]).numpy()
        array([1, 2, 2, 2])
    """
    x = as_tensor(x)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    axis = user_axis(axis, x.ndim, "repeat") if x.ndim else 0
    if x.ndim == 0:
        x = shape_ops.reshape(x, (1,))
    n = _static("repeat", x.shape)[axis]
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" and counts.size:
        raise ShapeError(f"repeat: repeats must be integers, got {repeats!r}{at_user_line()}")
    counts = counts.astype(np.int64)
    if (counts < 0).any():
        raise ShapeError(f"repeat: negative repeats {repeats!r}{at_user_line()}")
    if counts.ndim == 0:
        r = int(counts)
        shape = tuple(x.shape)
        wide = shape[:axis + 1] + (r,) + shape[axis + 1:]
        out = shape_ops.broadcast_to(shape_ops.expand_dims(x, axis + 1), wide)
        return shape_ops.reshape(out, shape[:axis] + (n * r,) + shape[axis + 1:])
    if counts.shape not in ((n,), (1,)):
        raise ShapeError(f"repeat: {counts.shape[0]} repeats for an axis of size {n} "
                         f"({describe_inputs([(tuple(x.shape), x.dtype)])}){at_user_line()}")
    if counts.shape == (1,):
        return repeat(x, int(counts[0]), axis)
    return along(x, axis, np.repeat(np.arange(n, dtype=np.int64), counts))


# ---- triangles and diagonals -----------------------------------------------------------------
def _triangle(name, x, k, lower):
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"{name}: the input must be at least 2-D, got "
                         f"{describe_inputs([(tuple(x.shape), x.dtype)])}{at_user_line()}")
    n, m = _static(name, x.shape[-2:])
    keep = np.tri(n, m, operator.index(k), dtype=bool)
    if not lower:
        keep = ~np.tri(n, m, operator.index(k) - 1, dtype=bool)
    return compare.where(constant_for(x, keep), x, creation.zeros_like(x))


def tril(x, k=0):
    """``x`` with the elements above diagonal ``k`` of its last two axes set to zero
    (``np.tril``)."""
    return _triangle("tril", x, k, True)


def triu(x, k=0):
    """``x`` with the elements below diagonal ``k`` of its last two axes set to zero
    (``np.triu``)."""
    return _triangle("triu", x, k, False)


def diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal ``offset`` of the 2-D slices over ``axis1`` and ``axis2``, as the
    last axis of the result, like ``np.diagonal``.

    Example:
        >>> import engine as en
        >>> en.diagonal(en.reshape(en.arange(9), (3, 3)), 1).numpy()
        array([1, 5])
    """
    x = as_tensor(x)
    if x.ndim < 2:
        raise ShapeError(f"diagonal: the input must be at least 2-D, got "
                         f"{describe_inputs([(tuple(x.shape), x.dtype)])}{at_user_line()}")
    a = user_axis(axis1, x.ndim, "diagonal")
    b = user_axis(axis2, x.ndim, "diagonal")
    if a == b:
        raise ShapeError(f"diagonal: axis1 and axis2 are the same axis {a}{at_user_line()}")
    x = moveaxis(x, (a, b), (-2, -1))
    n, m = _static("diagonal", x.shape[-2:])
    offset = operator.index(offset)
    row0, col0 = max(-offset, 0), max(offset, 0)
    length = max(0, min(n - row0, m - col0))
    steps = np.arange(length, dtype=np.int64)
    return indexing.getitem(x, (Ellipsis, steps + row0, steps + col0))


# The standard's linalg.diagonal and linalg.trace are over the last two axes: these,
# with axis1=-2, axis2=-1 (engine.linalg's own take offset only).
_also_named(diagonal, array_api="linalg.diagonal")


def trace(x, offset=0, axis1=0, axis2=1, dtype=None):
    """The sum along diagonal ``offset`` (``np.trace``).

    Example:
        >>> import engine as en
        >>> int(en.trace(en.reshape(en.arange(4), (2, 2))))
        3
    """
    d = diagonal(x, offset, axis1, axis2)
    if dtype is not None:
        d = creation.cast(d, dtype)
    return reduce.sum(d, axis=-1)


_also_named(trace, array_api="linalg.trace")


def diag(v, k=0):
    """The diagonal ``k`` of a matrix, or a square matrix with the vector ``v`` on its
    diagonal ``k`` (``np.diag``).

    Example:
        >>> import engine as en
        >>> en.diag(en.tensor([1, 2])).numpy()
        array([[1, 0],
               [0, 2]])
    """
    v = as_tensor(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ShapeError(f"diag: the input must be 1-D or 2-D, got "
                         f"{describe_inputs([(tuple(v.shape), v.dtype)])}{at_user_line()}")
    (n,) = _static("diag", v.shape)
    size = n + abs(k)
    if n == 0:
        return creation.zeros((size, size), dtype=v.dtype)
    rows = np.arange(size)[:, None] + np.zeros(size, dtype=np.int64)
    source = np.clip(rows + min(k, 0), 0, n - 1)       # row i holds v[i + min(k, 0)]
    on_diagonal = np.arange(size)[None, :] - np.arange(size)[:, None] == k
    spread = indexing.getitem(v, source)
    return compare.where(constant_for(v, on_diagonal), spread, creation.zeros_like(spread))


# ---- several arrays ----------------------------------------------------------------------------
def broadcast_arrays(*xs):
    """The inputs broadcast against each other (a tuple, as ``np.broadcast_arrays``)."""
    ts = [as_tensor(x) for x in xs]
    shape = broadcast_shapes(*[tuple(t.shape) for t in ts], op_name="broadcast_arrays")
    return tuple(t if tuple(t.shape) == shape else shape_ops.broadcast_to(t, shape) for t in ts)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, a tuple (the Array API's ``unstack``).

    Example:
        >>> import engine as en
        >>> [t.numpy().tolist() for t in en.unstack(en.tensor([[1, 2], [3, 4]]), axis=1)]
        [[1, 3], [2, 4]]
    """
    x = as_tensor(x)
    if x.ndim == 0:
        raise ShapeError(f"unstack: a 0-d input has no axis to unstack{at_user_line()}")
    axis = user_axis(axis, x.ndim, "unstack")
    return tuple(along(x, axis, i) for i in range(_static("unstack", x.shape)[axis]))


def meshgrid(*xs, indexing="xy", sparse=False, copy=True):
    """Coordinate grids from 1-D coordinate vectors (``np.meshgrid``, a tuple): with
    ``indexing="xy"`` the first two axes are swapped (Cartesian), ``"ij"`` keeps them.

    Example:
        >>> import engine as en
        >>> gx, gy = en.meshgrid(en.tensor([1, 2, 3]), en.tensor([4, 5]))
        >>> gx.shape, gy.shape
        ((2, 3), (2, 3))
    """
    if indexing not in ("xy", "ij"):
        raise ShapeError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    vectors = [shape_ops.reshape(as_tensor(x), (-1,)) for x in xs]
    nd = len(vectors)
    outs = []
    for i, x in enumerate(vectors):
        shape = [1] * nd
        shape[i] = -1
        if indexing == "xy" and nd > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        outs.append(shape_ops.reshape(x, tuple(shape)))
    if sparse or not outs:
        return tuple(outs)
    return broadcast_arrays(*outs)


def atleast_1d(x):
    """``x`` with at least one dimension (``np.atleast_1d`` for one input)."""
    x = as_tensor(x)
    return shape_ops.reshape(x, (1,)) if x.ndim == 0 else x


def atleast_2d(x):
    """``x`` with at least two dimensions: a vector becomes one row (``np.atleast_2d``)."""
    x = atleast_1d(x)
    return shape_ops.expand_dims(x, 0) if x.ndim == 1 else x


def atleast_3d(x):
    """``x`` with at least three dimensions (``np.atleast_3d``: (n,) -> (1, n, 1),
    (m, n) -> (m, n, 1))."""
    x = as_tensor(x)
    if x.ndim == 0:
        return shape_ops.reshape(x, (1, 1, 1))
    if x.ndim == 1:
        return shape_ops.expand_dims(shape_ops.expand_dims(x, 0), -1)
    return shape_ops.expand_dims(x, -1) if x.ndim == 2 else x


# ---- gathering ---------------------------------------------------------------------------------
def take(x, indices, axis=None):
    """Elements of ``x`` at ``indices`` along ``axis`` (of the flattened input when None),
    like ``np.take`` (out-of-range indices are an error).

    Example:
        >>> import engine as en
        >>> en.take(en.tensor([[1, 2], [3, 4]]), [1, 0], axis=1).numpy()
        array([[2, 1],
               [4, 3]])
    """
    x = as_tensor(x)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    axis = user_axis(axis, x.ndim, "take")
    if isinstance(indices, (list, tuple)):
        indices = np.asarray(indices, dtype=np.int64) if len(indices) else \
            np.zeros(0, dtype=np.int64)
    return along(x, axis, indices)


def _index_tensor(name, indices):
    indices = as_tensor(np.asarray(indices) if isinstance(indices, (list, tuple)) else indices)
    if indices.dtype not in dtypes.INTS:
        raise DTypeError(f"{name}: indices must be integers, got "
                         f"{describe_inputs([(tuple(indices.shape), indices.dtype)])}"
                         f"{at_user_line()}")
    return indices


def take_along_axis(x, indices, axis=-1):
    """``x`` at ``indices`` along ``axis``, pairing every other position (the result has
    ``indices``' shape, other axes broadcast), like ``np.take_along_axis``; with ``axis``
    None the input is flattened. The inverse of sorting with :func:`argsort`.

    Example:
        >>> import engine as en
        >>> x = en.tensor([[3, 1, 2]])
        >>> en.take_along_axis(x, en.argsort(x), axis=1).numpy()
        array([[1, 2, 3]])
    """
    x = as_tensor(x)
    indices = _index_tensor("take_along_axis", indices)
    if axis is None:
        x, axis = shape_ops.reshape(x, (-1,)), 0
    if indices.ndim != x.ndim:
        raise ShapeError(f"take_along_axis: indices and input must have the same number of "
                         f"dimensions, got {describe_inputs([(tuple(x.shape), x.dtype), (tuple(indices.shape), indices.dtype)])}"
                         f"{at_user_line()}")
    axis = user_axis(axis, x.ndim, "take_along_axis")
    # numpy broadcasts the other axes of x and indices against each other.
    xs, ids = list(x.shape), list(indices.shape)
    xs[axis] = ids[axis] = 1
    shape = list(broadcast_shapes(tuple(xs), tuple(ids), op_name="take_along_axis"))
    shape[axis] = indices.shape[axis]
    if tuple(indices.shape) != tuple(shape):
        indices = shape_ops.broadcast_to(indices, tuple(shape))
    wide = list(shape)
    wide[axis] = x.shape[axis]
    if tuple(x.shape) != tuple(wide):
        x = shape_ops.broadcast_to(x, tuple(wide))
    return take_along(x, indices, axis)


# ---- put_along_axis ------------------------------------------------------------------------
def _put_target(x, idx, axis):
    """The shape ``x[along_axis_index(idx)]`` has: idx's size along the axis, x's elsewhere."""
    return tuple(i if a == axis else d for a, (d, i) in enumerate(zip(x, idx)))


def _put_eval(x, indices, values, *, axis):
    avals = [x, indices, values]
    if indices[1] not in dtypes.INTS:
        raise DTypeError(f"put_along_axis: indices must be integers, got {describe_inputs(avals)}")
    if not np.can_cast(values[1], x[1], "same_kind"):
        raise DTypeError(f"put_along_axis: cannot write values of dtype {values[1]} into "
                         f"{describe_inputs([x])}")
    if len(indices[0]) != len(x[0]) or not x[0]:
        raise ShapeError(f"put_along_axis: indices and input must have the same number of "
                         f"dimensions (at least one), got {describe_inputs(avals)}")
    ax = normalize_axis(axis, len(x[0]), "put_along_axis")
    target = _put_target(x[0], indices[0], ax)
    if tuple(indices[0]) != target or tuple(values[0]) != target:
        raise ShapeError(f"put_along_axis: indices and values must have the shape {target} "
                         f"(the input's, except along axis {ax}): {describe_inputs(avals)}")
    return x


def _put_impl(x, indices, values, *, axis):
    out = np.array(x, copy=True)
    try:
        np.put_along_axis(out, indices, values, axis)
    except IndexError as err:
        raise ShapeError(f"put_along_axis: {err}") from None
    return out


def _put_vjp(g, out, x, indices, values, *, axis):
    # x: the cotangent where nothing was written. values: where a value is the one that
    # stayed (with repeated indices the last write wins, as in numpy).
    gx = apply(put_along_axis_op, g, indices, creation.zeros_like(values), axis=axis)
    ids = creation.cast(creation.ones_like(values), dtypes.int64)
    shape = tuple(-1 if d is None else d for d in values.shape)
    ids = shape_ops.reshape(apply(cumsum_op, shape_ops.reshape(ids, (-1,)), axis=0), shape)
    marks = creation.cast(creation.zeros_like(x), dtypes.int64)
    written = apply(put_along_axis_op, marks, indices, ids, axis=axis)
    stayed = compare.equal(take_along(written, indices, axis), ids)
    gv = take_along(g, indices, axis)
    return gx, None, compare.where(stayed, gv, creation.zeros_like(gv))


def _put_generic(be, x, indices, values, *, axis):
    # The standard has no scatter: compare every target position with every index
    # along the axis; the last matching index wins.
    xp = be.xp
    n = x.shape[axis]
    idx = be.astype(indices, dtypes.int64)
    idx = xp.where(idx < 0, idx + n, idx)
    m = idx.shape[axis]
    if m == 0 or n == 0:
        return x
    xt, it, vt = (xp.moveaxis(a, axis, -1) for a in (x, idx, be.astype(values, be.dtype_of(x))))
    targets = xp.reshape(xp.arange(n, dtype=xp.int64), (n, 1))
    hits = xp.expand_dims(it, axis=-2) == targets                      # (..., n, m)
    order = xp.reshape(xp.arange(m, dtype=xp.int64), (1,) * (hits.ndim - 1) + (m,))
    last = xp.max(xp.where(hits, order, xp.asarray(-1, dtype=xp.int64)), axis=-1)
    new = xp.take_along_axis(vt, xp.where(last < 0, xp.zeros_like(last), last), axis=-1)
    xt = xp.where(last >= 0, new, xt)
    return xp.moveaxis(xt, -1, axis)


put_along_axis_op = register(Op("put_along_axis", _put_impl, _put_eval, _put_vjp, n_inputs=3,
                                dtypes=dtypes.ALL, generic=_put_generic,
                                doc="A copy of ``x`` with ``values`` written at ``indices`` "
                                    "along ``axis`` (the last write wins)."))
declare(put_along_axis_op, onnx=("ScatterElements",))


def put_along_axis(x, indices, values, axis):
    """A copy of ``x`` with ``values`` written at ``indices`` along ``axis`` (numpy's
    ``np.put_along_axis``, which writes in place, as a function; the last write wins
    where indices repeat). ``values`` broadcasts to the indexed shape.

    Example:
        >>> import engine as en
        >>> en.put_along_axis(en.zeros((2, 3)), en.tensor([[1], [2]]), 5.0, axis=1).numpy()
        array([[0., 5., 0.],
               [0., 0., 5.]])
    """
    x = as_tensor(x)
    indices = _index_tensor("put_along_axis", indices)
    if axis is None:
        shape = _static("put_along_axis", x.shape)
        out = put_along_axis(shape_ops.reshape(x, (-1,)), indices, values, 0)
        return shape_ops.reshape(out, shape)
    if indices.ndim != x.ndim or x.ndim == 0:
        raise ShapeError(f"put_along_axis: indices and input must have the same number of "
                         f"dimensions (at least one), got "
                         f"{describe_inputs([(tuple(x.shape), x.dtype), (tuple(indices.shape), indices.dtype)])}"
                         f"{at_user_line()}")
    axis = user_axis(axis, x.ndim, "put_along_axis")
    # numpy pairs the indices with every position of x's other axes (they broadcast).
    target = _put_target(tuple(x.shape), tuple(indices.shape), axis)
    if tuple(indices.shape) != target:
        indices = shape_ops.broadcast_to(indices, target)
    if isinstance(values, (bool, int, float)):
        values = creation.cast(creation.zeros_like(indices), x.dtype) + values
    values = as_tensor(values)
    if tuple(values.shape) != target:
        values = shape_ops.broadcast_to(values, target)
    return apply(put_along_axis_op, x, indices, values, axis=axis)


__all__ = ["flip", "roll", "moveaxis", "swapaxes", "tile", "repeat", "tril", "triu", "diagonal",
           "trace", "diag", "broadcast_arrays", "unstack", "meshgrid", "atleast_1d", "atleast_2d",
           "atleast_3d", "take", "take_along_axis", "put_along_axis", "put_along_axis_op"]


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
def _put_batch(size, args, dims, *, axis):
    # Every operand gets the batch axis first (an unbatched one is broadcast: the op's
    # shape rule pairs the three exactly); the written axis moves past it.
    full = _rules.all_batched_first(size, args, dims)
    return apply(put_along_axis_op, *full, axis=axis + 1), 0


# Linear in the input and the values together; the indices are constants.
declare(put_along_axis_op, jvp=_rules.jvp_linear(put_along_axis_op, linear=(0, 2)),
        batch=_put_batch)
