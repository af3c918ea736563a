"""Products of vectors and tensors, as numpy names them: ``kron``, ``inner``, ``vdot``,
``cross``, ``vecdot``, ``matrix_transpose`` (composites of registered ops, so their
gradients of any order and their traces come from those ops)."""
from .. import dtypes
from ..errors import ShapeError
from ..lifting import TensorLike
from ..modes import apply, current_mode
from ..op import lookup
from ..shapes import normalize_axis
from ._args import at_user_line
from . import elementwise, shape_ops
from .einsum import einsum, tensordot
from .join import stack
from .linalg import matmul


def _tensors(*xs):
    if all(isinstance(x, TensorLike) for x in xs):
        return xs
    return tuple(current_mode().lift(list(xs)))


def matrix_transpose(x):
    """Swap the last two axes of ``x`` (at least 2 dims).

    Example:
        >>> import engine as en
        >>> en.matrix_transpose(en.ones((2, 3, 4))).shape
        (2, 4, 3)
    """
    (x,) = _tensors(x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose: expected at least 2 dims, got "
                         f"{x.dtype}{list(x.shape)}{at_user_line()}")
    nd = x.ndim
    return shape_ops.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def inner(a, b):
    """Sum of products over the last axes of ``a`` and ``b`` (numpy's ``inner``).

    Example:
        >>> import engine as en
        >>> float(en.inner(en.tensor([1.0, 2.0]), en.tensor([3.0, 4.0])))
        11.0
    """
    a, b = _tensors(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return elementwise.mul(a, b)
    if None not in (a.shape[-1], b.shape[-1]) and a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"inner: the last axes of {a.dtype}{list(a.shape)} and "
                         f"{b.dtype}{list(b.shape)} differ{at_user_line()}")
    return tensordot(a, b, axes=([-1], [-1]))


def _conj(x):
    # engine.ops.complex_parts registers its rules over every op, so it is imported after
    # this module: its conj op is found in the registry when called.
    return apply(lookup("conj"), x)


def vdot(a, b):
    """Dot product of ``a`` and ``b`` flattened (same number of elements).

    Example:
        >>> import engine as en
        >>> float(en.vdot(en.ones((2, 2)), en.ones(4)))
        4.0
    """
    a, b = _tensors(a, b)
    if a.dtype in dtypes.COMPLEX:    # numpy's vdot conjugates its first argument
        a = _conj(a)
    fa, fb = shape_ops.reshape(a, (-1,)), shape_ops.reshape(b, (-1,))
    if None not in (fa.shape[0], fb.shape[0]) and fa.shape[0] != fb.shape[0]:
        raise ShapeError(f"vdot: inputs {a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)} "
                         f"have different numbers of elements{at_user_line()}")
    return matmul(fa, fb)


def kron(a, b):
    """Kronecker product: blocks ``a[i, j] * b`` (numpy's ``kron``; the shorter shape is
    padded with leading ones).

    Example:
        >>> import engine as en
        >>> en.kron(en.eye(2), en.ones((2, 3))).shape
        (4, 6)
    """
    a, b = _tensors(a, b)
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + tuple(a.shape)
    sb = (1,) * (nd - b.ndim) + tuple(b.shape)
    if None in sa + sb:
        raise ShapeError(f"kron: needs static shapes, got {list(sa)} and {list(sb)}"
                         f"{at_user_line()}")
    ai = shape_ops.reshape(a, tuple(d for s in sa for d in (s, 1)))
    bi = shape_ops.reshape(b, tuple(d for s in sb for d in (1, s)))
    return shape_ops.reshape(elementwise.mul(ai, bi), tuple(x * y for x, y in zip(sa, sb)))


