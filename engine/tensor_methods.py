"""ndarray's methods on tensors and variables, with numpy's signatures and semantics.

:class:`NdarrayMethods` is the base of ``engine.tensor.TensorOps``, so tensors
and variables have them. Each method calls the engine's ops, so it runs
eagerly, traces inside ``en.function`` and differentiates like the op
functions. numpy's keywords work as in numpy: ``dtype=``, ``where=`` and
``initial=`` on reductions, ``mode=`` on ``take`` and ``choose``, ``order=``
on ``reshape``/``ravel``, ``casting=`` and ``copy=`` on ``astype``. ``out=``
writes the result into a tensor and returns it, as numpy does. The in-place
methods (``fill``, ``sort``, ``partition``, ``put``) compute the new values
with ops and write them with ``t[...] = values`` (a variable: ``assign``).

The attributes about memory and bytes live in ``engine/tensor_memory.py``.

Example:
    >>> import engine as en
    >>> t = en.tensor([[3.0, 1.0], [2.0, 5.0]])
    >>> t.sum(axis=0, where=[[True, False], [True, True]]).tolist()
    [5.0, 5.0]
    >>> t.argsort(axis=None).tolist(), t.ravel(order="F").tolist()
    ([1, 2, 0, 3], [3.0, 2.0, 1.0, 5.0])
"""
import inspect

import numpy as np

from . import numpy_dispatch as _numpy_dispatch
from . import ops as _ops
from . import torch_spellings
from .errors import (ArgumentTypeError, DTypeError, InvalidArgumentError, ShapeError,
                     UnsupportedError, format_location, user_frame)
from .lifting import TensorLike
from .modes import current_mode
from .numpy_inplace import write_all
from .ops.subgradients import root_with_zero_subgradient
from .tensor_memory import MemoryAttributes

_NoValue = np._NoValue     # numpy's "not given" for initial= and friends
_ORDERS = ("C", "F", "A", "K")
_TAKE_MODES = ("raise", "wrap", "clip")
# Every sort kind numpy offers may give a stable order, which the engine's sorts give.
_SORT_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")
_PARTITION_KINDS = ("introselect",)


def _at():
    return f"\n  at {format_location(user_frame())}"


def _name(x, method):
    return f"{type(x).__name__}.{method}"


def _into(out, result, what, casting="unsafe"):
    """``result``, or written into ``out`` (numpy's ``out=``: the same shape, a dtype
    ``casting`` allows: numpy's reductions cast unsafely, its ufuncs same_kind) and
    ``out``."""
    if out is None:
        return result
    if isinstance(out, tuple) and len(out) == 1:     # numpy takes out=(t,) too
        out = out[0]
    if not isinstance(out, TensorLike):
        raise ArgumentTypeError(f"{what}: out= must be a tensor, got {type(out).__name__}"
                                f"{_at()}")
    if tuple(out.shape) != tuple(result.shape):
        raise ShapeError(f"{what}: out= has shape {tuple(out.shape)}, the result has shape "
                         f"{tuple(result.shape)}{_at()}")
    if not np.can_cast(result.dtype, out.dtype, casting):
        raise DTypeError(f"{what}: cannot store the {result.dtype} result in out= of dtype "
                         f"{out.dtype} under numpy's {casting} casting{_at()}")
    write_all(out, result)
    return out


def _check_order(what, order, allowed=_ORDERS):
    if order is None and None in allowed:
        return "C"
    if order not in allowed:
        raise InvalidArgumentError(f"{what}: order must be one of "
                                   f"{', '.join(repr(o) for o in allowed)}, got {order!r}{_at()}")
    return order


def _check_mode(what, mode):
    if mode not in _TAKE_MODES:
        raise InvalidArgumentError(f"{what}: mode must be 'raise', 'wrap' or 'clip', "
                                   f"got {mode!r}{_at()}")


def _index_by_mode(indices, n, mode):
    """``indices`` into ``n`` places: wrapped around (``'wrap'``) or clipped to the ends
    (``'clip'``, which, as in numpy, reads no index as counting from the end).
    Constant indices stay constants (the op lifts them to its tensor's back end)."""
    if not isinstance(indices, TensorLike) and mode != "raise":
        indices = np.asarray(indices)
        return np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
    if mode == "wrap":
        return _ops.mod(indices, n)
    if mode == "clip":
        return _ops.clip(indices, 0, n - 1)
    return indices


