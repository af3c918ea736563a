"""Reverse-mode autodiff: :class:`GradientTape` and the backward pass.

A tape holds entries ``(rule, inputs, out, params)`` (see
:mod:`engine.recording`, which records them) for each op whose inputs it
watches. ``gradient`` walks those entries backwards calling each op's VJP,
which is written in engine ops: the backward pass runs through ``apply`` like
any user code, so outer tapes record it (higher-order gradients) and the
tracer captures it (gradients inside graphs).
"""
import contextlib

import numpy as np

from .. import dtypes, ops
from ..errors import GRADIENT_OF, EngineError, NotDifferentiableError, NumericsError
from ..recording import (active_tapes, complex_refusal, has_complex_vjp, paused, pop_tape,
                         push_tape)
from ..transforms.batching import vmap
from ..tensor import Tensor
from ..variable import Variable
from ..write_tapes import LIVE_TAPES

_FLOATS = dtypes.FLOATS
_COMPLEX = dtypes.COMPLEX


def _is_float(t):
    return t.dtype in _FLOATS



class GradientTape:
    """Records ops on watched tensors so ``gradient`` can run them backwards.

    Trainable variables read inside the block are watched automatically;
    tensors must be watched with :meth:`watch`. A non-scalar target is
    differentiated as the sum of its elements.

    Example:
        >>> import engine as en
        >>> x = en.tensor(3.0)
        >>> with en.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> float(tape.gradient(y, x))
        6.0
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self.persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        # The record; a non-persistent tape drops entries and watched (None) once it
        # has computed its gradient, so their arrays are freed.
        self._entries: list[tuple] | None = []
        self._watched: dict[int, Tensor] | None = {}
        self._variables: list[Variable] = []
        self._recording = False
        self._used = False
        self._token = None

    def __enter__(self):
        if self._token is not None:
            raise EngineError("this GradientTape is already active; make a new one")
        self._check_not_spent("GradientTape.__enter__")
        self._recording = True
        self._token = push_tape(self)
        LIVE_TAPES.add(self)     # a write to memory its entries hold is checked
        return self

    def __exit__(self, *exc):
        self._recording = False
        pop_tape(self._token)
        self._token = None
        return False

    def watch(self, x):
        """Watch a tensor or variable (or a list/tuple/dict of them)."""
        watched = self._check_not_spent("GradientTape.watch")
        for t in _flatten(x)[0]:
            if not _is_float(t):
                raise NotDifferentiableError(
                    f"GradientTape.watch: only floating-point values can be watched, got dtype {t.dtype}")
            watched[id(t)] = t

    def _check_not_spent(self, what):
        """The watched table; an error if a non-persistent tape has given its gradient."""
        if self._watched is None:
            raise EngineError(
                f"{what}: this non-persistent GradientTape has computed its gradient and "
                "dropped its record; make a new tape, or use GradientTape(persistent=True)")
        return self._watched

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stop recording on this tape."""
        with paused((self,)):
            yield

    def watched_variables(self):
        """The variables this tape has seen read (in first-read order)."""
        return list(self._variables)

    def gradient(self, target, sources, output_gradients=None):
        """Gradient of ``target`` with respect to ``sources``.

        ``sources`` may be one tensor/variable, a list/tuple or a dict; the
        result has the same structure, with ``None`` where a source does not
        affect the target. ``target`` may be a list (the gradients add up).
        """
        if self._entries is None or (self._used and not self.persistent):
            raise EngineError(
                "GradientTape.gradient can only be called once on a non-persistent tape; "
                "use GradientTape(persistent=True) to call it several times")
        self._used = True
        flat_sources, rebuild = _flatten(sources)
        targets, _ = _flatten(target)
        if output_gradients is None:
            seeds = [None] * len(targets)
        else:
            seeds, _ = _flatten(output_gradients)
        with paused((self,)):
            grads = backward(self._entries, targets, seeds, flat_sources)
        if not self.persistent:
            # Drop every reference so arrays are freed by reference counting.
            self._entries = None
            self._watched = None
            self._variables = []
            LIVE_TAPES.discard(self)   # writes need no check for it: their fast paths run
        return rebuild(grads)

    def jacobian(self, target, sources, experimental_use_pfor=True):
        """The Jacobian of ``target`` with respect to each source: shape
        ``target.shape + source.shape``, zeros where the target does not depend on
        the source. ``sources`` is structured as for :meth:`gradient`.

        One backward pass over the target's basis, batched with ``en.vmap``
        (``experimental_use_pfor=False``: a Python loop of backward passes).

        Example:
            >>> import engine as en
            >>> x = en.tensor([1.0, 2.0])
            >>> with en.GradientTape() as tape:
            ...     tape.watch(x)
            ...     y = x * x
            >>> tape.jacobian(y, x).numpy().tolist()
            [[2.0, 0.0], [0.0, 4.0]]
        """
        flat_sources, rebuild = self._start_backward(sources)
        n = _size(target, "jacobian")
        basis = ops.reshape(ops.eye(n, dtype=target.dtype), (n,) + tuple(target.shape))
        rows = self._pull(target, basis, flat_sources, experimental_use_pfor)
        return rebuild([ops.reshape(r, tuple(target.shape) + tuple(s.shape))
                        for r, s in zip(rows, flat_sources)])

    def batch_jacobian(self, target, source, experimental_use_pfor=True):
        """Per-example Jacobians: ``target[b]`` with respect to ``source[b]``, shape
        ``(B,) + target.shape[1:] + source.shape[1:]``, for a target whose row ``b``
        depends on row ``b`` of the source only (as in TensorFlow).

        Example:
            >>> import engine as en
            >>> x = en.tensor([[1.0, 2.0], [3.0, 4.0]])
            >>> with en.GradientTape() as tape:
            ...     tape.watch(x)
            ...     y = x * x
            >>> tape.batch_jacobian(y, x).numpy().tolist()
            [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]
        """
        if not target.shape or not source.shape or target.shape[0] != source.shape[0]:
            raise EngineError(f"batch_jacobian: target {tuple(target.shape)} and source "
                              f"{tuple(source.shape)} must have the same leading (batch) size")
        (src,), _ = self._start_backward([source])
        b, rest = target.shape[0], tuple(target.shape[1:])
        m = _size(ops.zeros(rest), "batch_jacobian")
        eye = ops.reshape(ops.eye(m, dtype=target.dtype), (m, 1) + rest)
        basis = ops.broadcast_to(eye, (m, b) + rest)     # row j: one-hot j in every example
        (rows,) = self._pull(target, basis, [src], experimental_use_pfor)   # (m, B) + src rest
        nd = rows.ndim
        rows = ops.transpose(rows, (1, 0) + tuple(range(2, nd)))
        return ops.reshape(rows, (b,) + rest + tuple(source.shape[1:]))

    def _start_backward(self, sources):
        if self._entries is None or (self._used and not self.persistent):
            raise EngineError(
                "GradientTape: a non-persistent tape can compute one gradient or Jacobian; "
                "use GradientTape(persistent=True) to compute several")
        self._used = True
        return _flatten(sources)

    def _pull(self, target, basis, sources, pfor):
        """One backward pass per row of ``basis`` (a cotangent of ``target``): a list, per
        source, of the results stacked on a new leading axis."""
        entries = self._entries

        def one(u):
            grads = backward(entries, [target], [u], sources)
            return [ops.zeros_like(s.read() if isinstance(s, Variable) else s) if g is None else g
                    for s, g in zip(sources, grads)]
        with paused((self,)):
            if pfor:
                rows = vmap(one)(basis)
            else:
                per = [one(basis[i]) for i in range(basis.shape[0])]
                rows = [ops.stack([p[k] for p in per]) for k in range(len(sources))]
        if not self.persistent:
            self._entries = None
            self._watched = None
            self._variables = []
            LIVE_TAPES.discard(self)
        return rows

    def __del__(self):
        self._entries = None


