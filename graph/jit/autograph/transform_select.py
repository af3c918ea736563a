"""A converted ``if`` (or ``a if c else b``, ``and``, ``or``) on a traced tensor under a
transformation (``en.jvp``, ``en.vmap``) inside a trace.

A transformation's tensors wrap the trace's; a ``cond`` node's branches would be
traced in the trace's own mode and miss the transformation's work (tangents,
batch axes). So, as the transformation's own ``cond`` does (``Mode.cond``),
both branches run under the transformation and each value they leave is
selected with ``en.where`` on the condition. Python values the branches agree on
stay Python values; bools that differ become the condition (or its negation).

Example (forward mode of a function with an ``if``, inside ``en.function``):
    >>> import engine as en
    >>> def f(x):
    ...     if en.sum(x) > 0:
    ...         return x * x
    ...     return -x
    >>> g = en.function(lambda x: en.jvp(f, (x,), (en.ones_like(x),))[1])
    >>> g(en.tensor([1.0, 2.0])).numpy().tolist()
    [2.0, 4.0]
"""
import numpy as np

from engine import ops
from engine.modes import current_mode
from engine.pytree import flatten, unflatten
from engine.tensor import Tensor
from engine.variable import Variable

from . import messages
from .values import Undefined, UndefinedReturnValue


def transforming():
    """True where a transformation (forward mode, vmap) runs the ops now."""
    return current_mode().transforms


def traced_truth(value):
    """``bool(value)`` as a traced bool tensor, for a tensor of a transformation whose truth
    is a value of the trace beneath it (the primal of a dual number); None where it is not
    (a concrete value, or a vmap tensor whose truth differs per element: ``bool`` then
    raises the transformation's own error)."""
    if not isinstance(value, Tensor) or not transforming():
        return None
    truth = value if value.dtype == np.bool_ else ops.not_equal(value, 0)
    if isinstance(truth, Tensor) and truth._value is None and truth._node is not None:
        return truth
    return None


def select(pred, fn_true, fn_false, names, kind):
    """Run both branches (each returns one value per name); the values, one per name,
    selected by ``pred`` (a traced bool scalar)."""
    t_values, f_values = fn_true(), fn_false()
    return tuple(_one(pred, name, a, b, kind)
                 for name, a, b in zip(names, t_values, f_values))


def _leaf(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


def _one(pred, name, a, b, kind):
    if name.startswith("global "):
        raise messages.global_in_tensor_code(name, kind, messages.here())
    # No return ran on one path: its return value is never read there (the flag says so).
    if isinstance(a, UndefinedReturnValue):
        return b
    if isinstance(b, UndefinedReturnValue):
        return a
    a_undef, b_undef = isinstance(a, Undefined), isinstance(b, Undefined)
    if a_undef and b_undef:
        return a
    if a_undef or b_undef:
        raise messages.only_in_one_branch(name, "false" if a_undef else "true", kind,
                                          messages.here())
    la, tree_a = flatten(a, is_leaf=_leaf)
    lb, tree_b = flatten(b, is_leaf=_leaf)
    if tree_a != tree_b:
        raise messages.structure_mismatch(name, kind, messages.here(), tree_a, tree_b)
    return unflatten(tree_a, [_leaf_value(pred, name, x, y, kind) for x, y in zip(la, lb)])


def _leaf_value(pred, name, a, b, kind):
    if a is b:
        return a
    if _leaf(a) or _leaf(b):
        a_t, b_t = (x.read() if isinstance(x, Variable) else x for x in (a, b))
        if _leaf(a_t) and _leaf(b_t) and (tuple(a_t.shape) != tuple(b_t.shape)
                                          or a_t.dtype != b_t.dtype):
            raise messages.branch_mismatch(name, kind, messages.here(), a_t, b_t)
        return ops.where(pred, a_t, b_t)   # a Python number meets the tensor's dtype
    if type(a) is bool and type(b) is bool:
        return pred if a else ops.logical_not(pred)
    try:
        if type(a) is type(b) and bool(a == b):
            return a
    except Exception:   # noqa: BLE001 - a value whose == is not a plain bool: different
        pass
    if isinstance(a, (int, float, complex, np.number)) and \
            isinstance(b, (int, float, complex, np.number)):
        dtype = np.result_type(np.asarray(a).dtype, np.asarray(b).dtype)
        return ops.where(pred, np.asarray(a, dtype), np.asarray(b, dtype))
    raise messages.branch_mismatch(name, kind, messages.here(), a, b)