def vecdot(x1, x2, axis=-1):
    """Dot products of the vectors along ``axis`` (inputs broadcast against each other).

    Example:
        >>> import engine as en
        >>> en.vecdot(en.ones((3, 4)), en.ones(4)).numpy().tolist()
        [4.0, 4.0, 4.0]
    """
    x1, x2 = _tensors(x1, x2)
    nd = max(x1.ndim, x2.ndim)
    if min(x1.ndim, x2.ndim) == 0:
        raise ShapeError(f"vecdot: inputs need at least one dim, got {x1.dtype}{list(x1.shape)}"
                         f" and {x2.dtype}{list(x2.shape)}{at_user_line()}")
    ax = normalize_axis(axis, nd, "vecdot") - nd        # counted from the end
    fits = -x1.ndim <= ax and -x2.ndim <= ax
    if not fits or None not in (x1.shape[ax], x2.shape[ax]) and x1.shape[ax] != x2.shape[ax]:
        raise ShapeError(f"vecdot: axis {axis} does not have one size in {x1.dtype}"
                         f"{list(x1.shape)} and {x2.dtype}{list(x2.shape)}{at_user_line()}")
    if x1.dtype in dtypes.COMPLEX:   # the standard's (and numpy's) sum(conj(x1) * x2)
        x1 = _conj(x1)
    # An einsum keeps numpy's result dtype (a sum would widen int32 to int64).
    x1 = shape_ops.transpose(x1, _axis_last(x1.ndim, ax))
    x2 = shape_ops.transpose(x2, _axis_last(x2.ndim, ax))
    return einsum("...i,...i->...", x1, x2)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors along an axis, as ``np.cross``: the vectors lie along
    ``axisa`` of ``a`` and ``axisb`` of ``b`` (``axis``, when given, sets all three), the
    other axes broadcast, and the result's vectors lie along ``axisc``. A 2-vector is
    taken with a zero z; two 2-vectors give the z component alone (no vector axis).

    Example:
        >>> import engine as en
        >>> en.cross(en.tensor([1.0, 0, 0]), en.tensor([0.0, 1, 0])).numpy().tolist()
        [0.0, 0.0, 1.0]
        >>> en.cross(en.tensor([[1.0, 0], [0, 0], [0, 1]]), en.tensor([0.0, 1, 0]),
        ...          axisa=0).numpy().tolist()
        [[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]]
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _tensors(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"cross: inputs need at least one dim, got {a.dtype}{list(a.shape)} "
                         f"and {b.dtype}{list(b.shape)}{at_user_line()}")
    axisa = _user_axis(axisa, a.ndim, "axisa")
    axisb = _user_axis(axisb, b.ndim, "axisb")
    na, nb = a.shape[axisa], b.shape[axisb]
    if na not in (2, 3) or nb not in (2, 3):
        raise ShapeError(f"cross: the vectors (axisa {axisa} of {a.dtype}{list(a.shape)}, axisb "
                         f"{axisb} of {b.dtype}{list(b.shape)}) must have 2 or 3 elements"
                         f"{at_user_line()}")
    a = shape_ops.transpose(a, _axis_last(a.ndim, axisa))
    b = shape_ops.transpose(b, _axis_last(b.ndim, axisb))
    x = [a[..., i] for i in range(na)]
    y = [b[..., i] for i in range(nb)]
    if na == 2 and nb == 2:
        return x[0] * y[1] - x[1] * y[0]
    z = x[0] * y[1] - x[1] * y[0]
    if na == 2:        # a's z is zero
        parts = [x[1] * y[2], -(x[0] * y[2]), z]
    elif nb == 2:      # b's z is zero
        parts = [-(x[2] * y[1]), x[2] * y[0], z]
    else:
        parts = [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], z]
    out = stack(parts, axis=-1)
    axc = _user_axis(axisc, out.ndim, "axisc")
    return shape_ops.transpose(out, _axis_back(out.ndim, axc)) if axc != out.ndim - 1 else out


def _user_axis(axis, ndim, what):
    try:
        return normalize_axis(axis, ndim, f"cross ({what})")
    except ShapeError as err:
        raise ShapeError(f"{err}{at_user_line()}") from None


def _axis_last(nd, axis):
    ax = axis % nd
    return tuple(i for i in range(nd) if i != ax) + (ax,)


def _axis_back(nd, ax):
    order = list(range(nd - 1))
    order.insert(ax, nd - 1)
    return tuple(order)


__all__ = ["kron", "inner", "vdot", "cross", "vecdot", "matrix_transpose"]
