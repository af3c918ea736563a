"""Control flow under forward mode inside a trace: one staged construct, no unrolling.

Eagerly (and in a trace whose condition is a Python value) forward mode runs a
``while_loop`` or a ``scan`` as a Python loop of its ops, and a ``cond`` as a
Python ``if``. In a trace the values are computed later, so the construct is
staged instead: it becomes one ``while_loop``, ``scan`` or ``cond``, in the
parent mode, over the primals and their tangents together (JAX's JVP rules for
its control-flow primitives). The body (each branch) is the user's function run
in forward mode on dual tensors built from the primal and tangent inputs. Every
float loop variable carries a tangent (zeros where none flows in yet), since the
body may give it one and a loop must keep its variables' structure; every float
result of a ``scan`` step or a ``cond`` branch has one too.

Dual tensors of the enclosing forward mode that a body uses (captures) become
the staged construct's inputs through their primals and tangents. A tape begun
inside the ``jvp`` (``jvp`` of ``grad``: a Hessian-vector product) watches dual
tensors, which the parent-level construct never sees: :mod:`.forward_loops_vjp`
records the construct on it, with a reverse rule that is itself one ``scan`` (or
``cond``), so forward over reverse stays one loop. Its inputs are the operands,
the captured duals, the variables the bodies read and the parent's tensors the
tape watches that a body uses (``_Body`` lists them while the bodies are traced).
"""
from .. import dtypes, ops
from ..errors import NotDifferentiableError, ShapeError
from ..modes import current_mode, read_variable, use_mode
from ..pytree import flatten, unflatten
from ..recording import active_tapes
from ..tensor import Tensor
from ..variable import Variable
from .forward_loops_vjp import record_cond, record_scan

_FLOATS = dtypes.FLOATS


def inside_trace(mode):
    """Whether ``mode`` (a transformation) runs inside a trace: its values exist only
    later, so control flow on them must be staged."""
    while getattr(mode, "transforms", False) and hasattr(mode, "parent"):
        mode = mode.parent
    return not mode.is_concrete


class _Body:
    """Runs a body of a staged construct in a forward mode over the body's own trace,
    and lists what it uses from outside: the enclosing mode's dual tensors and the
    tensors the recording tapes watch (``captured``), and the variables it reads
    (``variables``). A nested construct's are its enclosing body's too (``done``)."""

    def __init__(self, mode, make_dual):
        self.mode = mode
        self.make_dual = make_dual
        self.captured = []
        self.variables = []
        self.written = {}   # id -> variable the body (or a construct in it) assigns
        self._seen = set()
        # What the tapes recording now watch: a tensor of the parent mode among them,
        # used by the body, is a capture too (a tape inside the jvp may watch it).
        self._watched = [t._watched for t in active_tapes() if t._watched is not None]

    def _note_tensor(self, inner, a):
        if (inner.owns(a) or any(id(a) in w for w in self._watched)) and \
                id(a) not in self._seen:
            self._seen.add(id(a))
            self.captured.append(a)

    def _note_variable(self, var):
        if id(var) not in self._seen:
            self._seen.add(id(var))
            self.variables.append(var)

    def _note_written(self, var):
        self.written[id(var)] = var

    def enter(self):
        """A forward mode for one run of the body, with the enclosing mode's tag (so
        the duals captured from outside are its own)."""
        inner = type(self.mode)(current_mode(), self.mode.tag)
        inside = set()          # ids of the duals this run made (inputs, results)
        base_lift, base_wrap = inner.lift, inner._wrap

        def wrap(out, tangent):
            t = base_wrap(out, tangent)
            inside.add(id(t))
            return t

        def lift(args):
            for a in args:
                if isinstance(a, Variable):   # an op reads a variable through its lift
                    self._note_variable(a)
                elif isinstance(a, Tensor) and id(a) not in inside:
                    self._note_tensor(inner, a)
            return base_lift(args)
        base_read = inner.read_variable

        def read_variable(var):
            self._note_variable(var)
            return base_read(var)
        base_assign = inner.assign_variable

        def assign_variable(var, value, kind, indices=None):
            self._note_written(var)
            return base_assign(var, value, kind, indices)
        inner._wrap, inner.lift, inner.read_variable = wrap, lift, read_variable
        inner.assign_variable = assign_variable
        inner.inside = inside
        inner.note_variable = self._note_variable
        inner.note_written = self._note_written
        return inner

    def done(self):
        """After staging: the captures and variables are the enclosing body's too, when
        ``mode`` runs one (its ``lift`` notes the duals it did not make)."""
        if self.captured:
            self.mode.lift(list(self.captured))
        note = getattr(self.mode, "note_variable", None)
        if note is not None:
            for var in self.variables:
                note(var)
        note_written = getattr(self.mode, "note_written", None)
        if note_written is not None:
            for var in self.written.values():
                note_written(var)
        return self.captured

    def variable_reads(self):
        """``(variables, values)``: the trainable float variables the body read, each
        read once more here, so the tapes (a tape begun inside the jvp) see the read
        whose cotangent the construct's reverse rule gives."""
        variables = [v for v in self.variables if v.trainable and v.dtype in _FLOATS]
        return variables, [read_variable(v) for v in variables]

    def duals(self, inner, primals, tangents, carried):
        """Dual tensors of ``inner`` from primals and the tangents of the ``carried`` ones."""
        ts = iter(tangents)
        out = []
        for p, c in zip(primals, carried):
            if c:
                d = self.make_dual(p, next(ts), self.mode.tag)
                inner.inside.add(id(d))
                out.append(d)
            else:
                out.append(p)
        return out


