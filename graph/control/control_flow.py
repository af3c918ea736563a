"""Control flow that works in both modes: :func:`cond`, :func:`while_loop`, :func:`scan`.

Eagerly they are plain Python (so tapes record whatever runs). While tracing,
each body is traced once into a :class:`SubGraph` and the whole construct
becomes one node. ``cond`` and ``scan`` have VJPs written with ``cond`` and
``scan`` themselves, so they differentiate to any order; ``while_loop`` in a
graph has no gradient (its trip count is only known at run time).
"""
import numpy as np

from engine import dtypes, ops
from engine.autodiff import GradientTape
from engine.conversion import user_function
from engine.errors import (ArgumentTypeError, DTypeError, EngineError, NotDifferentiableError,
                           ShapeError, TracingError, describe_inputs, expect_callable,
                           format_location, user_frame)
from engine.modes import current_mode
from engine.numerics import bitwise
from engine.recording import active_tapes, record
from engine.op import Op, declare
from engine.ops.reduce import LeadingSum
from engine.pytree import LEAF, TreeDef, flatten, unflatten
from engine.tensor import Tensor

from . import control_flow_checks
from ..ir.graph_ops import _structural
from .interpret import interpret, replay_nodes
from .subgraph import SubGraph, check_same_outputs, hoist_invariant_reads, _leaf


def _avals(tensors):
    return [(tuple(t.shape), t.dtype) for t in tensors]


def _is_float(t):
    return t.dtype in dtypes.FLOATS


def _vjp_of(run, inputs, cotangents):
    """Run ``run(*inputs)`` under a tape and pull ``cotangents`` back to ``inputs``.

    Returns one gradient per input (zeros for non-float or unconnected inputs). A
    cotangent may be None: that output sends no gradient back.
    """
    floats = [x for x in inputs if _is_float(x)]
    with GradientTape() as tape:
        tape.watch(floats)
        outs = run(*inputs)
    pairs = [(o, g) for o, g in zip(outs, cotangents) if _is_float(o) and g is not None]
    grads = tape.gradient([o for o, _ in pairs], floats,
                          output_gradients=[g for _, g in pairs]) if pairs else [None] * len(floats)
    by_id = {id(x): g for x, g in zip(floats, grads)}
    return [ops.zeros_like(x) if by_id.get(id(x)) is None else by_id[id(x)] for x in inputs]


# ---- cond ----------------------------------------------------------------------
def _cond_impl(pred, *rest, true, false, n_ops):
    ops_ = list(rest[:n_ops])
    n_t = len(true.captures)
    if pred:
        return tuple(true.run(ops_ + list(rest[n_ops:n_ops + n_t])))
    return tuple(false.run(ops_ + list(rest[n_ops + n_t:])))


def _cond_eval(pred, *rest, true, false, n_ops):
    if pred[1] != dtypes.bool_ or tuple(pred[0]) != ():
        raise DTypeError(f"cond: the predicate must be a bool scalar, got {describe_inputs([pred])}")
    return true.out_avals


def _cond_vjp(gs, outs, pred, *rest, true, false, n_ops):
    n_t = len(true.captures)
    n_rest = len(rest)
    # A cotangent is None for a result no gradient reached (the op's absent_cotangents
    # rule): the branches' VJPs take only the others, and make no zeros for it.
    present = [k for k, g in enumerate(gs) if g is not None]

    def branch_vjp(sub, cap_lo, cap_hi):
        _refuse_unreplayable_branch(sub)

        def run_vjp(*args):
            ins, g = list(args[:n_rest]), [None] * len(gs)
            for k, gk in zip(present, args[n_rest:]):
                g[k] = gk
            mine = ins[:n_ops] + ins[cap_lo:cap_hi]
            # replay={}: the branch's side effects ran in the forward pass already.
            grads = _vjp_of(lambda *xs: interpret(sub.graph, list(xs), replay={}), mine, g)
            full = [ops.zeros_like(x) for x in ins]
            for k, gk in zip(list(range(n_ops)) + list(range(cap_lo, cap_hi)), grads):
                full[k] = gk
            return tuple(full)
        return run_vjp

    grads = cond(pred, branch_vjp(true, n_ops, n_ops + n_t),
                 branch_vjp(false, n_ops + n_t, n_rest), *rest, *[gs[k] for k in present])
    return (None,) + tuple(g if _is_float(x) else None for x, g in zip(rest, grads))


