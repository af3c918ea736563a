"""``en.r_`` and ``en.c_``: numpy's index-trick objects that build a tensor by
concatenating what is written between their brackets.

``r_[...]`` joins along the first axis, ``c_[...]`` along the last of at least 2-D
pieces (1-D pieces become columns). An entry is a tensor or array-like, a number, or
a slice: ``start:stop:step`` is ``arange(start, stop, step)``, and a complex step
``start:stop:nj`` is ``linspace(start, stop, n)``. A string first sets the joining:
``"0"`` (an axis), ``"0,2"`` (axis, least number of dims), ``"0,2,0"`` (and where a
piece's own axes go among them, numpy's ``trans1d``), ``"r"`` / ``"c"`` (a row or
column matrix, here a 2-D tensor). Pieces are cast to their common dtype (numbers count
weakly, as numpy's). The result is one concatenation, so it traces and differentiates.

Example:
    >>> import engine as en
    >>> en.r_[1:4, 0, en.tensor([7, 8])].numpy()
    array([1, 2, 3, 0, 7, 8])
    >>> en.c_[en.tensor([1, 2]), en.tensor([3, 4])].numpy()
    array([[1, 3],
           [2, 4]])
"""
import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..lifting import TensorLike
from . import creation, join, manipulation, misc, shape_ops
from .spacing import linspace
from ._args import at_user_line


def _with_ndmin(t, ndmin):
    """``t`` with ones put before its shape up to ``ndmin`` dims (numpy's ``ndmin``)."""
    if t.ndim >= ndmin:
        return t
    return shape_ops.reshape(t, (1,) * (ndmin - t.ndim) + tuple(t.shape))


def _is_number(item):
    return isinstance(item, (numbers.Number, np.generic)) and not isinstance(item, TensorLike)


class AxisConcatenator:
    """Concatenate the bracketed entries along ``axis`` (numpy's class of the same name);
    ``ndmin`` and ``trans1d`` as numpy's, ``matrix`` for the ``"r"``/``"c"`` forms."""

    def __init__(self, axis=0, ndmin=1, trans1d=-1, name="r_"):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def _directive(self, item, state):
        if item in ("r", "c"):
            state["matrix"], state["column"] = True, item == "c"
            return
        try:
            parts = [int(p) for p in item.split(",")]
        except ValueError:
            raise InvalidArgumentError(f"{self.name}: unknown special directive {item!r}"
                                       f"{at_user_line()}") from None
        if len(parts) > 3 or (len(parts) > 1 and "," not in item):
            raise InvalidArgumentError(f"{self.name}: unknown special directive {item!r}"
                                       f"{at_user_line()}")
        state["axis"] = parts[0]
        if len(parts) > 1:
            state["ndmin"] = parts[1]
        if len(parts) > 2:
            state["trans1d"] = parts[2]

    def _range(self, item, ndmin, trans1d):
        start = 0 if item.start is None else item.start
        step = 1 if item.step is None else item.step
        if isinstance(step, (complex, np.complexfloating)):
            piece = linspace(start, item.stop, int(abs(complex(step))))
        else:
            piece = creation.arange(start, item.stop, step)
        if ndmin > 1:
            piece = _with_ndmin(piece, ndmin)
            if trans1d != -1:
                piece = manipulation.swapaxes(piece, -1, trans1d)
        return piece

    def _array(self, item, ndmin, trans1d):
        piece = item if isinstance(item, TensorLike) else misc.identity(item)
        own = piece.ndim
        piece = _with_ndmin(piece, ndmin)
        if trans1d != -1 and own < ndmin:
            k2, k1 = ndmin - own, trans1d
            if k1 < 0:
                k1 += k2 + 1
            axes = list(range(ndmin))
            piece = shape_ops.transpose(piece, tuple(axes[:k1] + axes[k2:] + axes[k1:k2]))
        return piece

    def __getitem__(self, key):
        if isinstance(key, str):
            raise InvalidArgumentError(f"{self.name}: a matrix string such as '1 2; 3 4' is "
                                       f"not supported; write the values{at_user_line()}")
        key = key if isinstance(key, tuple) else (key,)
        state = dict(axis=self.axis, ndmin=self.ndmin, trans1d=self.trans1d, matrix=False,
                     column=False)
        pieces, kinds = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise InvalidArgumentError(f"{self.name}: a special directive ({item!r}) "
                                               f"must be the first entry{at_user_line()}")
                self._directive(item, state)
                continue
            if isinstance(item, slice):
                piece = self._range(item, state["ndmin"], state["trans1d"])
                kinds.append(piece.dtype)
            elif _is_number(item):
                piece = item
                kinds.append(item)       # numbers promote weakly, as numpy's result_type
            else:
                piece = self._array(item, state["ndmin"], state["trans1d"])
                kinds.append(piece.dtype)
            pieces.append(piece)
        if not pieces:
            raise InvalidArgumentError(f"{self.name}: nothing to concatenate{at_user_line()}")
        dtype = np.result_type(*kinds)
        pieces = [_with_ndmin(creation.full((), p, dtype=dtype) if _is_number(p)
                              else p if p.dtype == dtype else creation.cast(p, dtype),
                              state["ndmin"]) for p in pieces]
        out = join.concat(pieces, axis=state["axis"])
        if state["matrix"]:
            if out.ndim == 1:
                out = shape_ops.reshape(out, (-1, 1) if state["column"] else (1, -1))
            elif out.ndim == 0:
                out = shape_ops.reshape(out, (1, 1))
        return out

    def __len__(self):
        return 0


r_ = AxisConcatenator(0, name="r_")
c_ = AxisConcatenator(-1, ndmin=2, trans1d=0, name="c_")

__all__ = ["r_", "c_"]
