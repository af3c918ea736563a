"""Forward-mode differentiation: :func:`jvp`, :func:`linearize` and :func:`custom_jvp`.

Inside ``jvp`` a :class:`ForwardMode` is current. Its tensors are dual numbers
(:class:`DualTensor`: a primal tensor and a tangent of the same shape, or
``None`` for a zero tangent). Each op runs on the primals in the parent mode,
and the op's ``jvp`` rule (``declare(op, jvp=...)``, written in engine ops)
maps the input tangents to the output tangent, also in the parent mode, so
reverse mode can differentiate through it, ``en.function`` traces it, and a
``jvp`` nests in another (``jvp`` of ``grad`` is a Hessian-vector product).

An op with no ``jvp`` rule falls back to the double-VJP trick: the VJP ``u ->
J^T u`` is linear in ``u``, so its own VJP applied to the tangent is ``J t``.
That costs a backward pass of the op's VJP; a warning names the op once.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Sequence
from typing import Any

from .. import dtypes, ops
from ..autodiff.tape import GradientTape
from ..conversion import user_function
from ..errors import ArgumentTypeError, EngineError, NotDifferentiableError, ShapeError
from ..traced_writes import note_traced_view
from ..writes import VIEW_OPS
from ..modes import apply, current_mode, use_mode
from ..numpy_conversion import check_conversion, refuse_from_user_code
from ..pytree import flatten, unflatten
from ..recording import active_tapes, complex_refusal
from ..tensor import Tensor
from .base import TransformMode, warn_fallback
from .forward_custom import call_in_forward_mode
from .forward_loops import staged_cond, staged_scan, staged_while_loop

_FLOATS = dtypes.FLOATS
_COMPLEX = dtypes.COMPLEX
# Tangents are real floating, or complex along ops that declare complex_vjp.
_TANGENT_DTYPES = dtypes.FLOATS | dtypes.COMPLEX
_NATIVE = contextvars.ContextVar("engine_jvp_native_rules", default=True)


@contextlib.contextmanager
def native_rules(enabled):
    """Within the block, with ``enabled`` False, every op's tangent comes from the
    double-VJP fallback (no warnings): for comparing the two, as the benchmark does."""
    token = _NATIVE.set(bool(enabled))
    try:
        yield
    finally:
        _NATIVE.reset(token)


class DualTensor(Tensor):
    """A tensor inside :func:`jvp`: ``primal`` (a tensor of the parent mode) and its
    ``tangent`` (same shape and dtype, or None for zero). Python control flow on it
    reads the primal's value where the primal has one."""

    __slots__ = ("primal", "tangent", "_tag")
    _functional_writes = True       # a write is an index_update of primal and tangent
    primal: Tensor
    tangent: Tensor | None
    _tag: object

    @property
    def backend(self):
        return self.primal.backend

    def numpy(self):
        return self.primal.numpy()

    def __array__(self, dtype=None, copy=None):
        # numpy would drop the tangent, or a tape's record of the primal (numpy_conversion.py)
        if self.tangent is not None:
            refuse_from_user_code(self, "en.jvp")
        check_conversion(self.primal)
        return self.primal.__array__(dtype, copy)

    def _concrete(self, what):
        return self.primal._concrete(what)

    def _describe(self):
        return f"dual {self.primal._describe()}"

    def __repr__(self):
        return f"<dual tensor: primal={self.primal!r}, tangent={self.tangent!r}>"

    def __reduce__(self):
        raise EngineError("a tensor inside en.jvp cannot be pickled; return it from the function")


def dual(primal, tangent, tag):
    t = object.__new__(DualTensor)
    t._value = None
    t._node = None
    t._shape = primal.shape
    t._dtype = primal.dtype
    t.primal = primal
    t.tangent = tangent
    t._tag = tag
    return t


