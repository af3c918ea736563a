"""The bodies of control-flow nodes (``scan``, ``while_loop``, ``cond``), copied before a
pass changes them.

A body is a :class:`SubGraph` in its node's params, and ``Graph.copy`` copies params
shallowly: the graph being optimized shares its bodies with the unoptimized graph it
was copied from (which gradients, ``en.debug.compare`` and the tape's forward graph
read). A pass that changes a body changes a copy of it, owned by the node it puts
the copy in; a later round changes that copy in place.

Example:
    >>> import engine as en
    >>> f = en.function(lambda xs: en.scan(lambda c, x: (c + x, c), 0.0, xs)[0])
    >>> g = f.graph_for(en.ones(3)).copy()    # shares its bodies with the original
    >>> node = next(n for n in g.nodes if n.op.name == "scan")
    >>> body = node.params["body"]
    >>> mine = private_body(node, body)
    >>> set_body(node, "body", mine)
    >>> mine is body, mine.graph is body.graph, private_body(node, mine) is mine
    (False, False, True)
"""
import copy
import weakref
from typing import Any

from engine.pytree import LEAF, TreeDef

from ..ir.graph import Node

# Each body copy -> the node whose params hold it (weak both ways: a copy lives as long
# as its node's params hold it).
_OWNER: "weakref.WeakKeyDictionary[Any, weakref.ref[Node]]" = weakref.WeakKeyDictionary()


def bodies(node):
    """``[(param name, SubGraph)]`` of ``node``'s bodies (its op's ``bodies`` rule; none
    for most nodes)."""
    return [(k, node.params[k]) for k in node.op.rules.get("bodies", ())]


def private_body(node, body):
    """``body`` (a body of ``node``) if ``node`` owns it, else a copy ``node`` will own
    once a pass puts it in its params (``set_body``). The copy has its own graph
    (same back end) and its replayed nodes are that graph's."""
    owner = _OWNER.get(body)
    if owner is not None and owner() is node:
        body._compiled = None      # compiled before a change: compile again
        return body
    mapping: dict[Node, Node] = {}
    new = copy.copy(body)
    new.graph = body.graph.copy(mapping=mapping)
    new.graph.backend = body.graph.backend
    new.replay = [mapping[n] for n in body.replay]
    new.captures = list(body.captures)
    new.variables = list(body.variables)
    new.assigned = list(body.assigned)
    new._compiled = None
    _OWNER[new] = weakref.ref(node)
    return new


def set_body(node, key, body):
    """Put ``body`` (from ``private_body``) in ``node``'s params under ``key``."""
    if node.params.get(key) is not body:
        node.params = {**node.params, key: body}


def flat_tree(n):
    """The tree of ``n`` values returned as a flat tuple (a scan body's results)."""
    return TreeDef(tuple, None, tuple(LEAF for _ in range(n)))
