"""Control flow under :func:`vmap` without unrolling: ``scan``, ``while_loop`` and ``cond``.

Inside a trace, ``vmap`` of a loop is one loop of the parent mode whose body is
the vmapped body (JAX's batching rules for ``scan_p``, ``while_p`` and ``cond_p``):

- ``scan``: the batched carries hold the batch axis in front; batched ``xs`` are
  laid out time first, batch second, so each step's ``x`` has the batch axis in
  front; the stacked ``ys`` come back with the batch axis at 1. A carry is batched
  where its init is or where the body makes it so (a fixpoint: a body that batches
  an unbatched carry is traced again with that carry broadcast).
- ``while_loop``: an unbatched condition gives one loop of the vmapped body; a
  batched one loops while any element's condition holds, and each element's
  variables stop changing once its own condition is false (per-element trip
  counts: ``where(pred, new, old)``).
- ``cond``: an unbatched predicate gives one ``cond`` of the parent, its branches
  vmapped (an output batched in one branch is broadcast in the other); a batched
  predicate runs both branches and selects per element (in ``BatchMode.cond``).

Values the body closes over need nothing special: the loop body's ``BatchMode``
shares the outer one's tag, so a batched value from outside is its own, and its
raw tensor becomes an input of the staged loop as any captured tensor does.

A gradient tape begun inside the ``vmap`` (``vmap(grad(f))``) records a staged
scan as one entry at the batched level: its backward pass is a vmapped reverse
scan whose step runs the body's VJP (:func:`_record_scan`). A body that draws
random numbers or writes variables runs again there on the state the forward pass
saw, without writing it again (batching_state.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes, ops
from ..autodiff.tape import GradientTape
from ..errors import EngineError, NotDifferentiableError, ShapeError
from ..modes import current_mode, read_variable, use_mode
from ..pytree import flatten, unflatten
from ..recording import TapeRule, active_tapes, paused, record
from ..tensor import Tensor
from ..variable import Variable
from .batching import STAGED_LOOPS, BatchMode, batched, move_to_front
from .batching_state import StateLog, current_replay, replaying

_MAX_TRIES = 8   # each retrace batches at least one more carry; a safety bound


class _Retrace(EngineError):
    """A body made these unbatched loop values batched: stage again with them batched.
    ``owner`` names the staging that must retry (an inner vmap's retrace passes through
    an outer vmap's staging of the same loop)."""

    def __init__(self, which, owner):
        super().__init__(which)
        self.which = set(which)
        self.owner = owner


def _leaf(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


def root_is_concrete(mode):
    """Whether the mode under every transformation below ``mode`` holds values (eager)."""
    m = mode.parent
    while getattr(m, "transforms", False):
        m = m.parent
    return bool(m.is_concrete)


def inner_tapes(mode):
    """The recording tapes begun inside the vmap ``mode`` (``vmap(grad(f))``)."""
    return [t for t in active_tapes() if t._recording and id(t) not in mode._outer_tapes]


class Tracker:
    """The values a staged body uses that gradient tapes watch (``watched``: their ids),
    in first-use order (``found``): the closed-over inputs of a tape entry."""

    __slots__ = ("watched", "found", "impure", "body", "log")

    def __init__(self, watched):
        self.watched: set[int] = watched
        self.found: dict[int, Any] = {}
        # What the body does that a re-run would repeat, and what to do instead.
        self.impure: str | None = None
        self.body: LoopBodyMode | None = None   # the mode of the scan body's own trace
        self.log = StateLog()   # its variable reads and writes (batching_state.py)

    def begin(self, body):
        """A new trace of the scan body in the mode ``body``: a fresh log."""
        self.body, self.log = body, StateLog()


class LoopBodyMode(BatchMode):
    """The ``BatchMode`` of a staged body: the outer vmap's tag and size over the body's
    trace. With a :class:`Tracker` it notes the watched values the body uses."""

    def __init__(self, parent, tag, size, tracker=None):
        super().__init__(parent, tag, size)
        self.tracker = tracker

    def lift(self, args):
        tracker = self.tracker
        if tracker is not None or current_replay() is not None:
            # A variable used as an op's argument is read here, so the read is logged
            # (or replayed) as ``var.read()`` is.
            args = [read_variable(a, self) if isinstance(a, Variable) else a for a in args]
        if tracker is not None:   # before lifting: the trace swaps captures for inputs
            for t in args:
                if id(t) in tracker.watched and id(t) not in tracker.found:
                    tracker.found[id(t)] = t
        return super().lift(args)

    def apply(self, op, args, params):
        # Random ops draw from a key (the same key: the same numbers when the body runs
        # again); an effect (a print) would happen again.
        if self.tracker is not None and op.side_effects:
            self.tracker.impure = self.tracker.impure or (
                f"op '{op.name}'; move it out of the body (return the values it uses from "
                f"the scan), or take the gradient outside the vmap (grad(vmap(f)))")
        return super().apply(op, args, params)

    def read_variable(self, var):
        replay = current_replay()
        if replay is not None and replay.serves(var):
            return replay.read(var)
        value = super().read_variable(var)
        tracker = self.tracker
        if tracker is not None:
            if self is tracker.body:
                tracker.log.read(var, value)
            else:
                tracker.log.nested[id(var)] = var
        return value

    def assign_variable(self, var, value, kind, indices=None):
        replay = current_replay()
        if replay is not None and replay.serves(var):
            return var   # the forward pass wrote it
        tracker = self.tracker
        if tracker is not None:
            if self is tracker.body:
                tracker.log.write(var)
            else:
                tracker.log.nested[id(var)] = var
                tracker.log.write(var)
        return super().assign_variable(var, value, kind, indices)


def inner_mode(mode):
    """The batch mode of a body staged from ``mode``, over the current (the body's) mode."""
    return LoopBodyMode(current_mode(), mode.tag, mode.size, getattr(mode, "tracker", None))


def broadcast_batch(x, size):
    """``x`` (one element) repeated ``size`` times along a new axis 0, in the current mode."""
    shape = tuple(x.shape)
    return ops.broadcast_to(ops.expand_dims(x, 0), (size,) + shape)


def _to_front(mode, t, batch):
    """The raw value of the loop value ``t`` (of ``mode``) with the batch axis in front:
    broadcast there when ``batch`` asks for it and ``t`` is not batched."""
    if mode.owns(t):
        return move_to_front(t.raw, t.bdim)
    return broadcast_batch(t, mode.size) if batch else t


def _time_then_batch(mode, x):
    """A batched ``xs`` leaf's raw value laid out (time, batch, ...)."""
    raw, d = x.raw, x.bdim
    time = 1 if d == 0 else 0
    if (time, d) == (0, 1):
        return raw
    rest = tuple(i for i in range(raw.ndim) if i not in (time, d))
    return ops.transpose(raw, (time, d) + rest)


# ---- scan -----------------------------------------------------------------------------------
def staged_scan(mode, fn, init, xs, length, reverse, stage):
    """``scan(fn, init, xs, length, reverse)`` in the vmap ``mode`` as one scan staged
    through ``stage`` (``en.scan``) in ``mode.parent``; ``NotImplemented`` eagerly (the
    scan then runs as a Python loop of batched ops)."""
    if root_is_concrete(mode):
        return NotImplemented
    c_leaves, c_tree = flatten(init, is_leaf=_leaf)
    x_leaves, x_tree = flatten(xs, is_leaf=_leaf)
    c_leaves = mode.lift(c_leaves) if c_leaves else []
    x_leaves = mode.lift(x_leaves) if x_leaves else []
    tapes = inner_tapes(mode)
    tracker = Tracker({i for t in tapes for i in t._watched}) if tapes else None
    with paused(tapes):
        out = _stage_scan(mode, fn, c_leaves, c_tree, x_leaves, x_tree, length, reverse,
                          stage, tracker)
    carry, ys, stacked, y_tree, state = out
    if tracker is not None:
        closures = list(tracker.found.values())
        inputs = c_leaves + x_leaves + closures
        if any(id(x) in tracker.watched for x in inputs):
            _record_scan(mode, fn, c_leaves, c_tree, x_leaves, x_tree, closures, carry, ys,
                         stacked, length, reverse, stage, tapes, tracker.impure, state)
    return unflatten(c_tree, carry), unflatten(y_tree, ys)


def _stage_scan(mode, fn, c_leaves, c_tree, x_leaves, x_tree, length, reverse, stage,
                tracker):
    """The staged scan: ``(carry leaves, y leaves, carries entering each step, y tree,
    state)`` in ``mode``'s terms. Only when ``tracker`` asks for a tape entry are the
    carries stacked and ``state`` ``(variables written, variables read, stacked values)``:
    each step's reads of the variables the body writes (batching_state.py); else both
    are empty."""
    n_c = len(c_leaves)
    batched_c = [mode.owns(c) for c in c_leaves]
    x_batched = [mode.owns(x) for x in x_leaves]
    with use_mode(mode.parent):
        x_raws = [_time_then_batch(mode, x) if b else x for x, b in zip(x_leaves, x_batched)]
    keep_carries = tracker is not None
    owner = object()
    for _ in range(_MAX_TRIES):
        holder: dict[str, Any] = {}
        with use_mode(mode.parent):
            c_raws = [_to_front(mode, c, b) for c, b in zip(c_leaves, batched_c)]

        def body(carry, x, batched_c=batched_c, holder=holder):
            # A scan nested in a recorded scan's body, with no tape entry of its own,
            # reports to the enclosing body's tracker (as a cond or while there does).
            inner = LoopBodyMode(current_mode(), mode.tag, mode.size,
                                 tracker or getattr(mode, "tracker", None))
            if tracker is not None:
                tracker.begin(inner)
            x = () if x is None else x
            cs = [batched(c, 0, mode.tag) if b else c for c, b in zip(carry, batched_c)]
            xts = [batched(v, 0, mode.tag) if b else v for v, b in zip(x, x_batched)]
            with use_mode(inner):
                new_c, y = fn(unflatten(c_tree, cs), unflatten(x_tree, xts))
                nc, nc_tree = flatten(new_c, is_leaf=_leaf)
                if nc_tree != c_tree:
                    raise ShapeError(f"scan: fn must return a carry with the structure of "
                                     f"init ({c_tree} vs {nc_tree})")
                nc = inner.lift(nc) if nc else []
                y_leaves, holder["y_tree"] = flatten(y, is_leaf=_leaf)
                y_leaves = [inner.lift([v])[0] for v in y_leaves]
            more = [k for k, o in enumerate(nc) if inner.owns(o) and not batched_c[k]]
            if more:
                raise _Retrace(more, owner)
            holder["y_batched"] = [inner.owns(v) for v in y_leaves]
            new_raws = tuple(_to_front(inner, o, b) for o, b in zip(nc, batched_c))
            y_raws = tuple(_to_front(inner, v, False) for v in y_leaves)
            if keep_carries:   # the carry entering the step, for the backward pass
                y_raws = y_raws + tuple(carry) + _state_reads(tracker, holder)
            return new_raws, y_raws

        try:
            with use_mode(mode.parent):
                carry_raw, ys_raw = stage(body, tuple(c_raws), tuple(x_raws) or None,
                                          length=length, reverse=reverse)
        except _Retrace as again:
            if again.owner is not owner:
                raise
            batched_c = [b or k in again.which for k, b in enumerate(batched_c)]
            continue
        carry = [batched(c, 0, mode.tag) if b else c for c, b in zip(carry_raw, batched_c)]
        n_y = len(holder["y_batched"])
        ys = [batched(y, 1, mode.tag) if b else y
              for y, b in zip(ys_raw[:n_y], holder["y_batched"])]
        stacked = [batched(y, 1, mode.tag) if b else y
                   for y, b in zip(ys_raw[n_y:n_y + n_c], batched_c)]
        state = holder.get("state", ([], [])) + (list(ys_raw[n_y + n_c:]),)
        return carry, ys, stacked, holder["y_tree"], state
    raise ShapeError("vmap: the batching of a scan's carries did not settle")   # unreachable


def _state_reads(tracker, holder):
    """The values the body's trace read from the variables it writes (to be stacked);
    their variables go to ``holder``. A write the scan cannot replay makes the body
    impure (its gradient is refused)."""
    log = tracker.log
    nested = log.nested_write()
    if nested is not None:
        tracker.impure = tracker.impure or (
            f"a cond or loop that uses variable {nested.name!r}, which the body writes (what "
            f"the cond or loop reads cannot be given back to it); read and write the "
            f"variable in the scan's body itself, and pass the values into the cond or loop")
    kept = log.kept()
    holder["state"] = (list(log.written.values()), [var for var, _ in kept])
    return tuple(value for _, value in kept)


def _is_float(t):
    return t.dtype in dtypes.FLOATS


def _record_scan(mode, fn, c_leaves, c_tree, x_leaves, x_tree, closures, carry, ys, stacked,
                 length, reverse, stage, tapes, impure, state):
    """Record the staged scan on ``tapes`` (begun inside the vmap) as one entry of batched
    values: inputs the init, the xs and the watched values ``fn`` closes over; its VJP a
    reverse scan (vmapped, as it runs in the vmap) of ``fn``'s VJP at each step's carry.
    The VJP runs ``fn`` again, on the variable values each step read (``state``: the
    variables the body writes and their stacked reads) and without writing them; a body
    with an effect the re-run would repeat (``impure`` names it) refuses the gradient."""
    n_c, n_x, n_y = len(c_leaves), len(x_leaves), len(ys)
    written, read_vars, state_reads = state
    n_r = len(state_reads)
    fc = [k for k in range(n_c) if _is_float(c_leaves[k])]
    fx = [k for k in range(n_x) if _is_float(x_leaves[k])]
    n_k = len(closures)

    def vjp(g, out, *inputs):
        if impure is not None:
            raise NotDifferentiableError(
                f"vmap(grad) of a scan inside a graph: the backward pass would run the scan's "
                f"body again, and with it {impure}")
        g_c, g_y = list(g[:n_c]), list(g[n_c:n_c + n_y])
        # The carries entering each step are outputs too: a second-order gradient sends
        # cotangents into them (they join that step's carry cotangent).
        g_s = [g[n_c + n_y + k] for k in fc]

        def back_step(acc, sl):
            gc, g_clos = list(acc[0]), list(acc[1])
            c_t = list(sl[:n_c])
            x_t = list(sl[n_c:n_c + n_x])
            gy_t = list(sl[n_c + n_x:n_c + n_x + n_y])
            gs_t = list(sl[n_c + n_x + n_y:len(sl) - n_r])
            reads_t = list(sl[len(sl) - n_r:])
            # The closed-over values as this body's ops see them (a trace swaps an outer
            # tensor for its capture): what the tape must watch.
            seen = current_mode().lift(closures) if closures else []
            sources = [c_t[k] for k in fc] + [x_t[k] for k in fx] + seen
            with GradientTape() as tape, replaying(written, read_vars, reads_t):
                tape.watch(sources)
                new_c, y = fn(unflatten(c_tree, c_t), unflatten(x_tree, x_t))
            outs = flatten(new_c, is_leaf=_leaf)[0] + flatten(y, is_leaf=_leaf)[0]
            seeds = [gc[fc.index(k)] if k in fc else None for k in range(n_c)] + gy_t
            pairs = [(o, s) for o, s in zip(outs, seeds)
                     if s is not None and isinstance(o, Tensor) and _is_float(o)]
            grads = tape.gradient([o for o, _ in pairs], sources,
                                  output_gradients=[s for _, s in pairs])
            grads = [ops.zeros_like(s) if gr is None else gr for s, gr in zip(sources, grads)]
            new_gc = [gr + gs for gr, gs in zip(grads[:len(fc)], gs_t)]
            g_x = grads[len(fc):len(fc) + len(fx)]
            new_clos = [a + gr for a, gr in zip(g_clos, grads[len(fc) + len(fx):])]
            return (tuple(new_gc), tuple(new_clos)), tuple(g_x)

        acc0 = (tuple(g_c[k] for k in fc), tuple(ops.zeros_like(c) for c in closures))
        sl = tuple(stacked) + tuple(x_leaves) + tuple(g_y) + tuple(g_s) + tuple(state_reads)
        (g_init, g_clos), g_xs = stage(back_step, acc0, sl, length=length,
                                       reverse=not reverse)
        grads = [None] * (n_c + n_x + n_k)
        for k, gr in zip(fc, g_init):
            grads[k] = gr
        for k, gr in zip(fx, g_xs):
            grads[n_c + k] = gr
        grads[n_c + n_x:] = list(g_clos)
        return tuple(grads)

    rule = TapeRule("scan (vmapped)", vjp, multiple_results=True)
    record(rule, c_leaves + x_leaves + closures, tuple(carry) + tuple(ys) + tuple(stacked), {},
           tapes)


# ---- while_loop -----------------------------------------------------------------------------
def staged_while_loop(mode, cond_fn, body_fn, loop_vars, stage):
    """``while_loop`` in the vmap ``mode`` whose condition has no value now: batched (any
    parent), or unknown until run time (a trace). Eagerly, a Python loop of batched ops
    that freezes each element once its condition is false; in a trace, one loop staged
    through ``stage`` (``en.while_loop``) in ``mode.parent``."""
    leaves, tree = flatten(tuple(loop_vars), is_leaf=_leaf)
    leaves = [mode.lift([v])[0] for v in leaves]   # one at a time: an int counter stays int
    if root_is_concrete(mode):
        out = _eager_batched_while(mode, cond_fn, body_fn, leaves, tree)
    else:
        out = _staged_while(mode, cond_fn, body_fn, leaves, tree, stage)
        tapes = inner_tapes(mode)
        if tapes:   # no gradient through a loop staged in a graph: say so if one is asked
            record(TapeRule("while_loop (vmapped)", _no_while_gradient, multiple_results=True),
                   leaves, tuple(out), {}, tapes)
    return type(loop_vars)(unflatten(tree, out))


def _no_while_gradient(g, out, *inputs):
    raise NotDifferentiableError(
        "vmap of while_loop inside a graph has no gradient: its number of iterations is only "
        "known at run time. Give it a static bound, en.while_loop(cond_fn, body_fn, loop_vars, "
        "max_steps=N) (each example then stops at its own condition or after N steps), or use "
        "en.fori_loop with Python int bounds, or en.scan with a fixed number of steps")


def _any_element(mode, pred):
    """Whether ``pred`` (a batched bool scalar of ``mode``) holds for any element."""
    with use_mode(mode.parent):
        return ops.any(pred.raw)


def _any_at_all(mode, pred):
    """Whether ``pred`` holds for any element of ``mode``'s batch and of every vmap
    around it (eagerly, ``vmap(vmap(f))`` loops until no element of either is running)."""
    out = _any_element(mode, pred)
    m = mode.parent
    while getattr(m, "transforms", False):
        if isinstance(m, BatchMode) and m.owns(out):
            out = _any_element(m, out)
        m = m.parent
    return out


def _select(pred, new, old):
    """``where(pred, new, old)`` per loop value (in the current, batched mode)."""
    return [n if n is o else ops.where(pred, n, o) for n, o in zip(new, old)]


def _body_leaves(body_fn, vals, tree):
    out = body_fn(*unflatten(tree, vals))
    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    leaves, out_tree = flatten(out, is_leaf=_leaf)
    if out_tree != tree:
        raise ShapeError(f"while_loop: the body must return the loop variables' structure "
                         f"{tree}, got {out_tree}")
    return leaves


def _eager_batched_while(mode, cond_fn, body_fn, vals, tree):
    """The eager loop: run while any element's condition holds (recorded, batched ops).

    An element whose condition failed runs the body on the values of its last running
    step (``safe``), and keeps its own: the body's derivatives there are finite, where
    at the values it stopped at they can be infinite, and zero (its select's cotangent)
    times infinity would make its gradient NaN (graph/control/bounded_loops.py does the
    same in graphs). Without a tape recording, nothing needs them: the body runs on
    the values themselves."""
    safe = vals
    taped = bool(active_tapes())
    while True:
        pred = cond_fn(*unflatten(tree, vals))
        if not mode.owns(pred):
            if not bool(pred):
                return vals
            safe = vals
            vals = [mode.lift([v])[0] for v in _body_leaves(body_fn, vals, tree)]
            continue
        if not bool(_any_at_all(mode, pred)):
            return vals
        safe = _select(pred, vals, safe) if taped else vals
        new = [mode.lift([v])[0] for v in _body_leaves(body_fn, safe, tree)]
        vals = _select(pred, new, vals)


def _staged_while(mode, cond_fn, body_fn, leaves, tree, stage):
    """One ``while_loop`` in ``mode.parent``; a batched condition batches every variable."""
    is_batched = [mode.owns(v) for v in leaves]
    owner = object()
    for _ in range(_MAX_TRIES):
        holder: dict[str, Any] = {}
        with use_mode(mode.parent):
            raws = [_to_front(mode, v, b) for v, b in zip(leaves, is_batched)]

        def wrap(flat, is_batched=is_batched):
            return [batched(v, 0, mode.tag) if b else v for v, b in zip(flat, is_batched)]

        def cond(*flat, is_batched=is_batched, holder=holder):
            inner = inner_mode(mode)
            with use_mode(inner):
                pred = cond_fn(*unflatten(tree, wrap(flat)))
            holder["batched_pred"] = inner.owns(pred)
            if not inner.owns(pred):
                return pred
            if not all(is_batched):
                raise _Retrace(range(len(is_batched)), owner)
            return _any_element(inner, pred)

        def body(*flat, is_batched=is_batched, holder=holder):
            inner = inner_mode(mode)
            vals = wrap(flat)
            with use_mode(inner):
                new = [inner.lift([v])[0] for v in _body_leaves(body_fn, vals, tree)]
                if holder.get("batched_pred"):
                    pred = cond_fn(*unflatten(tree, vals))
                    new = [inner.lift([v])[0] for v in _select(pred, new, vals)]
            more = [k for k, o in enumerate(new) if inner.owns(o) and not is_batched[k]]
            if more:
                raise _Retrace(more, owner)
            return tuple(_to_front(inner, o, b) for o, b in zip(new, is_batched))

        try:
            with use_mode(mode.parent):
                flat = stage(cond, body, tuple(raws))
        except _Retrace as again:
            if again.owner is not owner:
                raise
            is_batched = [b or k in again.which for k, b in enumerate(is_batched)]
            continue
        return wrap(list(flat))
    raise ShapeError("vmap: the batching of a while_loop's variables did not settle")


# ---- cond -----------------------------------------------------------------------------------
def staged_cond(mode, pred, true_fn, false_fn, operands):
    """``cond`` in the vmap ``mode`` on an unbatched ``pred`` whose value is not known now:
    one ``cond`` of ``mode.parent`` whose branches are vmapped; an output batched in
    either branch is batched (broadcast) in both."""
    leaves, tree = flatten(tuple(operands), is_leaf=_leaf)
    leaves = mode.lift(leaves) if leaves else []
    dims = [v.bdim if mode.owns(v) else None for v in leaves]
    raws = [v.raw if mode.owns(v) else v for v in leaves]
    force: set[int] = set()
    owner = object()
    for _ in range(_MAX_TRIES):
        holder: dict[str, list[bool]] = {}

        def branch(fn, key, other, holder=holder, force=frozenset(force)):
            def run(*flat):
                inner = inner_mode(mode)
                args = [v if d is None else batched(v, d, mode.tag) for v, d in zip(flat, dims)]
                with use_mode(inner):
                    out = fn(*unflatten(tree, args))
                    o_leaves, o_tree = flatten(out, is_leaf=_leaf)
                    o_leaves = [inner.lift([v])[0] for v in o_leaves]
                mine = [inner.owns(v) for v in o_leaves]
                holder[key] = mine
                theirs = holder.get(other)
                if theirs is not None and len(theirs) == len(mine):
                    more = [k for k, b in enumerate(mine) if b and not theirs[k] and k not in force]
                    if more:   # the branch traced first must broadcast these too
                        raise _Retrace(more, owner)
                    want = [b or t or k in force for k, (b, t) in enumerate(zip(mine, theirs))]
                else:
                    want = [b or k in force for k, b in enumerate(mine)]
                holder[key + "_out"] = want
                return unflatten(o_tree, [_to_front(inner, v, w) for v, w in zip(o_leaves, want)])
            return run

        try:
            with use_mode(mode.parent):
                out = mode.parent.cond(pred, branch(true_fn, "t", "f"), branch(false_fn, "f", "t"),
                                       *unflatten(tree, raws))
        except _Retrace as again:
            if again.owner is not owner:
                raise
            force |= again.which
            continue
        o_leaves, o_tree = flatten(out, is_leaf=_leaf)
        # Both branches traced, or one ran (a Python if one level out).
        ran = [holder[k] for k in ("t_out", "f_out") if k in holder]
        want = [any(col) for col in zip(*ran)]
        return unflatten(o_tree, [batched(v, 0, mode.tag) if w else v
                                  for v, w in zip(o_leaves, want)])
    raise ShapeError("vmap: the batching of a cond's outputs did not settle")


STAGED_LOOPS.update(scan=staged_scan, while_loop=staged_while_loop, cond=staged_cond,
                    inner_tapes=inner_tapes)