def _check_sort_args(what, kind, order, kinds):
    if kind not in kinds:
        raise InvalidArgumentError(f"{what}: kind must be one of {kinds}, got {kind!r}{_at()}")
    if order is not None:
        raise UnsupportedError(f"{what}: order= sorts the fields of a structured dtype, "
                               f"which tensors do not have{_at()}")


def _in_place_axis(what, axis):
    if axis is None:     # numpy: a tensor cannot be flattened in place
        raise ArgumentTypeError(f"{what}: axis=None would flatten the tensor, which an "
                                f"in-place method cannot; use np.{what.split('.')[1]}"
                                f"(t, ..., axis=None) for a flat copy{_at()}")


def _kth(what, x, kth, axis):
    """``kth`` (an int or a sequence of them) checked against the length of ``axis``
    (of the flattened tensor when None), as numpy."""
    if x.ndim == 0:
        raise ShapeError(f"{what}: a 0-d tensor has no axis to partition{_at()}")
    n = x.size if axis is None else x.shape[axis]
    for k in np.ravel(np.asarray(kth)):
        if not isinstance(k.item(), int):
            raise ArgumentTypeError(f"{what}: kth must be integers, got {kth!r}{_at()}")
        if n is not None and not -n <= k < n:
            raise InvalidArgumentError(f"{what}: kth={int(k)} is out of bounds for an axis "
                                       f"of length {n} (shape {x.shape}){_at()}")


def _known_values(x):
    """``x``'s values as a numpy array when they exist (not while tracing), else None:
    checks that need values run eagerly, as numpy's do."""
    if not isinstance(x, TensorLike):
        return np.asarray(x)
    return np.asarray(x.numpy()) if current_mode().is_concrete else None


def _complex(re, im):
    """``re + i * im`` from real tensors of the same precision."""
    return re + 1j * im


def _masked_variance(x, axis, ddof, keepdims, where, mean):
    """numpy's ``var`` with ``where=`` (the elements counted) and ``mean=`` (a mean
    given with kept dims): the mean of ``|x - mean|**2`` over the counted elements,
    divided by ``count - ddof`` instead of ``count``."""
    if x.dtype.kind not in "fc":          # numpy computes integers' moments in float64
        x = _ops.cast(x, "float64")
    # where= broadcast to x's shape, on x's back end (as the ops lift a Python list)
    mask = _ops.logical_and(_ops.ones_like(x, dtype="bool"), where)
    count = _ops.sum(_ops.cast(mask, np.finfo(x.dtype).dtype), axis=axis, keepdims=True)
    if mean is _NoValue:
        mean = _ops.sum(_ops.where(mask, x, 0), axis=axis, keepdims=True) / count
    dev = x - mean
    square = _ops.real(dev * _ops.conj(dev)) if x.dtype.kind == "c" else dev * dev
    total = _ops.sum(_ops.where(mask, square, 0), axis=axis, keepdims=True)
    variance = total / _ops.maximum(count - ddof, 0)
    if keepdims:
        return variance
    return _ops.reshape(variance, ()) if axis is None else _ops.squeeze(variance, axis)


