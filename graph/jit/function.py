"""``en.function``: trace a Python function once per signature, run the compiled graph after.

Example:
    >>> import engine as en
    >>> @en.function
    ... def f(x):
    ...     return en.tanh(x) * 2.0
    >>> f(en.tensor([0.0, 1.0], dtype="float32")).dtype
    dtype('float32')
    >>> f.trace_count
    1
"""
import collections
import contextlib
import functools
import importlib
import logging
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from engine import backend as backends
from engine import numerics
from engine import trace_state
from engine.config import config
from engine.conversion import converting
from engine.errors import (DTypeError, EngineError, InvalidArgumentError, expect_callable,
                           format_location, user_frame)
from engine.modes import current_mode, pushed_mode
from engine.tensor import Tensor

from .autograph import convert, marked_do_not_convert
from ..chunked import ChunkedFunction
from .compare.checks import VALIDATE_EVERY, install as install_checks
from .compare.compare import compare_function as compare_call
from .concrete import ConcreteFunction
from .retraces import Retrace, RetraceReport, describe, leaf_names, suggest_fix
from ..lowering.executor import MISS
from ..ir.graph import DISPLAY_MODULE
from ..ir.signature import (TensorSpec, borrowed_arrays, call_with_borrowed, check_against_specs,
                        signature_of)
from .trace_guards import TraceGuards

log = logging.getLogger("engine.graph")
_STATE_VERSION = trace_state._version   # read on every call: one list index, no call


def _miss(args):
    return MISS


def _tuple_fast_key(args):
    """``(key, tensors)`` for positional arguments that are concrete tensors or tuples of
    them (one level: an RNN cell's weights), else None: such a call skips the general
    signature (a pytree and a key per leaf). The ``tuple`` marker and length keep the
    key apart from any flat one, whose items alternate shapes and dtypes."""
    key: list[Any] = []     # shapes and dtypes, with a marker and length per tuple
    tensors = []
    for a in args:
        if type(a) is Tensor:
            if a._value is None:
                return None
            key.append(a.shape)
            key.append(a.dtype)
            tensors.append(a)
        elif type(a) is tuple:
            key.append(tuple)
            key.append(len(a))
            for t in a:
                if type(t) is not Tensor or t._value is None:
                    return None
                key.append(t.shape)
                key.append(t.dtype)
                tensors.append(t)
        else:
            return None
    return tuple(key), tensors


class _OverBudget(EngineError):
    """A new signature past ``max_traces``: the call runs eagerly (``Function.__call__``)."""


def _check_cache_limit(limit):
    if limit is not None and (type(limit) is not int or limit < 1):
        raise EngineError(f"max_cached_traces must be a positive int or None, got {limit!r}")
    return limit


