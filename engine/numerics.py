"""``en.config.numerics``: how closely compiled code must follow eager mode's bits.

``"fast"`` (the default): passes and lowerings may reorder sums (fused and blocked
reductions, batched products), contract multiply-adds and use their own ``exp`` and
``tanh``; results agree with eager mode to rounding (docs/guide/numerics.md has the
table of each lowering's largest difference). ``"bitwise"``: every lowering gives
eager mode's bits exactly -- the numpy lowering, C, numba and the Dask chunked path
alike; what each pass and lowering gives up for that is in the same guide.

The setting is a guard of every trace (``engine/trace_state.py``): an ``en.function``
traced under one setting traces again under the other, and each trace stays cached.

Example:
    >>> import engine as en
    >>> en.config.numerics
    'fast'
    >>> en.config.numerics = "bitwise"
    >>> bitwise()
    True
    >>> en.config.numerics = "fast"
"""
import numpy as np

from . import dtypes, trace_state
from .errors import InvalidArgumentError

MODES = ("fast", "bitwise")


class _Numerics:
    """The process-wide setting, as an object a trace can depend on."""

    def __init__(self):
        self.value = "fast"

    def set(self, value):
        if value not in MODES:
            raise InvalidArgumentError(
                f"en.config.numerics must be one of {', '.join(map(repr, MODES))}, "
                f"got {value!r}")
        if value != self.value:
            self.value = value
            trace_state.changed()

    def _trace_state(self):
        return (("numerics", self.value),)

    def _trace_label(self):
        return "en.config"


NUMERICS = _Numerics()


def bitwise():
    """Whether compiled code must give eager mode's bits (``en.config.numerics``)."""
    return NUMERICS.value == "bitwise"


def c_ordered(x):
    """``x`` (a numpy array), C-ordered under bitwise numerics when it is a strided
    floating value: numpy pairs a sum's terms by the memory layout (down a transposed
    view's leading axis pairwise, down a C-ordered one row after row; einsum and its BLAS
    products likewise), and the compiled lowerings hold their values C-ordered (a whole C
    graph copies strided inputs), so eager reduces what they reduce. Otherwise ``x``."""
    if NUMERICS.value == "bitwise" and x.dtype in dtypes.INEXACT and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


def note_use():
    """Say that the trace being made depends on the setting (``en.function`` calls it)."""
    trace_state.depend_on(NUMERICS)
