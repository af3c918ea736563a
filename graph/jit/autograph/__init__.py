"""AutoGraph-style conversion of Python control flow for ``en.function``.

``en.function`` converts the function's source once: an ``if``, ``while`` or
``for`` whose condition or iterable turns out to be a traced tensor when the
converted code runs becomes ``en.cond``, ``en.while_loop`` or ``en.scan``;
on Python values it stays plain Python. Functions it calls are converted
too (user code only). The pieces, one job a file:

- ``source``: finding the source, converting once, rebuilding the function;
- ``lowering``: ``return``/``break``/``continue`` to flags;
- ``analysis``: which names a block assigns and which are used after it;
- ``transformer``: statements and expressions to operator calls;
- ``operators`` / ``tensor_control``: the run-time dispatch;
- ``messages``: the errors, each naming the variable and the user's line.

Example:
    >>> import engine as en
    >>> @en.function
    ... def newton_sqrt(a):
    ...     x, steps = a, 0
    ...     while en.abs(x * x - a) > 1e-12 * a:
    ...         x = 0.5 * (x + a / x)
    ...         steps += 1
    ...     return x, steps
    >>> x, steps = newton_sqrt(en.tensor(2.0))
    >>> round(float(x), 12), int(steps), newton_sqrt.trace_count
    (1.414213562373, 5, 1)
    >>> round(float(newton_sqrt(en.tensor(1e6))[0]), 9), newton_sqrt.trace_count
    (1000.0, 1)
"""
import functools
import inspect
import sys
import threading
import types
import warnings

from engine.conversion import converting
from engine.nn.module import Module

from . import messages
from .source import converted_function, converted_source, is_user_code
from .transformer import Unconvertible

__all__ = ["callee", "convert", "converted_call", "do_not_convert", "to_code"]

_DO_NOT_CONVERT = "__ag_do_not_convert__"
_warned: set[object] = set()
_warn_lock = threading.Lock()


def do_not_convert(fn):
    """Mark ``fn`` so that conversion leaves it (and what it calls) as written.

    Example:
        >>> import engine as en
        >>> @en.autograph.do_not_convert
        ... def helper(x):
        ...     return x
        >>> en.autograph.to_code(helper) is None
        True
    """
    try:
        setattr(fn, _DO_NOT_CONVERT, True)
        return fn
    except (AttributeError, TypeError):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        setattr(wrapper, _DO_NOT_CONVERT, True)
        return wrapper


def marked_do_not_convert(fn):
    """True for ``fn`` marked with :func:`do_not_convert`."""
    return getattr(fn, _DO_NOT_CONVERT, False) is True


def _as_written(fn):
    """``fn`` run with conversion off: the functions it hands to ``en.grad``, ``en.scan``
    and the like stay as written too."""
    @functools.wraps(fn)
    def as_written(*args, **kwargs):
        with converting(None):
            return fn(*args, **kwargs)
    return as_written


_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _convertible(fn):
    # Generators and coroutines run as written (their control flow stays Python).
    return isinstance(fn, types.FunctionType) and not getattr(fn, _DO_NOT_CONVERT, False) and \
        not fn.__code__.co_flags & _NOT_PLAIN and is_user_code(fn.__code__)


def convert(fn, warn=True):
    """``fn`` with its control flow converted, or ``fn`` itself when it is not user code, is
    marked ``do_not_convert``, or its source cannot be converted (with one warning)."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(convert(fn.__func__, warn), fn.__self__)
    if isinstance(fn, functools.partial):
        return functools.partial(convert(fn.func, warn), *fn.args, **fn.keywords)
    if isinstance(fn, Module) and _convertible(getattr(type(fn), "forward", None)):
        # an en.nn model: its converted forward, run as calling the model runs forward
        return fn._calling(types.MethodType(convert(type(fn).forward, warn), fn))
    if not isinstance(fn, (types.FunctionType, type)) and callable(fn) and \
            _convertible(getattr(type(fn), "__call__", None)):   # noqa: B004 (the method itself)
        return types.MethodType(convert(type(fn).__call__, warn), fn)   # a callable object
    if not _convertible(fn):
        return fn
    try:
        return converted_function(fn)
    except Exception as err:   # noqa: BLE001 - a function that traced before must still trace
        if warn:
            reason = str(err) if isinstance(err, (Unconvertible, OSError)) else \
                f"the conversion failed: {type(err).__name__}: {err}"
            _warn_once(fn, reason)
        return fn


def _warn_once(fn, reason):
    key = getattr(fn, "__code__", fn)
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(messages.no_source(getattr(fn, "__qualname__", repr(fn)), reason),
                  stacklevel=4)


def to_code(fn):
    """The converted source of ``fn`` (a function, method or ``en.function``), for reading;
    None when ``fn`` is not converted.

    Example:
        >>> import engine as en
        >>> def relu(x):
        ...     if x > 0:
        ...         return x
        ...     return 0.0 * x
        >>> print(en.autograph.to_code(relu))  # doctest: +ELLIPSIS
        def relu(x):
            _ag_do_return = False
            ...
    """
    fn = getattr(fn, "python_function", fn)
    fn = getattr(fn, "__func__", fn)
    if not _convertible(fn):
        return None
    try:
        return converted_source(fn)
    except (Unconvertible, SyntaxError, OSError) as err:
        _warn_once(fn, str(err))
        return None


def callee(f):
    """What converted code calls in place of ``f``: ``f`` converted when it is user code
    (a function, method, model or callable object), the operator for ``range`` and
    ``len``, else ``f`` itself.

    Converted code calls the result in its own frame (``ag__.callee(f)(x)``), so
    ``inspect.currentframe()``, ``sys._getframe()``, ``locals()``, ``eval`` and
    ``warnings.warn``'s ``stacklevel`` see the user's function, as unconverted.

    Example:
        >>> import engine as en
        >>> en.autograph.callee(len) is len
        False
        >>> en.autograph.callee(print) is print
        True
    """
    if marked_do_not_convert(f):
        return _as_written(f)
    if isinstance(f, types.FunctionType):
        return convert(f) if _convertible(f) else f
    if isinstance(f, types.MethodType):
        return types.MethodType(convert(f.__func__), f.__self__) \
            if _convertible(f.__func__) else f
    if f is locals:
        return _user_locals
    if f is range:
        return operators.range_
    if f is len:
        return operators.len_
    if isinstance(f, Module):   # calling a model runs its forward, the user's code
        forward = getattr(type(f), "forward", None)
        return f._calling(types.MethodType(convert(forward), f)) if _convertible(forward) else f
    if isinstance(f, functools.partial):
        inner = callee(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if not isinstance(f, type) and not inspect.isbuiltin(f) and \
            not getattr(f, _DO_NOT_CONVERT, False):
        call = getattr(type(f), "__call__", None)   # noqa: B004 (the method, not a callability test)
        if _convertible(call):
            return types.MethodType(convert(call), f)
    return f


def _user_locals():
    """``locals()`` in converted code: its frame's, less the name of the operators."""
    names = sys._getframe(1).f_locals
    return {k: v for k, v in names.items() if k != "ag__"}


def converted_call(f, args, kwargs):
    """Call ``f`` as converted code does: ``callee(f)(*args, **kwargs)``."""
    return callee(f)(*args, **(kwargs or {}))


from . import operators  # noqa: E402  (operators reach callee through this package)
operators.callee = callee
operators.converted_call = converted_call
