"""The operators converted code calls (as ``ag__.if_stmt(...)`` and so on).

Each decides at run time of the converted code, as AutoGraph does: a
condition or iterable that is a traced tensor goes to
:mod:`.tensor_control` (a ``cond``, ``while_loop`` or ``scan`` node);
anything else runs as the plain Python statement would, so Python loops
unroll and the branch not taken is not traced.

Example (what ``if x > 0: y = x`` becomes, by hand):
    >>> import engine as en
    >>> from engine.graph.jit.autograph import operators as ag
    >>> state = {"y": None}
    >>> def body(): state["y"] = "taken"
    >>> ag.if_stmt(en.tensor(1.0) > 0, body, lambda: None, lambda: (), lambda v: None, ())
    >>> state["y"]
    'taken'
"""
import builtins
import functools
import logging
from typing import Any, Callable

from engine.tensor import Tensor, traced
from engine.variable import Variable
from engine import ops

from ...ir.graph_ops import constant_op
from . import messages, tensor_control as tc
# Undefined, UndefinedReturnValue and ld are what converted code calls as ag__.<name>.
from .transform_select import traced_truth, transforming
from .values import TensorRange, Undefined, UndefinedReturnValue, ld  # noqa: F401
from engine.errors import ArgumentTypeError

log = logging.getLogger("engine.autograph")

UNROLL_WARNING = 3000   # Python loop iterations while tracing before a warning

#: ``callee(f)``, what converted code calls in place of ``f`` (``ag__.callee(f)(x)``), and
#: ``converted_call(f, args, kwargs)``: set by ``graph.jit.autograph`` (converting a callee
#: needs the source machinery, which imports this module).
callee: Callable[[Any], Any] | None = None
converted_call: Callable[[Any, Any, Any], Any] | None = None
_warned_sites: set[object] = set()


def _as_condition(value):
    """What a condition means while tracing: a Variable is read (its value is known only
    when the graph runs); a traced constant is its value (known now: plain Python)."""
    if isinstance(value, Variable) and tc.tracing() is not None:
        return value.read()
    if tc.is_traced(value) and value._node.op is constant_op:
        return value._node.params["value"]
    if isinstance(value, Tensor) and value._value is None:
        # A transformation's tensor (a dual number of en.jvp) whose truth is traced.
        truth = traced_truth(value)
        if truth is not None:
            return truth
    return value


# ---- if and conditional expressions -------------------------------------------------
def if_stmt(cond, body, orelse, get_state, set_state, names, lists=None):
    """``if cond: body() else: orelse()``, a ``cond`` node when ``cond`` is traced."""
    cond = _as_condition(cond)
    if not tc.is_traced(cond) and not tc.per_element(cond):
        if cond:
            body()
        else:
            orelse()
        return
    init = get_state()
    pred = tc.predicate(cond)
    if pred._node is not None and pred._node.op is ops.logical_not_op:
        # `if not flag:` (the guards that break and return lower to): branch on the flag.
        node = pred._node.inputs[0]
        pred, body, orelse = traced(node.shape, node.dtype, node), orelse, body
    # A state variable that is the condition itself is known inside each branch.
    known = [i for i, v in enumerate(init) if tc.is_traced(v) and v._node is pred._node]

    check = tc.lists_guard(lists, "if")

    def branch(fn, value):
        def run():
            state = list(init)
            for i in known:
                state[i] = value
            set_state(state)
            fn()
            check()
            return get_state()
        return run
    set_state(tc.merge(pred, branch(body, True), branch(orelse, False), names, "if"))


def if_exp(cond, true_fn, false_fn):
    """``true_fn() if cond else false_fn()``."""
    cond = _as_condition(cond)
    if not tc.is_traced(cond) and not tc.per_element(cond):
        return true_fn() if cond else false_fn()
    return tc.merge(tc.predicate(cond), lambda: (true_fn(),), lambda: (false_fn(),),
                    ("the conditional expression",), "conditional expression")[0]


def and_(*fns):
    """``a and b and ...`` where each operand is a thunk (evaluated lazily, as Python does)."""
    value = fns[0]()
    for i in range(1, len(fns)):
        value = _as_condition(value)
        if tc.is_traced(value):
            rest = fns[i:]
            # B023 does not apply: the thunk is returned at once, so the loop never rebinds ``rest``
            return _tensor_bool(value, lambda: and_(*rest), "and")  # noqa: B023
        if not value:
            return value
        value = fns[i]()
    return value


def or_(*fns):
    """``a or b or ...`` where each operand is a thunk."""
    value = fns[0]()
    for i in range(1, len(fns)):
        value = _as_condition(value)
        if tc.is_traced(value):
            rest = fns[i:]
            # B023 does not apply: the thunk is returned at once, so the loop never rebinds ``rest``
            return _tensor_bool(value, lambda: or_(*rest), "or")  # noqa: B023
        if value:
            return value
        value = fns[i]()
    return value


