"""Rematerialization: :func:`checkpoint` recomputes a function's intermediates in the
backward pass instead of keeping them.

``checkpoint(f)(*args)`` runs ``f`` with the tapes paused, so none of its
intermediates is recorded (nothing keeps them alive), and records one tape
entry for the whole call. Its VJP runs ``f`` again on the same inputs under a
tape of its own and differentiates that. The recomputation is tied to the
cotangents by ``optimization_barrier``, so in a traced function it is
scheduled in the backward pass (when the block's cotangent exists) and common
subexpression elimination cannot merge it with the forward pass: the memory
plan holds the block's inputs, not its intermediates.

A ``policy`` says which values are kept after all (JAX's names):
``nothing_saveable`` (the default), ``everything_saveable``, ``dots_saveable``
(the results of matrix products, ops whose ``fold_cost`` rule is
"contraction") and ``save_only_these_names(*names)`` (values tagged with
:func:`checkpoint_name`). A kept value is returned by the recomputation in
place of computing it again; the tape still records its op, so gradients
flow through it as before.
"""
import contextvars
import functools

import numpy as np

from .. import dtypes, ops
from ..autodiff.tape import GradientTape
from ..conversion import user_function
from ..errors import ArgumentTypeError, EngineError
from ..lifting import TensorLike
from ..modes import Mode, current_mode, read_variable, use_mode
from ..pytree import flatten, unflatten
from ..recording import TapeRule, active_tapes, paused, record, watch_variable_read
from ..variable import Variable

_FLOATS = dtypes.FLOATS


# ---- policies ----------------------------------------------------------------------------------
class Policy:
    """Which values a checkpointed function keeps: ``saves_op(op, params)`` for an op's
    result, ``saves_name(name)`` for a value tagged with :func:`checkpoint_name`."""

    def __init__(self, name, saves_op=None, saves_name=None):
        self.name = name
        self._op = saves_op
        self._name = saves_name

    @property
    def intercepts_ops(self):
        return self._op is not None

    def saves_op(self, op, params):
        return self._op is not None and self._op(op, params)

    def saves_name(self, name):
        return self._name is not None and self._name(name)

    def __repr__(self):
        return f"<checkpoint policy {self.name}>"


nothing_saveable = Policy("nothing_saveable")
everything_saveable = Policy("everything_saveable", saves_op=lambda op, params: True,
                             saves_name=lambda name: True)
dots_saveable = Policy("dots_saveable",
                       saves_op=lambda op, params: op.rules.get("fold_cost") == "contraction")


class _Policies:
    """The checkpoint policies, as ``en.checkpoint_policies.NAME`` (JAX's names)."""

    def __init__(self, **policies):
        self.__dict__.update(policies)

    def __repr__(self):
        return f"<checkpoint policies: {', '.join(sorted(self.__dict__))}>"


def save_only_these_names(*names):
    """A policy keeping only the values tagged with one of ``names`` by
    :func:`checkpoint_name`.

    Example:
        >>> save_only_these_names("h1", "h2")
        <checkpoint policy save_only_these_names('h1', 'h2')>
    """
    kept = frozenset(names)
    return Policy(f"save_only_these_names{tuple(names)!r}".replace(",)", ")"),
                  saves_name=lambda name: name in kept)


# ---- recording what the policy keeps --------------------------------------------------------------
policies = _Policies(nothing_saveable=nothing_saveable, everything_saveable=everything_saveable,
                     dots_saveable=dots_saveable, save_only_these_names=save_only_these_names)

_RECORDER = contextvars.ContextVar("engine_checkpoint_recorder", default=None)


