"""Finding the engine function behind a standard name.

The namespace adapts the engine's public functions; it never implements an op
itself. A standard name is the engine function's own name unless the function
declares another beside its definition (``also_named(sub, array_api="subtract")``,
see ``engine/names.py``); the lookup is generated from those declarations. A
standard function whose engine function does not exist (yet) is left out of the
namespace, so ``hasattr(xp, name)`` tells the truth and the conformance suite
reports the gap instead of calling a stub.
"""
import engine as _en
from engine import names as _names


def standard_function(name):
    """The engine function behind the standard's ``name``, or None; a name of the
    ``linalg`` or ``fft`` extension is qualified (``"linalg.trace"``).

    Example:
        >>> standard_function("acos").__name__, standard_function("linalg.matrix_norm").__name__
        ('arccos', 'norm')
        >>> standard_function("not_there") is None
        True
    """
    fn = _names.array_api_aliases().get(name)
    if fn is not None:
        return fn
    space, _, own = name.rpartition(".")
    namespace = getattr(_en, space, None) if space else _en
    fn = getattr(namespace, own, None)
    return fn if callable(fn) and not isinstance(fn, type) else None
