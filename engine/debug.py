"""Debugging switches: ``en.debug.check_numerics()``."""
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
