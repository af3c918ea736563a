"""Finding the engine function behind a standard name.

The namespace adapts the engine's public functions; it never implements an op
itself. A standard function whose engine function does not exist (yet) is left
out of the namespace, so ``hasattr(xp, name)`` tells the truth and the
conformance suite reports the gap instead of calling a stub.
"""
import engine as _en


def engine_function(*names):
    """The first of ``names`` that the public ``engine`` namespace defines, or None.

    Example:
        >>> engine_function("arccos_not_there", "exp").__name__
        'exp'
    """
    for name in names:
        fn = getattr(_en, name, None)
        if callable(fn):
            return fn
    return None


def export(namespace, name, fn):
    """Bind ``fn`` as ``name`` in ``namespace`` (a module's globals) when it exists."""
    if fn is not None:
        namespace[name] = fn
    return fn
