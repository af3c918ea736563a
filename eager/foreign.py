"""Eager ops on tensors of a back end other than numpy (``engine.backend``).

numpy tensors never come here: eager mode sends a call here only when an
argument is a :class:`~engine.tensor.ForeignTensor` (its lifting step finds
one) or a creation op runs under ``en.backend.use``. The steps are eager
mode's own -- the shape rule, the kernel -- with the kernel taken from the
op's table for the back end and no numpy fast path (no buffer cache, no
``out=``); ``engine.modes.apply`` records the call on tapes as for any op.

Example:
    >>> import engine as en
    >>> x = en.tensor([1.0, 2.0], backend="array_api_strict")
    >>> (x + 1.0).backend.name
    'array_api_strict'
"""
import numpy as np

from engine import backend as backends
from engine.config import config
from engine.errors import BackendError, EngineError
from engine.lifting import NESTED_TYPES, WEAK_SCALAR_TYPES, as_array, holds_tensors, weak_scalar_array
from engine.ops.join import stack_nested
from engine.modes import read_variable
from engine.op import REGISTRY
from engine.tensor import Tensor, wrap_on
from engine.variable import Variable

from .numerics import check_outputs, checked_later

_CHECK_NUMERICS = config._check_numerics


class OnOtherBackend(Exception):
    """Raised by eager lifting when an argument lives on a non-numpy back end."""


def _backend_of(a):
    """The back end an argument's data lives on, or None for Python data."""
    if isinstance(a, Tensor):
        return a.backend if a._value is not None else None
    if isinstance(a, Variable):
        return a.backend
    if isinstance(a, np.ndarray):
        return backends.NUMPY
    return backends.of_array(a)


def backend_for(op, args):
    """The one back end of ``op``'s arguments; a BackendError when they mix back ends.
    Tensors and variables decide first: a bare array of their library (an index made
    for them) then belongs to their back end, though several may share that library."""
    found = None
    held = [a for a in args if isinstance(a, (Tensor, Variable))]
    for a in held + [a for a in args if not isinstance(a, (Tensor, Variable))]:
        if found is not None and not isinstance(a, (Tensor, Variable)) and found.is_array(a):
            continue
        b = _backend_of(a)
        if b is None or b is found:
            continue
        if found is not None:
            both = backends.joined(found, b)
            if both is None:
                raise backends.mismatch(f"op '{op.name}'", found, b)
            b = both
        found = b
    return found or backends.default()


def lift_foreign(mode, args):
    """Eager mode's ``lift`` when an argument lives on another back end: the
    arguments as tensors of that back end (a numpy tensor among them is kept, so
    that the op then names both back ends, unless that back end takes numpy
    tensors in)."""
    args = [stack_nested(a) if type(a) in NESTED_TYPES and holds_tensors(a) else a for a in args]
    backend = next(a.backend for a in args
                   if isinstance(a, (Tensor, Variable)) and a._value is not None and
                   not a.backend.numpy_arrays)
    return _lift(mode, backend, args)


def _lift(mode, backend, args):
    """Tensors on ``backend`` for the arguments (Python scalars weakly typed)."""
    out = []
    weak = False
    for a in args:
        if isinstance(a, Tensor):
            if a._value is None:
                mode._lift([a])       # raises eager mode's error for a leaked tensor
        elif type(a) in WEAK_SCALAR_TYPES:
            weak = True
        elif backend.is_array(a):
            a = wrap_on(backend, backend.asarray(a))
        elif isinstance(a, Variable) and a.backend is backend:
            a = read_variable(a, mode)     # recorded on tapes, as any variable read
        elif isinstance(a, (Variable, np.ndarray)):
            a = mode._lift([a])[0]    # numpy's: the op then names both back ends
        elif type(a) in NESTED_TYPES and holds_tensors(a):   # stacked, differentiably
            a = stack_nested(a)
        else:   # Python data (lists): made on this back end
            a = wrap_on(backend, backend.from_numpy(as_array(a)))
        out.append(a)
    if weak:
        others = [a.dtype for a in out if type(a) not in WEAK_SCALAR_TYPES]
        out = [wrap_on(backend, backend.from_numpy(weak_scalar_array(a, others)))
               if type(a) in WEAK_SCALAR_TYPES else a for a in out]
    return out


