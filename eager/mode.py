"""Eager mode: validate with the op's shape rule, then run its numpy kernel at once.

Validation is cached per (op, params, input shapes and dtypes), so the common
case of a repeated call costs one dictionary lookup before the kernel runs.
"""
import numpy as np

from engine.backend import current_override
from engine.config import config
from engine.cost_model import cost
from engine.errors import (BackendError, DTypeError, EngineError, TracingError, format_location,
                           user_frame)
from engine.lifting import (NESTED_TYPES, WEAK_SCALAR_TYPES, as_array, holds_tensors, lift_error,
                            weak_scalar_array)
from engine.modes import Mode, read_variable
from engine.ops.join import stack_nested
from engine.op import freeze_params
from engine.tensor import Tensor, wrap, wrap_on
from engine.writes import note_alias
from engine.variable import Variable, check_scatter

from . import buffer_cache
from .foreign import OnOtherBackend, apply_foreign, assign_on_backend, lift_foreign
from .numerics import check_outputs

_CHECK_NUMERICS = config._check_numerics

_AVAL_CACHE: dict[tuple, tuple] = {}
_CACHE_LIMIT = 100_000


_SCALARS: dict[tuple, Tensor] = {}
_SCALARS_LIMIT = 4096


def _scalar_tensor(value, other):
    """The weakly typed 0-d tensor for a Python scalar beside a tensor of dtype
    ``other``; the same read-only tensor serves every use of a value (a write to it
    copies first), so ``x * 2.0`` in a loop makes no new array for the 2.0."""
    # Not kept: zeros (0.0 == -0.0 as keys, but the sign matters) and NaN (never
    # equal to itself, so it would only fill the table).
    if not value or value != value:
        return wrap(weak_scalar_array(value, (other,)))
    key = (type(value), value, other)
    t = _SCALARS.get(key)
    if t is None:
        arr = weak_scalar_array(value, (other,))
        arr.flags.writeable = False
        t = wrap(arr)
        if len(_SCALARS) < _SCALARS_LIMIT:
            _SCALARS[key] = t
    return t


def _leaked(t):
    return TracingError(
        f"a traced tensor {t._describe()} escaped the function that traced it and was used "
        f"eagerly at {format_location(user_frame())}; return it from the function instead")


def located(err):
    """Re-make an engine error with the user's source line added to its message."""
    return type(err)(f"{err}\n  at {format_location(user_frame())}")


