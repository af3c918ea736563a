"""Writes to tensors: ``x[index] = v``, in-place operators (``x += y``) and ``out=``.

Tensors are writable with numpy's semantics:

* **In place.** A write changes the tensor object itself, so ``for p in params:
  p -= lr * g`` updates every parameter, as in numpy and PyTorch.
* **Views share writes.** The ops numpy answers with a view (basic indexing,
  ``reshape``, ``transpose``, ``squeeze`` ... :data:`VIEW_OPS`) give tensors that
  share memory with their input: a write through either is seen by both. Where an op
  of the engine shares memory and numpy's would not, the result is copied, so no
  write reaches a tensor numpy would have kept apart.
* **Read-only memory is copied on first write.** A variable's value, a graph's
  constant, weakly typed scalars and ``en.tensor`` of read-only data are shared
  without a copy until a tensor holding them is written: that tensor then gets its
  own copy (a view of such memory too, a ``broadcast_to`` result included, where numpy
  refuses the write). A tensor with views of its read-only memory cannot be written
  (the copy would leave the views behind): the error says to write a copy.
* **Gradients flow through writes.** On a tape a write is the op ``index_update``
  (``engine/ops/index_update.py``); the tensor's earlier value is kept for the
  entries that used it, so a write never changes what the backward pass sees. A
  write that would change another tensor a tape holds (a view of the written
  memory) is refused before anything is written.
* **Fast paths.** On an eager numpy tensor with no live tape, ``x[index] = v`` (ints,
  slices or a boolean mask; a number or a tensor of x's dtype) and ``x op= y`` (a
  tensor of x's dtype or a number of its kind) run numpy's own statement after a few
  type tests; numpy checks such a write in full before writing. Anything else, or
  anything numpy refuses, takes the checked path: the same result, or the engine's error.
* **Inside en.function** a write is a functional update: the tensor stands for the
  ``index_update`` node from then on (PyTorch's functionalization); writes through
  views of traced tensors reach their base and every other view of it
  (``engine/traced_writes.py``).

What a tape needs from a write (which tapes hold entries, their entries redirected to a
written tensor's old value) is ``engine/write_tapes.py``.

Example:
    >>> import engine as en
    >>> x = en.zeros(4)
    >>> row = x[1:3]              # a view, as in numpy
    >>> row[0] = 5.0
    >>> x += 1.0
    >>> x.numpy()
    array([1., 6., 1., 1.])
"""
from __future__ import annotations

import dis
import operator
import sys
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import fast_writes, trace_state
from .errors import (ArgumentTypeError, DTypeError, InvalidArgumentError, ScalarOverflowError,
                     ShapeError, TracingError, format_location, user_frame)
from .modes import _MODE, current_mode, pushed_mode
from .ops.index_update import index_update_apply, index_update_op, store
from .ops.indexing import build_index, parse_index, zero_d_masks
from .traced_writes import become, call_site, functional_write, outer_traced
from .write_tapes import LIVE_TAPE_SET, adopt, on_a_tape, redirect, shares, \
    tapes_with_entries, tensors_of

_LIVE = LIVE_TAPE_SET

if TYPE_CHECKING:
    from .contracts import AbstractEval
    from .lifting import TensorLike

# index_update's shape rule, which checks a write before anything is written (Op types
# the rule as optional, for ops made without one; index_update always has one).
_check_write = cast("AbstractEval", index_update_op.abstract_eval)

#: Ops whose numpy counterparts return a view of their (first) input: their results
#: share memory with it, and writes through either are seen by both.
VIEW_OPS = frozenset({
    "getitem", "reshape", "transpose", "squeeze", "expand_dims", "broadcast_to",
    "swapaxes", "moveaxis", "permute_dims", "diagonal", "real", "imag", "matrix_transpose",
    "flip", "ravel", "unstack", "split", "atleast_1d", "atleast_2d", "atleast_3d",
    "stop_gradient", "optimization_barrier",   # PyTorch's detach() shares the memory too
})


class _Viewed:
    """The ``_alias`` of a tensor others view (see :func:`note_alias`)."""

    __slots__ = ()

    def __repr__(self):
        return "<has views>"


