"""``pad``: numpy's ``np.pad`` with the modes ``constant``, ``edge``, ``reflect``,
``symmetric`` and ``wrap``, one op with an ONNX form (``Pad``) for the first three.

Every mode but ``constant`` reads the padded tensor as ``x`` at an index per axis
(``edge`` clamps, ``reflect`` / ``symmetric`` / ``wrap`` fold the positions
periodically), so the gradient adds the cotangent back through those indices, axis
by axis (a scatter-add, written in engine ops); ``constant``'s gradient is the
middle slice.

Example:
    >>> import engine as en
    >>> en.pad(en.tensor([1, 2, 3]), (2, 1), mode="reflect").numpy()
    array([3, 2, 1, 2, 3, 2])
"""
import numpy as np

from .. import dtypes
from ..errors import ShapeError, describe_inputs
from ..modes import apply
from ..op import Op, declare, register
from . import _rules, creation, indexing
from ._args import at_user_line
from .cumulative import along, as_tensor

MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def source_index(n, before, after, mode):
    """For each position of an axis of size ``n`` padded by ``before`` and ``after``, the
    position of ``x`` it copies (every mode but ``constant``).

    Example:
        >>> source_index(3, 2, 1, "reflect").tolist()
        [2, 1, 0, 1, 2, 1]
    """
    p = np.arange(-before, n + after, dtype=np.int64)
    if mode == "edge":
        return np.clip(p, 0, n - 1)
    if mode == "wrap":
        return p % n
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(p)
        q = p % (2 * (n - 1))
        return np.where(q < n, q, 2 * (n - 1) - q)
    q = p % (2 * n)   # symmetric: the edge value repeats
    return np.where(q < n, q, 2 * n - 1 - q)


def _pad_eval(x, *, widths, mode, value):
    if mode not in MODES:
        raise ShapeError(f"pad: mode {mode!r} is not one of {', '.join(MODES)}")
    if len(widths) != len(x[0]):
        raise ShapeError(f"pad: {len(widths)} pairs of widths for {describe_inputs([x])}")
    shape = []
    for a, ((before, after), d) in enumerate(zip(widths, x[0])):
        if before < 0 or after < 0:
            raise ShapeError(f"pad: negative widths {widths[a]} for axis {a}")
        if mode != "constant" and d == 0 and (before or after):
            raise ShapeError(f"pad: mode {mode!r} cannot pad the empty axis {a} of "
                             f"{describe_inputs([x])}")
        shape.append(None if d is None else d + before + after)
    return (tuple(shape), x[1])


def _pad_impl(x, *, widths, mode, value):
    if not widths:   # a 0-d input (np.pad cannot read an empty list of pairs as ints)
        return np.array(x, copy=True)
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value, x.dtype))
    return np.pad(x, widths, mode=mode)


def _pad_vjp(g, out, x, *, widths, mode, value):
    for axis in range(len(widths) - 1, -1, -1):
        before, after = widths[axis]
        if not before and not after:
            continue
        n = x.shape[axis]
        middle = along(g, axis, slice(before, before + n))
        if mode == "constant":
            g = middle
        else:
            index = (slice(None),) * axis + (source_index(n, before, after, mode),)
            g = indexing.scatter_add(creation.zeros_like(middle), index, g)
    return (g,)


def _pad_generic(be, x, *, widths, mode, value):
    xp = be.xp
    for axis, (before, after) in enumerate(widths):
        if not before and not after:
            continue
        n = x.shape[axis]
        if mode == "constant":
            fill = np.asarray(value).astype(be.dtype_of(x)).item()
            parts = [xp.full(x.shape[:axis] + (w,) + x.shape[axis + 1:], fill, dtype=x.dtype)
                     for w in (before, after)]
            x = xp.concat([parts[0], x, parts[1]], axis=axis)
        else:
            index = xp.asarray(source_index(n, before, after, mode), dtype=xp.int64)
            x = xp.take(x, index, axis=axis)
    return x


pad_op = register(Op("pad", _pad_impl, _pad_eval, _pad_vjp, n_inputs=1, dtypes=dtypes.ALL,
                     generic=_pad_generic,
                     doc="``x`` padded by ``widths`` (one (before, after) pair per axis)."))
declare(pad_op, onnx=("Pad",))


def _widths(name, pad_width, ndim):
    arr = np.asarray(pad_width)
    if arr.dtype.kind not in "iu":
        raise ShapeError(f"pad: pad_width must hold integers, got {pad_width!r}{at_user_line()}")
    try:
        arr = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ShapeError(f"pad: pad_width {pad_width!r} does not fit an input of rank {ndim} "
                         f"(one (before, after) pair per axis){at_user_line()}") from None
    return tuple((int(b), int(a)) for b, a in arr)


def pad(x, pad_width, mode="constant", constant_values=0):
    """``x`` padded by ``pad_width`` (an int, a (before, after) pair, or one pair per
    axis), like ``np.pad``. Modes: ``constant`` (with ``constant_values``), ``edge``
    (the edge value), ``reflect`` (mirrored without the edge), ``symmetric`` (mirrored
    with it), ``wrap`` (the other end).

    Example:
        >>> import engine as en
        >>> en.pad(en.ones((1, 2)), ((0, 1), (1, 0))).numpy()
        array([[0., 1., 1.],
               [0., 0., 0.]])
    """
    x = as_tensor(x)
    if np.ndim(constant_values) != 0:
        raise ShapeError(f"pad: constant_values must be one number, got {constant_values!r}"
                         f"{at_user_line()}")
    value = constant_values.item() if hasattr(constant_values, "item") else constant_values
    return apply(pad_op, x, widths=_widths("pad", pad_width, x.ndim), mode=mode,
                 value=value if mode == "constant" else 0)


__all__ = ["pad", "pad_op"]


# ---- forward mode and batching (see engine.op.RULE_KINDS) ---------------------------------------
def _pad_jvp(primals, tangents, out, *, widths, mode, value):
    # Linear in x; the padding value is a constant, so its tangent is 0.
    return apply(pad_op, tangents[0], widths=widths, mode=mode, value=0)


def _pad_batch(size, args, dims, *, widths, **params):
    x = _rules.move_to_front(args[0], dims[0])
    return apply(pad_op, x, widths=((0, 0),) + tuple(widths), **params), 0


declare(pad_op, jvp=_pad_jvp, batch=_pad_batch)
