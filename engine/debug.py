"""Debugging switches: ``en.debug.check_numerics()``."""
import contextlib

from .config import config


@contextlib.contextmanager
def check_numerics(enabled=True):
    """Within the block, raise :class:`NumericsError` at the first op (forward or
    backward) that produces NaN or Inf.

    Example:
        >>> import engine as en
        >>> with en.debug.check_numerics():  # doctest: +SKIP
        ...     en.log(en.tensor(-1.0))
        NumericsError: check_numerics: op 'log' produced NaN ...
    """
    token = config._check_numerics.set(bool(enabled))
    try:
        yield
    finally:
        config._check_numerics.reset(token)