#: ``t._alias``: unset or None (t owns its memory, nobody views it), VIEWED (t owns
#: its memory and views of it were made) or the root tensor whose memory t views.
#: While tracing: ``(root, steps)`` for a view (the ops that make it from its root),
#: and on a root the list of its views as ``(weakref, steps)``, so a write to the
#: root (or through one view) re-derives every other view from the root.
VIEWED = _Viewed()



# The tensor type and its constructors, bound by engine/tensor.py when it is defined
# (it imports this module, so this one cannot import it).
_BOUND: dict = {}


def bind_tensor_type(tensor_class, make, wrap, in_place_methods):
    """Called once by engine/tensor.py: the Tensor class, ``en.tensor``, ``wrap`` and the
    in-place operator methods (``{"add": (__iadd__, __add__), ...}``: the method this
    module makes and the operator it updates with); arms the C fast paths when built
    (engine/fast_writes.py), which call this module's functions for the rest."""
    global _TENSOR
    _BOUND.update(tensor=make, wrap=wrap)
    _TENSOR = tensor_class
    _BINARIES.update({name: binary for name, (_, binary) in in_place_methods.items()})
    fast_writes.arm(tensor_class, live_tapes=_LIVE, mode_var=_MODE, basic_types=_BASIC,
                    refused=_REFUSED, setitem=setitem, checked_setitem=_c_checked_setitem,
                    refuse_delete=_refuse_delete, bump=_bump,
                    in_place_methods={n: m for n, (m, _) in in_place_methods.items()},
                    checked_in_place=_c_checked_in_place)


# The operator each in-place method updates with ("add": Tensor.__add__), once bound.
_BINARIES: dict = {}


def _c_checked_setitem(x, index, value):
    """The C slot's checked path (looked up at each call, so tests can watch it)."""
    _checked_setitem(x, index, value)


def _c_checked_in_place(x, name, other):
    """The C slots' ``x <name>= other`` checked path."""
    return in_place(x, name, other, _BINARIES[name])


_TENSOR: Any = object       # the Tensor class, once bound (read by the hot paths)


def root_of(t):
    """The tensor whose memory ``t`` views, or ``t`` itself (eager tensors)."""
    alias = getattr(t, "_alias", None)
    return alias if alias is not None and alias is not VIEWED and not isinstance(
        alias, (tuple, list)) else t


# ---- eager aliasing of op results --------------------------------------------------------
def note_alias(op, out, tensors):
    """Called by eager mode for a result whose array is a view (``base`` set) or one of
    its inputs' arrays: a view op's result is marked as a view of its input's root; any
    other op's result is copied (numpy would have made new memory). Returns ``out``."""
    result = out._value
    owner = result.base if result.base is not None else result
    for t in tensors:
        value = t._value
        if type(value) is not np.ndarray:
            continue
        if value is owner or value.base is owner or value is result:
            if op.name not in VIEW_OPS or result is value:
                out._value = result.copy()
                return out
            root = root_of(t)
            out._alias = root
            if getattr(root, "_alias", None) is None:
                root._alias = VIEWED
            return out
    return out


# ---- x[index] = value -----------------------------------------------------------------------
# Index items numpy checks in full before it writes anything (a basic index): a write with
# only these, on an eager numpy tensor, is numpy's own ``buf[index] = value``.
_BASIC = frozenset({int, slice, type(Ellipsis), np.intp, np.int32, np.int64})
# numpy's errors for a write it refuses before writing (read-only memory, an index out of
# range, values that do not broadcast or do not fit): the checked path then runs and
# raises the engine's error naming the op, the shapes and the dtypes.
_REFUSED = (IndexError, ValueError, TypeError, OverflowError)