def backward(entries, targets, seeds, sources):
    """Walk ``entries`` backwards from ``targets``; return one cotangent per source."""
    reach = {id(s) for s in sources}
    complex_reach = set()     # complex values a gradient may flow through (rarely any)
    relevant = []
    for entry in entries:
        for x in entry[1]:
            if id(x) in reach:
                break
        else:
            continue
        relevant.append(entry)
        outs = entry[2] if entry[0].multiple_results else (entry[2],)
        for o in outs:
            reach.add(id(o))
            if o.dtype in _COMPLEX:
                complex_reach.add(id(o))

    cot: dict[int, Tensor] = {}
    for t, seed in zip(targets, seeds):
        if id(t) not in reach:
            continue
        g = ops.ones_like(t) if seed is None else seed
        _accumulate(cot, t, g)

    keep = {id(s) for s in sources}
    owned: set[int] = set()      # sums made here, added to in place (see _accumulate)
    for op, inputs, out, params in reversed(relevant):
        if op.multiple_results:
            gs = [cot.get(id(o)) if id(o) in keep else cot.pop(id(o), None) for o in out]
            if all(g is None for g in gs):
                continue
            if op.rules.get("absent_cotangents"):
                g = tuple(gs)
            else:
                g = tuple(ops.zeros_like(o) if gi is None else gi for o, gi in zip(out, gs))
        else:
            g = cot.get(id(out)) if id(out) in keep else cot.pop(id(out), None)
            if g is None:
                continue
        if op.vjp is None:
            raise NotDifferentiableError(
                f"op '{op.name}' has no gradient, but a gradient was requested through it")
        if complex_reach and not has_complex_vjp(op) and any(
                id(x) in complex_reach for x in inputs):
            # e.g. abs of an fft: its real-valued VJP would be silently wrong on complex z
            raise complex_refusal(op.name)
        # A traced op's rule adds graph nodes: they take the forward op's line (errors.py).
        forward = getattr(out[0] if op.multiple_results else out, "_node", None)
        token = None if forward is None else GRADIENT_OF.set((forward.source, op.name))
        try:
            if op.vjp_needs:
                # The rule skips the work for inputs that need no gradient.
                needs = tuple(id(x) in reach for x in inputs)
                in_grads = op.vjp(g, out, *inputs, needs=needs, **params)
            else:
                in_grads = op.vjp(g, out, *inputs, **params)
        except NumericsError as err:
            # The failing op is one inside a backward rule; say whose rule it was.
            raise NumericsError(f"{err}\n  in the gradient of op '{op.name}'") from None
        finally:
            if token is not None:
                GRADIENT_OF.reset(token)
        for x, gx in zip(inputs, in_grads):
            if gx is not None and id(x) in reach:
                _accumulate(cot, x, gx, owned)
    return [cot.get(id(s)) for s in sources]


