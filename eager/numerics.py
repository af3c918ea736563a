"""The check behind ``en.debug.check_numerics()``: eager mode calls :func:`check_outputs`
after each op while the switch is on."""
import numpy as np

from engine import dtypes
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
