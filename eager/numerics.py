"""``check_numerics``: stop at the first op that makes NaN or Inf."""
import contextlib

import numpy as np

from engine import dtypes
from engine.config import config
from engine.errors import NumericsError, describe_inputs, format_location, user_frame


def check_outputs(op, out, inputs):
    """Raise :class:`NumericsError` if a float output of ``op`` holds NaN or Inf."""
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        v = o._value
        if v is None or v.dtype not in dtypes.FLOATS:
            continue
        if not np.isfinite(v).all():
            kind = "NaN" if np.isnan(v).any() else "Inf"
            raise NumericsError(
                f"check_numerics: op '{op.name}' produced {kind} from inputs "
                f"{describe_inputs([(t.shape, t.dtype) for t in inputs])}\n"
                f"  at {format_location(user_frame())}")


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