class EagerMode(Mode):
    """Runs ops at once on numpy. The default mode (registered by ``engine/__init__.py``)."""

    name = "eager"
    is_concrete = True
    value_type = Tensor   # lift keeps concrete tensors, and apply refuses traced ones

    def lift(self, args):
        """Turn op arguments into concrete tensors (scalars weakly typed), on the back
        end of their tensors."""
        try:
            return self._lift(args)
        except OnOtherBackend:
            pass
        return lift_foreign(self, args)

    def _lift(self, args):
        """``lift`` for numpy tensors; raises OnOtherBackend at a tensor of another
        back end (apply then runs the op there)."""
        n = len(args)
        if n == 2:    # tensor-and-Python-scalar (x * 2.0): the common case
            a, b = args
            if type(a) is Tensor and a._value is not None:
                if type(b) in WEAK_SCALAR_TYPES:
                    return [a, _scalar_tensor(b, a._dtype)]
                if type(b) is Tensor and b._value is not None:
                    return args   # concrete already (apply under a tape lifts first)
            elif type(b) is Tensor and b._value is not None and type(a) in WEAK_SCALAR_TYPES:
                return [_scalar_tensor(a, b._dtype), b]
        elif n == 1:
            a = args[0]
            if type(a) is Tensor and a._value is not None:
                return args
        out = []
        weak = False
        for a in args:
            t = type(a)
            if t is Tensor:
                if a._value is None:
                    raise _leaked(a)
            elif t in WEAK_SCALAR_TYPES:
                weak = True
            elif isinstance(a, Variable):
                a = read_variable(a, self)
                if type(a) is not Tensor:   # a variable on another back end
                    raise OnOtherBackend()
            elif isinstance(a, Tensor):   # a ForeignTensor: another back end's kernels
                raise OnOtherBackend()
            elif t in NESTED_TYPES and holds_tensors(a):   # [x, 2 * x]: stacked, differentiably
                a = stack_nested(a)
                if type(a) is not Tensor:
                    raise OnOtherBackend()
            else:
                a = Tensor(as_array(a))
            out.append(a)
        if weak:
            others = [a._dtype for a in out if type(a) not in WEAK_SCALAR_TYPES]
            out = [wrap(weak_scalar_array(a, others)) if type(a) in WEAK_SCALAR_TYPES else a
                   for a in out]
        return out

    def apply(self, op, args, params):
        # The hot path of eager mode: keep it short. Arguments that are all
        # concrete tensors (the common case) skip lifting.
        tensors = args
        for a in args:
            if type(a) is not Tensor or a._value is None:
                try:
                    tensors = self._lift(args)
                    break
                except OnOtherBackend:
                    pass
                except (DTypeError, OverflowError) as err:   # a float16 array, int32 + 2**40
                    raise lift_error(op, args, err) from None
                return apply_foreign(self, op, args, params, located)
        n = len(tensors)
        if params:
            # Params in call order: one call site always passes them in the same
            # order; an unhashable value falls back to freeze_params below.
            key = (op, tuple(params.items()), *[(t._shape, t._dtype) for t in tensors])
        elif n == 2:
            a, b = tensors
            key = (op, a._shape, a._dtype, b._shape, b._dtype)
        elif n == 1:
            a = tensors[0]
            key = (op, a._shape, a._dtype)
        else:
            key = (op, *[(t._shape, t._dtype) for t in tensors])
        try:
            checked = _AVAL_CACHE.get(key)
        except TypeError:  # unhashable params (a list): freeze them
            checked, key = _frozen_lookup(op, params, tensors)
        if checked is None:
            checked = self._validate(op, tensors, params, key)
        aval, large = checked
        if op.multiple_results:
            result = op.impl(*[t._value for t in tensors], **params)
            out: Tensor | tuple[Tensor, ...] = tuple(
                note_alias(op, _as_output(r, a[1]), tensors) for r, a in zip(result, aval))
        else:
            if large:
                result = _run_large(op, tensors, params, aval[0], aval[1])
            elif n == 2:
                result = op.impl(tensors[0]._value, tensors[1]._value, **params)
            elif n == 1:
                result = op.impl(tensors[0]._value, **params)
            else:
                if not n and current_override() is not None:   # en.backend.use(...)
                    return apply_foreign(self, op, args, params, located)
                result = op.impl(*[t._value for t in tensors], **params)
            if type(result) is not np.ndarray or result.dtype != aval[1]:
                result = _as_array(result, aval[1])
            out = object.__new__(Tensor)   # wrap(), inlined: this runs for every op
            out._value = result
            out._shape = result.shape
            out._dtype = result.dtype
            out._node = None
            out._alias = None
            if large:
                buffer_cache.adopt(out, result)
            elif result.base is not None:
                # a view (numpy's), or a copy where numpy copies. (No kernel returns an
                # input's own array: tests/core/test_write_aliasing.py checks every op.)
                note_alias(op, out, tensors)
        if _CHECK_NUMERICS.get():
            check_outputs(op, out, tensors)
        return out

    @staticmethod
    def _validate(op, tensors, params, key):
        """Run the op's shape rule (first call for this signature) and cache
        ``(aval, large)``: large results may be written into recycled arrays."""
        try:
            aval = op.abstract_eval(*[(t.shape, t.dtype) for t in tensors], **params)
        except EngineError as err:
            raise located(err) from None
        except TypeError as err:               # a keyword the op does not take
            error = op.params_error(len(tensors), params)
            if error is None:
                raise
            raise located(error) from err
        large = False
        if not op.multiple_results and op.out_impl is not None:
            large = int(np.prod(aval[0])) * aval[1].itemsize >= cost.recycle_min_bytes
        checked = (aval, large)
        if key is not None and len(_AVAL_CACHE) < _CACHE_LIMIT:
            _AVAL_CACHE[key] = checked
        return checked

    def read_variable(self, var, _ndarray=np.ndarray):
        value = var._value
        if type(value) is _ndarray:   # numpy's (the hot path; a bound name saves a lookup)
            return wrap(value)
        return wrap_on(var._backend, value)

    def assign_variable(self, var, value, kind, indices=None):
        if not var._backend.numpy_arrays:
            return assign_on_backend(var, value, kind, indices, located)
        if kind == "scatter_update":
            return _scatter_update(var, indices, value)
        # Values of tensors and variables never change: they need no copy (a
        # tensor's array that is a writable view is copied all the same).
        from_variable, from_tensor = isinstance(value, Variable), isinstance(value, Tensor)
        # A tensor's memory can be shared only while nothing views it: its array turns
        # read-only, which a view made earlier would not see (engine/writes.py).
        from_tensor = from_tensor and getattr(value, "_alias", None) is None
        value = _plain_array(value, var.dtype)   # 1.5 into an int variable is an error
        immutable = from_variable or (from_tensor and (value.base is None
                                                       or not value.flags.writeable))
        if value.shape != var.shape and kind != "assign" and value.ndim == 0:
            value = np.broadcast_to(value, var.shape)
        try:
            var._check_new_value(value, kind)
        except EngineError as err:
            raise located(err) from None
        if kind == "assign":
            new = value if immutable and value.flags.c_contiguous else np.array(value, copy=True)
            with var._lock:     # waits for a graph call that is writing var
                var._set(new)
            return var
        with var._lock:         # read-modify-write: no other thread's write in between
            var._set(var._value + value if kind == "assign_add" else var._value - value)
        return var

    def cond(self, pred, true_fn, false_fn, *operands):
        return true_fn(*operands) if bool(pred) else false_fn(*operands)