class Function:
    """A Python function compiled to a graph per input signature. See :func:`function`."""

    def __init__(self, fn, input_signature=None, optimize=True, passes=None, max_traces=8,
                 name=None, max_cached_traces=None, autograph=True, shadow=False,
                 validate=None):
        expect_callable("en.function", "fn", fn)
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self.name = name or getattr(fn, "__name__", "function")
        if input_signature is not None:
            input_signature = tuple(s if isinstance(s, TensorSpec) else TensorSpec(*s)
                                    for s in input_signature)
        self.input_signature = input_signature
        self.optimize = optimize
        self.passes = passes
        self.max_traces = max_traces
        self.max_cached_traces = _check_cache_limit(max_cached_traces)
        # Traces by key; _recent holds them least recently used first, each with its
        # key (keyed by the trace itself: hashing a signature key costs microseconds);
        # _fast finds them by the arguments' shapes and dtypes, _fast_keys says which
        # _fast keys each trace has. See _evict.
        self._cache = {}
        self._recent = collections.OrderedDict()
        self._fast = {}
        self._fast_keys = {}
        self._last_entry = _miss
        # The module settings each trace baked in (engine.trace_state): part of the cache
        # key. _fast and _last_entry skip that key, so they are dropped whenever any
        # guarded setting was set since they were filled (_state_version).
        self._guards = TraceGuards()
        self._state_version = _STATE_VERSION[0]
        self._lock = threading.RLock()
        self._last_key = None
        self._warned = False
        self.trace_count = 0
        # Every trace, and every call past the budget, as a Retrace (f.retraces()); the
        # signatures traced so far (the budget counts them, an evicted one retraces free).
        self._records = []
        self._traced_keys = set()
        self._signatures = {}      # an ordered set: each signature once, oldest first
        self._last_signature = None
        self.autograph = autograph
        self._converted = None
        # Calls compared against eager mode (graph/jit/compare/checks.py).
        self.shadow = bool(shadow)
        self.validate = _check_validate(validate)

    # -- calling ---------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        # The common case first, kept lean: default (eager) mode, no switches on,
        # positional concrete tensors, a signature seen before.
        if self._state_version != _STATE_VERSION[0]:
            self._forget_fast_paths()
        local = config._run_eagerly.get()
        if not kwargs and self.input_signature is None and pushed_mode(None) is None \
                and (local is False or local is None and not config.run_functions_eagerly_global):
            # First the signature called last: its entry checks the arguments itself.
            result = self._last_entry(args)
            if result is not MISS:
                return result
            parts: list[Any] = []      # shape, dtype, shape, dtype...
            for a in args:
                if type(a) is not Tensor or a._value is None:
                    break
                parts.append(a.shape)
                parts.append(a.dtype)
            else:
                key = tuple(parts)
                concrete = self._fast.get(key)
                if concrete is None:
                    try:
                        concrete = self._remember_fast(
                            key, self._concrete_and_tensors(args, {}, budgeted=True)[0])
                    except _OverBudget:
                        return self.python_function(*args)
                else:
                    try:    # now the most recently used (the signature called last is)
                        self._recent.move_to_end(concrete)
                    except KeyError:   # evicted by another thread meanwhile
                        pass
                self._last_entry = concrete.guarded_entry
                return concrete.entry(args)
            nested = _tuple_fast_key(args)
            if nested is not None:
                key, tensors = nested
                concrete = self._fast.get(key)
                if concrete is None:
                    try:
                        concrete = self._remember_fast(
                            key, self._concrete_and_tensors(args, {}, budgeted=True)[0])
                    except _OverBudget:
                        return self.python_function(*args)
                else:
                    try:
                        self._recent.move_to_end(concrete)
                    except KeyError:
                        pass
                return concrete.entry(tensors)
        if not current_mode().is_concrete:
            return self._traced_function()(*args, **kwargs)   # inline into that graph
        if config.run_functions_eagerly:
            return self.python_function(*args, **kwargs)
        try:
            concrete, tensors, borrowed = self._concrete_and_tensors(args, kwargs, budgeted=True)
        except _OverBudget:
            return self.python_function(*args, **kwargs)
        if borrowed:    # numpy arguments the caller can still write
            return call_with_borrowed(concrete, tensors, borrowed)
        return concrete(tensors)

    def __get__(self, instance, owner):
        # Decorating a method: bind like a function, sharing one trace cache per instance.
        if instance is None:
            return self
        return functools.partial(self, instance)

    def _concrete_and_tensors(self, args, kwargs, budgeted=False):
        if self.input_signature is not None:
            if kwargs:
                raise EngineError(f"{self.name}: keyword arguments are not allowed with an "
                                  "input_signature")
            tensors = check_against_specs(self.name, self.input_signature, args)
            backend = _backend_of(self.name, tensors)
            # Plain tensors (numpy arrays) name no back end, as in signature_of's keys.
            key = ("input_signature",) if backend.numpy_arrays else \
                ("input_signature", backend.name)
            concrete = self._cache.get(self._guards.key(key))
            if concrete is None:
                concrete = self._trace(key, tensors, None, None, specs=self.input_signature,
                                       call=(args, kwargs), budgeted=budgeted)
            return concrete, tensors, borrowed_arrays(args)
        try:
            key, tensors, leaves, treedef = signature_of(args, kwargs)
        except DTypeError as err:
            raise DTypeError(f"{self.name}: {err}\n  at {format_location(user_frame())}") from None
        concrete = self._cache.get(self._guards.key(key))
        if concrete is None:
            concrete = self._trace(key, tensors, leaves, treedef, call=(args, kwargs),
                                   budgeted=budgeted)
        else:
            try:
                self._recent.move_to_end(concrete)
            except KeyError:   # evicted by another thread meanwhile
                pass
        return concrete, tensors, borrowed_arrays(leaves)

    def get_concrete_function(self, *args, **kwargs):
        """The :class:`ConcreteFunction` (graph and compiled code) for these arguments."""
        return self._concrete_and_tensors(args, kwargs)[0]

    def _trace(self, key, tensors, leaves, treedef, specs=None, call=((), {}), budgeted=False):
        """Trace for the signature ``key``; keep it under ``key`` and the state of the
        modules the trace used (see ``TraceGuards``). A call (``budgeted``) with a new
        signature past ``max_traces`` raises ``_OverBudget``: it runs eagerly."""
        with self._lock:
            full_key = self._guards.key(key)
            concrete = self._cache.get(full_key)
            if concrete is not None:
                return concrete
            over = budgeted and full_key not in self._traced_keys and \
                len(self._traced_keys) >= self.max_traces
            if over and self._warned and key in self._signatures:
                raise _OverBudget()     # noted and said already: it runs eagerly again
            where = user_frame()
            names = leaf_names(self.python_function, *call)
            reason = describe(self._last_signature, key, names,
                              lambda: self._guards.describe(self._last_key, full_key)
                              if self._last_key else "the module settings changed")
            if over:
                self._over_budget(key, names, reason, where)
            if self.trace_count:
                log.info("retracing %s: %s (called from %s)", self.name, reason,
                         format_location(where))
            start = time.perf_counter()
            with trace_state.collecting() as used:
                numerics.note_use()     # a trace made under one en.config.numerics only
                if specs is None and any(t.backend.chunked for t in tensors):
                    # Chunked data (Dask): run once before, per chunk, and once after.
                    traced = ConcreteFunction(self._traced_function(), self.name, key, leaves,
                                              treedef, passes=[], backend=backends.NUMPY)
                    concrete = ChunkedFunction(traced.unoptimized_graph, self.name, tensors,
                                               compile_function=plain_function)
                else:
                    concrete = ConcreteFunction(self._traced_function(), self.name, key, leaves,
                                                treedef, specs=specs, passes=self._passes(),
                                                compile_function=named_function,
                                                backend=_backend_of(self.name, tensors))
            cost_ms = (time.perf_counter() - start) * 1e3
            self._install_checks(concrete)
            full_key = self._guards.after_trace(key, used)
            self._cache[full_key] = concrete
            self._recent[concrete] = full_key
            self._last_key = full_key
            self.trace_count += 1
            self._note(Retrace(len(self._records) + 1, reason, cost_ms,
                               format_location(where)), key, names)
            self._traced_keys.add(self._guards.key(key))
            self._last_signature = key
            self._evict()
            return concrete

    def _note(self, record, key, names):
        self._records.append(record)
        self._signatures[key] = None
        self._leaf_names = names

    def _over_budget(self, key, names, reason, where):
        """A new signature past the budget: noted, said once (at the user's line, with
        the cause and the fix), then ``_OverBudget`` so the call runs eagerly."""
        if key not in self._signatures:
            self._note(Retrace(len(self._records) + 1, reason, 0.0, format_location(where),
                               ran_eagerly=True), key, names)
        if not self._warned:
            self._warned = True
            fix = suggest_fix(list(self._signatures), names) or (
                "pass input_signature=[en.TensorSpec(shape=(None, ...), dtype=...)] to trace "
                "once for every size")
            warnings.warn_explicit(
                f"{self.name} has been traced {self.trace_count} times (max_traces="
                f"{self.max_traces}); new signatures now run eagerly, the traces made keep "
                f"running compiled. This call: {reason}. Fix: {fix}. "
                f"{self.name}.retraces() lists every trace and its cost",
                UserWarning, where[0] if where else "<unknown>", where[1] if where else 0)
        raise _OverBudget()

    def retraces(self):
        """Every trace of this function, and every call past ``max_traces`` (which ran
        eagerly): why (by parameter name), its cost in milliseconds and the calling line,
        with the fix that would make one trace serve them all. Prints as a table.

        Example:
            >>> import engine as en
            >>> f = en.function(lambda x: x + 1.0)
            >>> _ = f(en.ones(2)); _ = f(en.ones(3))
            >>> report = f.retraces()
            >>> [r.reason for r in report.records]
            ['first call', 'x: dimension 0 changed from 2 to 3 (float64[2] -> float64[3])']
            >>> report.fix
            "input_signature=[en.TensorSpec(shape=(None,), dtype='float64')] traces once for every size"
        """
        return RetraceReport(self.name, self._records, self.max_traces,
                             suggest_fix(list(self._signatures),
                                         getattr(self, "_leaf_names", [])))

    def _install_checks(self, concrete):
        """Compare the calls of a new trace against eager mode where ``shadow`` (or
        ``en.config.shadow``, read now) or ``validate`` asks for it."""
        if not isinstance(concrete, ConcreteFunction):
            return      # a chunked trace: en.debug.compare checks its outputs
        if self.shadow or config.shadow:
            install_checks(concrete, None, VALIDATE_EVERY, _compare_function)
        elif self.validate:
            install_checks(concrete, self.validate, VALIDATE_EVERY, _compare_function)

    def compare(self, *args, **kwargs):
        """Run this call compiled and eagerly, node by node, against a float64 evaluation;
        the report says whether every node agrees (``en.debug.compare``)."""
        return compare_call(self, args, kwargs, _compare_function)

    def _traced_function(self):
        """What tracing runs: the function with its control flow converted (autograph)."""
        if self._converted is None:
            fn = convert(self.python_function) if self.autograph else self.python_function
            converts = self.autograph and not marked_do_not_convert(self.python_function)
            self._converted = _converting_while_traced(fn, convert if converts else None)
        return self._converted

    def _forget_fast_paths(self):
        """Drop the lookups by shapes alone: a module setting may have changed, so the
        next call of each signature looks up its full key (and retraces if it is new)."""
        with self._lock:
            self._state_version = _STATE_VERSION[0]
            self._fast.clear()
            self._fast_keys.clear()
            self._last_entry = _miss

    def _remember_fast(self, key, concrete):
        with self._lock:
            if concrete in self._recent:   # not evicted meanwhile
                self._fast[key] = concrete
                self._fast_keys.setdefault(concrete, []).append(key)
        return concrete

    def _evict(self):
        """Drops the least recently used traces past the bound (``max_cached_traces``,
        else ``en.config.max_cached_traces``; None: no bound). Nothing else holds a
        dropped trace, so its graphs and buffers are freed at once."""
        limit = self.max_cached_traces
        if limit is None:
            limit = config.max_cached_traces
        if limit is None:
            return
        while len(self._recent) > max(1, limit):
            concrete, key = self._recent.popitem(last=False)
            self._cache.pop(key, None)
            for fast_key in self._fast_keys.pop(concrete, ()):
                self._fast.pop(fast_key, None)
            if self._last_entry is concrete.guarded_entry:
                self._last_entry = _miss
            log.info("%s: dropped the least recently used trace (%s traces kept)", self.name,
                     limit)

    def _passes(self):
        if not self.optimize:
            return []
        if self.passes is not None:
            return list(self.passes)
        return None  # the default pipeline

    # -- inspection --------------------------------------------------------------
    def graph_for(self, *args, **kwargs):
        """The (optimized) graph these arguments run."""
        return self.get_concrete_function(*args, **kwargs).graph

    def source_for(self, *args, **kwargs):
        """The generated Python source these arguments run."""
        return self.get_concrete_function(*args, **kwargs).source

    def optimization_report(self, *args, **kwargs):
        """What each optimization pass did for these arguments: nodes before and after,
        what changed and the time taken. Prints as a table; ``.as_data()`` gives dicts."""
        return self.get_concrete_function(*args, **kwargs).report

    def memory_report(self, *args, **kwargs):
        """The memory plan for these arguments: planned peak bytes (the reused buffers),
        bytes reused, values computed in place, versus the unplanned peak."""
        return self.get_concrete_function(*args, **kwargs).memory_report()

    def explain(self, *args, **kwargs):
        """Everything about the compiled function for these arguments, in one place: the
        trace signature, what each pass changed, node counts before and after, the memory
        plan and the generated source (with fused kernels). Prints as text; renders as
        HTML in notebooks."""
        return importlib.import_module(DISPLAY_MODULE).explain(self, *args, **kwargs)

    def __repr__(self):
        return f"<en.function {self.name} traces={self.trace_count}>"