def _split(mode, leaves):
    """Primals of ``leaves`` (tensors of ``mode`` or of its parent)."""
    return [t.primal if mode.owns(t) else t for t in leaves]


def _lift_each(mode, leaves):
    # One leaf at a time: a Python int counter stays an int, as it does eagerly.
    return [mode.lift([leaf])[0] for leaf in leaves]


def _results(inner, leaves, with_tangent):
    """Primals and tangents (zeros where none, for the ``with_tangent`` ones) of a body's
    results."""
    leaves = _lift_each(inner, leaves)
    ps = _split(inner, leaves)
    ts = [_tangent(inner, o, p) for o, p, c in zip(leaves, ps, with_tangent) if c]
    return ps, ts, leaves


def staged_while_loop(mode, make_dual, cond_fn, body_fn, loop_vars, stage):
    """``while_loop(cond_fn, body_fn, loop_vars)`` in the forward mode ``mode``, staged
    through ``stage`` (the public ``while_loop``) in ``mode.parent``.

    ``make_dual(primal, tangent, tag)`` builds the mode's dual tensors.
    """
    leaves, tree = flatten(tuple(loop_vars))
    leaves = _lift_each(mode, leaves)
    primals = _split(mode, leaves)
    carried = [p.dtype in _FLOATS or (mode.owns(t) and t.tangent is not None)
               for t, p in zip(leaves, primals)]
    tangents = [_tangent(mode, t, p) for t, p, c in zip(leaves, primals, carried) if c]
    n = len(primals)
    body_runs = _Body(mode, make_dual)

    def as_duals(inner, flat):
        return unflatten(tree, body_runs.duals(inner, flat[:n], flat[n:], carried))

    def cond(*flat):
        inner = body_runs.enter()
        with use_mode(inner):
            pred = cond_fn(*as_duals(inner, flat))
        return pred.primal if inner.owns(pred) else pred

    def body(*flat):
        inner = body_runs.enter()
        with use_mode(inner):
            out = body_fn(*as_duals(inner, flat))
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            out_leaves, out_tree = flatten(out)
            if out_tree != tree:
                raise ShapeError(f"while_loop: the body must return the loop variables' "
                                 f"structure {tree}, got {out_tree}")
            ps, ts, out_leaves = _results(inner, out_leaves, carried)
        for o, c in zip(out_leaves, carried):
            if not c and inner.owns(o) and o.tangent is not None:
                raise NotDifferentiableError(
                    f"jvp: a while_loop variable of dtype {o.dtype} that entered the loop "
                    f"with no tangent gets one from the body; give it one on entry")
        return tuple(ps) + tuple(ts)

    with use_mode(mode.parent):
        flat = stage(cond, body, tuple(primals) + tuple(tangents))
    body_runs.done()
    return type(loop_vars)(unflatten(tree, _outer_duals(mode, make_dual, list(flat), carried)))


def _outer_duals(mode, make_dual, flat, carried):
    """``mode``'s tensors for a staged construct's results: primals ``flat[:n]``, paired
    with the tangents that follow for the ``carried`` ones."""
    n = len(carried)
    ts = iter(flat[n:])
    # mode._wrap: where ``mode`` runs a body of an enclosing construct, that body then
    # knows these are its own results, not captures.
    return [mode._wrap(p, next(ts)) if c else p for p, c in zip(flat[:n], carried)]


