"""The directed graph under :class:`~engine.graph.ir.graph.Graph`: its edges, nothing more.

The graph IR needs only edges kept in step with each node's inputs: add and remove
nodes and edges, successors and predecessors in insertion order, and whether the edges
hold a cycle. networkx's ``DiGraph`` did this, but importing networkx (about 300
modules, its backends' entry points read from the installed packages' metadata) took
0.1 s of every process's first ``en.function`` call, a fifth of a whole training step's
cold compile. These are the same dict-of-dicts (``succ[u][v]``, ``pred[v][u]``) in the
same orders.

Example:
    >>> g = DiGraph()
    >>> g.add_edge("x", "y"); g.add_edge("x", "z")
    >>> list(g.nodes), list(g.successors("x")), g.has_edge("y", "x")
    (['x', 'y', 'z'], ['y', 'z'], False)
    >>> g.add_edge("z", "x"); g.is_acyclic()
    False
"""
from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

from engine.errors import EngineError

N = TypeVar("N", bound=Hashable)


class DiGraph(Generic[N]):
    """Nodes (any hashable) and directed edges between them, each kept once."""

    def __init__(self) -> None:
        self.succ: dict[N, dict[N, None]] = {}
        self.pred: dict[N, dict[N, None]] = {}

    @property
    def nodes(self) -> Iterator[N]:
        """The nodes in the order they were added."""
        return iter(self.succ)

    def __contains__(self, node: object) -> bool:
        return node in self.succ

    def __len__(self) -> int:
        return len(self.succ)

    def add_node(self, node: N) -> None:
        if node not in self.succ:
            self.succ[node] = {}
            self.pred[node] = {}

    def add_edge(self, u: N, v: N) -> None:
        """The edge ``u -> v`` (each node added where it is new)."""
        self.add_node(u)
        self.add_node(v)
        self.succ[u][v] = None
        self.pred[v][u] = None

    def has_edge(self, u: N, v: N) -> bool:
        return v in self.succ.get(u, ())

    def remove_edge(self, u: N, v: N) -> None:
        if not self.has_edge(u, v):
            raise EngineError(f"graph edges: no edge {u!r} -> {v!r} to remove")
        del self.succ[u][v]
        del self.pred[v][u]

    def remove_node(self, node: N) -> None:
        """``node`` and every edge into or out of it."""
        if node not in self.succ:
            raise EngineError(f"graph edges: no node {node!r} to remove")
        for v in self.succ.pop(node):
            del self.pred[v][node]
        for u in self.pred.pop(node):
            del self.succ[u][node]

    def successors(self, node: N) -> Iterator[N]:
        return iter(self.succ[node])

    def is_acyclic(self) -> bool:
        """Whether no edge path leads from a node back to itself (Kahn's algorithm)."""
        waiting = {n: len(p) for n, p in self.pred.items()}
        ready = [n for n, k in waiting.items() if k == 0]
        seen = 0
        while ready:
            node = ready.pop()
            seen += 1
            for v in self.succ[node]:
                waiting[v] -= 1
                if not waiting[v]:
                    ready.append(v)
        return seen == len(waiting)
