"""Loading a PyTorch ``state_dict`` into the matching engine model: :func:`load_torch_state_dict`.

The names are PyTorch's dotted names, which are the engine's when the model is
built the same way (``Sequential`` numbers its layers alike, attributes keep
their names). What differs is layout, and each layer type says how in a small
table, its class attribute ``_torch_layout``: ``{local name: rule}`` where the
rule is

* a tuple of axes: the PyTorch array is transposed by it (``Linear.weight`` is
  ``(out, in)`` in PyTorch, ``(in, out)`` here: ``(1, 0)``);
* a callable ``rule(module, array) -> array`` for anything else (a gate order);
* ``None``: PyTorch keeps the entry but the engine has no such variable
  (``BatchNorm``'s ``num_batches_tracked``); it is skipped.

A name missing from the table loads as it is. A layer may also rename entries
with ``_torch_names = {pytorch local name: engine local name}``. Every name,
shape and dtype is checked before any variable changes.

Example:
    >>> import numpy as np, engine as en
    >>> model = en.nn.Sequential(en.nn.Linear(3, 2, generator=0))
    >>> state = {"0.weight": np.arange(6.0, dtype="float32").reshape(2, 3),   # (out, in)
    ...          "0.bias": np.zeros(2, dtype="float32")}
    >>> _ = en.nn.load_torch_state_dict(model, state)
    >>> model[0].weight.numpy()                                            # (in, out)
    array([[0., 3.],
           [1., 4.],
           [2., 5.]], dtype=float32)
"""
import os
from collections.abc import Mapping

import numpy as np

from ..errors import ArgumentTypeError, LoadError
from . import safetensors_io
from .module import Module, check_state


def load_torch_state_dict(module, state_dict):
    """Assign ``module``'s variables from a PyTorch ``state_dict``. Returns ``module``.

    ``state_dict`` is a mapping of names to torch tensors or arrays (what
    ``torch_model.state_dict()`` returns), or the path of a safetensors file
    (``safetensors.torch.save_file(torch_model.state_dict(), path)``). Each
    entry is put in the engine's layout by its layer's ``_torch_layout``;
    floating values take the variable's float dtype. Raises ``en.LoadError``
    naming the entries that do not fit, before any variable changes.
    """
    if not isinstance(module, Module):
        raise ArgumentTypeError(f"load_torch_state_dict: expected an en.nn.Module, got "
                                f"{type(module).__name__}")
    who = f"load_torch_state_dict({type(module).__name__})"
    if isinstance(state_dict, (str, os.PathLike)):
        path = os.fspath(state_dict)
        safetensors_io.read_header(path, who)        # a clear error for a file of another kind
        state_dict = safetensors_io.read_arrays(path, who)
    if not isinstance(state_dict, Mapping):
        raise ArgumentTypeError(f"{who}: expected a state_dict (a mapping of names to "
                                f"tensors) or a safetensors path, got {type(state_dict).__name__}")
    modules = dict(module.named_modules())
    named = dict(module.named_variables())
    values = {}
    for key, value in state_dict.items():
        owner_path, _, local = key.rpartition(".")
        owner = modules.get(owner_path)
        if owner is None:       # left for check_state to report as unexpected
            values[key] = _as_numpy(value, key, who)
            continue
        rule = _inherited(type(owner), "_torch_layout").get(local, ())
        if rule is None:
            continue            # kept by PyTorch, not a variable here
        local = _inherited(type(owner), "_torch_names").get(local, local)
        name = f"{owner_path}.{local}" if owner_path else local
        values[name] = _to_engine(owner, rule, _as_numpy(value, key, who), named.get(name))
    check_state(who, named, {k: (v.shape, v.dtype) for k, v in values.items()})
    for name, var in named.items():
        var.assign(values[name])
    return module


def _inherited(cls, attr):
    """``cls``'s table ``attr`` merged over its bases' (a subclass adds or overrides rules)."""
    table = {}
    for base in reversed(cls.__mro__):
        table.update(base.__dict__.get(attr, {}))
    return table


def _as_numpy(value, key, who):
    if hasattr(value, "detach") and hasattr(value, "numpy"):    # a torch tensor
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            raise LoadError(f"{who}: {key!r} is bfloat16, which numpy cannot hold; "
                            "convert it first (tensor.float())")
        return value.numpy()
    return np.asarray(value)


def _to_engine(owner, rule, array, var):
    if callable(rule):
        array = rule(owner, array)
    elif rule:
        if len(rule) != array.ndim:
            raise LoadError(f"load_torch_state_dict: {type(owner).__name__} expects a "
                            f"{len(rule)}-d PyTorch entry, got shape {array.shape}")
        array = np.transpose(array, rule)
    if var is not None and array.dtype.kind == "f" and var.dtype.kind == "f":
        array = array.astype(var.dtype, copy=False)
    return np.ascontiguousarray(array) if array.ndim else array
