"""The standard's elementwise functions, with its positional-only signatures.

Each is the engine function of the same meaning (``xp.acos`` is ``en.arccos``,
``xp.subtract`` is ``en.sub``): the table below names them, numpy's name
first. Binary functions take Python scalars on either side, weakly typed as in
the engine. A function whose engine op does not exist is not defined here.

Example:
    >>> import engine.array_api as xp
    >>> xp.subtract(xp.asarray([3, 4]), 1).tolist()
    [2, 3]
"""
import engine as _en

from ._lookup import engine_function

# standard name: engine names to look for, in order.
UNARY = {
    "abs": ("abs",), "acos": ("arccos", "acos"), "acosh": ("arccosh", "acosh"),
    "asin": ("arcsin", "asin"), "asinh": ("arcsinh", "asinh"), "atan": ("arctan", "atan"),
    "atanh": ("arctanh", "atanh"),
    "bitwise_invert": ("bitwise_invert", "invert", "bitwise_not"),
    "ceil": ("ceil",), "conj": ("conj", "conjugate"), "cos": ("cos",), "cosh": ("cosh",),
    "exp": ("exp",), "expm1": ("expm1",), "floor": ("floor",), "imag": ("imag",),
    "isfinite": ("isfinite",), "isinf": ("isinf",), "isnan": ("isnan",), "log": ("log",),
    "log1p": ("log1p",), "log2": ("log2",), "log10": ("log10",),
    "logical_not": ("logical_not",), "negative": ("negative", "neg"),
    "positive": ("positive", "identity"), "real": ("real",), "reciprocal": ("reciprocal",),
    "round": ("round", "rint"), "sign": ("sign",), "signbit": ("signbit",), "sin": ("sin",),
    "sinh": ("sinh",), "square": ("square",), "sqrt": ("sqrt",), "tan": ("tan",),
    "tanh": ("tanh",), "trunc": ("trunc",),
}
BINARY = {
    "add": ("add",), "atan2": ("arctan2", "atan2"), "bitwise_and": ("bitwise_and",),
    "bitwise_left_shift": ("bitwise_left_shift", "left_shift"),
    "bitwise_or": ("bitwise_or",),
    "bitwise_right_shift": ("bitwise_right_shift", "right_shift"),
    "bitwise_xor": ("bitwise_xor",), "copysign": ("copysign",),
    "divide": ("divide", "div", "true_divide"), "equal": ("equal",),
    "floor_divide": ("floor_divide",), "greater": ("greater",),
    "greater_equal": ("greater_equal",), "hypot": ("hypot",), "less": ("less",),
    "less_equal": ("less_equal",), "logaddexp": ("logaddexp",),
    "logical_and": ("logical_and",), "logical_or": ("logical_or",),
    "logical_xor": ("logical_xor",), "maximum": ("maximum",), "minimum": ("minimum",),
    "multiply": ("multiply", "mul"), "nextafter": ("nextafter",),
    "not_equal": ("not_equal",), "pow": ("pow", "power"), "remainder": ("remainder", "mod"),
    "subtract": ("subtract", "sub"),
}


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
    for _name, _candidates in _table.items():
        _fn = engine_function(*_candidates)
        if _fn is not None:
            globals()[_name] = _make(_name, _fn)
            __all__.append(_name)

_clip = engine_function("clip")
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
