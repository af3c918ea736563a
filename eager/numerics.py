"""The check behind ``en.debug.check_numerics()``: eager mode calls :func:`check_outputs`
after each op while the switch is on, and :func:`checked_later` for an op on a lazy
back end (Dask), whose values exist only when computed."""
import numpy as np

from engine import dtypes
from engine.errors import NumericsError, describe_inputs, format_location, user_frame
from engine.tensor import wrap_on


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


def checked_later(op, out, inputs):
    """``out`` (an op's result on a lazy back end) with each chunk checked for NaN and
    Inf when computed: :class:`~engine.errors.ChunkError` naming the op, the chunk
    and the user's line. Checking now would compute the data at every op.

    Example:
        >>> import dask.array as da, numpy as np, engine as en
        >>> x = en.tensor(da.from_array(np.array([1.0, -1.0]), chunks=1))
        >>> with en.debug.check_numerics():
        ...     y = en.sqrt(x)
        >>> try:
        ...     y.numpy()
        ... except en.ChunkError as err:
        ...     print(str(err).splitlines()[0])
        check_numerics: op 'sqrt' produced NaN in chunk 1 (1 rows) from inputs float64[2]
    """
    outs = out if isinstance(out, tuple) else (out,)
    checked = []
    for o in outs:
        if o.dtype in dtypes.FLOATS:
            message = (f"check_numerics: op '{op.name}' produced {{kind}} in chunk {{chunk}} "
                       f"({{rows}} rows) from inputs "
                       f"{describe_inputs([(t.shape, t.dtype) for t in inputs])}\n"
                       f"  at {format_location(user_frame())}")
            o = wrap_on(o.backend, o.backend.checked_finite(o._value, message))
        checked.append(o)
    return tuple(checked) if isinstance(out, tuple) else checked[0]
