"""Indexing: ``getitem`` (``x[index]``) and its gradient ``scatter_add``.

An index is split in two: integer index arrays become tensor *inputs* of the
op, and the params keep a hashable ``spec`` describing the index structure,
one item per index entry:

    ('int', i)  ('slice', start, stop, step)  ('newaxis',)  ('ellipsis',)  ('array', k)

where ``('array', k)`` refers to the k-th index input. Boolean masks are
turned into integer arrays with ``np.nonzero`` before the op is applied (their
result shape depends on the data). Semantics follow numpy exactly, including
where advanced-index dimensions are placed.

Example:
    >>> import engine as en
    >>> x = en.reshape(en.arange(12.0), (3, 4))
    >>> x[1:, [0, 2]].numpy()
    array([[ 4.,  6.],
           [ 8., 10.]])
"""
import operator

import numpy as np

from .. import dtypes
from ..errors import DTypeError, IndexShapeError, ShapeError, TracingError, describe_inputs
from ..lifting import TensorLike
from ..modes import apply
from ..op import Op, declare, register
from .. import chunk_rules
from ..shapes import broadcast_shapes
from . import index_generic
from ._define import unbroadcast
from . import creation
from . import _rules
from .shape_ops import broadcast_to_op, transpose

_INDEX_DTYPES = dtypes.INTS


# ---- turning a Python index into (spec, index inputs) -----------------------
def _slice_bound(value):
    if value is None:
        return None
    if getattr(value, "_value", 0) is None:
        raise TracingError("getitem: slice bounds must be concrete integers, but a traced "
                           "tensor was given; use integer-array indexing instead")
    try:
        return operator.index(value)
    except TypeError:
        raise ShapeError(f"getitem: slice bounds must be integers or None, got {value!r}") from None


def _array_item(item):
    """A concrete or traced index array (tensor, variable or numpy array), or None when
    not array-like. (A variable is read where the op lifts its inputs.)"""
    if isinstance(item, TensorLike):
        return item
    if isinstance(item, (list, np.ndarray)):
        arr = np.asarray(item)
        if arr.size == 0 and arr.dtype.kind not in "biu":
            arr = arr.astype(np.int64)  # numpy treats an empty list as an empty int index
        return arr
    return None


def _consumed(item):
    """How many dims of ``x`` an (unconverted) index item uses."""
    if item is None or item is Ellipsis:
        return 0
    arr = _array_item(item)
    if arr is not None and arr.dtype == np.bool_:
        return arr.ndim
    return 1


def parse_index(x_shape, index):
    """Split a Python index into a hashable ``spec`` and a list of index arrays.

    Boolean masks are checked against the dims they index and converted to
    integer arrays here, so they must be concrete.
    """
    if not isinstance(index, tuple):
        index = (index,)
    ndim = len(x_shape)
    n_ellipsis = sum(1 for it in index if it is Ellipsis)
    if n_ellipsis > 1:
        raise ShapeError("getitem: an index can only have a single ellipsis ('...')")
    used = sum(_consumed(it) for it in index)
    if used > ndim:
        raise IndexShapeError(f"getitem: too many indices for a tensor of shape {tuple(x_shape)}: "
                         f"{ndim} dimension(s), but {used} were indexed")
    spec: list[tuple] = []   # ("newaxis",), ("slice", start, stop, step), ("array", k) ...
    arrays: list = []
    dim = 0  # the dim of x the next item indexes
    for item in index:
        if item is None:
            spec.append(("newaxis",))
        elif item is Ellipsis:
            spec.append(("ellipsis",))
            dim += ndim - used
        elif isinstance(item, slice):
            spec.append(("slice", _slice_bound(item.start), _slice_bound(item.stop),
                         _slice_bound(item.step)))
            if spec[-1][3] == 0:
                raise ShapeError("getitem: slice step cannot be zero")
            dim += 1
        elif isinstance(item, (bool, np.bool_)):
            raise ShapeError("getitem: a scalar boolean index is not supported; use en.where")
        elif isinstance(item, (int, np.integer)):
            spec.append(("int", int(item)))
            dim += 1
        else:
            arr = _array_item(item)
            if arr is None:
                raise ShapeError(f"getitem: unsupported index item {item!r}; use ints, slices, "
                                 "None, ..., integer arrays or boolean masks")
            if arr.dtype == np.bool_:
                masks = _mask_to_arrays(arr, x_shape, dim)
                for a in masks:
                    spec.append(("array", len(arrays)))
                    arrays.append(a)
                dim += arr.ndim
            elif arr.dtype.kind in "iu":
                spec.append(("array", len(arrays)))
                arrays.append(arr if not isinstance(arr, np.ndarray) or arr.dtype == np.int64
                              else arr.astype(np.int64))
                dim += 1
            else:
                raise DTypeError(f"getitem: index arrays must be integer or boolean, got dtype "
                                 f"{arr.dtype}")
    return tuple(spec), arrays


