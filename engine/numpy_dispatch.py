"""numpy functions called on tensors run the engine's ops (NEP 13 and NEP 18).

``Tensor.__array_ufunc__`` and ``Tensor.__array_function__`` (shared with variables)
call :func:`array_ufunc` and :func:`array_function` here. The engine function is
found by name in the public namespace at call time -- ``np.X`` -> ``en.X``,
``np.linalg.X`` -> ``en.linalg.X``, ``np.fft.X`` -> ``en.fft.X`` -- so every op
the engine gains is reachable from numpy at once. Where numpy's name differs
(``np.subtract`` is ``en.sub``), the engine function declares it beside its
definition (``engine.names.also_named``) and the lookup is generated from those
declarations; the tables below hold only functions that take other arguments. The
result is whatever the engine function returns: tensors, in eager mode and while
tracing, recorded on tapes like any op call.

Arguments are bound to numpy's own signature first. Keywords left at numpy's
default are dropped; ``dtype=`` casts the inputs when the engine function takes
no ``dtype``; ``out=`` stores the result into the given tensor (engine/writes.py); ``where=`` works for
reductions and is refused elsewhere (without ``out=`` numpy leaves the masked
places uninitialized). Anything else the engine function does not take, and
every numpy function the engine lacks, raises :class:`UnsupportedError` naming
the numpy function, the keywords and the user's line.

Example:
    >>> import numpy as np
    >>> import engine as en
    >>> x = en.tensor([0.0, 1.0])
    >>> type(np.exp(x)).__name__, float(np.sum(np.exp(x), axis=0))
    ('Tensor', 3.718281828459045)
"""
import inspect
import sys
from typing import Any

import numpy as np

from .errors import UnsupportedError, format_location, user_frame
from .lifting import TensorLike
from . import names
from . import writes
from . import numpy_inplace
from . import numpy_scatter
from .op import REGISTRY

# numpy's module of a function -> the engine's namespace holding the same names.
_NAMESPACES = {"numpy": None, "numpy.linalg": "linalg", "numpy.fft": "fft",
               "numpy.lib.stride_tricks": None}    # sliding_window_view

# Keyword names that numpy and the engine spell differently, per numpy function.
KEYWORD_NAMES = {"clip": {"a_min": "min", "a_max": "max"}}

# Keywords that cannot change the result: the engine's sorts are stable, which every
# ``kind=`` numpy offers may give.
IGNORED_KEYWORDS = {"sort": {"kind"}, "argsort": {"kind"}}

# Graph-mode functions that are not numpy's of the same name. They are named here, not
# declared beside their definitions, because reading them would import graph mode; the
# others declare it (``also_named(split, not_numpy=True)``).
GRAPH_NOT_NUMPY = {"save", "load", "print"}

# ufunc methods: ``np.add.reduce`` is ``en.sum`` and so on.
REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
          "logical_and": "all", "logical_or": "any"}
ACCUMULATE = {"add": "cumsum", "multiply": "cumprod", "maximum": "cummax",
              "minimum": "cummin"}
# What a masked-out element contributes to a reduction (``where=``); None: numpy
# needs ``initial=`` for it.
_IDENTITY = {"sum": 0, "prod": 1, "all": True, "any": False, "max": None, "min": None}
# Keywords of a ufunc call that are fine at these values (numpy's defaults).
_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None,
                   "where": True}

# What this protocol handles; anything else in ``types`` gets NotImplemented.
_TENSOR_TYPES = (TensorLike, np.ndarray)


def _en():
    return sys.modules["engine"]


def _where():
    loc = user_frame()
    return f" (at {format_location(loc)})" if loc else ""


def _unsupported(message):
    return UnsupportedError(message + _where())


def numpy_name(func):
    """``'numpy.linalg.norm'`` for ``np.linalg.norm``: how errors name a numpy function."""
    module = getattr(func, "__module__", None) or "numpy"
    return f"{module}.{func.__name__}"