class ForwardMode(TransformMode):
    """The mode inside :func:`jvp`: runs each op on primals and its JVP rule on tangents."""

    name = "jvp"
    label = "jvp"
    tensor_class = DualTensor

    def __init__(self, parent, tag):
        super().__init__(parent, tag)
        # Tapes recording when the jvp began; a custom gradient inside records its
        # rule on the others (begun inside: jvp of grad) with the dual tensors.
        self.outer_tapes = {id(t) for t in active_tapes()}

    def apply(self, op, args, params):
        tensors = self.lift_for(op, args)
        primals, tangents, any_tangent = [], [], False
        for t in tensors:
            if self.owns(t):
                primals.append(t.primal)
                tangents.append(t.tangent)
                any_tangent = any_tangent or t.tangent is not None
            else:
                primals.append(t)
                tangents.append(None)
        with use_mode(self.parent):
            out = apply(op, *primals, **params)
            if not any_tangent:
                return out
            tangent = tangent_of(op, primals, tangents, out, params)
        if op.multiple_results:
            tangent = tangent if isinstance(tangent, (tuple, list)) else (tangent,)
            return tuple(self._wrap(o, t) for o, t in zip(out, tangent))
        result = self._wrap(out, tangent)
        if op.name in VIEW_OPS:      # numpy's view: writes through it reach the base
            note_traced_view(op, result, tensors, params)
        return result

    def _wrap(self, out, tangent):
        if tangent is None or out.dtype not in _TANGENT_DTYPES:
            return out
        return dual(out, tangent, self.tag)

    def cond(self, pred, true_fn, false_fn, *operands):
        p = pred.primal if self.owns(pred) else pred
        if self.parent.is_concrete or not isinstance(p, Tensor) or p._value is not None:
            return true_fn(*operands) if bool(p) else false_fn(*operands)
        # Values exist only later (a trace): one cond one level out, whose branches
        # return primals and tangents (forward_loops.py).
        return staged_cond(self, dual, p, true_fn, false_fn, operands)

    def stage_while_loop(self, cond_fn, body_fn, loop_vars, stage):
        """One loop over primals and tangents in the parent trace (forward_loops.py)."""
        return staged_while_loop(self, dual, cond_fn, body_fn, loop_vars, stage)

    def stage_scan(self, fn, init, xs, length, reverse, stage):
        """One scan over primals and tangents in the parent trace (forward_loops.py)."""
        return staged_scan(self, dual, fn, init, xs, length, reverse, stage)

    def call_custom_gradient(self, f, args):
        """A ``custom_gradient`` call: the tangent from its rule, not its forward ops."""
        return call_in_forward_mode(self, f, args)

    def call_custom_jvp(self, fun, rule, args):
        tensors = self.lift(list(args))
        if not any(self.owns(t) and t.tangent is not None for t in tensors):
            return fun(*[t.primal if self.owns(t) else t for t in tensors])
        primals = [t.primal if self.owns(t) else t for t in tensors]
        with use_mode(self.parent):
            tangents = [t.tangent if self.owns(t) and t.tangent is not None
                        else ops.zeros_like(p) for t, p in zip(tensors, primals)]
            out, tangent_out = rule(tuple(primals), tuple(tangents))
        outs, tree = flatten(out)
        touts, ttree = flatten(tangent_out)
        if tree != ttree:
            raise EngineError(f"custom_jvp {getattr(fun, '__name__', 'f')}: the rule returned "
                              f"tangents of structure {ttree} for outputs of structure {tree}")
        return unflatten(tree, [self._wrap(o, t) for o, t in zip(outs, touts)])


def tangent_of(op, primals, tangents, out, params):
    """The tangent of ``op``'s result (in the current mode): its ``jvp`` rule, else the
    double-VJP fallback. Results are cast and broadcast to the result's dtype and shape."""
    if not op.rules.get("complex_vjp") and (
            (not op.multiple_results and out.dtype in _COMPLEX)
            or any(t is not None and t.dtype in _COMPLEX for t in tangents)):
        raise complex_refusal(op.name)
    native = _NATIVE.get()
    rule = (op.rules.get("jvp") or default_rule(op, params)) if native else None
    if rule is not None:
        tangent = rule(primals, tangents, out, **params)
    elif op.vjp is None:
        if op.multiple_results or out.dtype in _FLOATS:
            raise NotDifferentiableError(
                f"jvp: op '{op.name}' has no derivative (no jvp and no vjp rule), but a tangent "
                f"flows into it")
        return None
    else:
        if native:
            warn_fallback("jvp", op, "its tangent is computed by differentiating its VJP "
                                 "(the double-VJP trick, about one extra backward pass)")
        tangent = double_vjp(op, primals, tangents, out, params)
    if op.multiple_results:
        return tuple(_fit(t, o) for t, o in zip(tangent, out))
    return _fit(tangent, out)


