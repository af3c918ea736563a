"""numpy's functions that answer a question about arrays with a Python value:
``ndim``, ``shape``, ``size``, ``result_type``, ``can_cast``, ``common_type``,
``min_scalar_type``, ``iscomplexobj``, ``isrealobj``, ``may_share_memory``,
``shares_memory``, ``array_equal``, ``array_equiv``, and the printers
``array_repr``, ``array_str``, ``array2string``.

Each returns what numpy returns (an int, a tuple, a dtype, a bool, a string), taking a
tensor's shape and dtype where numpy takes an array's. The ones that read values
(``array_equal``, the printers, ``min_scalar_type`` of a 0-d tensor) need them to
exist: while tracing they raise :class:`TracingError`. The printers format the
values as numpy formats an array, so code comparing their text with numpy's works.

Example:
    >>> import engine as en
    >>> x = en.ones((2, 3), dtype="float32")
    >>> en.shape(x), en.ndim(x), en.size(x, 1), en.result_type(x, 1.0)
    ((2, 3), 2, 3, dtype('float32'))
    >>> en.array_equal(x, en.ones((2, 3))), en.array_str(en.tensor([1, 2]))
    (True, '[1 2]')
"""
import numpy as np

from ..errors import TracingError, describe_args
from ..lifting import TensorLike
from ..modes import current_mode
from ._args import at_user_line
from .compare import equal, logical_and, logical_or
from .cumulative import as_tensor
from .numpy_names import all as _all
from .shape_ops import broadcast_to

__all__ = ["ndim", "shape", "size", "result_type", "can_cast", "common_type",
           "min_scalar_type", "iscomplexobj", "isrealobj", "may_share_memory",
           "shares_memory", "array_equal", "array_equiv", "array_repr", "array_str",
           "array2string"]


def _spec(x):
    """A tensor as numpy sees its type: an empty array of its dtype (no values read)."""
    return np.empty(0, dtype=x.dtype) if isinstance(x, TensorLike) else x


def _values(name, x):
    """A tensor's values as a numpy array (refused while tracing); others as numpy's."""
    if not isinstance(x, TensorLike):
        return np.asarray(x)
    if not current_mode().is_concrete:
        raise TracingError(f"{name}: needs the values of {_describe(x)}, which are not known "
                           f"while tracing; call it eagerly{at_user_line()}")
    return np.asarray(x.numpy())


def _describe(x):
    """A tensor as it describes itself (a batched or dual one says so); a variable, which
    has no such method, by its dtype and shape."""
    describe = getattr(x, "_describe", None)
    return describe() if describe is not None else describe_args([x])


def ndim(a):
    """The number of dimensions of ``a``, like ``np.ndim``.

    Example:
        >>> import engine as en
        >>> en.ndim(en.ones((2, 3))), en.ndim(5.0)
        (2, 0)
    """
    return len(a.shape) if isinstance(a, TensorLike) else np.ndim(a)


def shape(a):
    """The shape of ``a`` as a tuple, like ``np.shape``.

    Example:
        >>> import engine as en
        >>> en.shape(en.ones((2, 3))), en.shape([1, 2])
        ((2, 3), (2,))
    """
    return tuple(a.shape) if isinstance(a, TensorLike) else np.shape(a)


def size(a, axis=None):
    """The number of elements of ``a`` (along ``axis``, an int or a tuple of them), like
    ``np.size``.

    Example:
        >>> import engine as en
        >>> en.size(en.ones((2, 3))), en.size(en.ones((2, 3)), axis=0)
        (6, 2)
    """
    if not isinstance(a, TensorLike):
        return np.size(a, axis)
    return np.size(np.broadcast_to(np.empty((), dtype=np.int8), tuple(a.shape)), axis)


def result_type(*arrays_and_dtypes):
    """The dtype numpy's promotion gives the arguments (tensors count as arrays of their
    dtype, Python scalars are weak), like ``np.result_type``.

    Example:
        >>> import engine as en
        >>> en.result_type(en.tensor([1], dtype="int8"), en.float32), en.result_type(en.tensor([1]), 2.5)
        (dtype('float32'), dtype('float64'))
    """
    return np.result_type(*(a.dtype if isinstance(a, TensorLike) else a
                            for a in arrays_and_dtypes))


def can_cast(from_, to, casting="safe"):
    """Whether ``from_`` (a tensor's dtype or a dtype) casts to ``to`` under the rule
    ``casting``, like ``np.can_cast``.

    Example:
        >>> import engine as en
        >>> en.can_cast(en.tensor([1], dtype="int32"), "float64"), en.can_cast(en.float64, "int64")
        (True, False)
    """
    return np.can_cast(from_.dtype if isinstance(from_, TensorLike) else from_,
                       to.dtype if isinstance(to, TensorLike) else to, casting)


def common_type(*arrays):
    """The inexact scalar type numpy's ``common_type`` gives the arrays (integers count as
    float64), like ``np.common_type``.

    Example:
        >>> import engine as en
        >>> en.common_type(en.tensor([1], dtype="float32"), en.tensor([1]))
        <class 'numpy.float64'>
    """
    return np.common_type(*(_spec(a) for a in arrays))


def min_scalar_type(a):
    """The smallest dtype that holds ``a``'s value when ``a`` is a scalar or 0-d, its dtype
    otherwise, like ``np.min_scalar_type``.

    Example:
        >>> import engine as en
        >>> en.min_scalar_type(en.tensor(10)), en.min_scalar_type(en.tensor([10]))
        (dtype('uint8'), dtype('int64'))
    """
    if isinstance(a, TensorLike) and len(a.shape):
        return a.dtype
    return np.min_scalar_type(_values("min_scalar_type", a))