def _scatter_update(var, indices, updates):
    """``var.scatter_update``: validate everything, then write the rows."""
    indices = _plain_array(indices, None)
    updates = _plain_array(updates, var.dtype)
    try:
        check_scatter(var, (indices.shape, indices.dtype), (updates.shape, updates.dtype))
        with var._lock:
            var._scatter(indices, updates)
    except EngineError as err:
        raise located(err) from None
    return var


def _plain_array(x, weak_dtype):
    """The numpy value of a tensor, variable, Python scalar or array-like."""
    if isinstance(x, Variable):
        return x._value
    if isinstance(x, Tensor):
        if x._value is None:
            raise _leaked(x)
        if type(x) is not Tensor:   # a ForeignTensor: this variable holds numpy arrays
            raise BackendError(f"a variable on back end numpy got a tensor on back end "
                               f"{x.backend.name}; move it with t.to('numpy')")
        return x._value
    if weak_dtype is not None and type(x) in WEAK_SCALAR_TYPES:
        return weak_scalar_array(x, [weak_dtype])
    return as_array(x)


def _frozen_lookup(op, params, tensors):
    """``(checked or None, key)`` with params made hashable; key None if they cannot be."""
    key = (op, freeze_params(params), *[(t.shape, t.dtype) for t in tensors])
    try:
        return _AVAL_CACHE.get(key), key
    except TypeError:   # validate without the cache
        return None, None


def _run_large(op, tensors, params, shape, dtype):
    """A large result: written into a recycled array when one of its shape and dtype is free."""
    arrays = [t._value for t in tensors]
    buf = buffer_cache.take(shape, dtype)
    if buf is None:
        return op.impl(*arrays, **params)
    return op.out_impl(*arrays, out=buf, **params)


def _as_array(result, dtype):
    """numpy returns scalars for 0-d results; make arrays of the promised dtype."""
    if type(result) is not np.ndarray:
        result = np.asarray(result)
    if result.dtype != dtype:
        result = result.astype(dtype)
    return result


def _as_output(result, dtype):
    return wrap(_as_array(result, dtype))


EAGER = EagerMode()
