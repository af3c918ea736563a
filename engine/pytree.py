"""Flattening nested tuples (named ones too), lists and dicts of leaves, and rebuilding them.

Used wherever structures of tensors cross an API boundary: function inputs
and outputs, gradient sources, loop variables.

Example:
    >>> leaves, tree = flatten({"a": 1, "b": (2, 3)})
    >>> leaves
    [1, 2, 3]
    >>> unflatten(tree, [4, 5, 6])
    {'a': 4, 'b': (5, 6)}
"""


class TreeDef:
    """The shape of a nested structure: its container kinds, keys and leaf count."""

    __slots__ = ("kind", "keys", "children", "num_leaves", "_hash")

    def __init__(self, kind, keys, children):
        self.kind = kind          # "leaf", "none", tuple, list, dict
        self.keys = keys
        self.children = children
        self.num_leaves = (1 if kind == "leaf" else sum(c.num_leaves for c in children))
        # A treedef is part of every en.function cache key: hashed once, not per lookup
        # (a tree's hash from its children's, so the cost is one tuple per node).
        self._hash = hash((kind, keys, tuple(c._hash for c in children)))

    def _key(self):
        return (self.kind, self.keys, tuple(c._key() for c in self.children))

    def __eq__(self, other):
        if self is other:
            return True
        return (isinstance(other, TreeDef) and self._hash == other._hash
                and self.kind == other.kind and self.keys == other.keys
                and self.children == other.children)

    def __hash__(self):
        return self._hash

    def __reduce__(self):
        # Rebuilt, not restored: a type's hash differs from one process to the next.
        return TreeDef, (self.kind, self.keys, self.children)

    def __repr__(self):
        return f"TreeDef({self._key()!r})"


LEAF = TreeDef("leaf", None, ())
NONE = TreeDef("none", None, ())


def flatten(tree, is_leaf=None):
    """Return ``(leaves, treedef)``. Tuples, lists and dicts are containers; None is empty."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf)


def _flatten(tree, leaves, is_leaf):
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LEAF
    if tree is None:
        return NONE
    t = type(tree)
    if t is tuple or t is list:
        return TreeDef(t, None, tuple(_flatten(c, leaves, is_leaf) for c in tree))
    if is_namedtuple_type(t):   # e.g. en.linalg.svd's SVDResult
        return TreeDef(t, None, tuple(_flatten(c, leaves, is_leaf) for c in tree))
    if t is dict:
        keys = tuple(sorted(tree, key=repr))
        return TreeDef(dict, keys, tuple(_flatten(tree[k], leaves, is_leaf) for k in keys))
    leaves.append(tree)
    return LEAF


def is_namedtuple_type(t):
    """Whether ``t`` is a class made by ``collections.namedtuple`` (or typing.NamedTuple)."""
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields")


def unflatten(treedef, leaves):
    """Rebuild the structure described by ``treedef`` from ``leaves``."""
    it = iter(leaves)
    out = _unflatten(treedef, it)
    return out


def _unflatten(td, it):
    if td.kind == "leaf":
        return next(it)
    if td.kind == "none":
        return None
    if td.kind is dict:
        return {k: _unflatten(c, it) for k, c in zip(td.keys, td.children)}
    if is_namedtuple_type(td.kind):
        return td.kind(*[_unflatten(c, it) for c in td.children])
    return td.kind(_unflatten(c, it) for c in td.children)
