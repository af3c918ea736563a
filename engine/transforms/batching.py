"""Automatic batching: :func:`vmap`.

Inside ``vmap`` a :class:`BatchMode` is current. Its tensors
(:class:`BatchTensor`) hold a tensor of the parent mode with one extra axis,
the batch axis ``bdim``; their ``shape`` is the shape of one element. Each op
runs once on the whole batch: the op's ``batch`` rule (``declare(op,
batch=...)``) says how (elementwise ops broadcast with the batch axis in
front, reductions shift their axes, matmul becomes a batched matmul, ...),
and the rule's ops run in the parent mode, so ``en.function`` of a vmapped
function traces one graph of batched ops, and tapes see them.

Elementwise ops and reductions need no declared rule: their flags say how
they batch (:func:`default_rule`). An op with neither falls back to a loop
over the batch whose results are stacked; a warning names the op once.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import ops
from ..autodiff.custom import custom_gradient
from ..conversion import user_function
from ..errors import ArgumentTypeError, EngineError, ShapeError, TracingError, format_location, user_frame
from ..traced_writes import note_traced_view
from ..writes import VIEW_OPS
from ..modes import apply, current_mode, use_mode
from ..recording import active_tapes
from ..pytree import flatten, unflatten
from ..shapes import normalize_axes, normalize_axis
from ..tensor import Tensor
from .base import TransformMode, warn_fallback


# The staged loops under vmap (batching_loops.py, which builds on this module and on the
# gradient tape, itself a user of vmap) register here when the facade imports them:
# "scan", "while_loop", "cond" and "inner_tapes".
STAGED_LOOPS: dict[str, Callable[..., Any]] = {}


class BatchTensor(Tensor):
    """A tensor inside :func:`vmap`: ``raw`` (a parent tensor) holds every batch
    element along axis ``bdim``; ``shape`` is one element's shape."""

    __slots__ = ("raw", "bdim", "_tag")
    _functional_writes = True       # a write is an index_update of the batched value
    raw: Tensor
    bdim: int
    _tag: object

    @property
    def backend(self):
        return self.raw.backend

    def numpy(self):
        raise TracingError(self._no_value("its value"))

    def _concrete(self, what):
        raise TracingError(self._no_value(what))

    def _no_value(self, what):
        return (f"{what} needs one value, but {self._describe()} is batched over "
                f"{self.raw.shape[self.bdim]} elements inside en.vmap; use en.where "
                f"instead of a Python if, or move the code out of the vmapped function")

    def _describe(self):
        return f"batched {super()._describe()}"

    def __repr__(self):
        return f"<batched tensor: shape={self.shape} (batch axis {self.bdim} of {self.raw!r})>"

    def __reduce__(self):
        raise EngineError("a tensor inside en.vmap cannot be pickled; return it from the function")


def batched(raw, bdim, tag):
    t = object.__new__(BatchTensor)
    t._value = None
    t._node = None
    shape = tuple(raw.shape)
    t._shape = shape[:bdim] + shape[bdim + 1:]
    t._dtype = raw.dtype
    t.raw = raw
    t.bdim = bdim
    t._tag = tag
    return t


