"""Values a composite needs before it can choose its result's shape.

numpy's ``delete``, ``compress``, the set functions and ``trim_zeros`` give a result
whose length depends on values (an index list, a mask, the data). The composites
read those values here -- eagerly, where they exist -- and then gather with static
indices, so the result still differentiates with respect to the data. While
tracing a value that is not a constant is unknown, and they refuse with a
:class:`TracingError` naming the function, as ``en.nonzero`` and boolean masks do.

:func:`constant_like` makes the constants a composite needs on the back end of the
tensor it works on (ops never move data between back ends).

Example:
    >>> import engine as en
    >>> concrete_values("delete", en.tensor([1, 2]), "obj").tolist()
    [1, 2]
    >>> constant_like(en.tensor([1.0]).to("array_api_strict"), [0, 1]).backend.name
    'array_api_strict'
"""
import numpy as np

from ..errors import TracingError
from ..lifting import TensorLike
from ..modes import current_mode
from . import misc
from ._args import at_user_line


def concrete_values(name, x, what):
    """``x`` as a numpy array: a tensor's values (eagerly), or ``np.asarray(x)`` for
    Python and numpy values; a TracingError while tracing a tensor."""
    if not isinstance(x, TensorLike):
        return np.asarray(x)
    if not current_mode().is_concrete:
        raise TracingError(
            f"{name}: the shape of the result depends on the values of {what} "
            f"{getattr(x, '_describe', lambda: repr(x))()}, which are not known while "
            f"tracing; compute it eagerly (or pass {what} as a numpy constant){at_user_line()}")
    return np.asarray(x.numpy())


def constant_like(x, array):
    """The numpy constant ``array`` as a tensor on the back end of ``x`` (a numpy tensor,
    or a graph constant while tracing, when ``x`` is on numpy or traced)."""
    t = misc.identity(np.asarray(array))
    backend = getattr(x, "backend", None)
    if backend is None or getattr(x, "_value", None) is None or backend.numpy_arrays:
        return t
    return t.to(backend)
