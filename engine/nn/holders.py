"""More containers under PyTorch's names: :class:`Identity`, :class:`ModuleDict`,
:class:`ParameterList` and :class:`ParameterDict` (``ModuleList`` and ``Sequential``
are in ``containers.py``).

Their entries are named by key or index in the parameter names, as in PyTorch
(``"blocks.conv.weight"``, ``"scales.0"``).

Example:
    >>> import engine as en
    >>> m = en.nn.ModuleDict({"enc": en.nn.Linear(4, 2, generator=0), "act": en.nn.ReLU()})
    >>> [name for name, _ in m.named_variables()]
    ['enc.weight', 'enc.bias']
    >>> p = en.nn.ParameterList([en.zeros(3), en.ones(2)])
    >>> [name for name, _ in p.named_variables()]
    ['0', '1']
"""
from ..errors import EngineError
from ..variable import Variable
from .module import Module


class Identity(Module):
    """Returns its input unchanged (any arguments to the constructor are ignored, as in
    PyTorch): a placeholder where a layer is optional.

    Example:
        >>> import engine as en
        >>> en.nn.Identity(54, unused="x")(en.tensor([1.0, 2.0])).numpy()
        array([1., 2.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def _check_key(who, key):
    if not isinstance(key, str) or not key or "." in key:
        raise EngineError(f"{who}: keys must be non-empty strings without '.', got {key!r}")
    return key


class _Keyed:
    """A dict's reading methods over ``self._items`` (ModuleDict, ParameterDict); the
    entries are the module's public items, named by their keys."""

    _items: dict

    def __contains__(self, key):
        return key in self._items

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()

    def _public_items(self):
        return iter(self._items.items())


class ModuleDict(_Keyed, Module):
    """An ordered dict of modules, named by their keys (PyTorch's ``ModuleDict``)."""

    def __init__(self, modules=None):
        super().__init__()
        self._items = {}
        if modules is not None:
            self.update(modules)

    def __setitem__(self, key, module):
        if not isinstance(module, Module):
            raise EngineError(f"ModuleDict: expected an en.nn.Module for {key!r}, got "
                              f"{type(module).__name__}")
        self._items[_check_key("ModuleDict", key)] = module
        self._changed()

    def _changed(self):
        self._items = self._items     # through __setattr__: traces that read us see the change

    def update(self, modules):
        """Add the ``(key, module)`` pairs of a mapping or an iterable of pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def __getitem__(self, key):
        return self._items[key]

    def __delitem__(self, key):
        del self._items[key]
        self._changed()

    def pop(self, key):
        """Remove ``key`` and return its module."""
        module = self._items.pop(key)
        self._changed()
        return module



def _as_variable(who, value):
    if isinstance(value, Variable):
        return value
    try:
        return Variable(value)
    except Exception as e:     # the Variable's own message says what was wrong
        raise EngineError(f"{who}: expected a Variable or an array, got "
                          f"{type(value).__name__}: {e}") from None


class ParameterList(Module):
    """A list of variables, named ``"0"``, ``"1"``, ... (PyTorch's ``ParameterList``).
    Arrays and tensors given to it become trainable variables."""

    def __init__(self, values=()):
        super().__init__()
        self._items = []
        for v in values:
            self.append(v)

    def append(self, value):
        self._items.append(_as_variable("ParameterList", value))
        self._items = self._items     # a trace reading the list sees the change
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, index):
        return self._items[index]

    def __setitem__(self, index, value):
        self._items[index] = _as_variable("ParameterList", value)
        self._items = self._items

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)

    def _public_items(self):
        return ((str(i), v) for i, v in enumerate(self._items))

    def extra_repr(self):
        return ", ".join(f"{v.dtype}{list(v.shape)}" for v in self._items)


class ParameterDict(_Keyed, Module):
    """An ordered dict of variables, named by their keys (PyTorch's ``ParameterDict``)."""

    def __init__(self, values=None):
        super().__init__()
        self._items = {}
        if values is not None:
            pairs = values.items() if hasattr(values, "items") else values
            for key, value in pairs:
                self[key] = value

    def __setitem__(self, key, value):
        self._items[_check_key("ParameterDict", key)] = _as_variable("ParameterDict", value)
        self._items = self._items

    def __getitem__(self, key):
        return self._items[key]

