"""The immutable :class:`Tensor` and the operator methods it shares with variables.

A tensor is either *concrete* (it holds an array, eager mode) or *traced*
(it stands for a graph node while a function is being traced). Both kinds have
``shape`` and ``dtype`` (an engine dtype, i.e. a numpy dtype, on every back
end); only concrete tensors have values. A :class:`Tensor` holds a numpy array;
its subclass :class:`ForeignTensor` holds an array of another back end
(``t.backend`` says which), so eager dispatch on numpy tensors tests nothing more.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, 2.0], dtype="float32")
    >>> (x * 2.0).dtype
    dtype('float32')
"""
from __future__ import annotations

import importlib
from html import escape
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from . import backend as _backends
from . import default_dtype as _default_dtype
from . import fast_writes as _fast_writes
from . import numpy_dispatch as _numpy_dispatch
from . import ops as _ops
from . import writes as _writes
from .backend import NUMPY
from .devices import check_device
from .errors import (ArgumentTypeError, InvalidArgumentError, ShapeError, SharingError,
                     TracingError, UnsupportedAttributeError, format_location, user_frame)
from .lifting import NESTED_TYPES, as_array, caller_can_write, holds_tensors
from .numpy_conversion import check_conversion as _check_conversion
from .recording import active_tapes as _active_tapes
from .tensor_methods import NdarrayMethods

if TYPE_CHECKING:
    from .contracts import DTypeLike


