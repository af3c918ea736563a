"""Containers: :class:`Sequential` chains layers; :class:`ModuleList` holds them by index.

Example:
    >>> import engine as en
    >>> model = en.nn.Sequential(en.nn.Linear(4, 8, generator=0), en.nn.ReLU(),
    ...                          en.nn.Linear(8, 2, generator=1))
    >>> [name for name, _ in model.named_variables()]
    ['0.weight', '0.bias', '2.weight', '2.bias']
    >>> model(en.ones((3, 4), dtype="float32")).shape
    (3, 2)
"""
from ..errors import EngineError
from .module import Module


class ModuleList(Module):
    """A list of modules, named ``"0"``, ``"1"``, ... (parameters ``"0.weight"``, ...)."""

    def __init__(self, modules=()):
        super().__init__()
        self._items = []
        for m in modules:
            self.append(m)

    def append(self, module):
        if not isinstance(module, Module):
            raise EngineError(f"{type(self).__name__}: expected an en.nn.Module, got "
                              f"{type(module).__name__}")
        self._items.append(module)
        return self

    def _public_items(self):
        return ((str(i), m) for i, m in enumerate(self._items))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(self._items[index])
        return self._items[index]

    def __len__(self):
        return len(self._items)

    def __iter__(self):
        return iter(self._items)


class Sequential(ModuleList):
    """Call each layer on the previous one's output, in order."""

    def __init__(self, *layers):
        super().__init__(layers)

    def forward(self, x):
        for layer in self._items:
            x = layer(x)
        return x
