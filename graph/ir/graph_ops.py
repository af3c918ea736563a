"""Structural ops that exist only inside graphs: inputs, constants, variable
access and tuple projection. They are :class:`engine.op.Op` objects like every
other op (the executor calls their ``impl``), kept in their own table
``STRUCTURAL`` because they have no eager meaning on arrays alone.
"""
import sys

import numpy as np

from engine.backend import mismatch
from engine.op import REGISTRY, Op, declare
from engine.variable import check_scatter


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


STRUCTURAL: dict[str, Op] = {}


def _structural(op: Op) -> Op:
    STRUCTURAL[op.name] = op
    return op


placeholder_op = _structural(Op("placeholder", None, None, None, n_inputs=0,
                                doc="A graph input."))
declare(placeholder_op, onnx=("input",))


def _constant_impl(*, value):
    return value


constant_op = _structural(Op("constant", _constant_impl, None, None, n_inputs=0,
                             doc="A constant array baked into the graph."))
declare(constant_op, onnx=("initializer",))


def _read_impl(*, var):
    return var.var._value


def _read_eval(*, var):
    return (var.var.shape, var.var.dtype)


def _read_on(backend, *, var):
    """``read_variable`` in a graph compiled for a back end other than numpy."""
    return _own_value(backend, var.var, "read")


def _own_value(backend, v, what):
    """``v``'s array, after checking it lives on ``backend`` (ops never copy across)."""
    if v.backend is not backend:
        raise mismatch(f"variable {v.name!r} ({what} in a graph)", backend, v.backend)
    return v._value


read_variable_op = _structural(Op("read_variable", _read_impl, _read_eval, None, n_inputs=0,
                                  generic=_read_on,
                                  doc="The variable's value when the node runs."))
declare(read_variable_op, onnx=("variable",))   # its value at export, as an initializer


def _assign_impl(value, *indices, var, kind):
    v = var.var
    if kind == "scatter_update":
        v._scatter(indices[0], value)   # in place unless an earlier read is alive
        return v._value
    if kind == "assign":
        # A fresh array that only the calling graph holds (its local, this
        # argument, getrefcount's) is taken as is: nothing can write to it after
        # (memory planning never gives buffers to values handed to side effects),
        # and it becomes read-only. Anything else (inputs, constants, views) is copied.
        if (type(value) is np.ndarray and value.base is None and value.dtype == v.dtype
                and value.shape == v.shape and value.flags.c_contiguous
                and sys.getrefcount(value) <= 3):
            v._set(value)
            return value
        new = np.array(value, dtype=v.dtype, copy=True)
    elif kind == "assign_add":
        new = v._value + value
    else:
        new = v._value - value
    if new.shape != v.shape:
        new = np.broadcast_to(new, v.shape).copy()
    v._set(new)
    return new


def _assign_eval(value, *indices, var, kind):
    if kind == "scatter_update":
        check_scatter(var.var, indices[0], value)
    return (var.var.shape, var.var.dtype)


_UPDATE_OPS = {"assign_add": "add", "assign_sub": "sub"}


def _assign_on(backend, value, *indices, var, kind):
    """``assign_variable`` in a graph compiled for a back end other than numpy: the new
    value is computed with that back end's kernels and stays its array."""
    v = var.var
    old = _own_value(backend, v, kind)
    if kind == "scatter_update":
        v._scatter(indices[0], value)   # refuses where the back end has no in-place update
        return v._value
    new = value if kind == "assign" else \
        REGISTRY[_UPDATE_OPS[kind]].kernels[backend.name](old, value)
    if backend.dtype_of(new) != v.dtype:
        new = backend.astype(new, v.dtype)
    if tuple(new.shape) != tuple(v.shape):
        new = backend.xp.broadcast_to(new, v.shape)
    v._set(new)
    return new


assign_variable_op = _structural(Op("assign_variable", _assign_impl, _assign_eval, None,
                                    side_effects=True, generic=_assign_on,
                                    doc="Store a new value in a variable; returns it. Inputs: "
                                        "the value, then (kind scatter_update) the row indices."))
declare(assign_variable_op, onnx=None)


def _unpack_impl(values, *, index):
    return values[index]


def _unpack_eval(avals, *, index):
    return avals[index]


unpack_op = _structural(Op("unpack", _unpack_impl, _unpack_eval, None, n_inputs=1,
                           doc="Result ``index`` of a multiple-result node."))
declare(unpack_op, onnx=("tuple_item",))


def body_variables(graphs):
    """The variables read and assigned in ``graphs`` and their nested bodies (by identity)."""
    reads, writes = {}, {}
    todo = list(graphs)
    while todo:
        graph = todo.pop()
        for n in graph.nodes:
            if n.op is read_variable_op:
                reads[id(n.params["var"].var)] = n.params["var"].var
            elif n.op is assign_variable_op:
                writes[id(n.params["var"].var)] = n.params["var"].var
            for p in n.params.values():
                sub = getattr(p, "graph", None)
                if sub is not None and hasattr(sub, "nodes"):
                    todo.append(sub)
    return list(reads.values()), list(writes.values())
