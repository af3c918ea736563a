"""A ``custom_gradient`` function under forward mode: the tangent comes from the rule.

A user writes a backward rule precisely where the forward ops' own derivative
fails (``log(1 + e^x)`` at large ``x``: ``e^x / (1 + e^x) = inf / inf``), so the
rule must win in every mode. Its ``grad_fn`` is the VJP ``u -> J^T u``, linear
in ``u``; the VJP of that map at the tangent ``t`` is ``J t``, the JVP (the
double-VJP trick that forward mode uses for ops without a ``jvp`` rule). A
``grad_fn`` that is not linear in ``dy`` is taken at its derivative at ``dy = 0``.

The forward computation runs once, in the parent mode, as a custom-gradient call
there, so a tape outside the ``jvp`` (``grad`` of ``jvp``) records the rule too.
A tape begun inside the ``jvp`` (``jvp`` of ``grad``) records the rule on the
dual tensors, with a ``grad_fn`` built from them, so the tangent of the gradient
is the rule's derivative as well.
"""
from .. import dtypes, ops
from ..autodiff.custom import _custom_rule, custom_gradient
from ..autodiff.tape import GradientTape
from ..modes import use_mode
from ..pytree import flatten, unflatten
from ..recording import active_tapes, paused, record

_FLOATS = dtypes.FLOATS


def call_in_forward_mode(mode, f, args):
    """``custom_gradient(f)(*args)`` inside the forward mode ``mode``; None where no
    argument carries a tangent (the call is then an ordinary one)."""
    tensors = mode.lift(list(args))
    if not any(mode.owns(t) and t.tangent is not None for t in tensors):
        return None
    primals = [t.primal if mode.owns(t) else t for t in tensors]
    tangents = [t.tangent if mode.owns(t) else None for t in tensors]
    with use_mode(mode.parent):
        y, grad_fn = _call_in_parent(f, primals)
        outs, tree = flatten(y)
        touts = _rule_tangents(grad_fn, outs, tangents, isinstance(y, (tuple, list)))
    results = [mode._wrap(o, t) for o, t in zip(outs, touts)]
    inner = [t for t in active_tapes() if t._recording and id(t) not in mode.outer_tapes]
    if inner:
        _record_inside(mode, f, tensors, results, isinstance(y, (tuple, list)), inner)
    return unflatten(tree, results)


def _call_in_parent(f, primals):
    """The custom-gradient call of ``f`` in the current (parent) mode, and a ``grad_fn``
    built from ``primals`` (the one the call made, where the parent mode called ``f``
    on them as they are; else a second call, a transformation having wrapped them)."""
    made = []

    def keeping_rule(*xs):
        y, grad_fn = f(*xs)
        made.append((xs, grad_fn))
        return y, grad_fn
    y = custom_gradient(keeping_rule)(*primals)
    for xs, grad_fn in made:
        if len(xs) == len(primals) and all(a is b for a, b in zip(xs, primals)):
            return y, grad_fn
    with paused(active_tapes()):
        return y, f(*primals)[1]


def _rule_tangents(grad_fn, outs, tangents, multiple):
    """One tangent per output: the VJP of ``u -> grad_fn(u)`` at the input tangents."""
    us = [ops.zeros_like(o) for o in outs]
    watched = [u for u in us if u.dtype in _FLOATS]
    with GradientTape() as tape:
        tape.watch(watched)
        grads = grad_fn(tuple(us) if multiple else us[0])
    grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
    targets, seeds = [], []
    for g, t in zip(grads, tangents):
        if g is not None and t is not None:
            targets.append(g)
            seeds.append(t if t.dtype == g.dtype else ops.cast(t, g.dtype))
    if not watched or not targets:
        return [None] * len(outs)
    got = iter(tape.gradient(targets, watched, output_gradients=seeds))
    return [_fit(next(got), o) if u.dtype in _FLOATS else None for u, o in zip(us, outs)]


def _fit(tangent, out):
    if tangent is None:
        return ops.zeros_like(out)   # the rule does not reach this output: a zero tangent
    return tangent if tangent.dtype == out.dtype else ops.cast(tangent, out.dtype)


def _record_inside(mode, f, tensors, results, multiple, tapes):
    """Record the rule on tapes begun inside the forward mode, with a ``grad_fn`` made
    from the dual tensors (its ops then carry tangents: ``jvp`` of ``grad``)."""
    with paused(active_tapes()), use_mode(mode):
        _, grad_fn = f(*tensors)
    out = tuple(results) if multiple else results[0]
    record(_custom_rule(getattr(f, "__name__", "custom_gradient"), grad_fn, multiple),
           tensors, out, {}, tapes)
