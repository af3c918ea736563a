"""A ``while_loop`` under forward mode whose condition is known only at run time.

Eagerly (and in a trace whose condition is a Python value) forward mode runs a
``while_loop`` as a Python loop of its ops. In a trace the condition is a value
computed later, so the loop must be staged: it becomes one loop, in the parent
mode, over the primals and their tangents together (JAX's rule for the JVP of a
while loop). The condition reads the primals; the body is the user's body run in
forward mode on dual tensors built from each step's primals and tangents. Every
float loop variable carries a tangent (zeros where none flows in yet), since the
body may give it one and a loop must keep its variables' structure.
"""
from .. import dtypes, ops
from ..errors import NotDifferentiableError, ShapeError
from ..modes import current_mode, use_mode
from ..pytree import flatten, unflatten


def staged_while_loop(mode, make_dual, cond_fn, body_fn, loop_vars, stage):
    """``while_loop(cond_fn, body_fn, loop_vars)`` in the forward mode ``mode``, staged
    through ``stage`` (the public ``while_loop``) in ``mode.parent``.

    ``make_dual(primal, tangent, tag)`` builds the mode's dual tensors.
    """
    leaves, tree = flatten(tuple(loop_vars))
    # One leaf at a time: a Python int counter stays an int, as it does eagerly.
    leaves = [mode.lift([leaf])[0] for leaf in leaves]
    primals = [t.primal if mode.owns(t) else t for t in leaves]
    carried = [p.dtype in dtypes.FLOATS or (mode.owns(t) and t.tangent is not None)
               for t, p in zip(leaves, primals)]
    tangents = [_tangent(mode, t, p) for t, p, c in zip(leaves, primals, carried) if c]
    n = len(primals)

    def as_duals(flat, tag):
        ts = iter(flat[n:])
        return unflatten(tree, [make_dual(p, next(ts), tag) if c else p
                                for p, c in zip(flat[:n], carried)])

    def cond(*flat):
        # A forward mode over the loop's own trace (its parent is the body's graph);
        # the same tag, so duals captured from outside the loop are its own.
        inner = type(mode)(current_mode(), mode.tag)
        with use_mode(inner):
            pred = cond_fn(*as_duals(flat, mode.tag))
        return pred.primal if inner.owns(pred) else pred

    def body(*flat):
        inner = type(mode)(current_mode(), mode.tag)
        with use_mode(inner):
            out = body_fn(*as_duals(flat, mode.tag))
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            out_leaves, out_tree = flatten(out)
            if out_tree != tree:
                raise ShapeError(f"while_loop: the body must return the loop variables' "
                                 f"structure {tree}, got {out_tree}")
            out_leaves = [inner.lift([leaf])[0] for leaf in out_leaves]
        ps = [o.primal if inner.owns(o) else o for o in out_leaves]
        for o, c in zip(out_leaves, carried):
            if not c and inner.owns(o) and o.tangent is not None:
                raise NotDifferentiableError(
                    f"jvp: a while_loop variable of dtype {o.dtype} that entered the loop "
                    f"with no tangent gets one from the body; give it one on entry")
        ts = [_tangent(inner, o, p) for o, p, c in zip(out_leaves, ps, carried) if c]
        return tuple(ps) + tuple(ts)

    with use_mode(mode.parent):
        flat = stage(cond, body, tuple(primals) + tuple(tangents))
    return type(loop_vars)(as_duals(list(flat), mode.tag))


def _tangent(mode, t, primal):
    """``t``'s tangent, or zeros of ``primal``'s shape and dtype where it has none."""
    if mode.owns(t) and t.tangent is not None:
        return t.tangent
    with use_mode(mode.parent):
        return ops.zeros_like(primal)
