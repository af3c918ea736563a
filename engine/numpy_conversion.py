"""Refusing to turn a tensor that a gradient tape differentiates into a numpy array.

numpy reaches a tensor's values through ``__array__`` wherever it needs an
array and the engine's dispatch does not apply: ``np.asarray(w)``,
``ndarray.dot(w)``, ``buf[:] = w``. What it gets is a constant: the computations
made from it are invisible to the tape, and the gradient silently misses them
(``grad(lambda w: np.sum(np.asarray(w) * w))`` gave ``w``, not ``2 w``). PyTorch
refuses ``.numpy()`` on a tensor that requires grad and JAX refuses to convert
a tracer; here the implicit conversion raises, naming the user's line.

Only conversions asked by code outside the engine are refused: the engine
reads values on purpose (constants, shapes, printing). The explicit ways to
take the values as a constant stay open: ``t.numpy()``, ``float(t)``,
``int(t)``, ``t.item()``, ``t.tolist()``, and ``en.stop_gradient(t)``.

Example:
    >>> import numpy as np
    >>> import engine as en
    >>> w = en.tensor([1.0, 2.0])
    >>> with en.GradientTape() as tape:
    ...     tape.watch(w)
    ...     y = np.ones(2).dot(w)
    Traceback (most recent call last):
      ...
    engine.errors.NotDifferentiableError: converting a float64[2] tensor ...
"""
import os
import sys
import types

import numpy as np

from .errors import NotDifferentiableError, format_location, is_engine_file
from .ops.misc import stop_gradient_op
from .recording import active_tapes

_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep


def differentiated(x):
    """Whether an active, recording tape differentiates ``x``: it watches it, or
    recorded it made from a watched tensor by an op other than ``stop_gradient``."""
    for tape in active_tapes():
        watched = tape._watched
        if tape._recording and watched is not None and id(x) in watched \
                and not _stopped(tape, x):
            return True
    return False


def _stopped(tape, x):
    """Whether ``tape`` recorded ``x`` as ``stop_gradient``'s result (the explicit constant)."""
    for rule, _, out, _ in reversed(tape._entries):
        if out is x:
            return rule is stop_gradient_op
    return False


def check_conversion(x, depth=2):
    """Raise where code outside the engine converts ``x``, which an active tape
    differentiates, to a numpy array. ``depth``: the frame of the caller of the
    conversion method, which numpy's own Python frames may stand between."""
    if not active_tapes():
        return
    frame = _converting_frame(depth + 1)
    if frame is not None and differentiated(x):
        _refuse(x, "a GradientTape", frame)


def refuse_from_user_code(x, by, depth=2):
    """Raise where code outside the engine converts ``x``, which ``by`` (a tape, a
    transformation) differentiates, to a numpy array; ``depth`` as for ``check_conversion``."""
    frame = _converting_frame(depth + 1)
    if frame is not None:
        _refuse(x, by, frame)


def _converting_frame(depth):
    """The frame that asked numpy for the conversion, or None where it is the engine's
    (the engine reads values on purpose)."""
    frame: types.FrameType | None = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(_NUMPY_DIR):
        frame = frame.f_back
    if frame is None or is_engine_file(frame.f_code.co_filename):
        return None
    return frame


def _refuse(x, by, frame):
    where = format_location((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
    dims = ",".join("?" if d is None else str(d) for d in x.shape)
    kind = "variable" if hasattr(x, "assign") else "tensor"
    raise NotDifferentiableError(
        f"converting a {x.dtype}[{dims}] {kind} that {by} is differentiating to a "
        f"numpy array (np.asarray, an ndarray method such as .dot, or a write into a numpy "
        f"array), at {where}: numpy would compute on a constant copy, and the derivative would "
        f"silently miss every path through it. Compute with engine ops (en.*, or numpy "
        f"functions called on the tensor itself, which run as engine ops), or take the values "
        f"as a constant explicitly: t.numpy(), float(t) or en.stop_gradient(t)")


__all__ = ["check_conversion", "differentiated", "refuse_from_user_code"]
