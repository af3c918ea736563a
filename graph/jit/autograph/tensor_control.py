"""The traced side of converted control flow: an ``if`` on a tensor becomes a ``cond`` node,
a loop on tensors a ``while_loop`` or ``scan`` node.

The converted statement hands over its state as two functions (``get_state``
returns the values of the names it assigns, ``set_state`` puts values back).
Each body is traced with the state set to the body's inputs; what it leaves
in the state is the body's output. Python values in the state stay Python
values when the bodies agree on them; numbers meeting tensors become
tensors; anything else that differs is an error naming the variable and the
user's line.
"""
from typing import Any

import numpy as np

from engine import dtypes, ops
from engine.lifting import WEAK_SCALAR_TYPES
from engine.modes import current_mode
from engine.pytree import LEAF, TreeDef, flatten, unflatten
from engine.tensor import Tensor
from engine.variable import Variable

from ...control.control_flow import cond_op, emit, order_bodies, scan, while_loop
from ...ir.graph_ops import constant_op, placeholder_op, unpack_op
from ...control.interpret import interpret
from ...control.subgraph import SubGraph, hoist_invariant_reads
from . import messages, transform_select
from .values import RETVAL_NAME, Undefined, UndefinedReturnValue
from engine.errors import EngineError, TracingError

_NO_INPUTS = TreeDef(tuple, None, ())


def tracing():
    """The mode tracing now (a ``TraceMode``), or None where values are concrete."""
    mode = current_mode()
    return None if mode.is_concrete else mode


def is_traced(x):
    """True for a tensor that stands for a node of a graph being traced (not a tensor of a
    transformation such as ``vmap``, whose Python ``if`` asks the tensor itself)."""
    return isinstance(x, Tensor) and x._value is None and x._node is not None