class BatchMode(TransformMode):
    """The mode inside :func:`vmap`: every op runs once over the batch axis."""

    name = "vmap"
    label = "vmap"
    tensor_class = BatchTensor

    def __init__(self, parent, tag, size):
        super().__init__(parent, tag)
        self.size = size
        # Tapes recording when the vmap began: a custom gradient inside is recorded on
        # those one level out (call_custom_gradient); tapes begun inside see it here.
        self._outer_tapes = {id(t) for t in active_tapes()}

    def apply(self, op, args, params):
        tensors = self.lift_for(op, args)
        raws, dims, any_batched = [], [], False
        for t in tensors:
            if self.owns(t):
                raws.append(t.raw)
                dims.append(t.bdim)
                any_batched = True
            else:
                raws.append(t)
                dims.append(None)
        with use_mode(self.parent):
            if not any_batched:
                return apply(op, *raws, **params)
            # The op's shape rule on one element's shapes: bad input is named as the user
            # wrote it, before any work.
            try:
                op.abstract_eval(*[(t.shape, t.dtype) for t in tensors], **params)
            except EngineError as err:
                raise type(err)(f"{err}\n  (inside en.vmap) at {format_location(user_frame())}") \
                    from None
            except TypeError as err:               # a keyword the op does not take
                error = op.params_error(len(tensors), params)
                if error is None:
                    raise
                raise ArgumentTypeError(f"{error}\n  (inside en.vmap) at "
                                        f"{format_location(user_frame())}") from err
            rule = op.rules.get("batch") or default_rule(op, params)
            result = NotImplemented if rule is None else rule(self.size, raws, dims, **params)
            if result is NotImplemented:
                warn_fallback("vmap", op, "it runs once per batch element and the results "
                                          "are stacked")
                result = batch_by_loop(op, self.size, raws, dims, params)
            out, dim = result
        if op.multiple_results:
            return tuple(self._wrap(o, d) for o, d in zip(out, dim))
        result = self._wrap(out, dim)
        if op.name in VIEW_OPS:      # numpy's view: writes through it reach the base
            note_traced_view(op, result, tensors, params)
        return result

    def _wrap(self, out, dim):
        return out if dim is None else batched(out, dim, self.tag)

    def _unwrap(self, args):
        """The arguments' raw values and batch axes (None: not batched here)."""
        tensors = self.lift(list(args))
        raws = [t.raw if self.owns(t) else t for t in tensors]
        dims = tuple(t.bdim if self.owns(t) else None for t in tensors)
        return raws, dims

    def _batched_results(self, out):
        leaves, tree = flatten(out)
        return unflatten(tree, [self._wrap(o, 0) for o in leaves])

    def stage_scan(self, fn, init, xs, length, reverse, stage):
        """One scan one level out whose body is ``fn`` vmapped (batching_loops.py)."""
        return STAGED_LOOPS["scan"](self, fn, init, xs, length, reverse, stage)

    def stage_while_loop(self, cond_fn, body_fn, loop_vars, stage):
        """A loop on a batched or not-yet-known condition (batching_loops.py)."""
        return STAGED_LOOPS["while_loop"](self, cond_fn, body_fn, loop_vars, stage)

    def call_custom_jvp(self, fun, rule, args):
        # The function and its rule run vectorized one level out, so an outer forward
        # mode (jvp of vmap) applies the rule to the batched tangents.
        raws, dims = self._unwrap(args)
        if all(d is None for d in dims):
            with use_mode(self.parent):
                return self.parent.call_custom_jvp(fun, rule, raws)
        with use_mode(self.parent):
            out = self.parent.call_custom_jvp(vmap(fun, in_axes=dims),
                                              vmap(rule, in_axes=(dims, dims)), raws)
        return self._batched_results(out)

    def call_custom_gradient(self, f, args):
        """``custom_gradient(f)(*args)`` inside vmap: one custom-gradient call one level
        out, whose forward and rule are ``f``'s vectorized, so a tape outside the vmap
        (grad of vmap) records the rule on the batched values. None where a tape begun
        inside the vmap is recording: the call is then recorded as in any mode."""
        if any(id(t) not in self._outer_tapes for t in active_tapes()):
            return None   # a tape inside the vmap (vmap of grad): it records the rule here
        raws, dims = self._unwrap(args)
        if all(d is None for d in dims):
            with use_mode(self.parent):
                return custom_gradient(f)(*raws)
        grad_axes = tuple(0 if d is None else d for d in dims)

        def vectorized(*xs):
            y = vmap(lambda *a: f(*a)[0], in_axes=dims)(*xs)

            def grad_fn(dy):
                def one(dy_k, *a):
                    grads = f(*a)[1](dy_k)
                    return tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
                grads = vmap(one, in_axes=(0,) + dims, out_axes=grad_axes)(dy, *xs)
                # An input shared by the whole batch gets the sum of its per-example gradients.
                return tuple(g if d is not None or g is None else ops.sum(g, axis=0)
                             for g, d in zip(grads, dims))
            return y, grad_fn
        with use_mode(self.parent):
            out = custom_gradient(vectorized)(*raws)
        return self._batched_results(out)

    def cond(self, pred, true_fn, false_fn, *operands):
        if not self.owns(pred) and self.parent.is_concrete:
            return true_fn(*operands) if bool(pred) else false_fn(*operands)
        if not self.owns(pred) and not STAGED_LOOPS["inner_tapes"](self):
            # One cond one level out, its branches vmapped (a tape begun inside the
            # vmap records the select below instead, at this level).
            return STAGED_LOOPS["cond"](self, pred, true_fn, false_fn, operands)
        # A batched predicate: both branches, then a select per element.
        a, b = true_fn(*operands), false_fn(*operands)
        la, tree = flatten(a)
        lb, tree_b = flatten(b)
        if tree != tree_b:
            raise ShapeError(f"cond: the branches return different structures ({tree} vs "
                             f"{tree_b})")
        return unflatten(tree, [ops.where(pred, x, y) for x, y in zip(la, lb)])


