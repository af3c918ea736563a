"""What the transformation modes share: lifting arguments, variables, warnings.

A transformation (forward mode, vmap) is a :class:`engine.modes.Mode` pushed
over the mode that was current when it started (its *parent*: eager, a trace,
or another transformation). Its tensors wrap tensors of the parent; each op
call unwraps them, runs the op (and the op's ``jvp`` or ``batch`` rule) in the
parent mode through ``engine.modes.apply``, and wraps the result. So tapes
record the parent-level ops (reverse mode over the transformation), graphs
capture them (a transformed function traces to one graph), and a
transformation nests in another.

Each tensor carries its transformation's ``tag``; a tensor with another tag
(an outer transformation's, or a plain tensor) is a constant here and passes
through to the parent unchanged.
"""
import warnings
from typing import Protocol

from ..errors import DTypeError, EngineError
from ..lifting import WEAK_SCALAR_TYPES, lift_error, weak_scalar_array
from ..modes import Mode


class TransformFallbackWarning(UserWarning):
    """An op without a native rule for a transformation ran through the fallback
    (a double VJP for ``jvp``, a loop over the batch for ``vmap``); said once per op."""


_WARNED: set[object] = set()


def warn_fallback(transform, op, how):
    """Warn once per (transformation, op) that ``op`` has no native rule."""
    key = (transform, op.name)
    if key in _WARNED:
        return
    _WARNED.add(key)
    warnings.warn(f"{transform}: op '{op.name}' has no {transform} rule; {how} "
                  f"(declare a rule beside the op to make it native)",
                  TransformFallbackWarning, stacklevel=4)


class TaggedTensor(Protocol):
    """What a transformation's tensor class declares: the tag of its transformation."""

    _tag: object


class TransformMode(Mode):
    """A mode whose tensors (``tensor_class``, tagged ``tag``) wrap its parent's."""

    is_concrete = False
    transforms = True
    value_type = None
    tensor_class: type[TaggedTensor] | None = None
    label = "transform"

    def __init__(self, parent, tag):
        self.parent = parent
        self.tag = tag

    def owns(self, a):
        return type(a) is self.tensor_class and a._tag is self.tag

    def lift(self, args):
        """This mode's tensors stay; everything else is lifted by the parent (Python
        scalars first made weakly typed against every tensor argument)."""
        out = list(args)
        rest = [i for i, a in enumerate(args) if not self.owns(a)]
        if not rest:
            return out
        if any(type(args[i]) in WEAK_SCALAR_TYPES for i in rest):
            others = [a.dtype for a in args if type(a) not in WEAK_SCALAR_TYPES
                      and hasattr(a, "dtype")]
            if others:
                for i in rest:
                    if type(out[i]) in WEAK_SCALAR_TYPES:
                        out[i] = weak_scalar_array(out[i], others)
        lifted = self.parent.lift([out[i] for i in rest])
        for i, t in zip(rest, lifted):
            out[i] = t
        return out

    def lift_for(self, op, args):
        """``lift`` for an op call: a bad argument's error names the op."""
        try:
            return self.lift(args)
        except (DTypeError, OverflowError) as err:
            raise lift_error(op, args, err) from None

    def read_variable(self, var):
        return self.parent.read_variable(var)

    def assign_variable(self, var, value, kind, indices=None):
        if self.owns(value) or self.owns(indices):
            raise EngineError(f"{self.label}: cannot write the transformed value into variable "
                              f"{var.name!r} (a side effect inside {self.label}); return the "
                              f"value and assign it outside")
        return self.parent.assign_variable(var, value, kind, indices)