def _leaf(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


def _is_tensorish(x):
    return isinstance(x, (Tensor, Variable, np.ndarray))


def per_element(x):
    """True for a transformation's tensor whose truth has no one value now (a batch of
    ``en.vmap``: each element has its own), so ``if``/``while`` on it are staged."""
    if not isinstance(x, Tensor) or x._value is not None or x._node is not None:
        return False
    try:
        x._concrete("a condition")
    except TracingError:
        return True
    return False


def predicate(x):
    """``bool(x)`` as a traced bool scalar (what ``if x:`` means for a tensor; a batched
    one, per element, for a batch of ``en.vmap``)."""
    if not is_traced(x) and not per_element(x):
        return ops.cast(Tensor(bool(x)), "bool")
    if tuple(x.shape) != ():
        if None in x.shape or int(np.prod(x.shape)) != 1:
            raise messages.ambiguous_truth(x, messages.here())
        x = ops.reshape(x, ())
    if x.dtype != dtypes.bool_:
        x = ops.not_equal(x, 0)
    return x


# ---- branches ---------------------------------------------------------------------
class _Traced:
    """One traced branch: its SubGraph and, per state slot, (treedef, leaves); a tensor
    leaf is given as the output node that computes it."""

    def __init__(self, fn, name, mode):
        holder = {}

        def run():
            slots = [flatten(v, is_leaf=_leaf)[::-1] for v in fn()]
            holder["slots"] = slots
            return tuple(leaf for _, leaves in slots for leaf in leaves if _is_tensorish(leaf))

        self.sub = SubGraph(run, [], _NO_INPUTS, name, mode)
        outs = iter(self.sub.graph.outputs)
        self.slots = [(tree, [_Out(next(outs), leaf) if _is_tensorish(leaf) else leaf
                              for leaf in leaves]) for tree, leaves in holder["slots"]]

    def add_constant(self, value, dtype):
        arr = np.asarray(value, dtype=dtype)
        node = self.sub.graph.add(constant_op, (), {"value": arr}, (arr.shape, arr.dtype),
                                  name="const")
        return _Out(node, None)

    def finish(self, outs):
        sub = self.sub
        sub.graph.outputs = [o.node for o in outs]
        sub.graph.output_tree = sub.out_tree = TreeDef(tuple, None, tuple(LEAF for _ in outs))
        sub.out_avals = tuple((o.node.shape, o.node.dtype) for o in outs)


class _Out:
    __slots__ = ("node", "value")

    def __init__(self, node, value):
        self.node, self.value = node, value

    @property
    def shape(self):
        return tuple(self.node.shape)

    @property
    def dtype(self):
        return self.node.dtype


def _weak(x):
    return type(x) in WEAK_SCALAR_TYPES or isinstance(x, (np.number, np.bool_))


def _same_python(a, b):
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:   # a value whose == is not a plain bool: treat as different
        return False


def merge(pred, fn_true, fn_false, names, kind):
    """Trace both branches (each returns one value per name) into a ``cond`` node.

    Returns the merged values, one per name.
    """
    mode = tracing()
    if mode.transforms:   # jvp, vmap: both branches run through the transformation
        return transform_select.select(pred, fn_true, fn_false, names, kind)
    (pred,) = mode.lift([pred])
    return merge_traced(mode, pred, _Traced(fn_true, "cond_true", mode),
                        _Traced(fn_false, "cond_false", mode), names, kind)


def _pure_elementwise(graph):
    return all(n.op in (placeholder_op, constant_op, unpack_op) or
               (n.op.elementwise and not n.side_effects and not n.op.random)
               for n in graph.nodes)


def lazy_bool(pred, value, rest, kind):
    """``value and rest()`` (kind "and") or ``value or rest()`` on a traced ``value``.

    ``rest`` runs only where Python would run it (a ``cond``), except that a bool
    scalar met by an elementwise bool scalar (``i < n and not done``), which can
    neither fail nor have effects, combines with logical_and / logical_or.
    """
    mode = tracing()
    if mode.transforms:   # jvp, vmap: both run through the transformation
        operand = (lambda: (rest(),), lambda: (value,))
        on_true, on_false = operand if kind == "and" else operand[::-1]
        return transform_select.select(pred, on_true, on_false, (f"the '{kind}' expression",),
                                       f"'{kind}'")[0]
    later = _Traced(lambda: (rest(),), "cond_true" if kind == "and" else "cond_false", mode)
    (tree, leaves), = later.slots
    if value.dtype == dtypes.bool_ and tuple(value.shape) == () and tree == LEAF and \
            isinstance(leaves[0], _Out) and leaves[0].dtype == dtypes.bool_ and \
            leaves[0].shape == () and _pure_elementwise(later.sub.graph):
        (other,) = interpret(later.sub.graph, list(later.sub.captures))
        return (ops.logical_and if kind == "and" else ops.logical_or)(value, other)
    keep = _Traced(lambda: (value,), "cond_false" if kind == "and" else "cond_true", mode)
    t, f = (later, keep) if kind == "and" else (keep, later)
    return merge_traced(mode, pred, t, f, (f"the '{kind}' expression",), f"'{kind}'")[0]


def merge_traced(mode, pred, t, f, names, kind):
    """The ``cond`` node of two traced branches, and the merged state values."""
    t_outs, f_outs, plans = [], [], []
    for name, (tt, tl), (ft, fl) in zip(names, t.slots, f.slots):
        if name.startswith("global "):
            raise messages.global_in_tensor_code(name, kind, messages.here())
        t_undef = tt == LEAF and isinstance(tl[0], Undefined)
        f_undef = ft == LEAF and isinstance(fl[0], Undefined)
        if t_undef and f_undef:
            plans.append((LEAF, [tl[0]]))
            continue
        if t_undef or f_undef:
            if isinstance((tl if t_undef else fl)[0], UndefinedReturnValue):
                # No return ran on this path: the value is never read (the return flag is
                # False), so stand in zeros of the other branch's shape.
                tt, tl = (ft, [_zeros_like(x, t) for x in fl]) if t_undef else (tt, tl)
                ft, fl = (tt, [_zeros_like(x, f) for x in tl]) if f_undef else (ft, fl)
            else:
                raise messages.only_in_one_branch(name, "false" if t_undef else "true", kind,
                                                  messages.here())
        if tt != ft:
            if name == RETVAL_NAME and (tt.kind == "none" or ft.kind == "none"):
                raise messages.only_in_one_branch(name, "false" if tt.kind == "none" else "true",
                                                  kind, messages.here())
            raise messages.structure_mismatch(name, kind, messages.here(), tt, ft)
        leaves = []
        for a, b in zip(tl, fl):
            if isinstance(a, _Out) or isinstance(b, _Out):
                a = a if isinstance(a, _Out) else _python_to_out(a, b, t, name, kind)
                b = b if isinstance(b, _Out) else _python_to_out(b, a, f, name, kind)
                if a.shape != b.shape or a.dtype != b.dtype:
                    raise messages.branch_mismatch(name, kind, messages.here(), a, b)
                t_outs.append(a)
                f_outs.append(b)
                leaves.append(_Dynamic)
            elif _same_python(a, b):
                leaves.append(a)
            elif type(a) is bool and type(b) is bool:   # a flag set in one branch: the test
                leaves.append(pred if a else ops.logical_not(pred))
            elif _weak(a) and _weak(b):   # two different numbers: a tensor of both
                dtype = np.result_type(np.asarray(a).dtype, np.asarray(b).dtype)
                t_outs.append(t.add_constant(a, dtype))
                f_outs.append(f.add_constant(b, dtype))
                leaves.append(_Dynamic)
            else:
                raise messages.branch_mismatch(name, kind, messages.here(), a, b)
        plans.append((tt, leaves))
    t.finish(t_outs)
    f.finish(f_outs)
    hoist_invariant_reads(mode, (t.sub, f.sub))
    (pred,) = mode.lift([pred])
    if all(o.dtype not in dtypes.FLOATS for o in t_outs) and \
            _pure_elementwise(t.sub.graph) and _pure_elementwise(f.sub.graph):
        # Flags and counters set by elementwise code (`found = True` before a break): a
        # select on values both already computable is cheaper than a cond node, cannot
        # fail, and no gradient goes through integers and bools.
        outs = [ops.where(pred, a, b) for a, b in zip(
            interpret(t.sub.graph, list(t.sub.captures)),
            interpret(f.sub.graph, list(f.sub.captures)))]
        return _rebuild(plans, outs)
    node, outs = emit(mode, cond_op, [pred, *t.sub.captures, *f.sub.captures],
                      dict(true=t.sub, false=f.sub, n_ops=0))
    order_bodies(mode, node, (t.sub, f.sub))
    return _rebuild(plans, outs)


def _rebuild(plans, outs):
    outs = iter(outs)
    return tuple(unflatten(tree, [next(outs) if leaf is _Dynamic else leaf for leaf in leaves])
                 for tree, leaves in plans)


_Dynamic = object()


def _python_to_out(value, other, branch, name, kind):
    """A Python number meeting a tensor in the other branch: a constant of that dtype."""
    ok = _weak(value) and np.can_cast(np.asarray(value).dtype, other.dtype, casting="same_kind") \
        or isinstance(value, np.ndarray)
    if not ok:
        raise messages.branch_mismatch(name, kind, messages.here(),
                                       *((value, other) if branch.sub.name == "cond_true"
                                         else (other, value)))
    return branch.add_constant(value, other.dtype if _weak(value) else None)


def _zeros_like(x, branch):
    if isinstance(x, _Out):
        return branch.add_constant(np.zeros(x.shape, x.dtype), x.dtype)
    return x


# ---- loops --------------------------------------------------------------------------
class _Retry(Exception):
    """A loop variable's first value must change type before tracing the loop again."""

    def __init__(self, slot, value):
        self.slot, self.value = slot, value


class LoopState:
    """The loop variables of a tensor loop: tensors carried by the loop node, Python
    values that stay fixed, numbers lifted to tensors."""

    def __init__(self, names, values, kind, templates):
        self.names, self.kind = names, kind
        self.plans, self.init, self.first = [], [], []
        for i, (name, value) in enumerate(zip(names, values)):
            if name.startswith("global "):
                raise messages.global_in_tensor_code(name, kind, messages.here())
            if i in templates:
                value = _like(value, templates[i])
            elif isinstance(value, Undefined) and not isinstance(value, UndefinedReturnValue):
                raise messages.undefined_before_loop(name, kind, messages.here())
            leaves, tree = flatten(value, is_leaf=_leaf)
            plan = []
            for leaf in leaves:
                if isinstance(leaf, Variable):
                    leaf = leaf.read()
                if isinstance(leaf, np.ndarray):
                    leaf = Tensor(leaf)
                # A Python number stays one until the body shows what it becomes (a float32
                # tensor for `s = 0.0; s = s + x32`, as eagerly): then the loop is traced again.
                if isinstance(leaf, Tensor):
                    plan.append(_Dynamic)
                    self.init.append(leaf)
                else:
                    plan.append(leaf)
            self.plans.append((tree, plan))
            self.first.append(value)

    def unpack(self, leaves):
        it = iter(leaves)
        return tuple(unflatten(tree, [next(it) if p is _Dynamic else p for p in plan])
                     for tree, plan in self.plans)

    def pack(self, values):
        """The dynamic leaves of ``values`` after one iteration, checked against the first."""
        out = []
        init = iter(self.init)
        for i, (name, value, (tree, plan)) in enumerate(zip(self.names, values, self.plans)):
            first = self.first[i]
            leaves, new_tree = flatten(value, is_leaf=_leaf)
            if new_tree != tree:
                if isinstance(first, UndefinedReturnValue):
                    raise _Retry(i, value)
                if isinstance(value, Undefined):   # deleted or never assigned in the body
                    raise messages.undefined_before_loop(name, self.kind, messages.here())
                raise messages.python_value_changed(name, self.kind, messages.here(), first,
                                                    value)
            for leaf, p in zip(leaves, plan):
                if p is not _Dynamic:
                    if isinstance(p, UndefinedReturnValue) and not isinstance(leaf, Undefined):
                        raise _Retry(i, value)   # a return inside the loop: now we know its type
                    if _weak(p) and (isinstance(leaf, (Tensor, Variable)) or _weak(leaf)) and \
                            not _same_python(leaf, p):
                        raise _Retry(i, value)
                    if not _same_python(leaf, p):
                        if isinstance(p, list) and isinstance(leaf, list):
                            raise messages.list_in_tensor_loop(name, self.kind, messages.here())
                        raise messages.python_value_changed(name, self.kind, messages.here(),
                                                            p, leaf)
                    continue
                before = next(init)
                if isinstance(leaf, Variable):
                    leaf = leaf.read()
                if _weak(leaf) or isinstance(leaf, np.ndarray):
                    leaf = ops.cast(Tensor(leaf), before.dtype) if _weak(leaf) else Tensor(leaf)
                if not isinstance(leaf, Tensor):
                    raise messages.python_value_changed(name, self.kind, messages.here(),
                                                        before, leaf)
                if tuple(leaf.shape) != tuple(before.shape) or leaf.dtype != before.dtype:
                    raise messages.loop_var_changed(name, self.kind, messages.here(), before,
                                                    leaf)
                out.append(leaf)
        return out


def _like(first, template):
    """The first value of a loop variable, typed like what one iteration made of it."""
    if isinstance(first, UndefinedReturnValue):
        leaves, tree = flatten(template, is_leaf=_leaf)
        return unflatten(tree, [ops.zeros(tuple(x.shape), x.dtype) if _is_tensorish(x) else x
                                for x in leaves])
    leaves, tree = flatten(first, is_leaf=_leaf)
    new, new_tree = flatten(template, is_leaf=_leaf)
    if tree != new_tree:
        return first
    out = []
    for a, b in zip(leaves, new):
        if _weak(a) and not _same_python(a, b):
            dtype = b.dtype if isinstance(b, (Tensor, Variable)) else np.asarray(b).dtype
            a = ops.cast(Tensor(a), dtype)
        out.append(a)
    return unflatten(tree, out)


def lists_guard(lists, kind):
    """Sizes of the Python lists the body appends to, and a check that none grew."""
    if lists is None:
        return lambda: None
    sizes = {k: len(v) for k, v in lists().items() if isinstance(v, list)}

    def check():
        for k, v in lists().items():
            if k in sizes and isinstance(v, list) and len(v) != sizes[k]:
                del v[sizes[k]:]
                raise messages.list_in_tensor_loop(k, kind, messages.here())
    return check


def _retrying(run, names, get_state, set_state, kind, lists):
    """Trace a loop with ``run(state)``; retrace when a first value must change type."""
    templates: dict[int, Any] = {}    # state slot -> the value a retrace gives it first
    entry = get_state()
    check = lists_guard(lists, kind)
    for _ in range(2 * len(names) + 2):
        state = LoopState(names, entry, kind, templates)
        try:
            final = run(state, check)
        except _Retry as retry:
            set_state(entry)
            templates[retry.slot] = retry.value
            continue
        set_state(state.unpack(final))
        return
    raise EngineError("unreachable: each retry fixes one loop variable")


def tensor_while(test, body, get_state, set_state, names, lists=None):
    """``while test(): body()`` with a traced condition, as one ``while_loop`` node."""
    kind = "while loop"

    def run(state, check):
        def cond_fn(*leaves):
            set_state(state.unpack(leaves))
            return predicate(test())

        def body_fn(*leaves):
            set_state(state.unpack(leaves))
            body()
            check()
            return tuple(state.pack(get_state()))
        return while_loop(cond_fn, body_fn, tuple(state.init))
    _retrying(run, names, get_state, set_state, kind, lists)


def tensor_for_range(rng, extra_test, body, get_state, set_state, names, lists=None):
    """``for i in range(...)`` with a traced bound, as one ``while_loop`` node."""
    kind = "for loop"
    bounds = [b for b in (rng.start, rng.stop, rng.step) if is_traced(b)]
    dtype = np.result_type(*[b.dtype for b in bounds])
    start = ops.cast(rng.start if is_traced(rng.start) else Tensor(rng.start), dtype)
    step = rng.step

    def run(state, check):
        def cond_fn(i, *leaves):
            set_state(state.unpack(leaves))
            if is_traced(step):
                go = ops.where(step > 0, i < rng.stop, i > rng.stop)
            else:
                go = i < rng.stop if step > 0 else i > rng.stop
            if extra_test is not None:
                go = ops.logical_and(go, predicate(extra_test()))
            return go

        def body_fn(i, *leaves):
            set_state(state.unpack(leaves))
            body(i)
            check()
            return (ops.cast(i + step, dtype),) + tuple(state.pack(get_state()))
        return while_loop(cond_fn, body_fn, (start,) + tuple(state.init))[1:]
    _retrying(run, names, get_state, set_state, kind, lists)


def tensor_for_rows(xs, body, get_state, set_state, names, lists=None):
    """``for row in xs`` over a traced tensor, as one ``scan`` node over its leading axis.

    (A loop with a ``break`` comes with a ``body`` that runs only while no break
    happened: a scan always makes every step, later ones then change nothing.)
    """
    kind = "for loop"

    def run(state, check):
        def step(carry, row):
            set_state(state.unpack(carry))
            body(row)
            check()
            return tuple(state.pack(get_state())), ()
        return scan(step, tuple(state.init), xs)[0]
    _retrying(run, names, get_state, set_state, kind, lists)