_FOUND: dict[tuple[str, str], Any] = {}   # (module, name) -> the engine function or None; the namespace is fixed on import


def engine_function(module, name):
    """The engine function numpy's ``module.name`` dispatches to, or None.

    Example:
        >>> engine_function("numpy", "concatenate").__name__
        'concat'
    """
    key = (module, name)
    try:
        return _FOUND[key]
    except KeyError:
        pass
    fn = _FOUND[key] = _find(module, name)
    return fn


def _find(module, name):
    if module not in _NAMESPACES:
        return None
    namespace = _en()
    sub = _NAMESPACES[module]
    if sub is not None:
        namespace = getattr(namespace, sub, None)
        if namespace is None:
            return None
    fn = _own_name(module, namespace, name)
    if fn is None:    # numpy's name differs from the engine's: declared beside the function
        prefix = "" if sub is None else sub + "."
        fn = names.numpy_aliases().get(prefix + name)
    return fn


def _own_name(module, namespace, name):
    """The public engine function called ``name`` in ``namespace`` when it is numpy's."""
    if module == "numpy" and name in GRAPH_NOT_NUMPY:
        return None
    public = getattr(namespace, "__all__", None)
    if public is not None and name not in public:
        return None
    fn = getattr(namespace, name, None)
    if callable(fn) and not isinstance(fn, type) and names.is_numpy(fn):
        return fn
    return None


# ---- keyword handling --------------------------------------------------------------------------
_SIGNATURES: dict[Any, Any] = {}


def _signature(fn):
    try:
        return _SIGNATURES[fn]
    except KeyError:
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    _SIGNATURES[fn] = sig
    return sig


def accepted_keywords(fn):
    """The keyword names ``fn`` takes, or None when it takes any. An op function
    (``f(*inputs, **params)``) takes its op's parameters: the keywords of the op's
    shape rule."""
    sig = _signature(fn)
    if sig is None:
        return None
    params = list(sig.parameters.values())
    kinds = {p.kind for p in params}
    if inspect.Parameter.VAR_KEYWORD in kinds:
        op = REGISTRY.get(getattr(fn, "__name__", ""))
        if op is None or inspect.Parameter.VAR_POSITIONAL not in kinds:
            return None
        return accepted_keywords(op.abstract_eval)
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _is_default(value, default):
    if value is default:
        return True
    if isinstance(default, (bool, int, float, str)) and type(value) is type(default):
        return value == default
    return False


def _bind(func, args, kwargs):
    """Bind numpy's call to numpy's signature: ``(positional, keywords)`` in numpy's
    names, with keywords left at numpy's default dropped. A positional argument after
    a dropped one goes by keyword, so the engine never gets it in the wrong slot."""
    sig = _signature(func)
    if sig is None:
        return list(args), dict(kwargs)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as err:
        raise _unsupported(f"{numpy_name(func)}: {err}") from None
    positional, keywords, gap = [], {}, False
    for index, (name, value) in enumerate(bound.arguments.items()):
        param = sig.parameters[name]
        if param.kind is param.VAR_POSITIONAL:
            positional.extend(value)
        elif param.kind is param.VAR_KEYWORD:
            keywords.update(value)
        elif _is_default(value, param.default):
            gap = True
        elif index == 0 or (index < len(args) and not gap):   # the array, then as the user did
            positional.append(value)
        else:
            keywords[name] = value
    return positional, keywords


def _cast_arrays(value, dtype):
    """``value`` (a tensor, an array or a list of them) cast to ``dtype``."""
    en = _en()
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_arrays(v, dtype) for v in value)
    if isinstance(value, _TENSOR_TYPES):
        return en.cast(value, dtype)
    return value