def _converting_while_traced(fn, converter):
    """``fn`` that, while it runs (is traced), has the functions it hands to ``en.grad``,
    ``en.scan`` and the like converted by ``converter`` too (None: left as written)."""
    @functools.wraps(fn)
    def traced(*args, **kwargs):
        with converting(converter):
            return fn(*args, **kwargs)
    return traced


def named_function(fn, name):
    """``en.function(fn)`` named ``name``: what a ConcreteFunction compiles its gradient with."""
    return Function(fn, name=name)


def _compare_function(fn, name, passes):
    """The ``en.function`` the comparison compiles a subgraph with."""
    return Function(fn, name=name, passes=passes, autograph=False)


def _check_validate(validate):
    if validate is not None and (type(validate) is not int or validate < 0):
        raise InvalidArgumentError(f"validate must be a number of calls (an int >= 0) or None, "
                                   f"got {validate!r}")
    return validate


def plain_function(fn, name):
    """``en.function(fn, autograph=False)`` named ``name``: for functions the engine
    writes itself (the parts of a function run per chunk)."""
    return Function(fn, name=name, autograph=False)


def _backend_of(name, tensors):
    """The one back end of a call's tensors (numpy when there are none)."""
    found = None
    for t in tensors:
        b = t.backend
        if found is not None and b is not found:
            raise backends.mismatch(f"function '{name}'", found, b)
        found = b
    return found or backends.NUMPY