# ---- rules from the op's flags, and the fallback --------------------------------------------
def move_to_front(x, d):
    """``x`` with axis ``d`` moved to the front (``x`` itself when it is there)."""
    if not d:
        return x
    perm = (d,) + tuple(i for i in range(x.ndim) if i != d)
    return ops.transpose(x, perm)


def _elementwise_rule(op):
    def rule(size, args, dims, **params):
        if len(args) == 1:
            return apply(op, args[0], **params), dims[0]
        ranks = [a.ndim - (d is not None) for a, d in zip(args, dims)]
        rank = max(ranks)
        new = []
        for a, d, k in zip(args, dims, ranks):
            if d is not None:
                a = move_to_front(a, d)
                if k < rank:   # align the element's dims with the others' (numpy broadcasting)
                    a = ops.reshape(a, (size,) + (1,) * (rank - k) + _static(a.shape[1:]))
            new.append(a)
        return apply(op, *new, **params), 0
    return rule


def _count(shape):
    n = 1
    for d in shape:
        if d is None:
            return -1
        n *= d
    return n


def _static(shape):
    return tuple(-1 if d is None else d for d in shape)


def _reduction_rule(op):
    def rule(size, args, dims, *, axis, **params):
        x = move_to_front(args[0], dims[0])
        nd = x.ndim - 1
        keepdims = params.get("keepdims", False)
        if axis is None:    # over all of an element's dims: flatten them into one
            flat = x if nd == 1 else ops.reshape(x, (size, _count(x.shape[1:])))
            out = apply(op, flat, axis=1, **dict(params, keepdims=False))
            if keepdims:
                out = ops.reshape(out, (size,) + (1,) * nd)
            return out, 0
        axes = tuple(a + 1 for a in normalize_axes(axis, nd, op.name))
        return apply(op, x, axis=axes[0] if isinstance(axis, int) else axes, **params), 0
    return rule


def default_rule(op, params):
    """The batching rule an op's flags imply, or None: elementwise ops broadcast, and
    reductions (with an ``axis`` parameter) shift their axes past the batch axis."""
    if op.elementwise:
        return _elementwise_rule(op)
    if op.reduction and "axis" in params:
        return _reduction_rule(op)
    return None


def has_rule(op):
    """Whether ``op`` batches natively (a declared rule or one its flags imply)."""
    return "batch" in op.rules or op.elementwise or op.reduction


def index_along(x, d, i):
    return ops.getitem(x, (slice(None),) * d + (i,))


def batch_by_loop(op, size, args, dims, params):
    """The fallback: ``op`` once per batch element, results stacked on axis 0."""
    if size == 0:
        raise ShapeError(f"vmap: op '{op.name}' has no batching rule, and an empty batch "
                         f"cannot be run element by element")
    results = [apply(op, *[a if d is None else index_along(a, d, i) for a, d in zip(args, dims)],
                     **params) for i in range(size)]
    if op.multiple_results:
        n = len(results[0])
        return tuple(ops.stack([r[k] for r in results]) for k in range(n)), (0,) * n
    return ops.stack(results), 0


# ---- vmap -----------------------------------------------------------------------------------
def _axes_for(spec, value, where):
    """One axis (int or None) per leaf of ``value``: ``spec`` is an axis for the whole
    value or a structure of axes matching it (a prefix, as JAX takes it)."""
    if spec is None or isinstance(spec, int):
        return [spec] * len(flatten(value)[0])
    if isinstance(spec, (tuple, list)) and isinstance(value, (tuple, list)) and \
            len(spec) == len(value):
        return [a for s, v in zip(spec, value) for a in _axes_for(s, v, where)]
    if isinstance(spec, dict) and isinstance(value, dict) and set(spec) == set(value):
        return [a for k in sorted(value, key=repr) for a in _axes_for(spec[k], value[k], where)]
    raise ShapeError(f"vmap: {where} {spec!r} does not match the structure of the value "
                     f"({type(value).__name__})")


