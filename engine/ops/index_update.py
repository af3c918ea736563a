"""``index_update``: a copy of ``x`` with ``x[index]`` set to ``values``, the functional
form of a write ``x[index] = values``.

A write to a tensor (``engine/writes.py``) is this op: eagerly its result's values
are stored into the tensor's own memory; on a tape it is the recorded entry (so
gradients flow through writes); while tracing it is the node the written tensor
stands for from then on (as PyTorch's functionalization and TensorFlow's scatter
updates). The index takes every form ``x[index]`` reads (``engine/ops/indexing.py``);
``values`` broadcast to the shape of ``x[index]`` and are cast to ``x``'s dtype,
as numpy's assignment casts them.

Repeated positions of an integer-array index: the last write wins, as in numpy, and
the gradient of the values then goes to every repeat (as JAX documents for ``.at[].set``).

Example:
    >>> import engine as en
    >>> en.index_update(en.zeros(4), slice(1, 3), 7.0).numpy()
    array([0., 7., 7., 0.])
"""
import numpy as np

from .. import dtypes
from ..cost_model import cost
from ..errors import DTypeError, ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from . import _rules, creation, index_generic
from ._define import unbroadcast
from .indexing import (_on_backend_of, _range_error, _shape_of, build_index, getitem_op,
                       check_fits, index_shape, parse_index, write_batch_rule,
                       zero_d_masks)


def _eval(x, values, *index_avals, spec):
    if x[1].kind != "c" and values[1].kind == "c":
        raise DTypeError(f"index_update: cannot store complex values {describe_inputs([values])} "
                         f"into {describe_inputs([x])} (numpy would drop the imaginary part; "
                         "take en.real first)")
    check_fits("index_update", "values", values, index_shape("index_update", x, index_avals, spec),
               x)
    return x


def store(out, index, values):
    """``out[index] = values`` in place, with the op's error for an index out of range."""
    try:
        out[index] = values
    except IndexError as err:
        raise _range_error("index_update", out, index, err) from None


def _impl(x, values, *arrays, spec):
    out = np.array(x, copy=True)
    store(out, build_index(spec, arrays), values)
    return out


def _vjp(g, out, x, values, *arrays, spec):
    gx = apply(index_update_op, g, creation.zeros((), g.dtype), *arrays, spec=spec)
    gv = unbroadcast(apply(getitem_op, g, *arrays, spec=spec), values.shape)
    return (gx, gv) + (None,) * len(arrays)


def _generic(be, x, values, *arrays, spec):
    """The write against an Array API namespace: each position of ``x`` takes the value
    of the last index entry that names it (numpy's last write wins), else keeps its own."""
    xp = be.xp
    n = int(np.prod(tuple(x.shape), dtype=np.int64))
    where = index_generic.getitem(be, xp.reshape(xp.arange(n, dtype=xp.int64), tuple(x.shape)),
                                  *arrays, spec=spec, name="index_update")
    values = xp.reshape(xp.broadcast_to(be.astype(values, be.dtype_of(x)), tuple(where.shape)),
                        (-1,))
    positions = xp.reshape(where, (1, -1))
    m = positions.shape[1]
    flat = xp.reshape(x, (-1,))
    if m == 0 or n == 0:
        return xp.reshape(flat, tuple(x.shape))
    order = xp.reshape(xp.arange(m, dtype=xp.int64), (1, m))
    step = max(1, cost.segment_sum_block_elements // m)
    parts = []
    for start in range(0, n, step):
        targets = xp.reshape(xp.arange(start, min(n, start + step), dtype=xp.int64), (-1, 1))
        last = xp.max(xp.where(positions == targets, order, -1), axis=1)
        taken = xp.take(values, xp.where(last >= 0, last, 0), axis=0)
        parts.append(xp.where(last >= 0, taken, flat[start:min(n, start + step)]))
    out = parts[0] if len(parts) == 1 else xp.concat(parts)
    return xp.reshape(out, tuple(x.shape))


index_update_op = register(Op("index_update", _impl, _eval, _vjp, dtypes=dtypes.ALL,
                              generic=_generic,
                              doc="A copy of ``x`` with ``x[index]`` set to ``values``."))
declare(index_update_op, onnx=None,
        jvp=_rules.jvp_linear(index_update_op, linear=(0, 1)),
        batch=write_batch_rule(index_update_op))


def index_update_apply(x, values, arrays, spec):
    """Apply ``index_update`` with an already parsed index (used by writes)."""
    return apply(index_update_op, x, values, *arrays, spec=spec)


def index_update(x, index, values):
    """A copy of ``x`` with ``x[index]`` set to ``values`` (JAX's ``x.at[index].set``).

    ``index`` takes the same forms as ``x[index]``; ``values`` must broadcast to
    the shape of ``x[index]`` and are cast to ``x.dtype``. ``x[index] = values``
    on a tensor does the same and stores the result in ``x``.

    Example:
        >>> import engine as en
        >>> en.index_update(en.zeros((2, 2)), (0, 1), 5.0).numpy()
        array([[0., 5.],
               [0., 0.]])
    """
    index, new_axis = zero_d_masks(index, len(_shape_of(x)))
    if new_axis is not None and new_axis[1]:   # x[False]: no position is written (a copy)
        return creation.cast(x, x.dtype)
    if new_axis is not None:
        raise ShapeError("index_update: a true 0-d boolean apart from integer index items "
                         "is not supported; index with the integers alone")
    spec, arrays = parse_index(_shape_of(x), index)
    return apply(index_update_op, x, values, *_on_backend_of(x, arrays), spec=spec)


__all__ = ["index_update", "index_update_op"]