def _size(t, name):
    n = 1
    for d in t.shape:
        if d is None:
            raise EngineError(f"{name}: the target's shape {tuple(t.shape)} must be known")
        n *= d
    return n


def _accumulate(cot, x, g, owned=None):
    """Add the cotangent ``g`` into ``cot[id(x)]``.

    ``owned`` holds the ids whose sums this backward pass made itself. With no tape
    recording the backward pass and concrete numpy values, such a sum is added to in
    place (one numpy call instead of an op and a new array: an RNN cell's weights
    take a contribution per step). Nothing else holds it yet: a sum is handed on only
    when its tensor's producer is reached, after every contribution to it.
    """
    if g.dtype != x.dtype:
        if g.dtype in _COMPLEX and x.dtype not in _COMPLEX:
            g = ops.real(g)   # a real input of a complex op: the real part (JAX's convention)
        g = ops.cast(g, x.dtype)
    key = id(x)
    prev = cot.get(key)
    if prev is None:
        cot[key] = g
        return
    if owned is not None and key in owned and not active_tapes():
        a, b = prev._value, g._value
        if type(b) is np.ndarray and a.shape == b.shape and a.dtype == b.dtype:
            np.add(a, b, out=a)
            return
    total = cot[key] = ops.add(prev, g)
    if owned is not None and type(total._value) is np.ndarray and total._value.flags.writeable \
            and total._value.base is None and not active_tapes():
        owned.add(key)


def _flatten(struct):
    """Flatten a value, list/tuple or dict into a list and a function that rebuilds it."""
    if isinstance(struct, dict):
        keys = list(struct.keys())
        return [struct[k] for k in keys], lambda vals: dict(zip(keys, vals))
    if isinstance(struct, (list, tuple)):
        kind = type(struct)
        return list(struct), lambda vals: kind(vals)
    return [struct], lambda vals: vals[0]