class TensorOps(NdarrayMethods):
    """Operators and methods shared by :class:`Tensor` and ``Variable`` (ndarray's
    methods, with numpy's arguments, are in engine/tensor_methods.py)."""

    __slots__ = ()
    __array_priority__ = 100  # so ndarray + tensor defers to the tensor

    def __add__(self, other): return _ops.add(self, other)
    def __radd__(self, other): return _ops.add(other, self)
    def __sub__(self, other): return _ops.sub(self, other)
    def __rsub__(self, other): return _ops.sub(other, self)
    def __mul__(self, other): return _ops.mul(self, other)
    def __rmul__(self, other): return _ops.mul(other, self)
    def __truediv__(self, other): return _ops.div(self, other)
    def __rtruediv__(self, other): return _ops.div(other, self)
    def __pow__(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(other, self)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(other, self)
    def __floordiv__(self, other): return _ops.floor_divide(self, other)
    def __rfloordiv__(self, other): return _ops.floor_divide(other, self)
    def __mod__(self, other): return _ops.mod(self, other)
    def __rmod__(self, other): return _ops.mod(other, self)
    def __divmod__(self, other): return _ops.divmod(self, other)
    def __rdivmod__(self, other): return _ops.divmod(other, self)
    def __neg__(self): return _ops.neg(self)
    def __pos__(self): return _ops.positive(self)
    def __abs__(self): return _ops.abs(self)
    # Bitwise on integers and bools (on bools the same as logical), as in numpy.
    def __invert__(self): return _ops.invert(self)
    def __and__(self, other): return _ops.bitwise_and(self, other)
    def __rand__(self, other): return _ops.bitwise_and(other, self)
    def __or__(self, other): return _ops.bitwise_or(self, other)
    def __ror__(self, other): return _ops.bitwise_or(other, self)
    def __xor__(self, other): return _ops.bitwise_xor(self, other)
    def __rxor__(self, other): return _ops.bitwise_xor(other, self)
    def __lshift__(self, other): return _ops.left_shift(self, other)
    def __rlshift__(self, other): return _ops.left_shift(other, self)
    def __rshift__(self, other): return _ops.right_shift(self, other)
    def __rrshift__(self, other): return _ops.right_shift(other, self)
    def __lt__(self, other): return _ops.less(self, other)
    def __le__(self, other): return _ops.less_equal(self, other)
    def __gt__(self, other): return _ops.greater(self, other)
    def __ge__(self, other): return _ops.greater_equal(self, other)
    def __eq__(self, other): return _ops.equal(self, other)
    def __ne__(self, other): return _ops.not_equal(self, other)
    __hash__ = object.__hash__  # identity hash: tensors are dict keys on tapes

    def __getitem__(self, index): return _ops.getitem(self, index)

    # numpy functions on tensors run the engine's ops (engine/numpy_dispatch.py).
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy_dispatch.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy_dispatch.array_function(func, types, args, kwargs)

    @property
    def T(self):
        return _ops.transpose(self)

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        shape = self.shape
        if not shape:
            raise ArgumentTypeError("len() of a 0-d tensor")
        if shape[0] is None:
            raise TracingError("len() of a tensor whose first dimension is unknown while tracing")
        return shape[0]

    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def sqrt(self): return _ops.sqrt(self)
    def tanh(self): return _ops.tanh(self)
    def sigmoid(self): return _ops.sigmoid(self)
    def relu(self): return _ops.relu(self)

    # -- the Python Array API standard ------------------------------------------
    def __array_namespace__(self, *, api_version=None):
        """The standard's namespace for this tensor: ``engine.array_api``.

        Example:
            >>> import engine as en
            >>> en.tensor([1.0]).__array_namespace__().__name__
            'engine.array_api'
        """
        if api_version is not None and api_version not in _API_VERSIONS:
            raise InvalidArgumentError(f"__array_namespace__: unsupported api_version {api_version!r}; "
                             f"supported: {', '.join(_API_VERSIONS)}")
        # Imported on first use, as the facade imports graph mode: the namespace is built
        # on the public engine functions, so `import engine` cannot import it.
        return importlib.import_module("engine.array_api")

    @property
    def mT(self):
        """The tensor with its last two axes swapped (a stack of transposed matrices)."""
        if self.ndim < 2:
            raise ShapeError(
                f"mT: expected at least 2 dimensions, got shape {self.shape}")
        return _ops.transpose(self, tuple(range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2))

    @property
    def device(self):
        """The device the tensor lives on: its back end's (the host CPU,
        ``engine.array_api.Device('cpu')``, for numpy)."""
        return self.backend.device

    def to_device(self, device, /, *, stream=None):
        """The tensor on ``device``; each back end computes on one device, so this is
        the tensor (another device is refused)."""
        check_device(device, "to_device", self.backend.device)
        return self


_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

# Python data that np.asarray always copies into a fresh array nobody else holds.
_FRESH = (list, tuple, int, float, bool, complex)


def _refuse_shape_set(t, shape):
    """``t.shape = s``: refused. numpy reshapes an array in place there (and discourages
    it); a tensor keeps its shape, which tapes, traced graphs and views rely on, so the
    error says how to write the reshape instead. Never a shape its values do not have."""
    error = UnsupportedAttributeError(
        f"{type(t).__name__}.shape cannot be set: a tensor keeps its shape (tapes, traced "
        f"graphs and views rely on it), so {t._describe()} cannot take the shape {shape!r} "
        f"in place; write t = t.reshape({shape!r}) or en.reshape(t, {shape!r}), a view "
        f"of t's memory as numpy's reshape gives\n  at {format_location(user_frame())}")
    error.name, error.obj = "shape", t        # as Python's own AttributeError says
    raise error


def _refuse_dtype_set(t, dtype):
    """``t.dtype = d``: refused. numpy reinterprets an array's bytes there; a tensor keeps
    its dtype (tapes, traced graphs and views rely on it), so the error names both spellings
    that say what is meant: the values converted, or the bytes reinterpreted."""
    error = UnsupportedAttributeError(
        f"{type(t).__name__}.dtype cannot be set: a tensor keeps its dtype (tapes, traced "
        f"graphs and views rely on it), so {t._describe()} cannot take the dtype {dtype!r} "
        f"in place; write t = t.astype({dtype!r}) for the values converted, or "
        f"t = en.tensor(t.numpy().view({dtype!r})) for the bytes reinterpreted as numpy's "
        f"a.dtype = ... does"
        f"\n  at {format_location(user_frame())}")
    error.name, error.obj = "dtype", t
    raise error


_DTYPE_DOC = """The tensor's dtype, a numpy dtype. It cannot be set as numpy's ``a.dtype = d``:
write ``t = t.astype(d)`` (the values converted) or ``en.tensor(t.numpy().view(d))``
(the bytes reinterpreted).

Example:
    >>> import engine as en
    >>> t = en.ones(2)
    >>> t.dtype, t.astype("int32").dtype
    (dtype('float64'), dtype('int32'))
"""


_SHAPE_DOC = """The tensor's shape, a tuple of ints (None for a dimension not known while
tracing). It cannot be set as numpy's ``a.shape = s``: write ``t = t.reshape(s)``.

Example:
    >>> import engine as en
    >>> t = en.ones(6)
    >>> t.shape, t.reshape((2, 3)).shape
    ((6,), (2, 3))
"""


class Tensor(*_fast_writes.BASES, TensorOps):  # type: ignore[misc]
    """An immutable n-dimensional array. Create one with :func:`engine.tensor`.

    Example:
        >>> import engine as en
        >>> t = en.tensor([[1, 2], [3, 4]])
        >>> t.shape, t.dtype
        ((2, 2), dtype('int64'))
    """

    # _shape is read by ``shape`` (below). _alias (None unless the tensor is a view or has
    # views: engine/writes.py) is set on every tensor; _version only once a trace captures it.
    __slots__ = ("_value", "_shape", "_dtype", "_node", "_alias", "_version", "__weakref__")
    # Whether ``x[i] = v`` and ``x op= y`` make x stand for a new value rather than write
    # its array (engine/writes.py): the engine's own wrappers (a transformation's, another
    # back end's) say True; a user's subclass of Tensor is written as a Tensor is.
    _functional_writes = False

    if TYPE_CHECKING:
        shape: tuple[Any, ...]
        dtype: Any
    else:
        # A C getter of the slot (a def would cost a Python call on every read; the engine's
        # hot paths read ``_shape`` itself), and a set refused, never a silent wrong shape.
        shape = property(attrgetter("_shape"), _refuse_shape_set, doc=_SHAPE_DOC)
        dtype = property(attrgetter("_dtype"), _refuse_dtype_set, doc=_DTYPE_DOC)

    def __init__(self, data, dtype=None):
        value = as_array(data, dtype)
        if type(data) not in _FRESH and caller_can_write(value) and (
                not isinstance(data, np.ndarray) or np.may_share_memory(value, data)):
            # The caller can still write to this memory (``data``, the array it
            # views, or the buffer behind an array-like); a tensor must never change.
            value = value.copy()
        self._value = value
        self._shape = value.shape
        self._dtype = value.dtype
        self._node = None
        self._alias = None

    # -- back ends --------------------------------------------------------
    @property
    def backend(self):
        """The :class:`engine.backend.Backend` that holds this tensor's value (for a
        traced tensor, the one its graph is compiled for).

        Example:
            >>> import engine as en
            >>> en.tensor([1.0]).backend.name
            'numpy'
        """
        node = self._node
        if node is not None:     # traced (a tensor has either a value or a node)
            return getattr(node.graph, "backend", NUMPY)
        return NUMPY

    def to(self, backend):
        """This tensor's values on ``backend`` (a name or a Backend): the one explicit
        way to move data between back ends (ops never copy across them).

        Example:
            >>> import engine as en
            >>> en.tensor([1.0, 2.0]).to("array_api_strict").backend.name
            'array_api_strict'
        """
        target = _backends.get(backend)
        source = self.backend
        if target is source:
            return self
        value = self._concrete(f"moving a tensor to back end {target.name!r}")
        return wrap_on(target, target.from_numpy(source.to_numpy(value)))

    # -- concrete values ------------------------------------------------
    def numpy(self):
        """The value as a numpy array that shares the tensor's memory, as PyTorch's
        ``.numpy()``: writable where the tensor is (a write through it changes the
        tensor, unseen by tapes and traces), read-only where the memory is shared
        read-only (a variable's value, a graph constant). ``np.asarray(t)`` is this."""
        if self._value is None:
            raise TracingError(
                f"cannot take the value of a traced tensor {self._describe()} while tracing; "
                "use en.py_function to run numpy code at graph run time")
        return self._value.view()

    def __array__(self, dtype=None, copy=None):
        if _active_tapes():   # refuse silently dropping a tensor that a tape differentiates
            _check_conversion(self)
        value = self.numpy()
        if dtype is not None and value.dtype != dtype:
            if copy is False:
                raise InvalidArgumentError(f"converting a {self.dtype} tensor to {np.dtype(dtype)} "
                                 "needs a copy, but copy=False")
            return value.astype(dtype)
        return value.copy() if copy else value  # a view of the tensor's memory

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the values by DLPack, sharing the tensor's memory (as ``numpy()``).

        DLPack before 1.0 cannot mark memory read-only, so read-only memory (a
        variable's value, a graph constant) is copied for such a consumer (refused
        with ``copy=False``, as the protocol says)."""
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise SharingError(f"__dlpack__: the tensor is on the CPU (1, 0), not {dl_device}")
        if copy:
            return np.array(self.numpy(), copy=True).__dlpack__(max_version=max_version)
        view = self.numpy()
        if max_version is not None and tuple(max_version) >= (1, 0):
            return view.__dlpack__(max_version=max_version, copy=False)
        if view.flags.writeable:
            return view.__dlpack__()
        if copy is False:
            raise SharingError("__dlpack__: DLPack before 1.0 cannot export read-only memory "
                              "without a copy, and copy=False")
        return np.array(view, copy=True).__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        """``(1, 0)``: DLPack's CPU device, number 0."""
        return (1, 0)

    def __float__(self): return float(self._concrete("float()"))
    def __int__(self): return int(self._concrete("int()"))
    def __index__(self): return int(self._concrete("an index").__index__())
    def __complex__(self): return complex(self._concrete("complex()"))

    # ``x[index] = value`` in place, with numpy's semantics: views share the write,
    # gradients flow through it, traces record it (engine/writes.py). With the C extension
    # built, its class's type slot (engine/fast_writes.py); otherwise the function itself,
    # not a method calling it: one Python call less on every write.
    if not _fast_writes.BUILT:
        __setitem__ = _writes.setitem

    def _trace_state(self):
        """What a trace that captured this tensor depends on: its memory's write count."""
        return (("writes", getattr(_writes.root_of(self), "_version", 0)),)

    def _trace_label(self):
        return f"captured tensor {self._describe()}"

    def __bool__(self):
        return bool(self._concrete("bool() (an `if` or `while` on a tensor)"))

    def __format__(self, spec):
        """``f"{t:.3g}"`` formats a 0-d tensor's value, as numpy formats a 0-d array;
        without a spec any tensor formats as its ``str``.

        Example:
            >>> import engine as en
            >>> f"{en.tensor(3.14159):.3g}"
            '3.14'
        """
        if not spec:
            return str(self)
        if self.shape != ():
            raise ArgumentTypeError(f"unsupported format string {spec!r} for a tensor of "
                                    f"shape {self.shape} (only 0-d tensors take one)")
        return format(self._concrete("format()").item(), spec)

    def _concrete(self, what):
        if self._value is None:
            raise TracingError(
                f"{what} needs a concrete value, but {self._describe()} is traced "
                f"(at {format_location(user_frame())}). Python control flow on traced "
                "tensors cannot be captured in a graph: use en.cond or en.while_loop, "
                "en.py_function, or en.run_functions_eagerly(True) to debug")
        return self._value

    def _describe(self):
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"

    def __iter__(self):
        if not self.shape:
            raise ArgumentTypeError("iteration over a 0-d tensor")
        n = len(self)
        return (self[i] for i in range(n))

    def __repr__(self):
        if self._value is None:
            name = getattr(self._node, "name", "?")
            return f"<traced tensor {name}: shape={self.shape}, dtype={self.dtype}>"
        body = np.array2string(self._value, separator=", ", prefix="tensor(")
        return f"tensor({body}, shape={self.shape}, dtype={self.dtype})"

    def _repr_html_(self):
        """In a notebook: the values as an HTML table (rank 0 to 2; long sides show their
        first and last entries), captioned with the dtype and shape; higher ranks and
        traced tensors as their text."""
        if self._value is None or len(self.shape) > 2 or type(self) is not Tensor:
            return f"<pre>{escape(repr(self))}</pre>"
        return _html_table(self._value, f"tensor {self.dtype}{list(self.shape)}")

    def __reduce__(self):
        return (Tensor, (self.numpy(),))


HTML_EDGE = 5   # a side longer than 2 * HTML_EDGE shows its first and last HTML_EDGE entries


def _html_table(values, caption):
    """``values`` (rank 0-2) as ``<table>`` rows of ``<td>`` cells, elided in the middle."""
    grid = np.atleast_2d(values) if values.ndim else values.reshape(1, 1)

    def picks(n):
        return list(range(n)) if n <= 2 * HTML_EDGE else \
            list(range(HTML_EDGE)) + [None] + list(range(n - HTML_EDGE, n))

    rows, cols = picks(grid.shape[0]), picks(grid.shape[1])

    def cell(i, j):
        if i is None or j is None:
            return "<td>&hellip;</td>"
        v = grid[i, j]
        text = f"{v:.6g}" if grid.dtype.kind == "f" else str(v)
        return f"<td>{escape(text)}</td>"

    body = "".join("<tr>" + "".join(cell(i, j) for j in cols) + "</tr>" for i in rows)
    return (f"<table><caption>{escape(caption)}</caption><tbody>{body}</tbody></table>")


# The in-place operators, for every binary operator tensors have: each updates the
# tensor object (engine/writes.py), so ``for p in params: p += g`` works as in numpy.
# Those the C extension implements are its type slots, which call these methods for what
# their fast path does not take (engine/fast_writes.py).
_IN_PLACE = {_name: (_writes.in_place_method(_name, getattr(TensorOps, f"__{_name}__")),
                     getattr(TensorOps, f"__{_name}__"))
             for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                           "and", "or", "xor", "lshift", "rshift")
             if hasattr(TensorOps, f"__{_name}__")}
