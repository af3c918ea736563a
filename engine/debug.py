"""Debugging switches: ``en.debug.check_numerics()``, and ``en.debug.compare`` (a compiled
graph against eager mode, node by node)."""
import contextlib

from .config import config


@contextlib.contextmanager
def check_numerics(enabled=True):
    """Within the block, raise :class:`NumericsError` at the first op (forward or
    backward) that produces NaN or Inf. On Dask data the ops made in the block
    check each chunk when it is computed and raise :class:`ChunkError` naming the
    op, the chunk and the line (inside ``en.function`` too).

    Example:
        >>> import engine as en
        >>> with en.debug.check_numerics():
        ...     en.log(en.tensor(-1.0))
        Traceback (most recent call last):
          ...
        engine.errors.NumericsError: check_numerics: op 'log' produced NaN ...
    """
    token = config._check_numerics.set(bool(enabled))
    try:
        yield
    finally:
        config._check_numerics.reset(token)


# The en.function class, handed over by the facade (the core imports no mode).
_FUNCTION: list = []


def _use_function(get_function_class):
    """Called once by the facade: ``get_function_class()`` gives ``en.Function``."""
    _FUNCTION[:] = [get_function_class]


def compare(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` as a compiled graph and eagerly, node by node, and
    judge every intermediate against a float64 evaluation of the same ops.

    ``fn`` is an ``en.function`` (its own passes and options) or a Python function
    (compiled as ``en.function(fn)``). A gradient function's graph holds its backward
    nodes, so they are compared too. A node is wrong when its error against float64
    exceeds 4 times eager's own plus 64 units in the last place of the largest value it
    saw (``docs/guide/debugging.md``). Returns a report: ``.ok``; ``.first``, the first
    diverging node (its op, the pass or lowering that made it, the user's line, the error
    figures); ``.write_repro(path)`` writes a script of the smallest subgraph that still
    diverges, with its inputs.

    Example:
        >>> import engine as en
        >>> report = en.debug.compare(lambda x: en.tanh(x) * 2.0 + 1.0,
        ...                           en.ones(4, dtype="float32"))
        >>> report.ok, report.first
        (True, None)
    """
    cls = _FUNCTION[0]()
    function = fn if isinstance(fn, cls) else cls(fn)
    return function.compare(*args, **kwargs)
