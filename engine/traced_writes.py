"""Writes inside ``en.function`` and under transformations: functional updates.

A traced tensor has no memory to write: ``x[index] = v`` makes ``x`` stand for the node
``index_update(x, index, v)`` from then on (PyTorch's functionalization), and a
transformation's tensor for its batched or dual result. Views follow numpy's semantics:
``note_traced_view`` remembers how each traced view derives from its root, so a write
through a view writes its root back (``_written_back``: ``index_update`` for a slice,
the inverse reshape or permutation otherwise) and every other view is derived again.

Example:
    >>> import engine as en
    >>> @en.function
    ... def f(x):
    ...     row = x[0]
    ...     row[1] = 9.0        # a view: x follows
    ...     return x
    >>> f(en.zeros((2, 2))).tolist()
    [[0.0, 9.0], [0.0, 0.0]]
"""
from __future__ import annotations

import weakref

import numpy as np

from .errors import TracingError, format_location, user_frame
from .modes import apply, current_mode
from .ops import compare
from .ops.index_update import index_update, index_update_op
from .ops.shape_ops import reshape, transpose
from .write_tapes import take_state

#: The ops whose views can be written back through while tracing: the view's new
#: values give the base's new values (``index_update`` for ``getitem``, the inverse
#: reshape or permutation for the others).
_INVERTIBLE = frozenset({"getitem", "reshape", "transpose", "squeeze", "expand_dims",
                         "permute_dims", "matrix_transpose", "ravel"})


def outer_traced(x):
    """Whether x is a traced tensor of another graph than the one being traced now
    (a loop or branch body's enclosing function)."""
    node = getattr(x, "_node", None)
    graph = getattr(current_mode(), "graph", None)
    return node is not None and graph is not None and node.graph is not graph


def functional_write(x, index, value):
    """``x`` becomes ``index_update(x, index, value)``: the write as a new node (while
    tracing) or a new wrapped value (under a transformation); views follow."""
    if outer_traced(x):
        raise TracingError(
            f"x[index] = value at {format_location(user_frame())}: {x._describe()} belongs "
            "to the function around this loop or branch body, which cannot write it: "
            "carry it through the loop (assign x = en.index_update(x, index, value)) or "
            "write it outside the body")
    mode = current_mode()
    if x._value is not None and not mode.is_concrete and not getattr(mode, "transforms", False) \
            and not x._functional_writes:
        raise TracingError(
            f"x[index] = value: {x._describe()} is a concrete tensor made outside the "
            f"traced function (at {format_location(user_frame())}); a write to it would "
            "happen once, while tracing, not at each call: pass it as an argument and "
            "return the new value, or keep it in an en.Variable")
    masked = _masked_where(x, index, value)
    new = masked if masked is not None else index_update(x, index, value)
    become(x, new)


def _masked_where(x, index, value):
    """``x[mask] = value`` with a boolean tensor ``mask`` over x's leading dims and a value
    of one element or one row (numpy gives each selected place the same value): the
    shape-keeping ``where(mask, value, x)``, which a traced mask allows. Else None."""
    mask = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if getattr(mask, "dtype", None) != np.bool_ or not hasattr(mask, "_node"):
        return None
    k = len(mask.shape)
    shape = getattr(value, "shape", ())
    if k == 0 or tuple(mask.shape) != tuple(x.shape[:k]) or \
            tuple(shape) not in ((), tuple(x.shape[k:])):
        return None
    expanded = reshape(mask, tuple(mask.shape) + (1,) * (len(x.shape) - k))
    return compare.where(expanded, value, x).astype(x.dtype)


def become(x, new):
    """Make ``x`` stand for ``new`` (same shape and dtype), then its base and views."""
    alias = getattr(x, "_alias", None)
    if isinstance(alias, tuple):          # a traced view: write its base, then re-derive
        root, steps = alias
        if steps is None:
            raise TracingError(_OPAQUE.format(what="writing a piece of split or unstack of a "
                                              "traced tensor", where=call_site()))
        become(root, _written_back(root, steps, new))
        return
    views = [(ref(), steps) for ref, steps in (alias if isinstance(alias, list) else ())]
    if any(view is not None and steps is None for view, steps in views):
        raise TracingError(_OPAQUE.format(what="writing a traced tensor that split or unstack "
                                          "pieces view", where=call_site()))
    take_state(x, new)
    for view, steps in views:
        if view is not None:
            take_state(view, _derive(x, steps))


_OPAQUE = ("{what} is not supported inside a traced function (at {where}): the pieces "
           "would not follow the write as numpy's do; write before splitting, or split a "
           "copy (x.copy())")


def call_site():
    """The user's line, for an error message."""
    return format_location(user_frame())


def _derive(root, steps):
    """The view ``steps`` make of ``root``'s current value."""
    t = root
    for op, inputs, params in steps:
        t = apply(op, t, *inputs, **params)
    return t


def _written_back(root, steps, new_view):
    """The root's new value when the view ``steps`` make of it is given ``new_view``."""
    parents = [root]
    for op, inputs, params in steps[:-1]:
        parents.append(apply(op, parents[-1], *inputs, **params))
    child = new_view
    for (op, inputs, params), parent in zip(reversed(steps), reversed(parents)):
        if op.name not in _INVERTIBLE:
            raise TracingError(f"writing through a {op.name} view of a traced tensor is not "
                               f"supported (at {call_site()}): write the base tensor instead")
        if op.name == "getitem":
            child = apply(index_update_op, parent, child, *inputs, **params)
        elif op.name in ("transpose", "permute_dims", "matrix_transpose", "swapaxes",
                         "moveaxis") and child.ndim > 1:
            perm = _permutation(op.name, params, child.ndim)
            inverse = tuple(int(i) for i in np.argsort(perm))
            child = transpose(child, inverse)
        else:                                    # reshape, squeeze, expand_dims, ravel
            child = reshape(child, tuple(parent.shape))
    return child


def _permutation(name, params, ndim):
    if name in ("transpose", "permute_dims"):
        axes = params.get("axes")
        return tuple(range(ndim))[::-1] if axes is None else tuple(a % ndim for a in axes)
    order = list(range(ndim))
    if name == "matrix_transpose":
        order[-1], order[-2] = order[-2], order[-1]
        return tuple(order)
    raise TracingError(f"writing through a {name} view while tracing is not supported; "
                       "write the base tensor instead")


def note_traced_view(op, out, inputs, params):
    """While tracing: ``out`` (a traced view op's result, or its results) views
    ``inputs[0]``; remember how, so writes through either reach the other (numpy's view
    semantics). A view that cannot be written back or re-derived (a piece of split or
    unstack) is remembered as opaque: a write through it, or to its base while it lives,
    is refused (it would leave the other stale)."""
    x = inputs[0]
    if getattr(x, "_value", 0) is not None:
        return
    if op.name == "getitem" and any(item[0] == "array" for item in params["spec"]):
        return        # advanced indexing copies, in numpy as here
    alias = getattr(x, "_alias", None)
    root, steps = alias if isinstance(alias, tuple) else (x, ())
    views = getattr(root, "_alias", None)
    outs = out if isinstance(out, tuple) else (out,)
    if any(type(o) is not type(x) for o in outs):
        return
    if isinstance(out, tuple) or steps is None:
        step = None                       # opaque: no single op re-derives the piece
    else:
        step = steps + ((op, tuple(inputs[1:]), params),)
    if not isinstance(views, list):
        views = root._alias = []
    for o in outs:
        o._alias = (root, step)
        views.append((weakref.ref(o), step))