for _name, (_method, _) in _IN_PLACE.items():
    if _name not in _fast_writes.C_IN_PLACE:
        setattr(Tensor, f"__i{_name}__", _method)


class ForeignTensor(Tensor):
    """A concrete tensor whose value is an array of a back end other than numpy
    (``t.backend``). Made by ``en.tensor(x, backend=...)``, ``t.to(...)`` and by
    ops on such tensors; an op never mixes it with tensors of another back end.
    """

    __slots__ = ("_backend",)
    _backend: _backends.Backend     # set by wrap_on, which makes every foreign tensor
    _functional_writes = True       # another back end's array may not be writable

    @property
    def backend(self):
        return self._backend

    def numpy(self):
        """The values as a read-only numpy array (converted through the back end)."""
        view = np.asarray(self._backend.to_numpy(self._value)).view()
        view.flags.writeable = False
        return view

    def _concrete(self, what):
        return self._value

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        return (f"tensor({body}, shape={self.shape}, dtype={self.dtype}, "
                f"backend={self._backend.name})")

    def __reduce__(self):
        return (tensor, (self.numpy(), None, self._backend.name))


def wrap_on(backend, value):
    """A concrete tensor around an array of ``backend`` that the engine made."""
    if backend.numpy_arrays:
        return wrap(value)
    t = object.__new__(ForeignTensor)
    t._value = value
    t._shape = tuple(value.shape)
    t._dtype = backend.dtype_of(value)
    t._node = None
    t._alias = None
    t._backend = backend
    return t