def _result(backend, value, dtype):
    if not backend.is_array(value):
        value = backend.asarray(value)
    if backend.dtype_of(value) != dtype:
        value = backend.astype(value, dtype)
    return wrap_on(backend, value)


def apply_foreign(mode, op, args, params, located):
    """Run ``op`` eagerly on the back end its arguments live on."""
    # Lists of tensors ([t, 2 * t]) are stacked first, so their tensors' back end counts.
    args = [stack_nested(a) if type(a) in NESTED_TYPES and holds_tensors(a) else a for a in args]
    try:
        backend = backend_for(op, args)
    except BackendError as err:
        raise located(err) from None
    kernel = op.kernels.get(backend.name)
    if kernel is None:
        raise located(BackendError(f"op '{op.name}' has no kernel on back end {backend.name}"))
    tensors = _lift(mode, backend, args)
    aval = mode._validate(op, tensors, params, None)[0]
    # numpy tensors joining another back end's (parameters among Dask data) are
    # converted here, at the kernel: the tensors recorded on tapes stay theirs.
    result = kernel(*[t._value if t.backend is backend else backend.from_numpy(t._value)
                      for t in tensors], **params)
    if op.multiple_results:
        out = tuple(_result(backend, r, a[1]) for r, a in zip(result, aval))
    else:
        out = _result(backend, result, aval[1])
    if _CHECK_NUMERICS.get():
        if backend.lazy:
            return checked_later(op, out, tensors)
        check_outputs(op, out, tensors)
    return out


# ---- variables holding another back end's arrays ---------------------------------------
_UPDATE_OPS = {"assign_add": "add", "assign_sub": "sub"}


def assign_on_backend(var, value, kind, indices, located):
    """``var.assign`` / ``assign_add`` / ``assign_sub`` / ``scatter_update`` for a
    variable holding an array of a back end other than numpy: the new value is
    computed with that back end's kernels and stays its array. A value from another
    back end is an error (as in an op); Python data is made on the variable's.

    Example:
        >>> import engine as en
        >>> v = en.Variable(en.tensor([1.0, 2.0], backend="array_api_strict"))
        >>> v.assign_add(1.0).read().to("numpy").numpy().tolist()
        [2.0, 3.0]
    """
    backend = var.backend
    try:
        if kind == "scatter_update":
            var._scatter(indices, value)   # refuses where the back end has no in-place update
            return var
        new = _value_on(backend, var, value, kind)
        if kind in _UPDATE_OPS:
            new = REGISTRY[_UPDATE_OPS[kind]].kernels[backend.name](var._value, new)
        _check_value(var, backend, new, kind)
    except (BackendError, EngineError) as err:
        raise located(err) from None
    with var._lock:
        var._set(new)
    return var


def _value_on(backend, var, value, kind):
    """``value`` as an array of ``backend`` (Python scalars take the variable's dtype)."""
    if isinstance(value, Variable):
        value = value.read()
    if isinstance(value, Tensor):
        if value._value is None:
            raise EngineError(f"Variable {var.name!r}.{kind}: a traced tensor outside its "
                              "function")
        if value.backend is not backend:
            both = backends.joined(backend, value.backend)
            if both is not backend:
                raise backends.mismatch(f"Variable {var.name!r}.{kind}", backend, value.backend)
            return backend.from_numpy(value._value)
        return value._value
    if backend.is_array(value):
        return value
    if isinstance(value, np.ndarray) and not backend.joins_numpy:
        raise backends.mismatch(f"Variable {var.name!r}.{kind}", backend, backends.NUMPY)
    if type(value) in WEAK_SCALAR_TYPES:
        return backend.from_numpy(weak_scalar_array(value, [var.dtype]))
    return backend.from_numpy(as_array(value))


class _Aval:
    """Shape and engine dtype of a back end's array, for the variable's checks."""

    def __init__(self, backend, array):
        self.shape, self.dtype = tuple(array.shape), backend.dtype_of(array)


def _check_value(var, backend, array, kind):
    var._check_new_value(_Aval(backend, array), kind)
