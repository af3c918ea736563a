"""Helpers for the ``jvp`` and ``batch`` rules the op families declare (see
``engine.op.RULE_KINDS``). Written in engine ops through ``apply`` and tensor
methods, so this module sits just above ``creation`` and every family can use it.

Example:
    >>> import engine as en
    >>> rule = jvp_linear(en.ops.reshape_op)
    >>> rule([en.zeros(4)], [en.ones(4)], None, shape=(2, 2)).shape
    (2, 2)
"""
from ..modes import apply
from ..op import REGISTRY
from . import creation


def jvp_linear(op, linear=None):
    """The JVP of an op linear in the inputs at positions ``linear`` together (all inputs
    when None) and constant in the others: the op applied to their tangents."""
    def rule(primals, tangents, out, **params):
        where = range(len(primals)) if linear is None else linear
        if all(tangents[i] is None for i in where):
            return None
        args = list(primals)
        for i in where:
            args[i] = tangents[i] if tangents[i] is not None else creation.zeros_like(primals[i])
        return apply(op, *args, **params)
    rule.__name__ = f"{op.name}_jvp"
    return rule


def jvp_bilinear(op):
    """The JVP of an op linear in each of its two inputs: ``op(dx, y) + op(x, dy)``."""
    def rule(primals, tangents, out, **params):
        (x, y), (tx, ty) = primals, tangents
        total = None if tx is None else apply(op, tx, y, **params)
        if ty is not None:
            term = apply(op, x, ty, **params)
            total = term if total is None else total + term
        return total
    rule.__name__ = f"{op.name}_jvp"
    return rule


def no_tangent(primals, tangents, out, **params):
    """The JVP of an op whose result does not change with its inputs (shape queries,
    ``stop_gradient``, ``zeros_like``)."""
    return None


def move_to_front(x, d):
    """For batch rules: ``x`` with its batch axis ``d`` first (``x`` itself when it is)."""
    if not d:
        return x
    return x.transpose((d,) + tuple(i for i in range(x.ndim) if i != d))


def all_batched_first(size, args, dims):
    """For batch rules of ops whose operands pair exactly: every operand with the batch
    axis first, an unbatched one broadcast to the batch of ``size``."""
    full = []
    for a, d in zip(args, dims):
        if d is None:
            a = a.reshape((1,) + tuple(a.shape))
            if size != 1:     # (the op by name: shape_ops imports this module)
                a = apply(REGISTRY["broadcast_to"], a, shape=(size,) + tuple(a.shape[1:]))
        else:
            a = move_to_front(a, d)
        full.append(a)
    return full


def shift_axis(axis, ndim):
    """An element's axis (possibly negative, of an element of rank ``ndim``) as an axis of
    the batch with its batch axis first. Out-of-range axes stay so, for the op's error."""
    if not -ndim <= axis < ndim:
        return axis if axis >= 0 else axis - 1
    return axis % ndim + 1


def batch_over_leading_axes(op):
    """The batching rule of a one-input op that already maps over the leading axes of its
    input (numpy's linalg functions work on the last two): the batch axis goes first."""
    def rule(size, args, dims, **params):
        out = apply(op, move_to_front(args[0], dims[0]), **params)
        return out, ((0,) * len(out) if op.multiple_results else 0)
    rule.__name__ = f"{op.name}_batch"
    return rule


def batch_with_axis(op):
    """The batching rule of a one-input op that works along one ``axis`` parameter (running
    sums, sorts): the batch axis goes first and ``axis`` moves past it."""
    def rule(size, args, dims, *, axis, **params):
        x = move_to_front(args[0], dims[0])
        out = apply(op, x, axis=shift_axis(axis, x.ndim - 1), **params)
        return out, ((0,) * len(out) if op.multiple_results else 0)
    rule.__name__ = f"{op.name}_batch"
    return rule