class _Recorder:
    """The values the policy keeps, in call order: filled by the first run, read back in
    the same order by each recomputation."""

    def __init__(self, policy, fname):
        self.policy = policy
        self.fname = fname
        self.kept = []          # (what, value or None)
        self.replaying = False
        self.position = 0
        self.tape: GradientTape | None = None       # set for a recomputation
        self.reads = []         # (variable, value) per variable read of the first run
        self.replay_reads: list | None = None       # set for a recomputation
        self.read_position = 0

    def start_replay(self, tape, reads):
        self.replaying = True
        self.position = 0
        self.tape = tape
        self.replay_reads = reads
        self.read_position = 0

    def read(self, var, read):
        """A variable's value: read now in the first run (and remembered); in a
        recomputation, the first run's value (an input of the checkpoint's tape entry)."""
        if not self.replaying:
            value = read()
            self.reads.append((var, value))
            return value
        k = self.read_position
        if k >= len(self.reads) or self.reads[k][0] is not var:
            raise EngineError(f"checkpoint({self.fname}): the recomputation read other "
                              f"variables than the first run")
        self.read_position += 1
        if self.replay_reads is None:     # (replaying: start_replay set them)
            raise EngineError("checkpoint: a replay read before the replay started "
                              "(internal error)")
        return self.replay_reads[k]

    def substitute(self, x, saved):
        """In a recomputation: ``saved`` (kept by the first run) stands for the
        recomputed ``x``. The tape entry that made ``x`` is given ``saved`` as its result,
        so its VJP reads the kept value and the recomputation of ``x`` is left unused
        (a graph drops it); a value no entry made is linked to ``x`` by an entry of its own."""
        tape = self.tape
        # A recomputation runs inside its own tape (start_replay), open and not yet used,
        # so the tape still holds its record.
        if tape is None or tape._entries is None or tape._watched is None:
            raise EngineError("checkpoint: the recomputation's tape is gone (internal error)")
        entries = tape._entries
        for k in range(len(entries) - 1, -1, -1):
            rule, inputs, out, params = entries[k]
            if out is x and not rule.multiple_results:
                entries[k] = (rule, inputs, saved, params)
                tape._watched[id(saved)] = saved
                return saved
        out = ops.identity(saved)
        record(_NAMED, [x], out, {})
        return out

    def visit(self, what, compute, keep):
        """``compute()``'s value now; in a recomputation, the value kept the first time
        (when ``keep``). ``what`` identifies the call, to catch a function that runs
        differently the second time."""
        if not self.replaying:
            value = compute()
            self.kept.append((what, value if keep else None))
            return value
        if self.position >= len(self.kept) or self.kept[self.position][0] != what:
            raise EngineError(f"checkpoint({self.fname}): the recomputation ran other ops than "
                              f"the first run (a checkpointed function must be a pure function "
                              f"of its arguments)")
        saved = self.kept[self.position][1]
        self.position += 1
        return compute() if saved is None else saved


class CheckpointMode(Mode):
    """The mode a checkpointed function runs in: ops run in the parent mode; a result the
    policy keeps is remembered and returned when recomputing, and variable reads are
    remembered (their values become inputs of the checkpoint's tape entry). What it does
    not define (staging control flow in a trace) it does as its parent does."""

    name = "checkpoint"
    value_type = None

    def __init__(self, parent, recorder):
        self.parent = parent
        self.recorder = recorder
        self.is_concrete = parent.is_concrete
        self.transforms = parent.transforms

    def __getattr__(self, name):
        # Only reached for what this class lacks (a trace's nested/add_node/...).
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.parent, name)

    def lift(self, args):
        # Variables are read here (not by the parent), so the reads are remembered.
        return self.parent.lift([read_variable(a, self) if isinstance(a, Variable) else a
                                 for a in args])

    def apply(self, op, args, params):
        keep = self.recorder.policy.saves_op(op, params)
        return self.recorder.visit(op, lambda: self.parent.apply(op, args, params), keep)

    def read_variable(self, var):
        return self.recorder.read(var, lambda: self.parent.read_variable(var))

    def assign_variable(self, var, value, kind, indices=None):
        raise EngineError(f"checkpoint({self.recorder.fname}): a checkpointed function cannot "
                          f"assign variable {var.name!r} (it runs again in the backward pass)")

    def cond(self, pred, true_fn, false_fn, *operands):
        return self.parent.cond(pred, true_fn, false_fn, *operands)

    def call_custom_jvp(self, fun, rule, args):
        return self.parent.call_custom_jvp(fun, rule, args)


def checkpoint_name(x, name):
    """Tag ``x`` with ``name`` for a checkpoint policy (``save_only_these_names``); the
    value itself is unchanged.

    Example:
        >>> import engine as en
        >>> float(en.checkpoint_name(en.tensor(2.0), "h"))
        2.0
    """
    recorder = _RECORDER.get()
    if recorder is None:
        return x
    keep = recorder.policy.saves_name(name)
    if not recorder.replaying:
        return recorder.visit(("name", name), lambda: x, keep)
    saved = recorder.visit(("name", name), lambda: None, keep)
    return x if saved is None else recorder.substitute(x, saved)