def _out_axes_for(spec, tree, n):
    if spec is None or isinstance(spec, int):
        return [spec] * n
    template = unflatten(tree, [0] * n)
    return _axes_for(spec, template, "out_axes")


def vmap(f: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """Vectorize ``f`` over an axis of its arguments: ``vmap(f)(X)`` stacks ``f(x)`` over
    the rows ``x`` of ``X``, computed by batched ops in one pass.

    ``in_axes`` is an axis for every positional argument, or a tuple with one entry per
    argument (an int, None for an unbatched argument, or a structure matching a nested
    argument). ``out_axes`` says where the batch axis goes in each output (None: the
    output is the same for every element). Works eagerly and in ``en.function`` (one
    graph of batched ops), and nests with itself, ``grad`` and ``jvp``.

    Example:
        >>> import engine as en
        >>> X = en.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> en.vmap(lambda x: en.sum(x * x))(X).numpy().tolist()
        [5.0, 25.0]
        >>> w = en.tensor([1.0, -1.0])
        >>> en.vmap(en.grad(lambda w, x: en.sum(w * x) ** 2.0), in_axes=(None, 0))(w, X).shape
        (2, 2)
    """
    name = getattr(f, "__name__", "f")

    @functools.wraps(f)
    def vmapped(*args):
        if isinstance(in_axes, (tuple, list)):
            if len(in_axes) != len(args):
                raise ShapeError(f"vmap({name}): in_axes has {len(in_axes)} entries for "
                                 f"{len(args)} positional arguments")
            axes = _axes_for(tuple(in_axes), tuple(args), "in_axes")
        else:
            axes = _axes_for(in_axes, tuple(args), "in_axes")
        leaves, tree = flatten(tuple(args))
        parent = current_mode()
        size, found = None, []
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                continue
            (x,) = parent.lift([x])
            leaves[i] = x
            if not x.shape:
                raise ShapeError(f"vmap({name}): argument leaf {i} is a scalar, so it has no "
                                 f"axis {ax} to map over (give in_axes None for it)")
            ax = normalize_axis(ax, x.ndim, f"vmap({name})")
            axes[i] = ax
            found.append((i, x.shape[ax]))
            if size is None:
                size = x.shape[ax]
        if size is None:
            raise ShapeError(f"vmap({name}): no argument is mapped (in_axes is None for all)")
        if any(n != size for _, n in found):
            raise ShapeError(f"vmap({name}): the mapped axes have different sizes: "
                             + ", ".join(f"leaf {i}: {n}" for i, n in found))
        mode = BatchMode(parent, object(), size)
        inputs = [x if ax is None else batched(x, ax, mode.tag) for x, ax in zip(leaves, axes)]
        run = user_function(f)   # converted inside a converting trace
        with use_mode(mode):
            out = run(*unflatten(tree, inputs))
        o_leaves, o_tree = flatten(out)
        o_axes = _out_axes_for(out_axes, o_tree, len(o_leaves))
        return unflatten(o_tree, [_unbatch(mode, o, ax, name) for o, ax in zip(o_leaves, o_axes)])
    return vmapped


def _unbatch(mode, o, ax, name):
    if ax is None:
        if mode.owns(o):
            raise ShapeError(f"vmap({name}): an output with out_axes None differs between "
                             f"batch elements (it is batched)")
        return o
    if mode.owns(o):
        ax = normalize_axis(ax, o.ndim + 1, f"vmap({name})")
        x = o.raw
        if o.bdim == ax:
            return x
        perm = [i for i in range(x.ndim) if i != o.bdim]
        perm.insert(ax, o.bdim)
        return ops.transpose(x, tuple(perm))
    (o,) = mode.parent.lift([o])
    ax = normalize_axis(ax, o.ndim + 1, f"vmap({name})")
    shape = tuple(o.shape)
    return ops.broadcast_to(ops.expand_dims(o, ax), shape[:ax] + (mode.size,) + shape[ax:])