def _with_out(where, out, result):
    """numpy's ``out=``: ``result`` stored into the given tensor(s) (or numpy arrays),
    which are returned; ``result`` itself without ``out=`` (engine/writes.py)."""
    outs = out if isinstance(out, tuple) else (out,)
    if all(o is None for o in outs):
        return result
    results = result if isinstance(result, tuple) else (result,)
    if len(outs) != len(results):
        raise _unsupported(f"{where}: out= gives {len(outs)} array(s) for "
                           f"{len(results)} result(s)")
    stored = []
    for o, r in zip(outs, results):
        if o is None:
            stored.append(r)
        elif isinstance(o, np.ndarray):        # numpy's own array: numpy stores into it
            np.copyto(o, np.asarray(r), casting="same_kind")
            stored.append(o)
        else:
            stored.append(writes.out_argument(r, o, where))
    return tuple(stored) if isinstance(result, tuple) else stored[0]


def _check_keywords(what, fn, keywords):
    accepted = accepted_keywords(fn)
    if accepted is None:
        return
    unknown = sorted(set(keywords) - accepted)
    if unknown:
        shown = ", ".join(f"{k}={keywords[k]!r}" for k in unknown)
        raise _unsupported(
            f"{what}: the engine's {fn.__name__} does not take {shown} "
            f"(it takes {', '.join(sorted(accepted)) or 'no keywords'})")


# ---- reductions with where= and initial= -------------------------------------------------------
def reduction(name, x, axis=None, keepdims=False, dtype=None, initial=np._NoValue,
              where=True, what=None):
    """``en.<name>`` (sum, prod, max, min, all, any, mean) with numpy's ``dtype``,
    ``initial`` and ``where`` keywords, in engine ops (so it differentiates and traces).

    Example:
        >>> import engine as en
        >>> float(reduction("sum", en.tensor([1.0, 2.0, 3.0]), where=[True, False, True]))
        4.0
    """
    en = _en()
    what = what or f"numpy.{name}"
    fn = getattr(en, name, None)
    if fn is None:
        raise _unsupported(f"{what} is not implemented by the engine for tensors (no en.{name})")
    if dtype is not None:
        x = en.cast(x, dtype)
    masked = where is not True
    has_initial = initial is not np._NoValue
    if masked:
        if name == "mean":
            mask = en.broadcast_to(en.tensor(where) if not isinstance(where, _TENSOR_TYPES)
                                   else where, x.shape)
            if has_initial:
                raise _unsupported(f"{what}: initial= is not a keyword of numpy.mean")
            total = en.sum(en.where(mask, x, 0), axis=axis, keepdims=keepdims)
            # counted in x's float precision (float64 for integers), as numpy's mean
            real = np.finfo(x.dtype).dtype if x.dtype.kind in "fc" else np.float64
            count = en.sum(en.cast(mask, real), axis=axis, keepdims=keepdims)
            return total / count
        fill = _IDENTITY[name]
        if fill is None:
            if not has_initial:
                raise _unsupported(
                    f"{what}: where= needs initial= for {name} (a masked-out element "
                    "has no identity to stand for it), as in numpy")
            fill = initial
        x = en.where(where, x, fill)
    out = fn(x, axis=axis, keepdims=keepdims)
    if has_initial:
        combine = {"sum": en.add, "prod": en.mul, "max": en.maximum, "min": en.minimum,
                   "all": en.logical_and, "any": en.logical_or}.get(name)
        if combine is None:
            raise _unsupported(f"{what}: initial= is not supported for {name}")
        out = combine(out, initial)
    return out


def _numpy_reduction(name):
    def call(func, args, kwargs):
        what = numpy_name(func)
        try:
            bound = _signature(func).bind(*args, **kwargs).arguments
        except TypeError as err:
            raise _unsupported(f"{what}: {err}") from None
        out = bound.pop("out", None)
        x = bound.pop(next(iter(_signature(func).parameters)))
        _check_supported(func, bound, {"axis", "keepdims", "dtype", "initial", "where"})
        return _with_out(what, out, reduction(name, x, what=what, **bound))
    return call