def staged_scan(mode, make_dual, fn, init, xs, length, reverse, stage):
    """``scan(fn, init, xs, length, reverse)`` in the forward mode ``mode``: one scan,
    staged through ``stage`` (the public ``scan``) in ``mode.parent``, over the primal
    and tangent carries, the per-step xs and their tangents; its ys are the primal ys
    and their tangents. ``NotImplemented`` outside a trace (a Python loop is faster)."""
    if not inside_trace(mode):
        return NotImplemented
    c_leaves, c_tree = flatten(init)
    # Lifted together, as en.scan in a trace lifts them (a Python scalar is weakly typed).
    c_leaves = mode.lift(c_leaves)
    c_ps = _split(mode, c_leaves)
    carried = [p.dtype in _FLOATS or (mode.owns(t) and t.tangent is not None)
               for t, p in zip(c_leaves, c_ps)]
    c_ts = [_tangent(mode, t, p) for t, p, c in zip(c_leaves, c_ps, carried) if c]
    x_leaves, x_tree = flatten(xs)
    x_leaves = mode.lift(x_leaves)
    x_ps = _split(mode, x_leaves)
    # Per-step xs carry a tangent only where one flows in (no stacks of zeros).
    x_has = [mode.owns(t) and t.tangent is not None for t in x_leaves]
    x_ts = [t.tangent for t, h in zip(x_leaves, x_has) if h]
    n_c, n_ct, n_x = len(c_ps), len(c_ts), len(x_ps)
    # A tape begun inside the jvp (jvp of grad) replays each step from its carries.
    keep_carries = bool(active_tapes())
    body_runs = _Body(mode, make_dual)
    holder = {}

    def body(carry, x):
        inner = body_runs.enter()
        carry, x = list(carry), list(x)
        c_in = body_runs.duals(inner, carry[:n_c], carry[n_c:], carried)
        x_in = body_runs.duals(inner, x[:n_x], x[n_x:], x_has)
        with use_mode(inner):
            new_c, y = fn(unflatten(c_tree, c_in), unflatten(x_tree, x_in))
            nc_leaves, nc_tree = flatten(new_c)
            if nc_tree != c_tree:
                raise ShapeError(f"scan: fn must return a carry with the structure of init "
                                 f"({c_tree} vs {nc_tree})")
            y_leaves, holder["y_tree"] = flatten(y)
            nc_ps, nc_ts, nc_leaves = _results(inner, nc_leaves, carried)
            y_leaves = _lift_each(inner, y_leaves)
            y_float = [inner.owns(o) or o.dtype in _FLOATS for o in y_leaves]
            y_ps, y_ts, _ = _results(inner, y_leaves, y_float)
        holder["y_float"] = y_float
        for o, c in zip(nc_leaves, carried):
            if not c and inner.owns(o) and o.tangent is not None:
                raise NotDifferentiableError(
                    f"jvp: a scan carry of dtype {o.dtype} that entered the scan with no "
                    f"tangent gets one from fn; give it one on entry")
        kept = tuple(carry) if keep_carries else ()
        return tuple(nc_ps) + tuple(nc_ts), tuple(y_ps) + tuple(y_ts) + kept

    with use_mode(mode.parent):
        c_out, ys = stage(body, tuple(c_ps) + tuple(c_ts), tuple(x_ps) + tuple(x_ts),
                          length=length, reverse=reverse)
    captured = body_runs.done()
    c_out = unflatten(c_tree, _outer_duals(mode, make_dual, list(c_out), carried))
    ys = list(ys)
    y_float = holder["y_float"]
    n_y, n_yt = len(y_float), sum(y_float)
    y_out = _outer_duals(mode, make_dual, ys[:n_y + n_yt], y_float)
    if keep_carries:
        stacked = _outer_duals(mode, make_dual, ys[n_y + n_yt:n_y + n_yt + n_c + n_ct], carried)
        record_scan(fn, c_leaves, c_tree, x_leaves, x_tree, captured, body_runs.variable_reads(),
                    flatten(c_out)[0], y_out, stacked, length, reverse, stage,
                    list(body_runs.written.values()))
    return c_out, unflatten(holder["y_tree"], y_out)


def staged_cond(mode, make_dual, pred, true_fn, false_fn, operands):
    """``cond(pred, true_fn, false_fn, *operands)`` in the forward mode ``mode`` where
    ``pred`` (a primal) is known only at run time: one ``cond`` in ``mode.parent`` whose
    branches return the primals and the tangents of their results."""
    leaves, tree = flatten(tuple(operands))
    leaves = mode.lift(leaves)   # together, as cond in a trace lifts them
    ps = _split(mode, leaves)
    has = [mode.owns(t) and t.tangent is not None for t in leaves]
    ts = [t.tangent for t, h in zip(leaves, has) if h]
    n = len(ps)
    body_runs = _Body(mode, make_dual)
    holder = {}

    def branch(fn):
        def run(*flat):
            inner = body_runs.enter()
            args = unflatten(tree, body_runs.duals(inner, flat[:n], flat[n:], has))
            with use_mode(inner):
                out_leaves, holder["tree"] = flatten(fn(*args))
                out_leaves = _lift_each(inner, out_leaves)
                floats = [inner.owns(o) or o.dtype in _FLOATS for o in out_leaves]
                out_ps, out_ts, _ = _results(inner, out_leaves, floats)
            holder["floats"] = floats
            return tuple(out_ps) + tuple(out_ts)
        return run

    with use_mode(mode.parent):
        flat = mode.parent.cond(pred, branch(true_fn), branch(false_fn), *ps, *ts)
    captured = body_runs.done()
    outs = _outer_duals(mode, make_dual, list(flat), holder["floats"])
    if active_tapes():
        record_cond(pred, true_fn, false_fn, leaves, tree, captured,
                    body_runs.variable_reads(), outs, list(body_runs.written.values()))
    return unflatten(holder["tree"], outs)


def _tangent(mode, t, primal):
    """``t``'s tangent, or zeros of ``primal``'s shape and dtype where it has none."""
    if mode.owns(t) and t.tangent is not None:
        return t.tangent
    with use_mode(mode.parent):
        return ops.zeros_like(primal)