def _mask_to_arrays(mask, x_shape, dim):
    if getattr(mask, "_value", 0) is None:
        raise TracingError(
            "getitem: a boolean mask of a traced tensor cannot be used as an index while "
            "tracing, because the result's shape depends on the data; use "
            "en.where(mask, x, 0) to keep the shape, or compute the mask eagerly")
    value = np.asarray(mask)
    if value.ndim == 0:
        raise ShapeError("getitem: a zero-dimensional boolean mask is not supported; use en.where")
    for i, size in enumerate(value.shape):
        d = x_shape[dim + i]
        if d is not None and d != size and size != 0:   # (numpy: an empty mask dim fits any)
            raise IndexShapeError(f"getitem: boolean index did not match the indexed tensor along "
                             f"dimension {dim + i}: the dimension has size {d}, the mask {size}")
    return [np.asarray(a, dtype=np.int64) for a in np.nonzero(value)]


def build_index(spec, arrays):
    """The numpy index a ``spec`` and its index arrays stand for."""
    out = []
    for item in spec:
        kind = item[0]
        if kind == "int":
            out.append(item[1])
        elif kind == "slice":
            out.append(slice(item[1], item[2], item[3]))
        elif kind == "newaxis":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        else:
            out.append(arrays[item[1]])
    return tuple(out)


# ---- the shape rule --------------------------------------------------------
def index_shape(name, x, index_avals, spec):
    """The shape of ``x[index]`` by numpy's rules; dims may be ``None``."""
    shape = x[0]
    for a in index_avals:
        if a[1] not in _INDEX_DTYPES:
            raise DTypeError(f"{name}: index arrays must be integers, got "
                             f"{describe_inputs([x] + list(index_avals))}")
    ndim = len(shape)
    used = sum(1 for it in spec if it[0] in ("int", "slice", "array"))
    if used > ndim:
        raise IndexShapeError(f"{name}: too many indices for {describe_inputs([x])}: "
                         f"{ndim} dimension(s), but {used} were indexed")
    has_arrays = any(it[0] == "array" for it in spec)
    advanced = [i for i, it in enumerate(spec)
                if it[0] == "array" or (has_arrays and it[0] == "int")]
    out: list[int | None] = []   # the output dims of the basic part, with a marker where arrays go
    adv_at = None    # position in ``out`` of the first advanced item
    dim = 0
    for it in spec:
        kind = it[0]
        if kind == "newaxis":
            out.append(1)
            continue
        if kind == "ellipsis":
            out.extend(shape[dim:dim + ndim - used])
            dim += ndim - used
            continue
        d = shape[dim]
        if kind == "int":
            if d is not None and not -d <= it[1] < d:
                raise IndexShapeError(f"{name}: index {it[1]} is out of range for dimension {dim} "
                                 f"of {describe_inputs([x])} (size {d})")
            if has_arrays and adv_at is None:
                adv_at = len(out)
        elif kind == "slice":
            out.append(None if d is None else len(range(*slice(*it[1:]).indices(d))))
        else:
            if adv_at is None:
                adv_at = len(out)
        dim += 1
    out.extend(shape[dim:])
    if not advanced:
        return tuple(out)
    adv_shape = broadcast_shapes(*[index_avals[it[1]][0] for it in spec if it[0] == "array"],
                                 op_name=name)
    # numpy: advanced dims replace the indexed dims when the advanced items are
    # next to each other in the index, else they go first.
    contiguous = advanced[-1] - advanced[0] + 1 == len(advanced)
    at = adv_at if contiguous else 0
    return tuple(out[:at]) + tuple(adv_shape) + tuple(out[at:])