_NAMED = TapeRule("checkpoint_name", lambda g, out, x: (g,))


# ---- checkpoint -----------------------------------------------------------------------------------
def checkpoint(f=None, *, policy=None):
    """``f`` whose intermediates are recomputed in the backward pass instead of stored.

    Use it as a function (``en.checkpoint(block)``) or a decorator (``@en.checkpoint``,
    ``@en.checkpoint(policy=en.checkpoint_policies.dots_saveable)``). Gradients are the
    same as without it; in a traced function the memory plan keeps only the inputs of
    each checkpointed call, and the backward pass runs ``f`` once more.

    Example:
        >>> import engine as en
        >>> block = en.checkpoint(lambda x: en.tanh(en.tanh(x)))
        >>> round(float(en.grad(lambda x: en.sum(block(x)))(en.tensor(0.5))), 6)
        0.639808
    """
    if f is None:
        return lambda fn: checkpoint(fn, policy=policy)
    policy = nothing_saveable if policy is None else policy
    if not isinstance(policy, Policy):
        raise ArgumentTypeError(f"checkpoint: policy must be one of en.checkpoint_policies, "
                                f"got {policy!r}")
    fname = getattr(f, "__name__", "f")

    @functools.wraps(f)
    def wrapped(*args):
        run = user_function(f)   # converted inside a converting trace
        tapes = active_tapes()
        if not tapes:
            return run(*args)     # nothing will be differentiated: nothing to save
        leaves, tree = flatten(tuple(args))
        mode = current_mode()
        at = [i for i, a in enumerate(leaves) if isinstance(a, (TensorLike, np.ndarray))]
        lifted = mode.lift([leaves[i] for i in at])
        for i, t in zip(at, lifted):
            leaves[i] = t
        recorder = _Recorder(policy, fname)
        with paused(tapes):
            out = _run(run, unflatten(tree, leaves), mode, recorder)
            out_leaves, out_tree = flatten(out)
            # Fresh results, so a result that is an input keeps its own identity on tapes.
            outs = tuple(ops.identity(o) for o in out_leaves)
        # The variables the function read: the tapes see the reads now, and their values
        # are inputs of the entry (the recomputation reads them again from there).
        values = []
        for var, value in recorder.reads:
            watch_variable_read(var, value)
            values.append(value)
        rule = TapeRule(f"checkpoint({fname})", _vjp(run, tree, leaves, at, recorder),
                        multiple_results=True, vjp_needs=True)
        record(rule, list(lifted) + values, outs, {})
        return unflatten(out_tree, list(outs))
    return wrapped


def _run(f, args, mode, recorder):
    token = _RECORDER.set(recorder)
    try:
        with use_mode(CheckpointMode(mode, recorder)):
            return f(*args)
    finally:
        _RECORDER.reset(token)


def _vjp(f, tree, leaves, at, recorder):
    def vjp(gs, outs, *inputs, needs=None):
        needs = needs or (True,) * len(inputs)
        deps = [g for g in gs if g is not None]
        # The recomputation starts from the inputs behind a barrier on the cotangents: in
        # a graph it runs in the backward pass and is never merged with the first run.
        fenced = [ops.optimization_barrier(x, *deps) if x.dtype in _FLOATS else x
                  for x in inputs]
        again = list(leaves)
        for i, x in zip(at, fenced):
            again[i] = x
        # Only the inputs whose gradient is asked for (not the data of the first block).
        wanted = [x.dtype in _FLOATS and need for x, need in zip(fenced, needs)]
        watched = [x for x, w in zip(fenced, wanted) if w]
        with GradientTape() as tape:
            tape.watch(watched)
            recorder.start_replay(tape, fenced[len(at):])
            redo, _ = flatten(_run(f, unflatten(tree, again), current_mode(), recorder))
        recorder.tape = recorder.replay_reads = None
        pairs = [(o, g) for o, g in zip(redo, gs) if g is not None and o.dtype in _FLOATS]
        grads = tape.gradient([o for o, _ in pairs], watched,
                              output_gradients=[g for _, g in pairs]) if pairs else \
            [None] * len(watched)
        it = iter(grads)
        return tuple(next(it) if w else None for w in wanted)
    return vjp