def _refuse_unreplayable_branch(sub):
    """A branch's VJP re-runs the branch with its effects skipped; refused where that re-run
    could not give the forward pass's values: the branch reads a variable it (or a loop in
    it) writes -- the re-run would read the written value, a silently wrong gradient -- or
    uses the result of a loop with effects, whose values the cond does not keep."""
    nested = any(n.side_effects and n.op.multiple_results for n in sub.graph.nodes)
    if not sub.assigned and not nested:
        return
    unreplayable = [n for n in replay_nodes(sub.graph, None if nested else sub.assigned)
                    if not n.op.random]
    if unreplayable:
        raise NotDifferentiableError(
            f"cond: the gradient, inside en.function, of a branch ({sub.graph.name}; the body "
            f"of a while_loop with max_steps= runs in one) that writes a variable and reads "
            f"it or a loop's results (node %{unreplayable[0].name}, "
            f"op '{unreplayable[0].op.name}'): the backward pass would read what the write "
            f"left. Read the variable before en.cond and pass the value in as an operand, "
            f"write it after the cond, or take this gradient eagerly (a random draw reads and "
            f"writes its generator's state: draw before the cond, or from a key passed in)"
            f"\n  at {format_location(user_frame())}")


def _same_on_any_backend(impl):
    """A kernel that only runs subgraphs (each lowered for the graph's back end)."""
    return lambda be, *arrays, **params: impl(*arrays, **params)


cond_op = _structural(Op("cond", _cond_impl, _cond_eval, _cond_vjp, multiple_results=True,
                         generic=_same_on_any_backend(_cond_impl),
                         doc="Run one of two traced branches, chosen by a bool scalar."))
declare(cond_op, onnx=None, side_effects_of=lambda p: p["true"].has_side_effects or
        p["false"].has_side_effects, load_check=control_flow_checks.check_cond,
        bodies=("true", "false"),   # graph/passes/body_cleanup.py
        absent_cotangents=True)   # _cond_vjp takes None for a result no gradient reached


