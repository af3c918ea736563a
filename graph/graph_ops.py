"""Structural ops that exist only inside graphs: inputs, constants, variable
access and tuple projection. They are :class:`engine.op.Op` objects like every
other op (the executor calls their ``impl``), kept in their own table
``STRUCTURAL`` because they have no eager meaning on arrays alone.
"""
import numpy as np

from engine.op import Op


class VarRef:
    """A variable inside node params: hashed and compared by identity."""

    __slots__ = ("var",)

    def __init__(self, var):
        self.var = var

    def __eq__(self, other):
        return isinstance(other, VarRef) and other.var is self.var

    def __hash__(self):
        return id(self.var)

    def __repr__(self):
        return f"var({self.var.name!r})"


STRUCTURAL = {}


def _structural(op):
    STRUCTURAL[op.name] = op
    return op


placeholder_op = _structural(Op("placeholder", None, None, None, n_inputs=0,
                                doc="A graph input."))


def _constant_impl(*, value):
    return value


constant_op = _structural(Op("constant", _constant_impl, None, None, n_inputs=0,
                             doc="A constant array baked into the graph."))


def _read_impl(*, var):
    return var.var._value


def _read_eval(*, var):
    return (var.var.shape, var.var.dtype)


read_variable_op = _structural(Op("read_variable", _read_impl, _read_eval, None, n_inputs=0,
                                  doc="The variable's value when the node runs."))


def _assign_impl(value, *, var, kind):
    v = var.var
    if kind == "assign":
        new = np.array(value, dtype=v.dtype, copy=True)
    elif kind == "assign_add":
        new = v._value + value
    else:
        new = v._value - value
    if new.shape != v.shape:
        new = np.broadcast_to(new, v.shape).copy()
    v._set(new)
    return new


def _assign_eval(value, *, var, kind):
    return (var.var.shape, var.var.dtype)


assign_variable_op = _structural(Op("assign_variable", _assign_impl, _assign_eval, None,
                                    n_inputs=1, side_effects=True,
                                    doc="Store a new value in a variable; returns it."))


def _unpack_impl(values, *, index):
    return values[index]


def _unpack_eval(avals, *, index):
    return avals[index]


unpack_op = _structural(Op("unpack", _unpack_impl, _unpack_eval, None, n_inputs=1,
                           doc="Result ``index`` of a multiple-result node."))