def setitem(x, index, value):
    """``x[index] = value`` (see the module docstring); ``Tensor.__setitem__`` is this.

    Example:
        >>> import engine as en
        >>> x = en.zeros(3)
        >>> x[1] = 2.0
        >>> x.tolist()
        [0.0, 2.0, 0.0]
    """
    # The common eager case first, in numpy's time: no tape, a numpy tensor, a Python
    # number or a tensor of x's dtype, and a basic index or a boolean mask tensor. Each
    # test costs about a fifth of numpy's whole a[i] = v, so there are few; what numpy
    # refuses (before writing anything) takes the checked path, which names the error.
    if type(x) is _TENSOR and not _LIVE:
        kind = type(value)
        if kind is float or kind is int or kind is bool:
            operand = value       # (a float into integers: numpy's truncation, as below)
        elif kind is _TENSOR:
            operand = value._value
            if value._dtype is not x._dtype and value._dtype != x._dtype:
                operand = None    # (the checked path casts as numpy would)
        else:
            operand = None
        buf = x._value
        if operand is not None and buf is not None:
            kind = type(index)
            where = index
            if kind is int or kind is slice:
                pass
            elif kind is tuple:
                for item in index:
                    if type(item) not in _BASIC:
                        operand = None
                        break
            elif kind is _TENSOR:          # a boolean mask of at least one axis
                where = index._value
                if where is None or where.dtype.kind != "b" or not where.ndim:
                    operand = None
            elif kind not in _BASIC:
                operand = None
            if operand is not None and pushed_mode(None) is None:
                try:
                    buf[where] = operand
                except _REFUSED:
                    pass       # nothing was written: the checked path raises the error
                else:
                    # a view, a root with views, or captured by a trace (capture_version
                    # marks it): its version moves. (Every tensor is made with _alias.)
                    if x._alias is not None:
                        _bump(x)
                    return
    _checked_setitem(x, index, value)


def _refuse_delete(x, index):
    """``del x[index]``: tensors keep their shape, so there is nothing to delete."""
    raise ArgumentTypeError(f"del x[index]: {type(x).__name__} does not support item "
                            f"deletion (a tensor keeps its shape); en.delete(x, index) makes "
                            f"a new tensor without those entries, at {call_site()}")


def _checked_setitem(x, index, value):
    """``x[index] = value`` checked in full: any tape, mode, back end, index or value."""
    if type(value) in (int, float) and x.dtype.kind in "iu":
        _check_fits(x, value)
    new_axis = zero_d_masks(index, len(x.shape))[1]
    if new_axis is not None:
        if new_axis[1]:                        # x[False] = v: no position is written
            return
        raise ArgumentTypeError(              # (numpy would move the new axis first)
            "x[index] = value: a true 0-d boolean apart from integer index items is not "
            "supported in a write; write x[...] with the integers alone")
    if x._value is None or x._functional_writes or not current_mode().is_concrete:
        return functional_write(x, index, value)
    _eager_write(x, index, value)


def _check_fits(x, value):
    """numpy's refusals of a Python number an integer tensor cannot hold, rather than a
    wrapped or undefined value: numpy truncates a float, then refuses an int out of the
    dtype's range or an infinity (OverflowError) and a NaN (ValueError)."""
    if type(value) is float:
        if value != value:
            raise InvalidArgumentError(f"x[index] = value: cannot store nan in the integer "
                                       f"tensor {x._describe()}, at {call_site()}")
        if value in (float("inf"), float("-inf")):
            raise ScalarOverflowError(f"x[index] = value: cannot store {value} in the "
                                      f"integer tensor {x._describe()}, at {call_site()}")
        value = int(value)
    info = np.iinfo(x.dtype)
    if not info.min <= value <= info.max:
        raise ScalarOverflowError(
            f"x[index] = value: Python integer {value} is out of bounds for "
            f"{x._describe()} (range {info.min} to {info.max}), at {call_site()}")


def _parsed(x, index, value):
    """Validate a write before anything is written: the index, the values' shape and
    dtype, with the op's error. Returns (spec, index arrays, values as a tensor)."""
    index = zero_d_masks(index, len(x.shape))[0]
    spec, arrays = parse_index(x.shape, index)
    v = value if isinstance(value, _TENSOR) else _BOUND["tensor"](value)
    if v._value is None and x._value is not None:
        raise TracingError(f"x[index] = value: the value {v._describe()} is traced but "
                           f"{x._describe()} is a concrete tensor made outside the traced "
                           f"function (at {format_location(user_frame())}); pass it as an "
                           "argument, or keep it in an en.Variable")
    avals = [(tuple(a.shape), a.dtype) for a in arrays]
    _check_write((x.shape, x.dtype), (v.shape, v.dtype), *avals, spec=spec)
    return spec, arrays, v