# ---- numpy functions that are not one engine function of the same name -----------------------
def _split(func, args, kwargs):
    positional, keywords = _bind(func, args, kwargs)
    _check_supported(func, keywords, {"axis"})
    x, sections = positional[0], (positional[1] if len(positional) > 1
                                  else keywords.pop("indices_or_sections"))
    axis = positional[2] if len(positional) > 2 else keywords.get("axis", 0)
    if not isinstance(sections, int):       # numpy's split points -> the engine's sizes
        n = x.shape[axis]
        bounds = [0, *(min(max(int(i) + (n if i < 0 else 0), 0), n) for i in sections), n]
        sections = [b - a for a, b in zip(bounds[:-1], bounds[1:])]
    return _en().split(x, sections, axis=axis)


def _check_supported(func, keywords, allowed):
    extra = sorted(set(keywords) - set(allowed))
    if extra:
        raise _unsupported(f"{numpy_name(func)}: {', '.join(extra)}= not supported on tensors")


HANDLERS = {
    ("numpy", "split"): _split,
    **numpy_inplace.HANDLERS,     # copyto, place, put, putmask, fill_diagonal: they write
    **numpy_scatter.HANDLERS,     # put_along_axis: it writes
    **{("numpy", n): _numpy_reduction(r) for n, r in (
        ("sum", "sum"), ("prod", "prod"), ("max", "max"), ("amax", "max"), ("min", "min"),
        ("amin", "min"), ("all", "all"), ("any", "any"), ("mean", "mean"))},
}


# ---- the protocols ---------------------------------------------------------------------------
def array_function(func, types, args, kwargs):
    """``__array_function__``: run numpy function ``func`` with the engine."""
    tensor_types = _TENSOR_TYPES
    if not all(issubclass(t, tensor_types) for t in types):
        return NotImplemented      # another library's arrays: let it (or numpy) decide
    module, name = getattr(func, "__module__", None) or "numpy", func.__name__
    handler = HANDLERS.get((module, name))
    if handler is not None:
        return handler(func, args, kwargs)
    fn = engine_function(module, name)
    if fn is None:
        sub = _NAMESPACES.get(module)
        raise _unsupported(
            f"{numpy_name(func)} is not an engine function "
            f"(no en.{sub + '.' if sub else ''}{name}): "
            "call it on t.numpy() to run numpy on the values (eager mode only)")
    positional, keywords = _bind(func, args, kwargs)
    out = keywords.pop("out", None)
    for ignored in IGNORED_KEYWORDS.get(name, ()):
        keywords.pop(ignored, None)
    for numpy_kw, engine_kw in KEYWORD_NAMES.get(name, {}).items():
        if numpy_kw in keywords:
            keywords[engine_kw] = keywords.pop(numpy_kw)
    dtype = keywords.get("dtype")
    if dtype is not None and "dtype" not in (accepted_keywords(fn) or {"dtype"}):
        del keywords["dtype"]
        positional = [_cast_arrays(positional[0], dtype), *positional[1:]]
    _check_keywords(numpy_name(func), fn, keywords)
    return _with_out(numpy_name(func), out, fn(*positional, **keywords))


def array_ufunc(ufunc, method, inputs, kwargs):
    """``__array_ufunc__``: run ``ufunc.method(*inputs, **kwargs)`` with the engine."""
    tensor_types = _TENSOR_TYPES
    for x in inputs:
        if (not isinstance(x, tensor_types) and
                getattr(type(x), "__array_ufunc__", None) is not None and
                not isinstance(x, (np.generic, int, float, complex, bool))):
            return NotImplemented
    if method == "__call__" and not kwargs:
        fn = engine_function("numpy", ufunc.__name__)
        if fn is not None:
            return fn(*inputs)
    what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    out = kwargs.pop("out", None)
    if method == "__call__":
        return _with_out(what, out, _ufunc_call(ufunc, what, inputs, kwargs))
    if method == "reduce":
        return _with_out(what, out, _ufunc_reduce(ufunc, what, inputs, kwargs))
    if method == "accumulate":
        return _with_out(what, out, _ufunc_accumulate(ufunc, what, inputs, kwargs))
    if method == "outer":
        return _with_out(what, out, _ufunc_outer(ufunc, what, inputs, kwargs))
    if method == "at":      # writes into its first argument (engine/numpy_scatter.py)
        return numpy_scatter.ufunc_at(ufunc, inputs, kwargs)
    raise _unsupported(f"{what} is not supported on tensors; call it on t.numpy() to run "
                       "numpy on the values (eager mode only)")