def iscomplexobj(x):
    """Whether ``x``'s dtype is complex (whatever its values), like ``np.iscomplexobj``.

    Example:
        >>> import engine as en
        >>> en.iscomplexobj(en.tensor([1 + 0j])), en.iscomplexobj(en.tensor([1.0]))
        (True, False)
    """
    return x.dtype.kind == "c" if isinstance(x, TensorLike) else np.iscomplexobj(x)


def isrealobj(x):
    """Whether ``x``'s dtype is not complex, like ``np.isrealobj``.

    Example:
        >>> import engine as en
        >>> en.isrealobj(en.tensor([1.0]))
        True
    """
    return not iscomplexobj(x)


# ---- memory ------------------------------------------------------------------------------------
def _root(x):
    """The tensor whose memory ``x`` views (itself when it owns it); see engine.writes."""
    alias = getattr(x, "_alias", None)
    if isinstance(alias, tuple):         # a traced view: (root, steps)
        return alias[0]
    return alias if isinstance(alias, TensorLike) else x


def _memory(x):
    if not isinstance(x, TensorLike):
        return x
    value = getattr(x, "_value", None)
    return value if isinstance(value, np.ndarray) else None


def _share(a, b, test, max_work):
    ma, mb = _memory(a), _memory(b)
    if ma is not None and mb is not None:
        return bool(test(ma, mb) if max_work is None else test(ma, mb, max_work=max_work))
    # A traced tensor (or another back end's): the same memory when the same root.
    both = isinstance(a, TensorLike) and isinstance(b, TensorLike)
    return both and _root(a) is _root(b)


def may_share_memory(a, b, max_work=None):
    """Whether ``a`` and ``b`` might share memory (so a write to one might change the
    other), like ``np.may_share_memory``: a tensor shares its memory with its views
    (basic indexing, reshape, transpose ...; see ``engine.writes``).

    Example:
        >>> import engine as en
        >>> x = en.zeros(4)
        >>> en.may_share_memory(x, x[1:]), en.may_share_memory(x, x + 1)
        (True, False)
    """
    return _share(a, b, np.may_share_memory, max_work)


def shares_memory(a, b, max_work=None):
    """Whether ``a`` and ``b`` share memory (exactly: two views of disjoint parts do not),
    like ``np.shares_memory``.

    Example:
        >>> import engine as en
        >>> x = en.zeros(4)
        >>> en.shares_memory(x[:2], x[2:]), en.shares_memory(x[:3], x[2:])
        (False, True)
    """
    return _share(a, b, np.shares_memory, max_work)


# ---- equality ----------------------------------------------------------------------------------
def _both_nan(a1, a2):
    return logical_and(a1 != a1, a2 != a2)


def array_equal(a1, a2, equal_nan=False):
    """Whether ``a1`` and ``a2`` have the same shape and elements (NaNs equal with
    ``equal_nan``), a Python bool, like ``np.array_equal``.

    Example:
        >>> import engine as en
        >>> en.array_equal(en.tensor([1.0, 2.0]), [1, 2]), en.array_equal(en.ones(2), en.ones(3))
        (True, False)
    """
    a1, a2 = as_tensor(a1), as_tensor(a2)
    if tuple(a1.shape) != tuple(a2.shape):
        return False
    return _all_equal("array_equal", a1, a2, equal_nan)


def _all_equal(name, a1, a2, equal_nan):
    same = equal(a1, a2)
    if equal_nan and (a1.dtype.kind in "fc" or a2.dtype.kind in "fc"):
        same = logical_or(same, _both_nan(a1, a2))
    return bool(_values(name, _all(same)))


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast to one shape and are equal there, a Python bool,
    like ``np.array_equiv``.

    Example:
        >>> import engine as en
        >>> en.array_equiv(en.tensor([1, 2]), en.tensor([[1, 2], [1, 2]]))
        True
    """
    a1, a2 = as_tensor(a1), as_tensor(a2)
    try:
        common = np.broadcast_shapes(tuple(a1.shape), tuple(a2.shape))
    except ValueError:
        return False
    return _all_equal("array_equiv", broadcast_to(a1, common), broadcast_to(a2, common), False)


# ---- printing ----------------------------------------------------------------------------------
def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """numpy's repr of ``arr``'s values (``"array([1, 2])"``), like ``np.array_repr``;
    ``repr(t)`` is the tensor's own.

    Example:
        >>> import engine as en
        >>> en.array_repr(en.tensor([1.5, 2.0]))
        'array([1.5, 2. ])'
    """
    return np.array_repr(_values("array_repr", arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """numpy's str of ``a``'s values, like ``np.array_str``.

    Example:
        >>> import engine as en
        >>> en.array_str(en.tensor([[1, 2], [3, 4]]))
        '[[1 2]\\n [3 4]]'
    """
    return np.array_str(_values("array_str", a), max_line_width, precision, suppress_small)


def array2string(a, *args, **kwargs):
    """``a``'s values as text, with every option of ``np.array2string``.

    Example:
        >>> import engine as en
        >>> en.array2string(en.tensor([1.0, 2.5]), separator=", ")
        '[1. , 2.5]'
    """
    return np.array2string(_values("array2string", a), *args, **kwargs)
