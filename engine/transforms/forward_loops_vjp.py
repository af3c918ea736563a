"""Reverse mode over a staged ``scan`` or ``cond`` of forward mode (``jvp`` of ``grad``).

A tape begun inside ``en.jvp`` watches dual tensors. When forward mode stages a
``scan`` or a ``cond`` in a trace (:mod:`.forward_loops`), the construct runs one
level out, on primals and tangents, where that tape sees nothing. So the staging
records the construct itself on the active tapes: its inputs are the dual
operands (the initial carry and the xs of a scan) and the dual tensors its body
captured; its results are the dual outputs. Its reverse rule is written with the
public construct again (a reverse ``scan`` that re-runs each step under a tape
from the carries the forward scan kept, or a ``cond`` of the branches' VJPs), so
when the gradient runs in forward mode it is staged once more: forward over
reverse is one forward scan and one backward scan, whatever the number of steps.
"""
import types

from .. import dtypes, ops
from ..autodiff.tape import GradientTape
from ..errors import NotDifferentiableError
from ..modes import current_mode
from ..pytree import flatten, unflatten
from ..recording import TapeRule, record
from ..variable import Variable

_FLOATS = dtypes.FLOATS


def frozen(fn):
    """``fn`` with the values its closure holds now: the reverse rule runs the user's
    function again when the gradient is taken, after the code that follows the construct
    may have rebound a name the function reads (``c = cond(p, lambda: c * w, ...)``).
    (Globals and attributes it reads are read again then.)"""
    cells = getattr(fn, "__closure__", None)
    if not isinstance(fn, types.FunctionType) or not cells:
        return fn
    held = []
    for cell in cells:
        try:
            held.append(types.CellType(cell.cell_contents))
        except ValueError:        # not bound yet: the function's own later binding
            held.append(cell)
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              tuple(held))
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


def _inside(caps, which):
    """The captures ``caps[k]`` (``k`` in ``which``) as the body running now sees them: a
    dual tensor or a variable as it is, a tensor of the enclosing trace as its capture
    there (what the body's ops, and so the tape, take)."""
    mode = current_mode()
    return [caps[k] if isinstance(caps[k], Variable) else mode.lift([caps[k]])[0]
            for k in which]


def _floats(tensors):
    return [k for k, t in enumerate(tensors) if t.dtype in _FLOATS]


def _pull_back(run, sources, seeds):
    """Run ``run()`` under a tape watching ``sources``; the gradients of its float
    results (``run`` returns ``(results, indices of those with a seed)``) with
    ``seeds`` as output gradients, zeros where a source is not reached."""
    with GradientTape() as tape:
        tape.watch(sources)
        results = current_mode().lift(list(run()))
    targets = [o for o in results if o.dtype in _FLOATS]
    grads = tape.gradient(targets, sources, output_gradients=list(seeds)) if targets \
        else [None] * len(sources)
    return tuple(g if g is not None else ops.zeros(s.shape, dtype=s.dtype)
                 if isinstance(s, Variable) else ops.zeros_like(s)
                 for s, g in zip(sources, grads))


def _refuse_writes(what, written):
    """The reverse rule runs the body again, which would write ``written`` again (a
    stateful draw writes its generator's key): refused by name."""
    if written:
        raise NotDifferentiableError(
            f"jvp(grad) of a {what} inside a graph: its body writes variable "
            f"{written[0].name!r} (a stateful random draw writes its generator's key), and "
            f"the reverse pass would run it again; draw from keys passed in "
            f"(en.random.normal_from_key), write the variable after the {what}, or take "
            f"the gradient outside the jvp (grad(jvp(f)))")