# numpy's ufuncs that have no meaning for tensors, with the reason said when refused.
_MEANINGLESS_UFUNCS = {"isnat": "tensors have no datetime or timedelta dtypes, so no NaT"}


def _ufunc_function(ufunc, what):
    fn = engine_function("numpy", ufunc.__name__)
    reason = _MEANINGLESS_UFUNCS.get(ufunc.__name__)
    if fn is None and reason is not None:
        raise _unsupported(f"{what} is refused on tensors: {reason}")
    if fn is None:
        raise _unsupported(f"{what} is not implemented by the engine for tensors "
                           f"(no en.{ufunc.__name__}); call it on t.numpy() to run numpy "
                           "on the values (eager mode only)")
    return fn


def _ufunc_call(ufunc, what, inputs, kwargs):
    fn = _ufunc_function(ufunc, what)
    if not kwargs:      # the common case (``array + tensor``): nothing to translate
        return fn(*inputs)
    dtype = kwargs.pop("dtype", None)
    for key, default in _UFUNC_DEFAULTS.items():
        if key in kwargs and _is_default(kwargs[key], default):
            del kwargs[key]
    if "where" in kwargs:
        raise _unsupported(
            f"{what}: where= is not supported on tensors (without out= numpy leaves the "
            "masked-out places uninitialized); use en.where(mask, result, other)")
    if dtype is not None:
        inputs = [_cast_arrays(x, dtype) for x in inputs]
    _check_keywords(what, fn, kwargs)
    return fn(*inputs, **kwargs)


def _ufunc_reduce(ufunc, what, inputs, kwargs):
    name = REDUCE.get(ufunc.__name__)
    if name is None:
        raise _unsupported(f"{what} is not supported on tensors (the engine reduces with "
                           f"{', '.join(f'numpy.{u}' for u in REDUCE)})")
    x, *rest = inputs
    if rest:       # numpy passes axis positionally here only when the user did
        kwargs = dict(zip(("axis", "dtype"), rest), **kwargs)
    kwargs.setdefault("axis", 0)          # ufunc.reduce reduces the first axis by default
    _check_supported_ufunc(what, kwargs, {"axis", "dtype", "keepdims", "initial", "where"})
    return reduction(name, x, what=what, **kwargs)


def _ufunc_accumulate(ufunc, what, inputs, kwargs):
    name = ACCUMULATE.get(ufunc.__name__)
    fn = getattr(_en(), name, None) if name else None
    if fn is None:
        raise _unsupported(f"{what} is not supported on tensors")
    x, *rest = inputs
    if rest:
        kwargs = dict(zip(("axis", "dtype"), rest), **kwargs)
    _check_supported_ufunc(what, kwargs, {"axis", "dtype"})
    dtype = kwargs.pop("dtype", None)
    if dtype is not None:
        x = _cast_arrays(x, dtype)
    return fn(x, axis=kwargs.get("axis", 0))


def _ufunc_outer(ufunc, what, inputs, kwargs):
    en = _en()
    a, b = inputs
    a = a if isinstance(a, _TENSOR_TYPES) else np.asarray(a)
    b = b if isinstance(b, _TENSOR_TYPES) else np.asarray(b)
    a = en.reshape(a, tuple(a.shape) + (1,) * len(b.shape))
    return _ufunc_call(ufunc, what, (a, b), kwargs)


def _check_supported_ufunc(what, kwargs, allowed):
    extra = sorted(set(kwargs) - set(allowed))
    if extra:
        raise _unsupported(f"{what}: {', '.join(extra)}= not supported on tensors")