def _range_error(name, x, index, err):
    return IndexShapeError(f"{name}: {err} (indexing {describe_inputs([(x.shape, x.dtype)])} "
                      f"with {index!r})")


# ---- getitem ----------------------------------------------------------------
def _getitem_eval(x, *index_avals, spec):
    return (index_shape("getitem", x, index_avals, spec), x[1])


def _getitem_impl(x, *arrays, spec):
    index = build_index(spec, arrays)
    try:
        return x[index]
    except IndexError as err:
        raise _range_error("getitem", x, index, err) from None


def _getitem_vjp(g, out, x, *arrays, spec):
    return (scatter_add_op_apply(creation.zeros_like(x), g, arrays, spec),) + (None,) * len(arrays)


getitem_op = register(Op("getitem", _getitem_impl, _getitem_eval, _getitem_vjp,
                         dtypes=dtypes.ALL, generic=index_generic.getitem,
                         doc="numpy indexing ``x[index]``; index arrays are extra inputs."))
declare(getitem_op, onnx=("Slice",), chunks=chunk_rules.getitem)


def getitem(x, index):
    """``x[index]`` with numpy semantics: ints, slices, None, ``...``, integer
    arrays (lists, numpy arrays, int tensors) and concrete boolean masks.

    Example:
        >>> import engine as en
        >>> x = en.reshape(en.arange(6), (2, 3))
        >>> x[:, ::-1].numpy()
        array([[2, 1, 0],
               [5, 4, 3]])
        >>> x[x > 2].numpy()
        array([3, 4, 5])
    """
    index, new_axis = zero_d_masks(index, len(_shape_of(x)))
    spec, arrays = parse_index(_shape_of(x), index)
    out = apply(getitem_op, x, *_on_backend_of(x, arrays), spec=spec)
    if new_axis is not None:       # a 0-d boolean's axis: moved first, or emptied
        place, empty, front = new_axis
        if front and place:
            order = (place,) + tuple(a for a in range(len(out.shape)) if a != place)
            out = transpose(out, order)
            place = 0
        if empty:
            out = getitem(out, (slice(None),) * place + (slice(0, 0),))
    return out


def _is_zero_d_bool(item):
    if isinstance(item, (bool, np.bool_)):
        return True
    return (getattr(item, "dtype", None) == np.bool_ and tuple(getattr(item, "shape", (1,))) == ()
            and getattr(item, "_value", 0) is not None)


def zero_d_masks(index, ndim=None):
    """numpy reads 0-d boolean index items (``x[True]``, ``x[en.tensor(False)]``) together
    as one new axis of length 1 (all true) or 0: the index with ``None`` in their place,
    and where that axis is: None (no 0-d boolean, or a true one in place), else
    ``(place, empty)``. ``ndim`` (the indexed tensor's) places it after an ellipsis.
    Integers apart from the boolean make numpy put the axis first, as for advanced
    indices: ``place`` is then 0 and the axis moves there."""
    items = index if isinstance(index, tuple) else (index,)
    flags = [_is_zero_d_bool(i) for i in items]
    if not any(flags):
        return index, None
    if any(_array_item(i) is not None and not f for i, f in zip(items, flags)
           if not isinstance(i, (slice, int, np.integer)) and i is not None and i is not Ellipsis):
        raise ShapeError("getitem: a 0-d boolean index together with index arrays is not "
                         "supported; apply the boolean first (x[mask]) or use en.where")
    first = flags.index(True)
    on = all(bool(np.asarray(i)) for i, f in zip(items, flags) if f)
    kept = tuple(None if k == first else i for k, (i, f) in enumerate(zip(items, flags))
                 if not f or k == first)
    at = kept.index(None, sum(1 for f in flags[:first] if not f))   # the new axis' item
    # its place in the result: one per slice or None before it (ints drop a dim), and
    # the dims an ellipsis before it stands for
    place = sum(1 for i in kept[:at] if isinstance(i, slice) or i is None)
    if any(i is Ellipsis for i in kept[:at]):
        if ndim is None:
            raise ShapeError("getitem: a 0-d boolean after an ellipsis needs the tensor's "
                             "rank; use en.where")
        place += ndim - sum(1 for i in kept if i is not None and i is not Ellipsis)
    advanced = [k for k, (i, f) in enumerate(zip(items, flags))
                if f or isinstance(i, (int, np.integer)) and not isinstance(i, bool)]
    front = len(advanced) > 1 and advanced[-1] - advanced[0] + 1 != len(advanced)
    if on and not front:
        return kept, None
    return kept, (place, not on, front)


