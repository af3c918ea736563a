"""The standard's elementwise functions, with its positional-only signatures.

Each is the engine function of the same meaning (``xp.acos`` is ``en.arccos``,
``xp.subtract`` is ``en.sub``), found by name (see ``_lookup.py``). Binary functions take Python scalars on either side, weakly typed as in
the engine. A function whose engine op does not exist is not defined here.

Example:
    >>> import engine.array_api as xp
    >>> xp.subtract(xp.asarray([3, 4]), 1).tolist()
    [2, 3]
"""
import engine as _en

from ._lookup import standard_function

# The standard's elementwise functions by arity; each is the engine function
# ``standard_function`` finds for its name.
UNARY = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "conj",
    "cos", "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log", "log1p",
    "log2", "log10", "logical_not", "negative", "positive", "real", "reciprocal", "round",
    "sign", "signbit", "sin", "sinh", "square", "sqrt", "tan", "tanh", "trunc",
]
BINARY = [
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
    "hypot", "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract",
]


def _unary(name, fn):
    def f(x, /):
        return fn(x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's ``{name}``: ``engine.{fn.__name__}`` elementwise."
    return f


def _binary(name, fn):
    def f(x1, x2, /):
        return fn(x1, x2)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's ``{name}``: ``engine.{fn.__name__}`` with broadcasting."
    return f


__all__ = []
for _table, _make in ((UNARY, _unary), (BINARY, _binary)):
    for _name in _table:
        _fn = standard_function(_name)
        if _fn is not None:
            globals()[_name] = _make(_name, _fn)
            __all__.append(_name)

_clip = standard_function("clip")
if _clip is not None:
    def clip(x, /, min=None, max=None):   # noqa: A002  (the standard's names)
        """``x`` limited to ``[min, max]`` (either bound may be None)."""
        return _clip(x, min, max)
    __all__.append("clip")

_en_where = _en.where


def where(condition, x1, x2, /):
    """``x1`` where ``condition`` is true, else ``x2``, with broadcasting."""
    return _en_where(condition, x1, x2)


__all__.append("where")