def cond(pred, true_fn, false_fn, *operands):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, in both modes.

    In a traced function both branches are traced (they must return the same
    structure, shapes and dtypes) and the choice is made at run time. The
    current mode decides which (``Mode.cond``).

    Example:
        >>> import engine as en
        >>> x = en.tensor(3.0)
        >>> float(en.cond(x > 0, lambda v: v * 2.0, lambda v: -v, x))
        6.0
    """
    expect_callable("cond", "true_fn", true_fn)
    expect_callable("cond", "false_fn", false_fn)
    # Inside a converting trace the branches are the user's code too (their `if`s convert).
    true_fn, false_fn = user_function(true_fn), user_function(false_fn)
    return current_mode().cond(pred, true_fn, false_fn, *operands)


def traced_cond(mode, pred, true_fn, false_fn, operands):
    """``cond`` while ``mode`` (a ``TraceMode``) traces: both branches become
    subgraphs of one ``cond`` node."""
    leaves, tree = flatten(tuple(operands), is_leaf=_leaf)
    leaves = mode.lift(leaves)
    (pred,) = mode.lift([pred])
    avals = _avals(leaves)
    t = SubGraph(lambda *a: true_fn(*a), avals, tree, "cond_true", mode)
    f = SubGraph(lambda *a: false_fn(*a), avals, tree, "cond_false", mode)
    check_same_outputs("cond", t, f, "true_fn", "false_fn")
    hoist_invariant_reads(mode, (t, f))
    node, outs = emit(mode, cond_op, [pred, *leaves, *t.captures, *f.captures],
                      dict(true=t, false=f, n_ops=len(leaves)))
    order_bodies(mode, node, (t, f))
    return unflatten(t.out_tree, list(outs))


def _located(err):
    return type(err)(f"{err}\n  at {format_location(user_frame())}")


def emit(mode, op, args, params):
    """Add a control-flow node for ``op`` to the trace ``mode``: ``(node, outputs)``.

    What ``apply`` does, but the node is returned as well, since a construct
    whose bodies only have side effects (an ``en.print`` in a branch) has no
    outputs to reach it through.
    """
    tensors = mode.lift(list(args))
    try:
        aval = op.abstract_eval(*[(t.shape, t.dtype) for t in tensors], **params)
    except EngineError as err:
        raise _located(err) from None
    node = mode.add_node(op, [t._node for t in tensors], params, aval)
    outs = mode.outputs_of(node)
    if active_tapes():
        record(op, tensors, outs, params)
    return node, outs


def order_bodies(mode, node, bodies):
    """Order a control-flow node by the variables its bodies read and assign: after
    earlier assigns, and later reads after it, as for a read or an assign. (Its side
    effects, its bodies', were ordered when the node was added.)"""
    mode.order_body_variables(node, bodies)


# ---- while_loop ------------------------------------------------------------------
def _while_impl(*rest, cond, body, n_vars):
    vals = list(rest[:n_vars])
    n_c = len(cond.captures)
    cc = list(rest[n_vars:n_vars + n_c])
    cb = list(rest[n_vars + n_c:])
    while cond.run(vals + cc)[0]:
        vals = list(body.run(vals + cb))
    return tuple(vals)


def _while_eval(*rest, cond, body, n_vars):
    return tuple((tuple(s), d) for s, d in rest[:n_vars])


def _while_vjp(gs, outs, *rest, cond, body, n_vars):
    raise NotDifferentiableError(
        "while_loop cannot be differentiated in reverse mode in a graph: its number of "
        "iterations is only known at run time. Give it a static bound, "
        "en.while_loop(cond_fn, body_fn, loop_vars, max_steps=N) (it then stops after N "
        "steps at most); or use en.fori_loop(lower, upper, body_fn, init_val) with Python int "
        "bounds, or en.scan with a fixed number of steps")


while_op = _structural(Op("while_loop", _while_impl, _while_eval, _while_vjp,
                          multiple_results=True, generic=_same_on_any_backend(_while_impl),
                          doc="Repeat a traced body while a traced condition holds."))
declare(while_op, onnx=None, side_effects_of=lambda p: p["cond"].has_side_effects or
        p["body"].has_side_effects, load_check=control_flow_checks.check_while,
        bodies=("cond", "body"),    # graph/passes/body_cleanup.py
        dead_results="while_loop")  # graph/passes/while_dead_vars.py


# ``while_loop(..., max_steps=N)`` hands over to the bounded loop of bounded_loops.py (which
# builds on this module); it registers ``(bounded_while_loop, check_max_steps)`` here when
# the graph package is imported.
BOUNDED_WHILE: list = []


def while_loop(cond_fn, body_fn, loop_vars, max_steps=None):
    """Repeat ``loop_vars = body_fn(*loop_vars)`` while ``cond_fn(*loop_vars)``.

    ``loop_vars`` is a tuple or list; the body must keep every shape and dtype.
    With ``max_steps`` (a Python int) the loop stops after that many steps at most,
    and reverse mode differentiates it in a graph too (graph/control/bounded_loops.py).

    Example:
        >>> import engine as en
        >>> i, s = en.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
        ...                      (en.tensor(0), en.tensor(0)))
        >>> int(s)
        10
    """
    expect_callable("while_loop", "cond_fn", cond_fn)
    expect_callable("while_loop", "body_fn", body_fn)
    cond_fn, body_fn = _one_condition(user_function(cond_fn)), user_function(body_fn)
    if not isinstance(loop_vars, (tuple, list)):
        got = (f"a tensor {loop_vars._describe()}" if isinstance(loop_vars, Tensor)
               else type(loop_vars).__name__)
        raise ArgumentTypeError(f"while_loop: loop_vars must be a tuple or list of the loop "
                                f"variables, got {got} (one variable: pass (x,))\n"
                                f"  at {format_location(user_frame())}")
    if max_steps is not None:
        bounded_while_loop, check_max_steps = BOUNDED_WHILE[0]
        return bounded_while_loop(cond_fn, body_fn, loop_vars, check_max_steps(max_steps))
    mode = current_mode()
    if mode.is_concrete or mode.transforms:   # a transformation runs the loop's ops itself
        vals = tuple(loop_vars)
        pred = cond_fn(*vals)
        if not mode.is_concrete and not _known_now(pred):
            # In a trace the condition is known only at run time: the transformation
            # stages one loop in the enclosing trace (forward mode: primals and tangents).
            staged = mode.stage_while_loop(cond_fn, body_fn, loop_vars, while_loop)
            if staged is not NotImplemented:
                return staged
        while bool(pred):
            vals = body_fn(*vals)
            vals = tuple(vals) if isinstance(vals, (tuple, list)) else (vals,)
            pred = cond_fn(*vals)
        return type(loop_vars)(vals)
    leaves, tree = flatten(tuple(loop_vars), is_leaf=_leaf)
    leaves = mode.lift(leaves)
    avals = _avals(leaves)
    c = SubGraph(lambda *a: cond_fn(*a), avals, tree, "while_cond", mode)
    if len(c.out_avals) != 1 or c.out_avals[0][1] != dtypes.bool_ or c.out_avals[0][0] != ():
        raise DTypeError(f"while_loop: cond_fn must return one bool scalar, got "
                         f"{describe_inputs(c.out_avals)}")
    b = SubGraph(lambda *a: _as_tuple(body_fn(*a)), avals, tree, "while_body", mode)
    if [tuple(s) for s, _ in b.out_avals] != [tuple(s) for s, _ in avals] or \
            [d for _, d in b.out_avals] != [d for _, d in avals]:
        raise ShapeError(f"while_loop: the body must return loop variables of the same shapes and "
                         f"dtypes: got {describe_inputs(b.out_avals)} for "
                         f"{describe_inputs(avals)}")
    hoist_invariant_reads(mode, (c, b))
    node, outs = emit(mode, while_op, [*leaves, *c.captures, *b.captures],
                      dict(cond=c, body=b, n_vars=len(leaves)))
    order_bodies(mode, node, (c, b))
    return type(loop_vars)(unflatten(tree, list(outs)))


def _one_condition(cond_fn):
    """``cond_fn`` refusing a condition of more than one value, in every mode: eagerly
    ``bool()`` of it raised numpy's "truth value ... is ambiguous", and under ``vmap`` a
    per-example vector ran each element to its own stop (neither what Python's ``while``
    nor a graph's loop means). The graph's own check reads the traced condition."""
    def condition(*loop_vars):
        pred = cond_fn(*loop_vars)
        if isinstance(pred, Tensor) and pred.shape != ():
            raise DTypeError(f"while_loop: cond_fn must return one bool scalar, got "
                             f"{pred._describe()} (reduce it: en.any(...) or en.all(...))\n"
                             f"  at {format_location(user_frame())}")
        return pred
    return condition


def _known_now(pred):
    """Whether a loop condition has a value now (a Python value, or a tensor holding
    one), not one that a trace computes later."""
    if not isinstance(pred, Tensor):
        return True
    try:
        pred._concrete("a while_loop condition")
    except TracingError:
        return False
    return True


def _as_tuple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


# ---- scan ----------------------------------------------------------------------------
def _scan_impl(*rest, body, n_carry, n_x, length, reverse, summed=(), unread=()):
    carry = list(rest[:n_carry])
    xs = rest[n_carry:n_carry + n_x]
    caps = list(rest[n_carry + n_x:])
    n_y = len(body.out_avals) - n_carry
    if length is None:  # unknown while tracing (a None dim): known now
        length = np.shape(xs[0])[0]
    # Per-step shapes may hold None (an unknown batch size while tracing): the stacked
    # buffers take their shapes from the first step's values.
    y_avals = [(tuple(s), d) for s, d in body.out_avals[n_carry:]]
    res_avals = [(tuple(n.shape), n.dtype) for n in body.replay]
    # ``summed`` results (graph/passes/scan_sums.py) are added up step by step instead,
    # in the blocks of the engine's sum over the leading axis: no stack for them.
    sums = {k: LeadingSum(length, *y_avals[k]) for k in summed}
    ys = [None if k in sums else _stack_buffer(length, a) for k, a in enumerate(y_avals)]
    stacked = [k for k in range(n_y) if k not in sums]
    # The stacks of ``unread`` carries (graph/passes/scan_unread.py) are left empty.
    carries = [np.empty((0 if k in unread else length,) + np.shape(c), np.asarray(c).dtype)
               for k, c in enumerate(carry)]
    kept = [k for k in range(n_carry) if k not in unread]
    n_real = len(body.out_avals)
    # ``unread`` past the carries names replayed values (random draws) nothing reads.
    res_kept = [k for k in range(len(res_avals)) if n_carry + k not in unread]
    residuals = [_stack_buffer(length, a) if k in res_kept else _empty_stack(a)
                 for k, a in enumerate(res_avals)]
    steps = range(length - 1, -1, -1) if reverse else range(length)
    for t in steps:
        for k in kept:
            carries[k][t] = carry[k]
        outs = body.run(carry + [x[t] for x in xs] + caps)
        carry = list(outs[:n_carry])
        for k in stacked:
            ys[k] = buf = _stack_buffer(length, y_avals[k], ys[k], outs[n_carry + k])
            buf[t] = outs[n_carry + k]
        for k, total in sums.items():
            total.add(t, outs[n_carry + k])
        for k in res_kept:
            residuals[k] = _stack_buffer(length, res_avals[k], residuals[k], outs[n_real + k])
            residuals[k][t] = outs[n_real + k]
    if length == 0:
        ys = [_empty_stack(a) for a in y_avals]
        residuals = [_empty_stack(a) for a in res_avals]
    for k, total in sums.items():
        ys[k] = total.total()
    return tuple(np.asarray(c) for c in carry) + tuple(ys) + tuple(carries) + tuple(residuals)


def _empty_stack(aval):
    """A ``(0,) + shape`` array for ``aval`` (an unknown dimension taken as 0)."""
    shape, dtype = aval
    return np.empty((0,) + tuple(0 if d is None else d for d in shape), dtype)


def _stack_buffer(length, aval, buf=None, value=None):
    """A ``(length,) + shape`` buffer for ``aval``; made from ``value``'s shape if unknown."""
    if buf is not None:
        return buf
    shape, dtype = aval
    if None not in shape:
        return np.empty((length,) + shape, dtype)
    return None if value is None else np.empty((length,) + np.shape(value), dtype)


def _scan_generic(be, *rest, body, n_carry, n_x, length, reverse, summed=(), unread=()):
    """``_scan_impl`` against the namespace: steps collected in lists, then stacked."""
    xp = be.xp
    carry = list(rest[:n_carry])
    xs = rest[n_carry:n_carry + n_x]
    caps = list(rest[n_carry + n_x:])
    n_y = len(body.out_avals) - n_carry
    n_real = len(body.out_avals)
    if length is None:
        length = xs[0].shape[0]
    avals = ([(s, d) for s, d in body.out_avals[n_carry:]]
             + [(tuple(c.shape), be.dtype_of(c)) for c in carry]
             + [(tuple(n.shape), n.dtype) for n in body.replay])
    steps = [[None] * length for _ in avals]
    left_out = {n_y + k for k in unread}   # stacks nothing reads (carries, draws): left empty
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        for k, c in enumerate(carry):
            if n_y + k not in left_out:
                steps[n_y + k][t] = c
        outs = body.run(carry + [x[t, ...] for x in xs] + caps)
        carry = list(outs[:n_carry])
        for k in range(n_y):
            steps[k][t] = outs[n_carry + k]
        for k in range(len(body.replay)):
            if n_y + n_carry + k not in left_out:
                steps[n_y + n_carry + k][t] = outs[n_real + k]
    stacked = []
    for j, (parts, (shape, dt)) in enumerate(zip(steps, avals)):
        out = xp.stack(parts) if length and j not in left_out else \
            xp.zeros((0,) + tuple(d or 0 for d in shape), dtype=be.dtype(dt))
        stacked.append(out if be.dtype_of(out) == dt else be.astype(out, dt))
    for k in summed:   # added up over the steps (graph/passes/scan_sums.py)
        stacked[k] = xp.sum(stacked[k], axis=0)
    return tuple(carry) + tuple(stacked)


def _scan_eval(*rest, body, n_carry, n_x, length, reverse, summed=(), unread=()):
    carry = [(tuple(s), d) for s, d in rest[:n_carry]]
    ys = [((tuple(s), d) if k in summed else ((length,) + tuple(s), d))
          for k, (s, d) in enumerate(body.out_avals[n_carry:])]
    stacked = [((0 if k in unread else length,) + s, d) for k, (s, d) in enumerate(carry)]
    residuals = [((0 if n_carry + k in unread else length,) + tuple(n.shape), n.dtype)
                 for k, n in enumerate(body.replay)]
    return tuple(carry + ys + stacked + residuals)


def _scan_vjp(gs, outs, *rest, body, n_carry, n_x, length, reverse, summed=(), unread=()):
    if unread:   # only an optimized graph's scans have it; graphs differentiate before
        raise EngineError("scan: a node whose stacks are left out (its unread param, "
                          "graph/passes/scan_unread.py) has no gradient")
    # A cotangent is None for a result no gradient reached (the op's absent_cotangents
    # rule): the backward loop then reads nothing for it, where a stack of zeros as
    # long as the sequence would be made, read and added every step.
    n_real = len(body.out_avals)
    n_y = n_real - n_carry
    n_res = len(body.replay)
    g_carry = [ops.zeros_like(o) if g is None else g for g, o in zip(gs[:n_carry], outs)]
    g_ys = list(gs[n_carry:n_carry + n_y])
    for k in summed:   # a sum over the steps: every step's result gets its cotangent
        if g_ys[k] is not None:
            shape = tuple(body.out_avals[n_carry + k][0])
            g_ys[k] = ops.broadcast_to(ops.reshape(g_ys[k], (1,) + shape), (length,) + shape)
    # The stacked carries are outputs too: a gradient that itself goes through this
    # scan's backward pass (second order) sends cotangents into them.
    g_stacked = list(gs[n_carry + n_y:2 * n_carry + n_y])
    ys_given = [k for k in range(n_y) if g_ys[k] is not None]
    stacked_given = [k for k in range(n_carry) if g_stacked[k] is not None]
    carries = list(outs[n_carry + n_y:2 * n_carry + n_y])
    residuals = list(outs[2 * n_carry + n_y:])
    xs = list(rest[n_carry:n_carry + n_x])
    caps = list(rest[n_carry + n_x:])

    # Under en.config.numerics = "bitwise", a result that is the carry itself (an RNN's
    # h) has its cotangent added first, as eager mode's tape adds it (see _eager_order).
    exact = bitwise()
    first, g_carry, g_ys = _eager_order(body, n_carry, gs[:n_carry], g_carry, g_ys, reverse) \
        if exact else ({}, g_carry, g_ys)
    ys_given = [k for k in range(n_y) if g_ys[k] is not None]
    given_first = list(first.values())
    n_gy, n_gs, n_first = len(ys_given), len(stacked_given), len(given_first)

    def step(gc, sl):
        sl = list(sl)
        carry_t = sl[:n_carry]
        x_t = sl[n_carry:n_carry + n_x]
        gy_t = [None] * n_y
        for k, g in zip(ys_given, sl[n_carry + n_x:n_carry + n_x + n_gy]):
            gy_t[k] = g
        gs_t = dict(zip(stacked_given, sl[n_carry + n_x + n_gy:n_carry + n_x + n_gy + n_gs]))
        start = n_carry + n_x + n_gy + n_gs
        seeds_first = sl[start:start + n_first]
        # Random draws and effects of this step come from the forward pass.
        replay = dict(zip(body.replay, sl[start + n_first:]))
        inner_caps = current_mode().lift(caps) if caps else []
        ins = carry_t + x_t + inner_caps
        # The entering carries seeded first (``first``): the cotangent of the result
        # that was them, before this step's contributions are added to it.
        grads = _vjp_of(lambda *a: [a[j] for j in first] +
                        interpret(body.graph, list(a), replay)[:n_real], ins,
                        list(seeds_first) + list(gc) + gy_t)
        # carries[t] is the carry entering step t: its cotangent joins that step's.
        g_in = tuple(g + gs_t[k] if k in gs_t else g for k, g in enumerate(grads[:n_carry]))
        return g_in, tuple(grads[n_carry:])

    given = [g_ys[k] for k in ys_given] + [g_stacked[k] for k in stacked_given] + given_first
    g_init, per_step = scan(step, tuple(g_carry),
                            tuple(carries + xs + given + residuals[:n_res]),
                            length=length, reverse=not reverse)
    g_xs = list(per_step[:n_x])
    # (bitwise: the step run last added first, as eager's tape adds them)
    g_caps = [ops.sum(g[::-1] if exact and not reverse else g, axis=0) for g in per_step[n_x:]]
    grads = list(g_init) + g_xs + g_caps
    return tuple(g if _is_float(x) else None for x, g in zip(rest, grads))


def _eager_order(body, n_carry, given_carry, g_carry, g_ys, reverse):
    """Cotangents in eager mode's order of additions, for a scan whose result ``k`` is its
    carry ``j`` (the same value: an RNN returns its new state twice). Eagerly, that
    value's cotangent is the result's (the stack's gradient, reached first) plus, one
    after another, what the next step's ops send back. Here the next step's backward
    starts from it too: returns ``({j: the results' cotangents shifted by one step}, the
    final carries' cotangents with the last step's added, the results' cotangents with
    those of ``k`` taken out)``. Only the first carry a result is counted for.
    ``given_carry``: the final carries' cotangents as given (None where none reached).
    The carry entering the first step is seeded with zeros: a gradient of exactly -0.0
    with respect to the initial carry comes out +0.0."""
    outputs = body.graph.outputs
    n_y = len(g_ys)
    first, g_carry, g_ys = {}, list(g_carry), list(g_ys)
    for k in range(n_y):
        g = g_ys[k]
        j = next((j for j in range(n_carry) if outputs[j] is outputs[n_carry + k]), None)
        if g is None or j is None or j in first:
            continue
        last, rest = (g[-1:], g[:-1]) if not reverse else (g[:1], g[1:])
        zero = ops.zeros_like(last)
        first[j] = ops.concat([zero, rest], axis=0) if not reverse else \
            ops.concat([rest, zero], axis=0)
        last = ops.reshape(last, tuple(last.shape[1:]))
        g_carry[j] = last if given_carry[j] is None else last + given_carry[j]
        g_ys[k] = None
    return first, g_carry, g_ys


scan_op = _structural(Op("scan", _scan_impl, _scan_eval, _scan_vjp, multiple_results=True,
                         generic=_scan_generic,
                         doc="Loop a traced body over the leading axis of its inputs."))
declare(scan_op, onnx=None, side_effects_of=lambda p: p["body"].has_side_effects,
        load_check=control_flow_checks.check_scan,
        numba_form="time_loop",   # the time loop in compiled code (graph/lowering/numba/numba_scan.py)
        summed_results=True,      # graph/passes/scan_sums.py
        unread_stacks=True,       # graph/passes/scan_unread.py
        bodies=("body",),         # graph/passes/body_cleanup.py
        dead_results="scan",      # graph/passes/scan_dead_results.py
        absent_cotangents=True)   # _scan_vjp takes None for a result no gradient reached


def scan(fn, init, xs=None, length=None, reverse=False):
    """Loop ``carry, y = fn(carry, x)`` over the leading axis of ``xs``.

    Returns ``(final_carry, ys)`` with the ``y``s stacked on a new leading
    axis. ``init`` and ``xs`` may be tensors or tuples/lists/dicts of them.
    Differentiable in both modes.

    Example:
        >>> import engine as en
        >>> total, partial = en.scan(lambda c, x: (c + x, c + x), en.tensor(0.0),
        ...                          en.tensor([1.0, 2.0, 3.0]))
        >>> partial.numpy().tolist()
        [1.0, 3.0, 6.0]
    """
    expect_callable("scan", "fn", fn)
    fn = user_function(fn)
    x_leaves, x_tree = flatten(xs, is_leaf=_leaf)
    if length is None:
        if not x_leaves:
            raise ShapeError("scan: give xs or length")
        length = x_leaves[0].shape[0]
    for x in x_leaves:
        if not x.shape or (x.shape[0] != length and None not in (x.shape[0], length)):
            raise ShapeError(f"scan: every x must have leading dimension {length}, got "
                             f"shape {x.shape}")
    mode = current_mode()
    if mode.transforms and not mode.is_concrete:
        # Inside a trace a transformation stages one scan of its transformed body.
        staged = mode.stage_scan(fn, init, xs, length, reverse, scan)
        if staged is not NotImplemented:
            return staged
    if mode.is_concrete or mode.transforms:   # a transformation runs the loop's ops itself
        carry = init
        ys = [None] * length
        steps = range(length - 1, -1, -1) if reverse else range(length)
        for t in steps:
            x_t = unflatten(x_tree, [x[t] for x in x_leaves])
            carry, ys[t] = fn(carry, x_t)
        if length == 0:
            raise ShapeError("scan: eager scan over zero steps cannot infer the output shapes")
        y_leaves0, y_tree = flatten(ys[0], is_leaf=_leaf)
        stacked = [ops.stack([flatten(y, is_leaf=_leaf)[0][k] for y in ys])
                   for k in range(len(y_leaves0))]
        return carry, unflatten(y_tree, stacked)
    c_leaves, c_tree = flatten(init, is_leaf=_leaf)
    c_leaves = mode.lift(c_leaves)
    x_leaves = mode.lift(x_leaves)
    c_avals = _avals(c_leaves)
    x_avals = [(tuple(x.shape[1:]), x.dtype) for x in x_leaves]
    n_c = len(c_leaves)
    holder = {}

    def body_fn(*flat):
        carry = unflatten(c_tree, list(flat[:n_c]))
        x = unflatten(x_tree, list(flat[n_c:]))
        new_carry, y = fn(carry, x)
        nc, nc_tree = flatten(new_carry, is_leaf=_leaf)
        y_leaves, holder["y_tree"] = flatten(y, is_leaf=_leaf)
        if nc_tree != c_tree:
            raise ShapeError(f"scan: fn must return a carry with the structure of init "
                             f"({c_tree} vs {nc_tree})")
        return tuple(nc) + tuple(y_leaves)

    in_tree = TreeDef(tuple, None, tuple(LEAF for _ in range(n_c + len(x_leaves))))
    body = SubGraph(body_fn, c_avals + x_avals, in_tree, "scan_body", mode)
    hoist_invariant_reads(mode, (body,))
    # Values a backward re-run could not reproduce are also returned, stacked per step.
    body.replay = replay_nodes(body.graph, variables=body.assigned)
    body.graph.outputs = body.graph.outputs + body.replay
    got = body.out_avals[:n_c]
    if [tuple(s) for s, _ in got] != [tuple(s) for s, _ in c_avals] or \
            [d for _, d in got] != [d for _, d in c_avals]:
        raise ShapeError(f"scan: fn must keep the carry's shapes and dtypes: got "
                         f"{describe_inputs(got)} for {describe_inputs(c_avals)}")
    node, outs = emit(mode, scan_op, [*c_leaves, *x_leaves, *body.captures],
                      dict(body=body, n_carry=n_c, n_x=len(x_leaves),
                           length=None if length is None else int(length), reverse=bool(reverse)))
    order_bodies(mode, node, (body,))
    n_y = len(body.out_avals) - n_c
    carry = unflatten(c_tree, list(outs[:n_c]))
    ys = unflatten(holder["y_tree"], list(outs[n_c:n_c + n_y]))
    return carry, ys
