"""Layers compute in their parameters' float dtype (Keras's autocast), and say so once.

numpy makes float64 arrays; a float64 batch given to a float32 layer would promote
the layer's output, and every layer after it, to float64 with no word (slower, twice
the memory, and not what was trained or exported). So a module whose own parameters
are floats casts a floating input (a tensor or numpy array, or one inside a tuple or
list argument) of another float dtype to theirs, differentiably (the gradient comes
back in the input's dtype), and warns the first time each module does it, at the
user's line. Build the model with ``dtype=...`` or call ``en.set_default_dtype``
first to compute in another dtype.

Example:
    >>> import warnings, numpy as np, engine as en
    >>> layer = en.nn.Linear(4, 3, generator=0)
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     layer(np.ones((2, 4))).dtype
    dtype('float32')
    >>> "cast to float32" in str(seen[0].message)
    True
"""
import warnings
import weakref

from numpy import ndarray as _ndarray

from .. import dtypes
from ..errors import describe_aval, user_frame
from ..ops.creation import cast
from ..tensor import Tensor, tensor
from ..variable import Variable

_warned: weakref.WeakSet = weakref.WeakSet()    # modules that have said so once


def own_float_dtype(module):
    """The float dtype of the variables ``module`` holds itself (not its submodules'), or None."""
    for value in vars(module).values():
        if isinstance(value, Variable) and value.dtype in dtypes.FLOATS:
            return value.dtype
    return None


def cast_inputs(module, args, kwargs):
    """``(args, kwargs)`` with floating inputs of another float dtype cast to the dtype
    ``module._compute_dtype()`` names (unchanged when it is None or none differ)."""
    target = None
    for a in args:
        if _is_float(a) or type(a) in (tuple, list):
            target = module._compute_dtype()
            break
    else:
        if not kwargs:
            return args, kwargs
        target = module._compute_dtype()
    if target is None:
        return args, kwargs
    cast_any: list[Tensor | _ndarray] = []     # the inputs cast, for the warning
    new_args = tuple(_cast_tree(a, target, cast_any) for a in args)
    new_kwargs = {k: _cast_tree(v, target, cast_any) for k, v in kwargs.items()}
    if not cast_any:
        return args, kwargs
    if module not in _warned:
        _warned.add(module)
        _warn(module, cast_any[0], target)
    return new_args, new_kwargs


def _is_float(x):
    return isinstance(x, (Tensor, _ndarray)) and x.dtype in dtypes.FLOATS


def _cast_tree(x, target, cast_any):
    if type(x) in (tuple, list):
        return type(x)(_cast_leaf(v, target, cast_any) for v in x)
    return _cast_leaf(x, target, cast_any)


def _cast_leaf(x, target, cast_any):
    if not _is_float(x) or x.dtype == target:
        return x
    cast_any.append(x)
    return cast(x if isinstance(x, Tensor) else tensor(x), target)


def _warn(module, x, target):
    where = user_frame(3)
    label = f"{type(module).__name__}({module.extra_repr()})"
    message = (f"{label}: input {describe_aval((tuple(x.shape), x.dtype))} cast to {target}, "
               f"the dtype of its parameters (build the model with dtype='{x.dtype}' or call "
               f"en.set_default_dtype('{x.dtype}') first to compute in {x.dtype}); said once "
               "per layer")
    if where is None:
        warnings.warn(message, UserWarning, stacklevel=4)
    else:
        warnings.warn_explicit(message, UserWarning, where[0], where[1])