def record_scan(fn, c_leaves, c_tree, x_leaves, x_tree, captured, variable_reads, c_out, y_out,
                stacked, length, reverse, stage, written=()):
    """Record a staged scan on the active tapes (see the module docstring).

    ``variable_reads``: ``(variables, values)`` of the variables the body reads, their
    values read outside (inputs of the entry, as the captures are); ``stacked``: the
    carries entering each step (stacked), as the forward scan kept them; ``stage``:
    the public ``scan``, for the backward loop; ``written``: the variables the body
    assigns (its gradient is then refused).
    """
    fn = frozen(fn)
    n_c, n_x = len(c_leaves), len(x_leaves)
    fc, fy = _floats(c_leaves), _floats(y_out)
    variables, values = variable_reads
    captured = list(captured) + list(values)
    n_dual = len(captured) - len(values)

    def vjp(gs, outs, *inputs, needs):
        _refuse_writes("scan", written)
        # Only the xs and captures the tape needs get gradients (each would cost the
        # backward loop its products every step); the carries' always flow back.
        fx = [k for k in _floats(x_leaves) if needs[n_c + k]]
        fcap = [k for k in _floats(captured) if needs[n_c + n_x + k]]
        xs = list(inputs[n_c:n_c + n_x])
        # A variable is a source itself: the steps read it, the entry's input is its value.
        caps = list(inputs[n_c + n_x:n_c + n_x + n_dual]) + list(variables)
        g_c = [gs[k] for k in fc]
        g_y = [gs[n_c + k] for k in fy]

        def step(gc, sl):
            sl = list(sl)
            c_t, x_t, gy_t = sl[:n_c], sl[n_c:n_c + n_x], sl[n_c + n_x:]
            sources = [c_t[k] for k in fc] + [x_t[k] for k in fx] + _inside(caps, fcap)

            def run():
                new_c, y = fn(unflatten(c_tree, c_t), unflatten(x_tree, x_t))
                cs, ys = flatten(new_c)[0], flatten(y)[0]
                return [cs[k] for k in fc] + [ys[k] for k in fy]
            grads = _pull_back(run, sources, list(gc) + list(gy_t))
            return grads[:len(fc)], grads[len(fc):]

        g_init, per_step = stage(step, tuple(g_c), tuple(list(stacked) + xs + g_y),
                                 length=length, reverse=not reverse)
        per_step = list(per_step)
        grads = [None] * len(inputs)
        for k, g in zip(fc, g_init):
            grads[k] = g
        for k, g in zip(fx, per_step[:len(fx)]):
            grads[n_c + k] = g
        for k, g in zip(fcap, per_step[len(fx):]):
            grads[n_c + n_x + k] = ops.sum(g, axis=0)
        return tuple(grads)

    rule = TapeRule("scan", vjp, multiple_results=True, vjp_needs=True)
    record(rule, list(c_leaves) + list(x_leaves) + list(captured),
           tuple(c_out) + tuple(y_out), {})


def record_cond(pred, true_fn, false_fn, leaves, tree, captured, variable_reads, outs,
                written=()):
    """Record a staged cond on the active tapes: its reverse rule is a ``cond`` (on the
    same predicate) of the two branches' VJPs. Variables as for :func:`record_scan`."""
    true_fn, false_fn = frozen(true_fn), frozen(false_fn)
    n = len(leaves)
    fo = _floats(outs)
    variables, values = variable_reads
    captured = list(captured) + list(values)
    n_dual = len(captured) - len(values)

    def vjp(gs, results, *inputs, needs):
        _refuse_writes("cond", written)
        fi = [k for k in _floats(leaves) if needs[k]]
        fcap = [k for k in _floats(captured) if needs[n + k]]
        ins, caps = list(inputs[:n]), list(inputs[n:n + n_dual]) + list(variables)

        def branch(fn):
            def run_vjp(*flat):
                args, g = list(flat[:n]), flat[n:]
                sources = [args[k] for k in fi] + _inside(caps, fcap)

                def run():
                    out = flatten(fn(*unflatten(tree, args)))[0]
                    return [out[k] for k in fo]
                return _pull_back(run, sources, g)
            return run_vjp

        got = current_mode().cond(pred, branch(true_fn), branch(false_fn), *ins,
                                  *[gs[k] for k in fo])
        grads = [None] * len(inputs)
        for k, g in zip(fi + [n + k for k in fcap], got):
            grads[k] = g
        return tuple(grads)

    rule = TapeRule("cond", vjp, multiple_results=True, vjp_needs=True)
    record(rule, list(leaves) + list(captured), tuple(outs), {})