def _eager_write(x, index, value):
    spec, arrays, v = _parsed(x, index, value)
    np_index = build_index(spec, [np.asarray(a) for a in arrays])
    values = v._value if v.backend.numpy_arrays else np.asarray(v.numpy())
    if _LIVE and on_a_tape(x, v):
        _recorded_write(x, spec, arrays, v)
        return
    _store(x, np_index, values)


def _writable_buffer(x, what="x[index] = value"):
    """x's array, ready to be written: read-only memory is copied first (see the module
    docstring); a tensor others view is refused, as the copy would leave them behind."""
    buf = x._value
    if buf.flags.writeable:
        return buf
    alias = getattr(x, "_alias", None)
    if alias is VIEWED:
        raise ArgumentTypeError(
            f"{what}: {x._describe()} shares read-only memory (a variable's value, a "
            f"graph constant or en.tensor of read-only data) with views made from it, at "
            f"{format_location(user_frame())}; writing it would need a copy the views do "
            "not see: write to a copy (t = t.copy()) and take the views from that")
    # A view of read-only memory (numpy refuses the write; array-api-compat cannot tell
    # such a tensor is read-only) gets its own copy too: its base cannot be written in
    # place while it is viewed (above), so the two can never be told apart wrongly.
    x._value = buf = np.array(buf, copy=True)
    if alias is not None:
        x._alias = None
    return buf


def _store(x, np_index, values):
    buf = _writable_buffer(x)
    store(buf, np_index, values)
    _bump(x)


def _bump(x):
    """A tensor captured by a trace was written: its traces must not use the old value."""
    root = root_of(x)
    if getattr(root, "_version", None) is not None:
        root._version += 1
        trace_state.changed()



def _recorded_write(x, spec, arrays, v):
    """A write a tape sees: keep x's old value for the entries that used it (and the old
    values of temporaries sharing x's memory, as ``y[1:]`` in ``y[1:] *= 2``), record
    ``index_update``, write in place. A write that changes another tensor the tape holds
    and the program still names is refused before anything is written."""
    tapes = tapes_with_entries()
    held = _sharing_holders(tapes, x)
    for t, (count, entry) in held.items():
        if sys.getrefcount(t) - count - _HOLDER_REFS > 0:    # a name still binds it
            raise ArgumentTypeError(
                f"x[index] = value at {format_location(user_frame())} would change "
                f"{t._describe()}, which shares memory with {x._describe()} and is held by "
                f"a GradientTape for op '{entry[0].name}'; write to a copy (t = t.copy()) "
                "or write the base tensor instead of a view")
    _writable_buffer(x)       # a copy now if it must be copied: before anything changes
    for t in held:
        snapshot = _BOUND["wrap"](t._value.copy())
        for tape in tapes:
            redirect(tape, t, snapshot)
    old = _BOUND["wrap"](x._value.copy())
    for tape in tapes:
        redirect(tape, x, old)
    new = index_update_apply(old, v, arrays, spec)    # recorded: old and v -> new
    _store(x, Ellipsis, new._value)
    for tape in tapes:
        adopt(tape, new, x)


# sys.getrefcount of a holder in _recorded_write beyond the tapes' references when no
# name binds it: the holders dict's key, the loop variable, getrefcount's own argument
# and the interpreter's (measured; tests/core/test_writes.py checks both sides of it).
_HOLDER_REFS = 4


def _sharing_holders(tapes, x):
    """Tensors other than x that tapes hold and that share x's memory: {tensor: (number
    of references from the tapes' entries and watched tables, an entry holding it)}."""
    buf = x._value
    held: dict[TensorLike, tuple[int, tuple]] = {}
    for tape in tapes:
        for entry in tape._entries:
            for t in tensors_of(entry):
                if t is not x and shares(t, buf):
                    count, first = held.get(t, (0, entry))
                    held[t] = (count + 1, first)
        for t in list(held):
            if tape._watched.get(id(t)) is t:
                count, first = held[t]
                held[t] = (count + 1, first)
    return held