def _tensor_bool(value, rest, kind):
    """``value and rest()`` / ``value or rest()`` on a traced ``value``."""
    return tc.lazy_bool(tc.predicate(value), value, rest, kind)


def not_(value):
    """``not value``: logical_not of a traced tensor's truth."""
    value = _as_condition(value)
    if tc.is_traced(value):
        return ops.logical_not(tc.predicate(value))
    return not value


# ---- loops ----------------------------------------------------------------------------
def _unrolled(count):
    """Warn once per loop line when a Python loop unrolls very far while tracing."""
    if count != UNROLL_WARNING + 1 or tc.tracing() is None:
        return
    site = messages.here()
    if site in _warned_sites:
        return
    _warned_sites.add(site)
    log.warning("the Python loop at %s has unrolled more than %d iterations while tracing, each copying "
                "its body into the graph; loop over a tensor bound instead (for i in "
                "range(en.tensor(n)), or a while on a tensor condition) to trace it once",
                site, UNROLL_WARNING)


def while_stmt(test, body, get_state, set_state, names, lists=None):
    """``while test(): body()``, a ``while_loop`` node once the condition is traced."""
    count = 0
    while True:
        cond = _as_condition(test())
        if tc.is_traced(cond) or tc.per_element(cond):   # (a vmap batch: a loop per element)
            # (Also when it becomes traced after some Python iterations: the rest is a loop.)
            tc.tensor_while(test, body, get_state, set_state, names, lists)
            return
        if not cond:
            return
        body()
        count += 1
        _unrolled(count)


def for_stmt(iterable, extra_test, body, get_state, set_state, names, lists=None):
    """``for x in iterable: body(x)``; ``extra_test`` (or None) stops it after a break."""
    # A transformation's tensor (a dual number of en.jvp, a batch of en.vmap) in a trace
    # loops over its rows as one scan, which the transformation stages; it is not a
    # condition (_as_condition would make it a truth value).
    rows_of_transformed = (isinstance(iterable, Tensor) and iterable._value is None
                           and not tc.is_traced(iterable) and transforming())
    if not rows_of_transformed:
        iterable = _as_condition(iterable)
    if isinstance(iterable, TensorRange):
        tc.tensor_for_range(iterable, extra_test, body, get_state, set_state, names, lists)
        return
    if rows_of_transformed or tc.is_traced(iterable):
        if not iterable.shape:
            raise ArgumentTypeError(f"iteration over a 0-d tensor (at {messages.here()})")
        if extra_test is not None:   # after a break the remaining steps change nothing
            run_body = body

            def body(item):
                if_stmt(extra_test(), functools.partial(run_body, item), _nothing, get_state,
                        set_state, names)
        tc.tensor_for_rows(iterable, body, get_state, set_state, names, lists)
        return
    count = 0
    for item in iterable:
        if extra_test is not None:
            go = _as_condition(extra_test())
            if tc.is_traced(go):
                # A break on a tensor condition: the remaining iterations each run under it.
                if_stmt(go, functools.partial(body, item), _nothing, get_state, set_state,
                        names)
                count += 1
                _unrolled(count)
                continue
            if not go:
                return
        body(item)
        count += 1
        _unrolled(count)


def _nothing():
    pass


# ---- builtins ---------------------------------------------------------------------------
def range_(*args):
    """``range(...)``; with a traced bound, a :class:`TensorRange` a converted ``for`` loops on."""
    if any(tc.is_traced(a) for a in args):
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], 1) if len(args) == 2 else args
        return TensorRange(start, stop, step)
    return builtins.range(*args)


def len_(value):
    """``len(x)``; for a traced tensor whose leading size is unknown, a traced int64."""
    if tc.is_traced(value) and value.shape and value.shape[0] is None:
        raise messages.unknown_length(value, messages.here())
    return builtins.len(value)


def no_state():
    return ()


def no_set_state(values):
    pass


# ---- composite state (attributes and subscripts) -----------------------------------------
def getattr_(obj, name):
    if isinstance(obj, Undefined):
        return obj
    try:
        return getattr(obj, name)
    except AttributeError:
        return Undefined(name)


def setattr_(obj, name, value):
    if not isinstance(value, Undefined):
        setattr(obj, name, value)


def getitem_(obj, key):
    if isinstance(obj, Undefined):
        return obj
    try:
        return obj[key]
    except (KeyError, IndexError):
        return Undefined(repr(key))


def setitem_(obj, key, value):
    if not isinstance(value, Undefined):
        obj[key] = value