class NdarrayMethods(MemoryAttributes):
    """ndarray's methods on engine values (the base of tensors and variables)."""

    __slots__ = ()

    # -- reductions ---------------------------------------------------------------------------
    def _reduce(self, name, axis, keepdims, dtype, initial, where, out):
        if initial is _NoValue and where is True and dtype is None:    # the common case
            result = getattr(_ops, name)(self, axis=axis, keepdims=keepdims)
        else:
            result = _numpy_dispatch.reduction(name, self, axis=axis, keepdims=keepdims,
                                               dtype=dtype, initial=initial, where=where,
                                               what=_name(self, name))
        return result if out is None else _into(out, result, _name(self, name))

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
            where=True):
        """The sum over ``axis`` (all axes by default), as numpy's ``ndarray.sum``.

        Example:
            >>> import engine as en
            >>> en.tensor([[1, 2], [3, 4]]).sum(axis=1, initial=10).tolist()
            [13, 17]
        """
        return self._reduce("sum", axis, keepdims, dtype, initial, where, out)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue,
             where=True):
        """The product over ``axis``, as numpy's ``ndarray.prod``."""
        return self._reduce("prod", axis, keepdims, dtype, initial, where, out)

    def max(self, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        """The maximum over ``axis``, as numpy's ``ndarray.max``."""
        return self._reduce("max", axis, keepdims, None, initial, where, out)

    def min(self, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        """The minimum over ``axis``, as numpy's ``ndarray.min``."""
        return self._reduce("min", axis, keepdims, None, initial, where, out)

    def all(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether every element over ``axis`` is true, as numpy's ``ndarray.all``.

        Example:
            >>> import engine as en
            >>> en.tensor([[1, 0], [2, 3]]).all(axis=1).tolist()
            [False, True]
        """
        return self._reduce("all", axis, keepdims, None, _NoValue, where, out)

    def any(self, axis=None, out=None, keepdims=False, *, where=True):
        """Whether any element over ``axis`` is true, as numpy's ``ndarray.any``."""
        return self._reduce("any", axis, keepdims, None, _NoValue, where, out)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
        """The mean over ``axis``, as numpy's ``ndarray.mean``."""
        return self._reduce("mean", axis, keepdims, dtype, _NoValue, where, out)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=_NoValue):
        """The variance over ``axis``, as numpy's ``ndarray.var`` (``where=`` the elements
        counted; ``mean=`` a precomputed mean with kept dims).

        Example:
            >>> import engine as en
            >>> en.tensor([1.0, 2.0, 3.0, 4.0]).var(ddof=1).item()
            1.6666666666666667
        """
        return _into(out, self._moment("var", axis, dtype, ddof, keepdims, where, mean),
                     _name(self, "var"))

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
            mean=_NoValue):
        """The standard deviation over ``axis``, as numpy's ``ndarray.std`` (the
        keywords as :meth:`var`'s; where it is 0 its gradient is 0, as ``en.std``'s)."""
        return _into(out, self._moment("std", axis, dtype, ddof, keepdims, where, mean),
                     _name(self, "std"))

    def _moment(self, name, axis, dtype, ddof, keepdims, where, mean):
        x = self if dtype is None else _ops.cast(self, dtype)
        if where is True and mean is _NoValue:
            return getattr(_ops, name)(x, axis=axis, ddof=ddof, keepdims=keepdims)
        variance = _masked_variance(x, axis, ddof, keepdims, where, mean)
        return root_with_zero_subgradient(variance) if name == "std" else variance

    def argmax(self, axis=None, out=None, *, keepdims=False):
        """The index of the maximum over ``axis`` (of the flattened tensor by default)."""
        return _into(out, _ops.argmax(self, axis=axis, keepdims=keepdims),
                     _name(self, "argmax"))

    def argmin(self, axis=None, out=None, *, keepdims=False):
        """The index of the minimum over ``axis`` (of the flattened tensor by default)."""
        return _into(out, _ops.argmin(self, axis=axis, keepdims=keepdims),
                     _name(self, "argmin"))

    def cumsum(self, axis=None, dtype=None, out=None):
        """Running sums along ``axis`` (of the flattened tensor by default).

        Example:
            >>> import engine as en
            >>> en.tensor([[1, 2], [3, 4]]).cumsum().tolist()
            [1, 3, 6, 10]
        """
        return _into(out, _ops.cumsum(self, axis=axis, dtype=dtype), _name(self, "cumsum"))

    def cumprod(self, axis=None, dtype=None, out=None):
        """Running products along ``axis`` (of the flattened tensor by default)."""
        return _into(out, _ops.cumprod(self, axis=axis, dtype=dtype), _name(self, "cumprod"))

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """The sum along a diagonal, as numpy's ``ndarray.trace``."""
        return _into(out, _ops.trace(self, offset=offset, axis1=axis1, axis2=axis2,
                                     dtype=dtype), _name(self, "trace"))

    # -- elementwise --------------------------------------------------------------------------
    def clip(self, min=None, max=None, out=None, **kwargs):
        """The values limited to ``[min, max]`` (either may be None), as numpy's ``clip``.

        Example:
            >>> import engine as en
            >>> en.tensor([-1.0, 0.5, 2.0]).clip(0, 1).tolist()
            [0.0, 0.5, 1.0]
        """
        _check_ufunc_keywords(_name(self, "clip"), kwargs)
        result = _ops.clip(self, min, max) if min is not None or max is not None \
            else _ops.identity(self)
        return _into(out, result, _name(self, "clip"), "same_kind")

    def round(self, decimals=0, out=None):
        """The values rounded to ``decimals`` places (halves to even), as numpy's."""
        return _into(out, _ops.round(self, decimals), _name(self, "round"), "same_kind")

    def conj(self):
        """The complex conjugate; for other dtypes the tensor itself, as numpy's."""
        return _ops.conj(self) if self.dtype.kind == "c" else self

    def conjugate(self):
        """The complex conjugate, as :meth:`conj`."""
        return self.conj()

    @property
    def real(self):
        """The real part (the values themselves for real dtypes).

        Example:
            >>> import engine as en
            >>> en.tensor([1 + 2j]).real.tolist()
            [1.0]
        """
        return _ops.real(self)

    @real.setter
    def real(self, value):
        # numpy: ``t.real = v`` writes the real parts (all of a real tensor)
        if self.dtype.kind != "c":
            write_all(self, value)
            return
        write_all(self, _complex(_ops.real(_ops.cast(value, self.dtype)), _ops.imag(self)))

    @property
    def imag(self):
        """The imaginary part (zeros for real dtypes)."""
        return _ops.imag(self)

    @imag.setter
    def imag(self, value):
        if self.dtype.kind != "c":
            raise DTypeError(f"{_name(self, 'imag')}: a {self.dtype} tensor has no imaginary "
                             f"part to set{_at()}")
        write_all(self, _complex(_ops.real(self), _ops.real(_ops.cast(value, self.dtype))))

    def dot(self, b, out=None):
        """The dot product with ``b``, as numpy's ``ndarray.dot``."""
        return _into(out, _ops.dot(self, b), _name(self, "dot"))

    # -- dtype and copies ---------------------------------------------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """The values cast to ``dtype``; with ``copy=False`` the tensor itself when it
        already has that dtype. ``casting`` refuses casts numpy's rule would refuse.

        Example:
            >>> import engine as en
            >>> t = en.tensor([1.5, 2.5])
            >>> t.astype("int64").tolist(), t.astype("float64", copy=False) is t
            ([1, 2], True)
        """
        what = _name(self, "astype")
        _check_order(what, order)
        target = np.dtype(dtype)
        if not np.can_cast(self.dtype, target, casting=casting):
            raise DTypeError(f"{what}: cannot cast {self.dtype} to {target} under "
                             f"casting={casting!r}{_at()}")
        if target == self.dtype and not copy:
            return self
        return _ops.cast(self, target)

    def copy(self, order="C"):
        """A new tensor with the same values (writing one never changes the other)."""
        _check_order(_name(self, "copy"), order)
        return _ops.copy(self)

    def view(self, dtype=None, type=None):
        """The same values as another tensor object, as numpy's ``view()``: a write
        through one reaches the other as the engine's basic-index views do. Reading
        the bytes as another dtype (``view(dtype)``) or as an ndarray subclass is
        refused: tensors do not reinterpret memory (``t.numpy().view(dtype)`` does)."""
        if inspect.isclass(dtype) and issubclass(dtype, np.ndarray):   # numpy's view(type)
            dtype, type = None, dtype
        if isinstance(dtype, (int, tuple, list)) and not isinstance(dtype, bool):
            raise ArgumentTypeError(f"{_name(self, 'view')}: view(shape) is PyTorch's spelling: "
                                    f"{torch_spellings.ATTRIBUTES['view']}{_at()}")
        if type is not None or (dtype is not None and np.dtype(dtype) != self.dtype):
            raise UnsupportedError(
                f"{_name(self, 'view')}: tensors do not reinterpret their memory as another "
                "dtype or an ndarray subclass; t.astype(dtype) converts the values, "
                f"t.numpy().view(...) reads the bytes of a numpy copy{_at()}")
        return self[...]

    # -- shape --------------------------------------------------------------------------------
    @property
    def size(self):
        """The number of elements (None while tracing a tensor with an unknown dim)."""
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    def reshape(self, *shape, order="C", copy=None):
        """The values in ``shape`` (one dim may be -1), read and written in ``order``:
        'C' (row-major) or 'F' (column-major), as numpy's ``reshape``; a view where
        numpy's is one, a new tensor with ``copy=True``.

        Example:
            >>> import engine as en
            >>> en.tensor([1, 2, 3, 4]).reshape(2, 2, order="F").tolist()
            [[1, 3], [2, 4]]
        """
        one = len(shape) == 1 and isinstance(shape[0], (tuple, list))
        dims = shape[0] if one else shape
        order = _check_order(_name(self, "reshape"), order, ("C", "F", "A"))
        if order == "F":
            result = _ops.transpose(_ops.reshape(_ops.transpose(self), tuple(dims)[::-1]))
        else:
            result = _ops.reshape(self, dims)
        return _ops.copy(result) if copy else result

    def ravel(self, order="C"):
        """The values as a 1-D tensor in ``order`` ('C' row-major, 'F' column-major; 'A'
        and 'K' are 'C', a tensor's logical order)."""
        return _ops.ravel(self, _check_order(_name(self, "ravel"), order))

    def flatten(self, order="C"):
        """The values as a new 1-D tensor (a copy, where ``ravel`` may give a view)."""
        return _ops.copy(_ops.ravel(self, _check_order(_name(self, "flatten"), order)))

    def transpose(self, *axes):
        """The axes reversed, or permuted as ``axes`` says."""
        one = len(axes) == 1 and isinstance(axes[0], (tuple, list)) or axes == (None,)
        perm = axes[0] if one else axes
        return _ops.transpose(self, perm or None)

    def swapaxes(self, axis1, axis2):
        """The tensor with ``axis1`` and ``axis2`` exchanged."""
        return _ops.swapaxes(self, axis1, axis2)

    def squeeze(self, axis=None):
        """The tensor without its length-1 axes (or just ``axis``)."""
        return _ops.squeeze(self, axis)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """A diagonal of the ``axis1``-``axis2`` planes, as numpy's ``diagonal``."""
        return _ops.diagonal(self, offset=offset, axis1=axis1, axis2=axis2)

    def repeat(self, repeats, axis=None):
        """Each element repeated ``repeats`` times along ``axis`` (flattened by default)."""
        return _ops.repeat(self, repeats, axis=axis)

    # -- selection ----------------------------------------------------------------------------
    def take(self, indices, axis=None, out=None, mode="raise"):
        """The elements at ``indices`` along ``axis`` (of the flattened tensor by
        default); ``mode`` 'wrap' wraps indices around, 'clip' clips them to the ends.

        Example:
            >>> import engine as en
            >>> en.tensor([10, 20, 30]).take([0, 4, -1], mode="clip").tolist()
            [10, 30, 10]
        """
        what = _name(self, "take")
        _check_mode(what, mode)
        n = self.size if axis is None else self.shape[axis]
        result = _ops.take(self, _index_by_mode(indices, n, mode), axis=axis)
        return _into(out, result, what)

    def compress(self, condition, axis=None, out=None):
        """The slices along ``axis`` (elements of the flattened tensor by default) where
        the 1-D ``condition`` is true, as numpy's ``compress``. The result's length
        depends on the values, so it needs a concrete condition (not while tracing)."""
        return _into(out, _ops.compress(condition, self, axis=axis), _name(self, "compress"))

    def choose(self, choices, out=None, mode="raise"):
        """``choices[self[i]][i]`` for each place ``i`` (the index tensor and every
        choice broadcast together), as numpy's ``choose``.

        Example:
            >>> import engine as en
            >>> en.tensor([0, 1, 0]).choose([[1, 2, 3], [10, 20, 30]]).tolist()
            [1, 20, 3]
        """
        return _into(out, _ops.choose(self, choices, mode=mode), _name(self, "choose"))

    def nonzero(self):
        """The indices of the nonzero elements, one tensor per axis."""
        return _ops.nonzero(self)

    def searchsorted(self, v, side="left", sorter=None):
        """Where ``v``'s elements would go in this sorted 1-D tensor to keep it sorted."""
        return _ops.searchsorted(self, v, side=side, sorter=sorter)

    # -- sorting ------------------------------------------------------------------------------
    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """The indices that sort the values along ``axis`` (the flattened tensor when
        None), in a stable order whatever ``kind`` says."""
        _check_sort_args(_name(self, "argsort"), kind, order, _SORT_KINDS)
        if axis is None:
            return _ops.argsort(_ops.reshape(self, (-1,)), axis=0)
        return _ops.argsort(self, axis=axis)

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        """Indices that partition the values along ``axis`` around each ``kth``: the
        element at ``kth`` is the one a sort would put there, smaller ones come before it
        and larger ones after (in no given order), as numpy's ``argpartition``."""
        what = _name(self, "argpartition")
        _check_sort_args(what, kind, order, _PARTITION_KINDS)
        _kth(what, self, kth, axis)
        return _ops.argpartition(self, kth, axis=axis)

    # -- in place -----------------------------------------------------------------------------
    def fill(self, value):
        """Write ``value`` into every element (cast to the tensor's dtype), as numpy's
        ``fill``.

        Example:
            >>> import engine as en
            >>> t = en.zeros(3)
            >>> t.fill(2)
            >>> t.tolist()
            [2.0, 2.0, 2.0]
        """
        write_all(self, value)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Sort the values along ``axis`` in place (stably), as numpy's ``ndarray.sort``.

        Example:
            >>> import engine as en
            >>> t = en.tensor([3, 1, 2])
            >>> t.sort()
            >>> t.tolist()
            [1, 2, 3]
        """
        what = _name(self, "sort")
        _check_sort_args(what, kind, order, _SORT_KINDS)
        _in_place_axis(what, axis)
        write_all(self, _ops.sort(self, axis=axis))

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        """Partition the values along ``axis`` in place around each ``kth`` (see
        :meth:`argpartition`)."""
        what = _name(self, "partition")
        _check_sort_args(what, kind, order, _PARTITION_KINDS)
        _in_place_axis(what, axis)
        _kth(what, self, kth, axis)
        write_all(self, _ops.partition(self, kth, axis=axis))

    def put(self, indices, values, mode="raise"):
        """Write ``values`` at the flat positions ``indices`` (values repeated as
        needed; with repeated indices the last write wins), as numpy's ``put``.

        Example:
            >>> import engine as en
            >>> t = en.tensor([[0, 0], [0, 0]])
            >>> t.put([0, 3], [7, 9])
            >>> t.tolist()
            [[7, 0], [0, 9]]
        """
        what = _name(self, "put")
        _check_mode(what, mode)
        flat = _flat_positions(what, self, indices, mode)
        values = _ops.reshape(_ops.cast(values, self.dtype) if isinstance(values, TensorLike)
                              else _ops.identity(np.asarray(values, dtype=self.dtype)), (-1,))
        count = flat.shape[0]
        if values.shape[0] == 0 or count == 0:
            return
        if values.shape[0] != count:      # numpy repeats the values to the indices' length
            values = _ops.take(values, _ops.mod(_ops.arange(count), values.shape[0]))
        if self.ndim == 0:
            write_all(self, values[-1])
        elif hasattr(self, "assign"):     # a variable: its new value, assigned whole
            new = _ops.put_along_axis(_ops.reshape(self, (-1,)), flat, values, 0)
            write_all(self, _ops.reshape(new, self.shape))
        else:
            # Written through an index per axis, not through a flat view of the tensor:
            # a tape may hold such a view, and a write under it is refused.
            self[_unravel(flat, self.shape)] = values


def _flat_positions(what, x, indices, mode):
    """``indices`` into ``x``'s flat elements as a 1-D tensor in ``[0, size)``: checked
    (``'raise'``: numpy's range, negative counting from the end), wrapped or clipped."""
    indices = indices if isinstance(indices, TensorLike) else \
        _ops.identity(np.asarray(indices, dtype=np.int64))
    indices = _ops.reshape(indices, (-1,))
    if indices.dtype.kind not in "iu":
        raise DTypeError(f"{what}: indices must be integers, got {indices.dtype}{_at()}")
    n = x.size
    known = _known_values(indices) if mode == "raise" else None
    if known is not None and known.size and (known.min() < -n or known.max() >= n):
        raise InvalidArgumentError(f"{what}: an index is out of bounds for {n} elements "
                                   f"(shape {x.shape}){_at()}")
    return _ops.mod(_index_by_mode(indices, n, mode), n)


def _unravel(flat, shape):
    """Flat positions as one index tensor per axis of ``shape`` (row-major), in ops."""
    coords = []
    for d in reversed(shape):
        coords.append(_ops.mod(flat, d))
        flat = _ops.floor_divide(flat, d)
    return tuple(reversed(coords))


def _check_ufunc_keywords(what, kwargs):
    """numpy's ufunc keywords left at their defaults are fine; others are refused."""
    defaults = {"casting": "same_kind", "order": "K", "subok": True, "where": True,
                "dtype": None, "signature": None}
    for key, value in kwargs.items():
        if key not in defaults:
            raise ArgumentTypeError(f"{what}: unexpected keyword {key}={value!r}{_at()}")
        if value is not defaults[key] and value != defaults[key]:
            raise UnsupportedError(f"{what}: {key}={value!r} is not supported on tensors"
                                   f"{_at()}")


__all__ = ["NdarrayMethods"]
