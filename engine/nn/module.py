"""The :class:`Module` base class: parameters found by walking attributes.

A module's parameters are the :class:`~engine.Variable`\\ s it holds in its
attributes, directly or inside nested modules, lists, tuples and dicts, in
the order the attributes were set. Each has a dotted name (``"0.weight"``,
``"encoder.layers.1.bias"``). Attributes whose names start with ``_`` are
private and not walked. A variable held twice (tied weights) is listed once,
under its first name.

Example:
    >>> import engine as en
    >>> class Affine(en.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = en.Variable([2.0])
    ...         self.shift = en.Variable([1.0])
    ...     def forward(self, x):
    ...         return x * self.scale + self.shift
    >>> m = Affine()
    >>> [name for name, _ in m.named_variables()]
    ['scale', 'shift']
    >>> m(en.tensor([3.0])).numpy()
    array([7.])
"""
from __future__ import annotations

import enum
import types
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import torch_spellings, trace_state
from . import autocast, module_guards
from ..errors import (EngineError, LoadError, UnimplementedError, describe_aval, format_location,
                      user_frame)
from ..tensor import Tensor
from ..variable import Variable


class Module:
    """Base class of layers and models: override ``forward``; call the module to run it.

    ``training`` (True after construction) is switched for the whole tree by
    :meth:`train` and :meth:`eval`; layers such as Dropout and BatchNorm read
    it. It is a Python value, read when a function is traced, so a traced
    function depends on it: an ``en.function`` that called a module (or read
    its ``training``) retraces when the module's ``training`` or any other plain
    setting (a number, string, bool, None, dtype or enum, a function by identity,
    or a tuple/list/dict of them) has changed since, and its retrace log names
    the setting. Each mode's trace stays cached, so switching back costs no
    retrace. Arrays held as attributes are not guarded: hold a Variable instead.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        torch_spellings.translating_init(cls)    # Dropout(p=) names rate=, and so on
        module_guards.refuse_in_traces(cls)      # a layer made inside en.function is refused

    def __init__(self) -> None:
        self.training = True

    def __getattr__(self, name):
        # Only for names not found: m.parameters() says to use m.trainable_variables.
        raise torch_spellings.missing_attribute(self, name)

    # -- mode flag and trace guards --------------------------------------------------------
    @property
    def training(self):
        trace_state.depend_on(self)     # a trace reading the flag depends on it
        return self.__dict__.get("_training", True)   # True for a subclass skipping __init__

    @training.setter
    def training(self, mode):
        self.__dict__["_training"] = mode
        trace_state.changed()

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            module_guards.check_attribute(self, name, value)   # a tensor: refused, by name
        object.__setattr__(self, name, value)
        trace_state.changed()           # a setting a trace baked in may have changed

    def _trace_state(self):
        """The plain settings forward may read (see :mod:`engine.trace_state`):
        ``training`` and every attribute holding numbers, strings, bools, None or
        containers of them; variables (read at run time), tensors and modules are
        not part of it (a submodule that runs has its own)."""
        out = []
        for name, value in vars(self).items():
            frozen = _frozen(value)
            if frozen is not _UNGUARDED:
                out.append(("training" if name == "_training" else name, frozen))
        return tuple(out)

    def _trace_label(self):
        own = self.extra_repr()
        return f"module {type(self).__name__}({own}) at {id(self):#x}"

    # -- calling --------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise UnimplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self.forward, args, kwargs)

    def _run(self, forward, args, kwargs):
        """Call ``forward`` as calling the module does: a trace being made notes that it
        depends on this module's settings, and inputs are cast to its parameters' dtype.
        AutoGraph calls a module's converted ``forward`` through here (``_calling``)."""
        trace_state.depend_on(self)
        args, kwargs = autocast.cast_inputs(self, args, kwargs)
        return forward(*args, **kwargs)

    def _calling(self, forward):
        """A callable that runs ``forward`` (a converted copy of ``self.forward``, bound)
        as calling this module runs ``self.forward``."""
        def call(*args, **kwargs):
            return self._run(forward, args, kwargs)
        return call

    def _compute_dtype(self):
        """The float dtype floating inputs are cast to before ``forward`` (see
        :mod:`engine.nn.autocast`): its own parameters' dtype; None (no cast) when it
        holds no float variable itself (containers, activations)."""
        return autocast.own_float_dtype(self)

    # -- walking the tree ---------------------------------------------------------------
    def _public_items(self):
        for name, value in vars(self).items():
            if not name.startswith("_") and name != "training":
                yield name, value

    def named_children(self) -> list[tuple[str, Module]]:
        """``(name, module)`` for the modules held directly (in attributes, lists, dicts)."""
        out = []
        for name, value in self._public_items():
            for sub, leaf in _walk(value, name):
                if isinstance(leaf, Module):
                    out.append((sub, leaf))
        return out

    def children(self) -> list[Module]:
        """The modules held directly by this one."""
        return [m for _, m in self.named_children()]

    def named_modules(self, prefix: str = "") -> list[tuple[str, Module]]:
        """``(dotted name, module)`` for this module (name ``""``) and every one below it."""
        out: list[tuple[str, Module]] = []
        seen: set[int] = set()

        def visit(module, name):
            if id(module) in seen:
                return
            seen.add(id(module))
            out.append((name, module))
            for child_name, child in module.named_children():
                visit(child, f"{name}.{child_name}" if name else child_name)

        visit(self, prefix)
        return out

    def modules(self) -> list[Module]:
        """This module and every module below it, each once."""
        return [m for _, m in self.named_modules()]

    def named_variables(self) -> list[tuple[str, Variable]]:
        """``(dotted name, Variable)`` for every variable in the tree, each listed once."""
        out: list[tuple[str, Variable]] = []
        seen: set[int] = set()
        visited: set[int] = set()

        def visit(module, prefix):
            if id(module) in visited:
                return
            visited.add(id(module))
            for name, value in module._public_items():
                for path, leaf in _walk(value, prefix + name):
                    if isinstance(leaf, Variable):
                        if id(leaf) not in seen:
                            seen.add(id(leaf))
                            out.append((path, leaf))
                    elif isinstance(leaf, Module):
                        visit(leaf, path + ".")

        visit(self, "")
        return out

    @property
    def variables(self) -> list[Variable]:
        """Every variable (trainable or not, such as BatchNorm's running statistics)."""
        return [v for _, v in self.named_variables()]

    @property
    def trainable_variables(self) -> list[Variable]:
        """The variables an optimizer should update (``trainable=True``)."""
        return [v for _, v in self.named_variables() if v.trainable]

    def num_parameters(self, trainable_only: bool = False) -> int:
        """The number of scalar entries in the (trainable) variables."""
        vs = self.trainable_variables if trainable_only else self.variables
        return int(sum(int(np.prod(v.shape)) for v in vs))

    # -- modes --------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Put this module and every module below it in training mode. Returns ``self``."""
        for m in self.modules():
            m.training = bool(mode)
        return self

    def eval(self) -> Module:
        """Put the whole tree in evaluation mode (``train(False)``). Returns ``self``."""
        return self.train(False)

    # -- state ---------------------------------------------------------------------------
    def state_dict(self) -> OrderedDict[str, np.ndarray]:
        """An ordered ``{dotted name: numpy array}`` copy of every variable's value."""
        return OrderedDict((name, np.array(v.numpy(), copy=True))
                           for name, v in self.named_variables())

    def load_state_dict(self, state: Mapping[str, Any]) -> Module:
        """Assign every variable from ``state`` (as :meth:`state_dict` makes it).

        The names must match exactly and each value must have its variable's
        shape and dtype; anything else raises ``en.LoadError`` naming the
        entries, before any variable changes.
        """
        named = OrderedDict(self.named_variables())
        check_state(type(self).__name__, named,
                    {k: (np.shape(v), np.asarray(v).dtype) for k, v in state.items()})
        for name, var in named.items():
            var.assign(np.asarray(state[name]))
        return self

    # -- printing --------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses (its settings); override per layer."""
        return ""

    def __repr__(self):
        children = self.named_children()
        own = self.extra_repr()
        count = self.num_parameters()
        suffix = f"  # {count:,} parameters" if count else ""
        if not children:
            return f"{type(self).__name__}({own}){suffix}"
        lines = [f"{type(self).__name__}({own}{',' if own else ''}{suffix}"]
        for name, child in children:
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {text}")
        lines.append(")")
        return "\n".join(lines)


