"""einops' back end for engine tensors: ``einops.rearrange/reduce/repeat/einsum`` on them.

Written as einops documents a back end for a framework it does not ship: a
subclass of ``einops._backends.AbstractBackend`` whose ``framework_name`` is the
engine's module name. Every method calls engine ops, so the results carry
gradients and trace inside ``en.function``. Imported by
``engine/interop/einops_hook.py`` once einops is (never by ``import engine``).

Example:
    >>> import engine as en, einops
    >>> x = en.reshape(en.arange(6.0), (2, 3))
    >>> einops.reduce(x, "a b -> b", "sum")
    tensor([3., 5., 7.], shape=(3,), dtype=float64)
"""
from einops._backends import AbstractBackend

from engine import dtypes
from engine import ops
from engine.tensor import Tensor, tensor
from engine.variable import Variable

# einops' reduction names -> the engine's reductions (all take a tuple of axes)
_REDUCTIONS = {name: getattr(ops, name)
               for name in ("min", "max", "sum", "mean", "prod", "any", "all")}


class EngineBackend(AbstractBackend):
    """The einops back end of ``engine.Tensor`` and ``engine.Variable``."""

    framework_name = "engine"

    def is_appropriate_type(self, x):
        return isinstance(x, (Tensor, Variable))

    def from_numpy(self, x):
        return tensor(x)

    def to_numpy(self, x):
        return x.numpy()

    def arange(self, start, stop):
        return ops.arange(start, stop)

    def shape(self, x):
        return tuple(x.shape)

    def reshape(self, x, shape):
        return ops.reshape(x, tuple(shape))

    def transpose(self, x, axes):
        return ops.transpose(x, tuple(axes))

    def reduce(self, x, operation, axes):
        return _REDUCTIONS[operation](x, axis=tuple(axes))

    def stack_on_zeroth_dimension(self, tensors):
        return ops.stack(list(tensors))

    def add_axis(self, x, new_position):
        return ops.expand_dims(x, new_position)

    def tile(self, x, repeats):
        return ops.tile(x, tuple(repeats))

    def concat(self, tensors, axis):
        return ops.concat(list(tensors), axis=axis)

    def is_float_type(self, x):
        return dtypes.is_float(x.dtype)

    def einsum(self, pattern, *x):
        return ops.einsum(pattern, *x)
