"""``en.compute``: the values of lazy tensors (Dask), computed together."""
import numpy as np

from .backend import Backend
from .errors import EngineError
from .tensor import Tensor, wrap


def compute(*tensors):
    """numpy-backed tensors with the values of ``tensors``, computed together:
    tensors on a lazy back end (Dask) share the work of one computation, so
    ``en.compute(loss, grad)`` reads the data once, where ``float(loss)`` and
    ``grad.numpy()`` would read it twice. numpy tensors come back as they are.

    Example:
        >>> import engine as en
        >>> a, b = en.compute(en.tensor([1.0]), en.tensor([2.0]))
        >>> a.backend.name, float(b[0])
        ('numpy', 2.0)
    """
    by_backend: dict[Backend, list[int]] = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor) or t._value is None:
            raise EngineError(f"en.compute: argument {i} is {type(t).__name__}, not a "
                              "concrete tensor")
        by_backend.setdefault(t.backend, []).append(i)
    out = list(tensors)
    for backend, where in by_backend.items():
        if backend.numpy_arrays:   # already numpy values
            continue
        for i, value in zip(where, backend.compute([tensors[i]._value for i in where])):
            value = np.asarray(value)
            out[i] = wrap(value if value.flags.c_contiguous else value.copy())
    return tuple(out)
