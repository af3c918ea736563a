"""``getitem`` and ``scatter_add`` written against the Array API namespace.

The standard indexes with ints, slices, ``None`` and ``...`` (basic indexing),
and with integer arrays only when every index is one; numpy's rules for mixed
indices (where the advanced dimensions go) are built here from basic
indexing, ``permute_dims``, ``reshape`` and ``take``. The standard has no
scatter: repeated positions are summed by comparing positions with a block of
target positions at a time (:func:`segment_sum`).

Example:
    >>> import engine as en
    >>> x = en.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], backend="array_api_strict")
    >>> x[1:, [0, 2]].to("numpy").numpy().tolist()
    [[4.0, 6.0]]
"""
from .. import dtypes
from ..cost_model import cost
from ..errors import EngineError, ShapeError


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def getitem(be, x, *arrays, spec, name="getitem"):
    """``x[index]`` for the index ``spec`` with numpy's semantics."""
    xp = be.xp
    if not any(item[0] == "array" for item in spec):
        basic = []
        used = sum(1 for item in spec if item[0] in ("int", "slice"))
        dim = 0
        for item in spec:
            kind = item[0]
            if kind == "int":
                basic.append(item[1])
                dim += 1
            elif kind == "slice":
                basic.append(_bounded(slice(*item[1:]), x.shape[dim]))
                dim += 1
            else:
                basic.append(None if kind == "newaxis" else Ellipsis)
                dim += (x.ndim - used) if kind == "ellipsis" else 0
        if not any(item[0] == "ellipsis" for item in spec):
            basic.append(Ellipsis)   # the standard indexes every dim or says "..."
        return x[tuple(basic)]   # int bounds were checked by the shape rule
    ndim = x.ndim
    used = sum(1 for item in spec if item[0] in ("int", "slice", "array"))
    basic, advanced, positions = [], [], []   # advanced: (result dim, index array)
    dim = 0
    for pos, item in enumerate(spec):
        kind = item[0]
        if kind == "newaxis":
            basic.append(None)
        elif kind == "ellipsis":
            basic.extend([slice(None)] * (ndim - used))
            dim += ndim - used
        elif kind == "slice":
            basic.append(_bounded(slice(*item[1:]), x.shape[dim]))
            dim += 1
        else:   # an int beside index arrays is a 0-d index array (numpy's rule)
            index = arrays[item[1]] if kind == "array" else xp.asarray(item[1], dtype=xp.int64)
            advanced.append((len(basic), _in_range(be, name, index, x.shape[dim], dim)))
            positions.append(pos)
            basic.append(slice(None))
            dim += 1
    y = x[tuple(basic) + (Ellipsis,)]
    adv_dims = [d for d, _ in advanced]
    rest = [d for d in range(y.ndim) if d not in adv_dims]
    y = xp.permute_dims(y, tuple(adv_dims + rest))
    sizes = [y.shape[i] for i in range(len(adv_dims))]
    rest_shape = tuple(y.shape[len(adv_dims):])
    indices = xp.broadcast_arrays(*[index for _, index in advanced])
    flat = None
    for index, _size, stride in zip(indices, sizes, _strides(sizes)):
        term = index * stride
        flat = term if flat is None else flat + term
    if flat is None:     # (this path is taken only when spec holds an index array)
        raise EngineError(f"{name}: no index array in the index (internal error)")
    batch = tuple(flat.shape)
    y = xp.reshape(y, (_prod(sizes),) + rest_shape)
    out = xp.take(y, xp.reshape(flat, (-1,)), axis=0)
    out = xp.reshape(out, batch + rest_shape)
    # numpy: the advanced dims replace the indexed ones when the advanced items
    # are next to each other in the index, else they go first.
    if positions[-1] - positions[0] + 1 == len(positions) and adv_dims[0]:
        nb, at = len(batch), adv_dims[0]
        order = list(range(nb, nb + at)) + list(range(nb)) + list(range(nb + at, out.ndim))
        out = xp.permute_dims(out, tuple(order))
    return out


def _bounded(s, size):
    """The slice ``s`` with its bounds clipped to an axis of ``size`` (numpy clips them;
    the standard leaves bounds outside the axis unspecified, and strict refuses them)."""
    if size == 0:
        return slice(0, 0)
    start, stop, step = s.indices(size)
    return slice(start, None if step < 0 and stop < 0 else stop, step)


def _strides(sizes):
    strides, s = [], 1
    for size in reversed(sizes):
        strides.append(s)
        s *= size
    return strides[::-1]


def _in_range(be, name, index, size, dim):
    """The index array as int64 with negatives counted from the end; a ShapeError
    when a value is out of range (numpy's IndexError, as the engine names it)."""
    xp = be.xp
    if be.dtype_of(index) != dtypes.int64:
        index = be.astype(index, dtypes.int64)
    if index.ndim and _prod(index.shape) and (bool(xp.any(index >= size))
                                              or bool(xp.any(index < -size))):
        raise ShapeError(f"{name}: an index is out of range for dimension {dim} of size {size}")
    if not index.ndim and not -size <= int(index) < size:
        raise ShapeError(f"{name}: index {int(index)} is out of range for dimension {dim} "
                         f"of size {size}")
    return xp.where(index < 0, index + size, index)


def segment_sum(be, positions, values, n):
    """``out[j] = sum of values[i] where positions[i] == j`` for ``j < n`` (1-D inputs)."""
    xp = be.xp
    m = positions.shape[0]
    zero = xp.zeros((), dtype=values.dtype)
    if m == 0 or n == 0:
        return xp.zeros((n,), dtype=values.dtype)
    positions = xp.reshape(positions, (1, m))
    values = xp.reshape(values, (1, m))
    # The (targets x positions) comparison block holds about this many elements.
    step = max(1, cost.segment_sum_block_elements // m)
    parts = []
    for start in range(0, n, step):
        targets = xp.reshape(xp.arange(start, min(n, start + step), dtype=xp.int64), (-1, 1))
        parts.append(xp.sum(xp.where(positions == targets, values, zero), axis=1,
                            dtype=values.dtype))
    return parts[0] if len(parts) == 1 else xp.concat(parts)


def scatter_add(be, x, updates, *arrays, spec):
    """A copy of ``x`` with ``updates`` added at ``x[index]`` (repeats accumulate)."""
    xp = be.xp
    n = _prod(x.shape)
    where = getitem(be, xp.reshape(xp.arange(n, dtype=xp.int64), tuple(x.shape)), *arrays,
                    spec=spec, name="scatter_add")
    dt = be.dtype_of(x)
    work = dtypes.int64 if dt == dtypes.bool_ else dt   # numpy adds bools as "or"
    values = xp.broadcast_to(be.astype(updates, work), tuple(where.shape))
    added = segment_sum(be, xp.reshape(where, (-1,)), xp.reshape(values, (-1,)), n)
    added = xp.reshape(added, tuple(x.shape))
    if dt == dtypes.bool_:
        return xp.logical_or(x, added != 0)
    return x + added
