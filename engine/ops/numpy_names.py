"""numpy's spellings that the families lack: ``concatenate`` and ``power`` (the same
functions as ``concat`` and ``pow``), and the truth reductions ``all`` and ``any``.

``all`` and ``any`` are composites: a count of the elements that are (not) zero,
so an empty axis gives numpy's ``True`` / ``False`` and they trace like any op.
They return bools and have no gradient.

Example:
    >>> import engine as en
    >>> x = en.tensor([[1.0, 0.0], [2.0, 3.0]])
    >>> en.all(x, axis=1).tolist(), bool(en.any(x)), en.concatenate([x, x]).shape
    ([False, True], True, (4, 2))
"""
from .compare import equal, greater, not_equal
from .creation import cast
from .elementwise import pow as _pow
from .join import concat
from .reduce import sum as _sum

__all__ = ["concatenate", "power", "all", "any"]

concatenate = concat
power = _pow


def _count(mask, axis, keepdims):
    return _sum(cast(mask, "int64"), axis=axis, keepdims=keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001  (numpy's name)
    """Whether any element of ``x`` along ``axis`` is non-zero, like ``np.any``.

    Example:
        >>> import engine as en
        >>> en.any(en.tensor([[0, 0], [0, 5]]), axis=0).tolist()
        [False, True]
    """
    return greater(_count(not_equal(x, 0), axis, keepdims), 0)


def all(x, axis=None, keepdims=False):  # noqa: A001  (numpy's name)
    """Whether every element of ``x`` along ``axis`` is non-zero, like ``np.all``.

    Example:
        >>> import engine as en
        >>> en.all(en.tensor([[1, 0], [2, 3]]), axis=1).tolist()
        [False, True]
    """
    return equal(_count(equal(x, 0), axis, keepdims), 0)