def _call_vjp(op, g, out, primals, params, i):
    kw = dict(params)
    if op.vjp_needs:
        kw["needs"] = tuple(j == i for j in range(len(primals)))
    return op.vjp(g, out, *primals, **kw)[i]


def _diagonal_rule(op):
    """An elementwise op's JVP from its VJP: its Jacobian (with the inputs broadcast to
    the result's shape) is diagonal, so J^T t = J t."""
    def rule(primals, tangents, out, **params):
        if len(primals) == 1:
            return _call_vjp(op, tangents[0], out, primals, params, 0)
        shape = tuple(out.shape)
        full = [p if tuple(p.shape) == shape else ops.broadcast_to_shape_of(p, out)
                for p in primals]
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            t = t if tuple(t.shape) == shape else ops.broadcast_to_shape_of(t, out)
            term = _call_vjp(op, t, out, full, params, i)
            if term is not None:
                total = term if total is None else total + term
        return total
    return rule


def _reduction_rule(op):
    """A reduction's JVP: each result depends on its own group of inputs, so the VJP of
    ones holds every partial derivative; the tangent is their sum against it."""
    def rule(primals, tangents, out, *, axis, **params):
        x, t = primals[0], tangents[0]
        partials = op.vjp(ops.ones_like(out), out, x, axis=axis, **params)[0]
        return ops.sum(partials * t, axis=axis, keepdims=params.get("keepdims", False))
    return rule


def default_rule(op, params):
    """The JVP rule an op's flags imply (elementwise ops, reductions with an ``axis``),
    or None."""
    if op.vjp is None or op.multiple_results:
        return None
    if op.elementwise:
        return _diagonal_rule(op)
    if op.reduction and "axis" in params:
        return _reduction_rule(op)
    return None


def has_rule(op):
    """Whether ``op`` has a native forward rule (declared, or implied by its flags)."""
    return "jvp" in op.rules or (op.vjp is not None and not op.multiple_results
                                 and (op.elementwise or op.reduction))


def _fit(tangent, out):
    if tangent is None or out.dtype not in _TANGENT_DTYPES:
        return None
    if tangent.dtype in _COMPLEX and out.dtype not in _COMPLEX:
        tangent = ops.real(tangent)   # a real result of complex values (real, abs)
    if tangent.dtype != out.dtype:
        tangent = ops.cast(tangent, out.dtype)
    if tuple(tangent.shape) != tuple(out.shape):
        tangent = ops.broadcast_to_shape_of(tangent, out)
    return tangent


def double_vjp(op, primals, tangents, out, params):
    """``J t`` from the VJP: ``u -> J^T u`` is linear, and its VJP at ``t`` is ``J t``."""
    outs = tuple(out) if op.multiple_results else (out,)
    us = [ops.zeros_like(o) for o in outs]
    watched = [u for u in us if u.dtype in _FLOATS]
    kw = dict(params)
    if op.vjp_needs:
        kw["needs"] = tuple(t is not None for t in tangents)
    with GradientTape() as tape:
        tape.watch(watched)
        g = tuple(us) if op.multiple_results else us[0]
        grads = op.vjp(g, out, *primals, **kw)
    targets, seeds = [], []
    for gi, ti in zip(grads, tangents):
        if gi is not None and ti is not None:
            targets.append(gi)
            seeds.append(ti if ti.dtype == gi.dtype else ops.cast(ti, gi.dtype))
    if not targets:
        return tuple(None for _ in outs) if op.multiple_results else None
    results = tape.gradient(targets, watched, output_gradients=seeds)
    it = iter(results)
    got = [next(it) if u.dtype in _FLOATS else None for u in us]
    return tuple(got) if op.multiple_results else got[0]


# ---- the public transformations ----------------------------------------------------------
def _tensor_leaf(x, mode):
    (t,) = mode.lift([x])
    return t