def function(fn: Callable[..., Any] | None = None, *,
             input_signature: Sequence[Any] | None = None, optimize: bool = True,
             passes: Sequence[Any] | None = None, max_traces: int = 8,
             max_cached_traces: int | None = None,
             autograph: bool = True, shadow: bool = False,
             validate: int | None = None) -> Function | Callable[[Callable[..., Any]], Function]:
    """Compile ``fn`` to a graph, traced once per input signature.

    Usable as ``@en.function`` or ``en.function(fn, input_signature=[...])``.
    The first call with a new signature runs the Python body once with traced
    tensors; later calls run the compiled graph without running Python.
    ``max_traces`` signatures in, a new one runs eagerly and one warning names the
    cause and the fix (``f.retraces()`` explains every trace). The
    ``max_cached_traces`` most recently used traces are kept (default
    ``en.config.max_cached_traces``, 32; None: all of them); an older one is
    dropped, its graphs and buffers freed, and traced again if called again.
    Python control flow on tensors (``if``, ``while``, ``for``, ``and``/``or``/
    ``not``, ``a if c else b``) is converted to ``en.cond``/``en.while_loop``/
    ``en.scan`` where the value is traced (see ``en.autograph``);
    ``autograph=False`` traces the function as written.
    ``shadow=True`` compares every call against eager mode, node by node, and
    ``validate=N`` the first ``N`` calls of each trace and then every 100th
    (``en.debug.compare``'s criterion): a diverging call raises ``en.NumericsError``
    naming the node and the line that made it.

    Example:
        >>> import engine as en
        >>> loss = en.function(lambda w, x: en.sum((x @ w) ** 2.0))
        >>> float(loss(en.ones((3, 1)), en.ones((2, 3))))
        18.0
    """
    def wrap(f):
        return Function(f, input_signature=input_signature, optimize=optimize, passes=passes,
                        max_traces=max_traces, max_cached_traces=max_cached_traces,
                        autograph=autograph, shadow=shadow, validate=validate)
    return wrap(fn) if fn is not None else wrap


def run_functions_eagerly(enabled=True):
    """Make every ``en.function`` run its Python body eagerly (for pdb and prints),
    in this thread (and asyncio task) only.

    As a context manager the setting lasts for the block; as a plain call it
    lasts until the next call in the same thread. Other threads keep running
    graphs. The process-wide switch is ``en.config.run_functions_eagerly_global``
    (a setting here, in either form, overrides it in this thread):

        >>> import engine as en
        >>> with en.run_functions_eagerly():
        ...     pass
    """
    # Set now, in the caller's context, so the plain-call form works too; the
    # global switch is never touched, so no other thread sees the change.
    return _EagerSwitch(config._run_eagerly.set(bool(enabled)))


class _EagerSwitch(contextlib.AbstractContextManager):
    def __init__(self, token):
        self._token = token

    def __exit__(self, *exc):
        config._run_eagerly.reset(self._token)
        return False
