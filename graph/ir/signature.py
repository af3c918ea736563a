"""Call signatures of traced functions: :class:`TensorSpec` and cache keys.

Tensors and arrays are keyed by (shape, dtype); Python scalars, strings and
None by value (they become constants); variables by identity (read at run
time, never baked in).
"""
import math

import numpy as np

from engine import dtypes
from engine.errors import EngineError, ShapeError, DTypeError
from engine.recording import active_tapes
from engine.lifting import as_array, caller_can_write
from engine.pytree import flatten, unflatten
from engine.tensor import Tensor, wrap
from engine.variable import Variable


class TensorSpec:
    """Describes a tensor argument: a shape (``None`` for any size) and a dtype.

    Example:
        >>> import engine as en
        >>> en.TensorSpec(shape=(None, 784), dtype="float32")
        TensorSpec(shape=(None, 784), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype="float32", name=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.name = name

    def matches(self, t):
        return (t.dtype == self.dtype and len(t.shape) == len(self.shape) and
                all(s is None or s == d for s, d in zip(self.shape, t.shape)))

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype})"


class Leaf:
    """How one flattened argument enters the trace."""
    TENSOR, VARIABLE, STATIC = "tensor", "variable", "static"


def _is_leaf(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


def describe_leaf(leaf):
    """The cache-key part for one argument leaf, and the tensor to pass (or None)."""
    if type(leaf) is Tensor:
        return ("T", leaf.shape, leaf.dtype), leaf
    if isinstance(leaf, Tensor):   # another back end: its own trace (kernels, passes)
        return ("T", leaf.shape, leaf.dtype, leaf.backend.name), leaf
    if isinstance(leaf, Variable):
        return ("V", id(leaf)), None
    if isinstance(leaf, np.ndarray):
        t = wrap(as_array(leaf))
        return ("T", t.shape, t.dtype), t
    try:
        hash(leaf)
    except TypeError:
        raise EngineError(f"cannot use an argument of type {type(leaf).__name__} in a traced "
                          "function: pass tensors, arrays, Python scalars, strings, None, "
                          "or tuples/lists/dicts of them") from None
    return ("S", type(leaf).__name__, _value_key(leaf)), None


def _value_key(value):
    """``value`` as a cache-key part that tells apart what ``==`` does not.

    ``-0.0 == 0.0`` (but ``1 / -0.0`` is ``-inf``), so zeros carry their sign;
    NaN never equals itself, so every NaN shares one key instead of missing
    the cache on each call. Complex numbers get both treatments per part.
    """
    if isinstance(value, (float, np.floating)):
        if value != value:
            return ("nan",)
        if value == 0:
            return (value, math.copysign(1.0, value))
        return value
    if isinstance(value, (complex, np.complexfloating)):
        return ("complex", _value_key(value.real), _value_key(value.imag))
    return value


def signature_of(args, kwargs):
    """``(key, tensors, leaves, treedef)`` for a call."""
    leaves, treedef = flatten((args, kwargs), is_leaf=_is_leaf)
    parts = []
    tensors = []
    for i, leaf in enumerate(leaves):
        try:
            part, t = describe_leaf(leaf)
        except DTypeError as err:      # an array of an unsupported dtype
            raise DTypeError(f"argument {i}: {err}") from None
        parts.append(part)
        if t is not None:
            tensors.append(t)
    return (treedef, tuple(parts)), tensors, leaves, treedef


def borrowed_arrays(leaves):
    """The numpy arrays among ``leaves`` that the caller can still write.

    A compiled call takes them without a copy (``f(batch)`` costs no copy of
    the batch); :func:`call_with_borrowed` then keeps them out of the results.
    """
    return [a for a in leaves if isinstance(a, np.ndarray) and caller_can_write(a)]


def call_with_borrowed(concrete, tensors, borrowed):
    """``concrete(tensors)`` where some tensors hold ``borrowed`` caller arrays.

    A result that shares memory with one (``lambda x: x``, a slice, a reshape,
    a transpose) is copied, so later writes to the argument never change it,
    as in eager mode; results the graph computed are returned as they are.
    Under a tape the inputs are copied first instead (the tape keeps them for
    the backward pass).
    """
    if active_tapes():
        tensors = [wrap(t._value.copy()) if any(t._value is a or np.may_share_memory(t._value, a)
                                                for a in borrowed) else t for t in tensors]
        return concrete(tensors)
    result = concrete(tensors)
    if type(result) is Tensor:
        return _unshared(result, borrowed)
    leaves, tree = flatten(result, is_leaf=_is_leaf)
    return unflatten(tree, [_unshared(x, borrowed) if type(x) is Tensor else x for x in leaves])


def _unshared(t, borrowed):
    value = t._value
    if any(np.may_share_memory(value, a) for a in borrowed):
        return wrap(value.copy())
    return t


def check_against_specs(name, specs, args):
    """Validate positional ``args`` against an ``input_signature``; return tensors."""
    if len(args) != len(specs):
        raise EngineError(f"{name}: expected {len(specs)} arguments matching its input_signature "
                          f"{list(specs)}, got {len(args)}")
    out = []
    for i, (spec, a) in enumerate(zip(specs, args)):
        t = a if isinstance(a, Tensor) else wrap(as_array(a, spec.dtype if not isinstance(a, np.ndarray) else None))
        if t.dtype != spec.dtype:
            raise DTypeError(f"{name}: argument {i} has dtype {t.dtype}, but the input_signature "
                             f"says {spec}")
        if not spec.matches(t):
            raise ShapeError(f"{name}: argument {i} has shape {t.shape}, but the input_signature "
                             f"says {spec}")
        out.append(t)
    return out


def describe_change(old_key, new_key):
    """Say which argument changed between two cache keys, for retrace logs."""
    old_parts, new_parts = old_key[1], new_key[1]
    if old_key[0] != new_key[0] or len(old_parts) != len(new_parts):
        return "the structure of the arguments changed"
    for i, (a, b) in enumerate(zip(old_parts, new_parts)):
        if a != b:
            return f"argument leaf {i} changed from {_fmt(a)} to {_fmt(b)}"
    return "no change"


def _fmt(part):
    if part[0] == "T":
        return f"tensor {part[2]}{list(part[1])}"
    if part[0] == "V":
        return "a different variable"
    value = part[2]
    if type(value) is tuple:   # a _value_key: ("nan",), (signed zero, sign) or a complex
        return f"{part[1]} {'nan' if value == ('nan',) else value[0] if len(value) == 2 else value}"
    return f"{part[1]} {value!r}"