# ---- in-place operators -------------------------------------------------------------------------
# numpy's own in-place operator (``buf += y``: same_kind casting, everything checked
# before anything is written) where the engine's op computes what numpy's does. numpy
# refuses what the engine refuses there (true division or a float into integers, bitwise
# operators on floats, subtraction of booleans), and the checked path then names the
# error. Floor division and remainder follow the Array API's special cases instead of
# numpy's, so they always take the checked path. (numpy's ``**=`` takes shortcuts for
# some exponents: np.power itself computes what the engine's pow does.)
_NUMPY_IN_PLACE = {
    "add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
    "truediv": operator.itruediv, "pow": lambda buf, y: np.power(buf, y, out=buf),
    "and": operator.iand, "or": operator.ior, "xor": operator.ixor,
    "lshift": operator.ilshift, "rshift": operator.irshift,
}


def in_place_method(name, binary):
    """The tensor method ``x <name>= y`` (``__iadd__`` for "add"): numpy's own in-place
    operator on an eager numpy tensor with no tape, given a tensor of x's dtype or a
    Python number (:data:`_NUMPY_IN_PLACE`); :func:`in_place` otherwise."""
    numpy_op = _NUMPY_IN_PLACE.get(name)
    if numpy_op is None:
        def checked(self, other):
            return in_place(self, name, other, binary)
        return _named(checked, name)

    def method(self, other):
        if type(self) is _TENSOR and not _LIVE:
            given = type(other)
            if given is _TENSOR:
                operand = other._value
                if other._dtype is not self._dtype and other._dtype != self._dtype:
                    operand = None     # (mixed dtypes: the engine's promotion, checked)
            elif given is float or given is int or given is bool:
                operand = other
            else:
                operand = None
            buf = self._value
            if operand is not None and buf is not None and pushed_mode(None) is None:
                try:           # (read-only memory raises ValueError: the checked path copies)
                    numpy_op(buf, operand)      # warns as numpy's x op= y does
                except _REFUSED:
                    pass       # nothing was written: the checked path names the error
                else:
                    if self._alias is not None:
                        _bump(self)
                    return self
        return in_place(self, name, other, binary)
    return _named(method, name)


def _named(method, name):
    method.__name__ = f"__i{name}__"
    method.__doc__ = (f"``x {_SYMBOLS.get(name, name)}= y`` in place, as numpy: the tensor "
                      "object itself is updated (its views too); its shape and dtype stay.")
    return method


def in_place(x, name, other, binary):
    """``x <name>= other``: ``binary(x, other)`` stored into x, which keeps its shape and
    dtype (numpy's ``same_kind`` cast; a result that broadcasts to a larger shape or a
    dtype x cannot hold is refused before anything is written). Returns x."""
    if outer_traced(x):
        # A tensor of an enclosing trace inside a loop or branch body: the body cannot
        # change it (it is an input there), so ``x op= y`` rebinds x, as Python's own
        # fallback would; AutoGraph carries a rebound loop variable.
        return binary(x, other)
    if _LIVE and _temporary_view(x):
        # ``x[i] += v`` under a tape: Python stores the result with x.__setitem__ next,
        # which writes the base as the tape needs; this temporary view is not written.
        return binary(x, other)
    result = binary(x, other)
    symbol = _SYMBOLS.get(name, name)
    if tuple(result.shape) != tuple(x.shape):
        raise ShapeError(f"x {symbol}= y: the result has shape {tuple(result.shape)}, but "
                         f"{x._describe()} keeps its shape (numpy: non-broadcastable output)")
    if result.dtype != x.dtype and not np.can_cast(result.dtype, x.dtype, "same_kind"):
        raise DTypeError(f"x {symbol}= y: cannot store the {result.dtype} result in "
                         f"{x._describe()} (numpy's same_kind casting); write x = x {symbol} y "
                         "instead")
    if x._value is None and type(result) is type(x) and result.dtype == x.dtype \
            and not isinstance(getattr(x, "_alias", None), tuple):
        become(x, result)     # traced: x stands for the result itself (no index_update)
    else:
        setitem(x, Ellipsis, result)
    return x


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
            "rshift": ">>"}