def wrap(value):
    """Fast path: a concrete tensor around an array the engine made (no checks)."""
    t = object.__new__(Tensor)
    t._value = value
    t._shape = value.shape
    t._dtype = value.dtype
    t._node = None
    t._alias = None
    return t


def traced(shape, dtype, node):
    """A traced tensor standing for ``node`` (used by the tracer)."""
    t = object.__new__(Tensor)
    t._value = None
    t._shape = shape
    t._dtype = dtype
    t._node = node
    return t


def tensor(data: Any, dtype: DTypeLike = None, backend: Any = None) -> Tensor:
    """Make a tensor from nested lists, scalars, arrays or tensors.

    An array of a back end's library (an ``array_api_strict`` array) makes a
    tensor on that back end; Python data and numpy arrays make one on numpy
    (or on the back end chosen with ``en.backend.use``). ``backend=`` moves the
    data there explicitly. Python floats are float64 unless ``en.set_default_dtype``
    says otherwise; numpy arrays and tensors keep their dtype.

    Example:
        >>> import engine as en
        >>> en.tensor([1.0, 2.0], dtype="float32")
        tensor([1., 2.], shape=(2,), dtype=float32)
        >>> en.tensor([1.0], backend="array_api_strict").backend.name
        'array_api_strict'
    """
    if type(data) in NESTED_TYPES and holds_tensors(data):
        # [x, 3 * x]: stacked through the engine, so the tensor keeps x's gradient
        data = _ops.join.stack_nested(data)
    if isinstance(data, Tensor):     # a new tensor, as np.array and torch.tensor make:
        if dtype is not None and np.dtype(dtype) != data.dtype:   # a write to it never
            data = _ops.cast(data, dtype)                          # reaches ``data``
        elif data._value is not None:
            data = _ops.identity(data)     # (eager: a copy; recorded, so gradients flow)
        return data if backend is None else data.to(backend)
    if dtype is None:     # Python floats: the default dtype when one is set
        dtype = _default_dtype.python_data_dtype(data)
    owner = None if type(data) is np.ndarray else _backends.of_array(data)
    target = _backends.get(backend) if backend is not None else owner or _backends.default()
    if target.numpy_arrays:
        if owner is not None and not owner.numpy_arrays:   # an explicit move to numpy
            data = np.array(owner.to_numpy(data), copy=True)
        return Tensor(data, dtype)
    if owner is not None and owner is not target:
        data = owner.to_numpy(data)
    return wrap_on(target, target.asarray(data, dtype))


# engine/writes.py makes and checks tensors; it cannot import this module (which imports it).
_writes.bind_tensor_type(Tensor, tensor, wrap, _IN_PLACE)