def input_error(cls, message, x=None):
    """``cls(message)``, naming ``x`` (as ``float32[3,5]``) and the user's line that called in.

    Example:
        >>> import engine as en
        >>> err = input_error(en.ShapeError, "Linear: expected 4 features", en.ones((3, 5)))
        >>> str(err).splitlines()[0]
        'Linear: expected 4 features, got float64[3,5]'
    """
    if x is not None:
        message = f"{message}, got {describe_aval((tuple(x.shape), x.dtype))}"
    return cls(f"{message}\n  at {format_location(user_frame())}")


def check_state(who, named, entries):
    """Raise ``LoadError`` unless ``entries`` ({name: (shape, dtype)}) fits ``named`` variables."""
    missing = [k for k in named if k not in entries]
    unexpected = [k for k in entries if k not in named]
    problems = []
    if missing:
        problems.append(f"missing {missing}")
    if unexpected:
        problems.append(f"unexpected {unexpected}")
    for name, var in named.items():
        if name in entries:
            shape, dtype = entries[name]
            if tuple(shape) != tuple(var.shape) or np.dtype(dtype) != var.dtype:
                problems.append(f"{name!r} is {np.dtype(dtype)}{list(shape)}, the module's "
                                f"variable is {var.dtype}{list(var.shape)}")
    if problems:
        raise LoadError(f"{who}: the saved state does not match the module: "
                        + "; ".join(problems))


_UNGUARDED = object()
# Values compared by value (numbers, strings, dtypes, enums) or by identity (a function
# held as a setting, such as an activation).
_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.generic, np.dtype, enum.Enum,
          types.FunctionType, types.BuiltinFunctionType, np.ufunc)


def _frozen(value):
    """``value`` as a hashable guard value, or ``_UNGUARDED`` for what a trace reads at
    run time (variables), guards itself (modules) or cannot be compared cheaply."""
    if isinstance(value, (Variable, Module, Tensor, np.ndarray)):
        return _UNGUARDED
    if isinstance(value, _PLAIN):
        # NaN never equals itself: one key for it, or every call would retrace.
        return ("nan",) if isinstance(value, (float, np.floating)) and value != value else value
    if isinstance(value, (tuple, list)):
        items = tuple(_frozen(v) for v in value)
        return _UNGUARDED if any(v is _UNGUARDED for v in items) else (type(value).__name__, items)
    if isinstance(value, dict):
        items = tuple((k, _frozen(v)) for k, v in value.items())
        return _UNGUARDED if any(v is _UNGUARDED for _, v in items) else ("dict", items)
    return _UNGUARDED


def _walk(value, path):
    """``(dotted path, leaf)`` for the Variables and Modules in ``value`` (lists/dicts opened)."""
    if isinstance(value, (Variable, Module)):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}.{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                if isinstance(item, (Variable, Module)):
                    raise EngineError(f"module attribute {path!r}: dict keys holding variables "
                                      f"or modules must be strings, got {key!r}")
                continue
            yield from _walk(item, f"{path}.{key}")