def _temporary_view(x):
    """Whether x is an eager view whose ``op=`` result the running statement stores back
    with ``base[index] = ...`` (``y[1:] *= 2``): the caller's next store is a subscript."""
    alias = getattr(x, "_alias", None)
    if alias is None or alias is VIEWED or isinstance(alias, (tuple, list)):
        return False
    frame = sys._getframe(3)     # this, in_place, the operator method, the user's code
    return _stores_into_item(frame.f_code, frame.f_lasti)


_NEXT_STORE: dict = {}


def _stores_into_item(code, offset):
    """Whether the first store after the instruction at ``offset`` is ``STORE_SUBSCR``."""
    key = (code, offset)
    found = _NEXT_STORE.get(key)
    if found is None:
        after = False
        found = False
        for ins in dis.get_instructions(code):
            if ins.offset == offset:
                after = True
            elif after and ins.opname.startswith("STORE_"):
                found = ins.opname == "STORE_SUBSCR"
                break
            elif after and ins.opname not in ("SWAP", "COPY", "CACHE", "ROT_TWO", "ROT_THREE",
                                               "DUP_TOP_TWO", "NOP"):
                break
        if len(_NEXT_STORE) < 4096:
            _NEXT_STORE[key] = found
    return found


def out_argument(result, out, name):
    """numpy's ``out=``: store ``result`` into the tensor ``out`` (same shape; a dtype it
    can hold under ``same_kind``) and return ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ArgumentTypeError(f"{name}: out= must be one tensor (or a 1-tuple of one)")
        out = out[0]
    if not isinstance(out, _TENSOR):
        raise ArgumentTypeError(f"{name}: out= must be an engine tensor, got "
                                f"{type(out).__name__}")
    if tuple(out.shape) != tuple(result.shape):
        raise ShapeError(f"{name}: out= has shape {tuple(out.shape)}, the result "
                         f"{tuple(result.shape)}")
    if result.dtype != out.dtype and not np.can_cast(result.dtype, out.dtype, "same_kind"):
        raise DTypeError(f"{name}: cannot store the {result.dtype} result in out= of dtype "
                         f"{out.dtype} (numpy's same_kind casting)")
    setitem(out, Ellipsis, result)
    return out


def adopt_value(target, array, others):
    """Give ``target`` the new memory ``array`` instead of copying it in, where nobody can
    tell: no tape, nothing views target (nor is it a view), no trace captured it, and
    ``array`` is fresh writable memory that no tensor of ``others`` holds. Returns
    whether it did (else the caller writes the values in)."""
    if (_LIVE or type(target) is not _TENSOR or type(array) is not np.ndarray
            or getattr(target, "_alias", None) is not None or hasattr(target, "_version")
            or not array.flags.writeable or array.shape != target.shape
            or array.dtype != target.dtype):
        return False
    owner = array if array.base is None else array.base
    for t in others:
        value = getattr(t, "_value", None)
        if value is array or value is owner or getattr(value, "base", None) is owner:
            return False
    target._value = array
    return True


def adopt_result(target, array):
    """:func:`adopt_value` for a compiled graph's result ``array`` that owns its memory
    (``base`` None), so no other tensor can hold it: the per-call write-back of a
    traced function's written argument (graph/jit/concrete.py), with the same tests
    save the look through the other inputs. Returns whether ``target`` took it.

    Example:
        >>> import numpy as np
        >>> import engine as en
        >>> w = en.zeros(3)
        >>> adopt_result(w, np.ones(3)), w.tolist()
        (True, [1.0, 1.0, 1.0])
    """
    if (_LIVE or type(target) is not _TENSOR or type(array) is not np.ndarray
            or array.base is not None or target._alias is not None
            or array.shape != target._shape or array.dtype is not target._dtype
            and array.dtype != target._dtype or not array.flags.writeable):
        return False
    target._value = array       # (a captured tensor has _alias set: capture_version)
    return True


def capture_version(t):
    """A trace captured ``t``: writes to its memory from now on move its version."""
    root = root_of(t)
    if getattr(root, "_version", None) is None:
        root._version = 0
    if getattr(root, "_alias", None) is None:
        root._alias = VIEWED      # so the fast write paths, which look at _alias only, bump it
    trace_state.depend_on(t)


__all__ = ["setitem", "in_place", "out_argument", "VIEW_OPS"]