def _check_pair(name, p, t, where):
    if tuple(p.shape) != tuple(t.shape):
        raise ShapeError(f"{name}: the tangent of {where} has shape {tuple(t.shape)}, its primal "
                         f"{tuple(p.shape)}")


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """``(f(*primals), J_f(primals) @ tangents)``: the Jacobian-vector product by forward mode.

    ``primals`` and ``tangents`` are tuples (or lists) of the same structure, one
    entry per positional argument of ``f`` (nested tuples/lists/dicts of tensors
    allowed). Integer arguments get no tangent. Works eagerly and in ``en.function``,
    and nests with ``grad``, ``vmap`` and itself.

    Example:
        >>> import engine as en
        >>> y, dy = en.jvp(en.sin, (en.tensor(0.0),), (en.tensor(2.0),))
        >>> float(y), float(dy)
        (0.0, 2.0)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise ArgumentTypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    p_leaves, p_tree = flatten(tuple(primals))
    t_leaves, t_tree = flatten(tuple(tangents))
    name = getattr(f, "__name__", "f")
    if p_tree != t_tree:
        raise ShapeError(f"jvp({name}): tangents have structure {t_tree}, primals {p_tree}")
    parent = current_mode()
    mode = ForwardMode(parent, object())
    duals = []
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        p = _tensor_leaf(p, parent)
        if p.dtype not in _FLOATS:
            duals.append(p)
            continue
        t = _tensor_leaf(t, parent)
        _check_pair(f"jvp({name})", p, t, f"argument leaf {i}")
        if t.dtype != p.dtype:
            t = ops.cast(t, p.dtype)
        duals.append(dual(p, t, mode.tag))
    f = user_function(f)   # converted inside a converting trace, as the caller's code is
    with use_mode(mode):
        result = f(*unflatten(p_tree, duals))
    out, aux = result if has_aux else (result, None)
    leaves, tree = flatten(out)
    outs, tans = [], []
    for o in leaves:
        if mode.owns(o):
            outs.append(o.primal)
            tans.append(o.tangent if o.tangent is not None else ops.zeros_like(o.primal))
        else:
            o = _tensor_leaf(o, parent)
            outs.append(o)
            tans.append(ops.zeros_like(o))
    if has_aux:
        aux = unflatten(*_primal_tree(mode, aux))
        return unflatten(tree, outs), unflatten(tree, tans), aux
    return unflatten(tree, outs), unflatten(tree, tans)


def _primal_tree(mode, tree):
    leaves, td = flatten(tree)
    return td, [x.primal if mode.owns(x) else x for x in leaves]


def linearize(f, *primals):
    """``(f(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the JVP at ``primals``.

    The primal output is computed once; each call of ``f_jvp`` runs forward mode
    at the fixed point again (the tangent map is linear in its arguments).

    Example:
        >>> import engine as en
        >>> y, f_jvp = en.linearize(lambda x: x * x, en.tensor(3.0))
        >>> float(y), float(f_jvp(en.tensor(1.0)))
        (9.0, 6.0)
    """
    parent = current_mode()
    fixed = tuple(parent.lift([p])[0] if not isinstance(p, (tuple, list, dict)) else p
                  for p in primals)
    with use_mode(parent):
        out = f(*fixed)

    def f_jvp(*tangents):
        return jvp(f, fixed, tangents)[1]
    return out, f_jvp


class custom_jvp:
    """A function with a hand-written forward-mode rule.

    ``@en.custom_jvp`` on ``f``, then ``@f.defjvp`` on ``rule(primals, tangents) ->
    (out, tangent_out)``. Under :func:`jvp` the rule gives the tangent; elsewhere
    ``f`` runs as written (reverse mode differentiates its body).

    Example:
        >>> import engine as en
        >>> @en.custom_jvp
        ... def f(x):
        ...     return en.sin(x)
        >>> @f.defjvp
        ... def f_jvp(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return en.sin(x), 2.0 * t
        >>> float(en.jvp(f, (en.tensor(0.5),), (en.tensor(1.0),))[1])
        2.0
    """

    def __init__(self, fun):
        self.fun = fun
        self.rule = None
        functools.update_wrapper(self, fun)

    def defjvp(self, rule):
        self.rule = rule
        return rule

    def __call__(self, *args):
        if self.rule is None:
            raise EngineError(f"custom_jvp {getattr(self.fun, '__name__', 'f')}: no rule; "
                              f"decorate one with @{getattr(self.fun, '__name__', 'f')}.defjvp")
        return current_mode().call_custom_jvp(self.fun, self.rule, args)