def _on_backend_of(x, arrays):
    """Index arrays the index was made of (lists, numpy arrays, masks) are index
    data: they go to the back end of a concrete ``x`` (as that library's arrays)."""
    if not arrays or getattr(x, "_value", None) is None:
        return arrays
    backend = getattr(x, "backend", None)
    if backend is None or backend.numpy_arrays:
        return arrays
    return [backend.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays]


def _shape_of(x):
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


# ---- scatter_add -------------------------------------------------------------
def _scatter_add_eval(x, updates, *index_avals, spec):
    if not np.can_cast(updates[1], x[1], "same_kind"):
        raise DTypeError(f"scatter_add: cannot add updates of dtype {updates[1]} into "
                         f"{describe_inputs([x])}")
    check_fits("scatter_add", "updates", updates, index_shape("scatter_add", x, index_avals, spec),
               x)
    return x


def check_fits(name, what, values, target, x):
    """Raise ``name``'s ShapeError unless ``values`` (an aval) broadcast to the indexed
    shape ``target`` of ``x`` (an op that writes values at an index)."""
    try:
        shape = broadcast_shapes(values[0], target, op_name=name)
    except ShapeError:
        shape = None
    if shape is None or len(shape) != len(target) or any(
            a is not None and b is not None and a != b for a, b in zip(shape, target)):
        raise ShapeError(f"{name}: {what} {describe_inputs([values])} do not broadcast "
                         f"to the indexed shape {target} of {describe_inputs([x])}")


def _scatter_add_impl(x, updates, *arrays, spec):
    index = build_index(spec, arrays)
    out = np.array(x, copy=True)
    try:
        if arrays:
            np.add.at(out, index, updates)   # repeated indices accumulate
        else:
            out[index] += updates            # a basic index never repeats a position
    except IndexError as err:
        raise _range_error("scatter_add", x, index, err) from None
    return out


def _scatter_add_vjp(g, out, x, updates, *arrays, spec):
    gu = apply(getitem_op, g, *arrays, spec=spec)
    return (g, unbroadcast(gu, updates.shape)) + (None,) * len(arrays)


scatter_add_op = register(Op("scatter_add", _scatter_add_impl, _scatter_add_eval,
                             _scatter_add_vjp, dtypes=dtypes.ALL, generic=index_generic.scatter_add,
                             doc="A copy of ``x`` with ``updates`` added at ``x[index]``."))
declare(scatter_add_op, onnx=None)


def scatter_add_op_apply(x, updates, arrays, spec):
    """Apply ``scatter_add`` with an already parsed index (used by VJPs)."""
    return apply(scatter_add_op, x, updates, *arrays, spec=spec)


def scatter_add(x, index, updates):
    """A copy of ``x`` with ``updates`` added at ``x[index]`` (repeated indices add up).

    ``index`` takes the same forms as :func:`getitem`; ``updates`` must
    broadcast to the shape of ``x[index]``.

    Example:
        >>> import engine as en
        >>> en.scatter_add(en.zeros(3), [0, 0, 2], en.ones(3)).numpy()
        array([2., 0., 1.])
    """
    spec, arrays = parse_index(_shape_of(x), index)
    return apply(scatter_add_op, x, updates, *_on_backend_of(x, arrays), spec=spec)




# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
declare(getitem_op, jvp=_rules.jvp_linear(getitem_op, linear=(0,)))
declare(scatter_add_op, jvp=_rules.jvp_linear(scatter_add_op, linear=(0, 1)))

_ALL = ("slice", None, None, None)


def _advanced_split(spec):
    """Whether the index has advanced items (arrays, and ints beside them) that are not
    next to each other: numpy then puts their dims first, before the batch axis."""
    if not any(it[0] == "array" for it in spec):
        return False
    at = [i for i, it in enumerate(spec) if it[0] in ("array", "int")]
    return at[-1] - at[0] + 1 != len(at)


def _getitem_batch(size, args, dims, *, spec):
    if any(d is not None for d in dims[1:]):
        return NotImplemented    # batched index arrays: one gather per element
    x, arrays = _rules.move_to_front(args[0], dims[0]), args[1:]
    out = apply(getitem_op, x, *arrays, spec=(_ALL,) + tuple(spec))
    if _advanced_split(spec):
        return out, len(broadcast_shapes(*[tuple(a.shape) for a in arrays], op_name="getitem"))
    return out, 0


def write_batch_rule(op):
    """The batching rule of an op that writes values into ``x`` at an index, taking
    ``(x, values, *index arrays, spec=)`` (``scatter_add``, ``index_update``): the batch
    axis first in x (broadcast when only the values are batched) and in the values,
    and a leading full slice in the index. Batched index arrays fall back to a loop."""
    def rule(size, args, dims, *, spec):
        if any(d is not None for d in dims[2:]) or _advanced_split(spec):
            return NotImplemented
        (x, values), arrays = args[:2], args[2:]
        dx, dv = dims[:2]
        element = tuple(x.shape) if dx is None else tuple(x.shape[:dx] + x.shape[dx + 1:])
        x = _rules.move_to_front(x, dx) if dx is not None else \
            apply(broadcast_to_op, x, shape=(size,) + element)
        if dv is not None:
            values = _rules.move_to_front(values, dv)
            target = index_shape(op.name, (element, x.dtype),
                                 [(tuple(a.shape), a.dtype) for a in arrays], spec)
            lead = len(target) - (values.ndim - 1)
            if lead > 0:
                values = values.reshape((size,) + (1,) * lead + tuple(values.shape[1:]))
        return apply(op, x, values, *arrays, spec=(_ALL,) + tuple(spec)), 0
    return rule


declare(getitem_op, batch=_getitem_batch)
declare(scatter_add_op, batch=write_batch_rule(scatter_add_op))


__all__ = ["getitem", "getitem_op", "scatter_add", "scatter_add_op"]

# The compiled lowering writes an integer index or a slice of the leading axis as a view
# (graph/lowering/numba/numba_source.py).
declare(getitem_op, numba_form="leading_index")


def _getitem_python_form(avals, params):
    """``x[index]`` written as Python, for a basic index (ints, slices, None, ``...``) of a
    static shape: its ints were checked against that shape when it was traced, so the
    expression cannot raise. Else None (the kernel, which names the op in its errors).

    Example:
        >>> _getitem_python_form([((4, 3), None)], {"spec": (("slice", 1, None, None),
        ...                                                  ("int", -1))})
        '{0}[1:, -1]'
    """
    if len(avals) != 1:              # index arrays: the kernel
        return None
    shape = avals[0][0]
    if shape is None or None in shape:
        return None
    items = []
    for item in params["spec"]:
        kind = item[0]
        if kind == "int":
            items.append(repr(item[1]))
        elif kind == "slice":
            bounds = item[1:] if item[3] is not None else item[1:3]
            items.append(":".join("" if b is None else repr(b) for b in bounds))
        elif kind == "newaxis":
            items.append("None")
        elif kind == "ellipsis":
            items.append("...")
        else:
            return None
    if not items:
        return None
    return "{0}[" + ", ".join(items) + "]"


declare(getitem_op, python_form=_getitem_python_form)
