"""Norms: ``vector_norm``, ``matrix_norm`` (the Array API's) and ``norm`` (numpy's
``ord``/``axis`` rules), composites of reductions and singular values.

Integer inputs are taken as float64, as numpy does.
"""
import math

from .. import dtypes
from ..names import also_named as _also_named
from ..errors import DomainError, ShapeError
from ..lifting import TensorLike
from ..modes import current_mode
from ..shapes import normalize_axes
from ._args import at_user_line, one_or_many
from . import compare, creation, elementwise, reduce, shape_ops
from .linalg_functions import svdvals
from .subgradients import root_with_zero_subgradient

_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _float_tensor(name, x):
    """``x`` as a tensor of a floating dtype: complex kept, bools and integers in float64."""
    x = x if isinstance(x, TensorLike) else current_mode().lift([x])[0]
    if x.dtype not in dtypes.INEXACT:
        if x.dtype not in dtypes.NUMERIC and x.dtype != dtypes.bool_:
            raise DomainError(f"{name}: unsupported dtype {x.dtype}{at_user_line()}")
        x = creation.cast(x, dtypes.float64)
    return x


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """The ``ord``-norm of the vectors along ``axis`` (all axes when None, as one
    vector): 2, 1, ``inf``, ``-inf``, 0 (the count of non-zeros) or any other ``p``.
    The gradient of a zero vector's norm is 0 (a subgradient, as in PyTorch).

    Example:
        >>> import engine as en
        >>> float(en.linalg.vector_norm(en.tensor([3.0, -4.0])))
        5.0
    """
    x = _float_tensor("vector_norm", x)
    if isinstance(ord, str) or ord is None:
        raise DomainError(f"vector_norm: invalid ord {ord!r} for vectors{at_user_line()}")
    if x.dtype in dtypes.COMPLEX:   # the norms of a complex vector are its moduli's
        x = elementwise.abs(x)
    axes = normalize_axes(tuple(axis) if isinstance(axis, list) else axis, x.ndim,
                          "vector_norm")
    kw = dict(axis=axes, keepdims=bool(keepdims))
    if ord == 2:
        return root_with_zero_subgradient(reduce.sum(x * x, **kw))
    a = elementwise.abs(x)
    if ord == 1:
        return reduce.sum(a, **kw)
    if ord == math.inf:
        return reduce.max(a, **kw)
    if ord == -math.inf:
        return reduce.min(a, **kw)
    if ord == 0:
        return reduce.sum(creation.cast(compare.not_equal(x, 0), x.dtype), **kw)
    p = float(ord)
    return root_with_zero_subgradient(reduce.sum(elementwise.pow(a, p), **kw), p)


def matrix_norm(x, keepdims=False, ord="fro"):
    """The ``ord``-norm of the matrices in the last two axes: 'fro', 'nuc', 1, -1
    (column sums), 2, -2 (singular values), ``inf``, ``-inf`` (row sums). The
    gradient of a zero matrix's Frobenius norm is 0 (a subgradient, as in PyTorch).

    Example:
        >>> import engine as en
        >>> float(en.linalg.matrix_norm(en.tensor([[1.0, -2.0], [3.0, 4.0]]), ord=1))
        6.0
    """
    x = _float_tensor("matrix_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"matrix_norm: expected at least 2 dims, got {x.dtype}{list(x.shape)}"
                         f"{at_user_line()}")
    if ord not in _MATRIX_ORDS:
        raise DomainError(f"matrix_norm: invalid ord {ord!r}; expected one of "
                          f"{_MATRIX_ORDS}{at_user_line()}")
    if x.dtype in dtypes.COMPLEX and ord not in ("nuc", 2, -2):
        x = elementwise.abs(x)    # entrywise norms: those of the moduli
    if ord == "fro":
        out = root_with_zero_subgradient(reduce.sum(x * x, axis=(-2, -1)))
    elif ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = reduce.sum(s, axis=-1) if ord == "nuc" else \
            reduce.max(s, axis=-1) if ord == 2 else reduce.min(s, axis=-1)
    else:
        # 1 / -1: the largest / smallest column sum; inf / -inf: row sum.
        sums = reduce.sum(elementwise.abs(x), axis=-2 if ord in (1, -1) else -1)
        out = reduce.max(sums, axis=-1) if ord in (1, math.inf) else reduce.min(sums, axis=-1)
    if keepdims:
        out = shape_ops.expand_dims(shape_ops.expand_dims(out, -1), -1)
    return out


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy's ``linalg.norm``: a vector norm over one axis, a matrix norm over two; with
    ``axis=None`` the 2-norm of all elements (``ord`` None), or the ``ord``-norm of a 1-D
    (vector) or 2-D (matrix) input.

    Example:
        >>> import engine as en
        >>> float(en.linalg.norm(en.tensor([[1.0, 2.0], [2.0, 4.0]])))
        5.0
        >>> en.linalg.norm(en.ones((2, 3)), ord=1, axis=1).numpy().tolist()
        [3.0, 3.0]
    """
    x = _float_tensor("norm", x)
    if axis is None:
        if ord is None:
            out = vector_norm(x, axis=None, keepdims=keepdims)
            return out
        if x.ndim == 1:
            axis = (0,)
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ShapeError(f"norm: ord={ord!r} with axis=None needs a 1-D or 2-D input, got "
                             f"{x.dtype}{list(x.shape)}{at_user_line()}")
    axes = one_or_many(axis)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise DomainError(f"norm: invalid ord {ord!r} for vectors{at_user_line()}")
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ShapeError(f"norm: axis must name 1 or 2 axes, got {axis!r}{at_user_line()}")
    a, b = normalize_axes(axes[0], x.ndim, "norm")[0], normalize_axes(axes[1], x.ndim, "norm")[0]
    if a == b:
        raise ShapeError(f"norm: duplicate axes {axis!r}{at_user_line()}")
    rest = [i for i in range(x.ndim) if i not in (a, b)]
    out = matrix_norm(shape_ops.transpose(x, tuple(rest) + (a, b)),
                      ord="fro" if ord is None else ord)
    if keepdims:
        for i in sorted((a, b)):
            out = shape_ops.expand_dims(out, i)
    return out


# The standard splits numpy's norm in two; its wrappers pass one or two axes.
_also_named(norm, array_api=("linalg.matrix_norm", "linalg.vector_norm"))
