"""The graph IR: :class:`Node` and :class:`Graph` (a small API over a networkx DiGraph).

Nodes hold their inputs in order (the source of truth for arguments); the
networkx graph mirrors the data edges plus control edges (side-effect order)
so passes can ask for users, reachability and a topological order.
Passes go through this API, never through networkx directly.

Example (``en.function(f).graph_for(x)`` gives the optimized graph of a function):
    >>> import numpy as np
    >>> from engine.op import lookup
    >>> from engine.graph.ir.graph_ops import placeholder_op
    >>> g = Graph("f")
    >>> x = g.add(placeholder_op, [], {}, ((2,), np.dtype("float64")), name="x")
    >>> y = g.add(lookup("exp"), [x], {}, ((2,), np.dtype("float64")))
    >>> g.inputs, g.outputs = [x], [y]
    >>> [n.op.name for n in g.topo_order()], g.users(x)
    (['placeholder', 'exp'], [%exp])
    >>> print(g)
    graph f(%x: float64[2]) {
      %exp = exp(%x) : float64[2]
      return (%exp)
    }
"""
from __future__ import annotations

import heapq
import importlib
import itertools
import weakref
from collections.abc import Sequence
from typing import Any

from engine.backend import NUMPY, Backend
from engine.contracts import Aval, Params
from engine.op import Op

import networkx as nx
import numpy as np

from engine.errors import EngineError, describe_inputs

from .printing import graph_to_dot, graph_to_text


class Node:
    """One value-producing operation in a graph.

    Fields: ``op`` (an :class:`engine.op.Op`), ``inputs`` (nodes, in argument
    order), ``params`` (dict), ``shape``/``dtype`` (for multi-result ops,
    ``avals`` holds one ``(shape, dtype)`` per result and shape/dtype are None),
    ``name``, ``source`` (the user line that created it), ``meta`` (a dict where
    passes keep notes for the report) and ``side_effects`` (whether the node changes
    state or talks to the outside world, from its op and params: computed once here,
    read by every pass).
    """

    __slots__ = ("id", "op", "inputs", "params", "shape", "dtype", "avals", "name", "source",
                 "meta", "control_deps", "_graph", "side_effects", "__weakref__")
    id: int
    op: Op
    inputs: list[Node]
    params: Params
    shape: Any          # a Shape, None for an op of several results
    dtype: Any          # an np.dtype, None for an op of several results
    avals: tuple[Aval, ...] | None
    name: str
    source: str | None
    meta: dict[str, Any]
    control_deps: list[Node]
    side_effects: bool

    def __init__(self, id: int, op: Op, inputs: Sequence[Node], params: Params, aval: Any,
                 name: str, source: str | None, graph: Graph) -> None:
        self.id = id
        self.op = op
        self.inputs = list(inputs)
        self.params = dict(params)
        self.side_effects = op.node_side_effects(self.params)
        if op.multiple_results:
            self.avals = tuple(aval)
            self.shape = self.dtype = None
        else:
            self.avals = None
            self.shape, self.dtype = aval
        self.name = name
        self.source = source
        self.meta = {}
        self.control_deps = []
        # Weak: a graph and its nodes would otherwise form a reference cycle, and a
        # dropped graph (an evicted trace, a deleted en.function) would wait for the
        # cycle collector to free its arrays.
        self._graph = weakref.ref(graph)

    @property
    def graph(self) -> Graph | None:
        """The graph the node was added to (None once that graph is freed)."""
        return self._graph()

    @property
    def aval(self) -> Any:
        return self.avals if self.avals is not None else (self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"%{self.name}"

    def __hash__(self) -> int:
        return self.id

    def __eq__(self, other: object) -> bool:
        return self is other


class Graph:
    """A dataflow graph of :class:`Node`s with ordered inputs and outputs."""

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self._g = nx.DiGraph()
        self._ids = itertools.count()
        self.inputs: list[Node] = []        # placeholder nodes, in call order
        self.outputs: list[Node] = []       # nodes, flattened
        self.output_tree: Any = None  # pytree TreeDef of the outputs
        # Inputs the traced function wrote (positions in ``inputs``): their new values
        # are the last outputs, after the ``output_tree``'s, and a call writes them back.
        self.written_inputs: list[int] = []
        self.variables: list[Any] = []     # captured variables, in first-use order
        self.names: set[str] = set()
        self._next_suffix: dict[str, int] = {}  # base name -> the suffix to try first
        self.notes: list[Any] = []         # what passes did, read by the optimization report
        self.memory_plan: Any = None  # set by the memory_planning pass; lowering takes it
        self.backend: Backend = NUMPY  # where its kernels run (en.function sets the caller's)

    # -- building ---------------------------------------------------------
    def add(self, op: Op, inputs: Sequence[Node], params: Params, aval: Any,
            name: str | None = None, source: str | None = None) -> Node:
        """Create a node and add it with its data edges. Returns the node."""
        nid = next(self._ids)
        name = self._unique_name(name or op.name)
        node = Node(nid, op, inputs, params, aval, name, source, self)
        self._g.add_node(node)
        for inp in node.inputs:
            self._check_member(inp)
            self._g.add_edge(inp, node)
        return node

    def add_control_dep(self, node: Node, before: Node) -> None:
        """Make ``node`` run after ``before`` (side-effect ordering)."""
        if before is node or before in node.control_deps:
            return
        node.control_deps.append(before)
        self._g.add_edge(before, node)

    def _unique_name(self, base: str) -> str:
        """``base`` made an identifier, or ``base_i`` for the first free ``i`` from the
        last one handed out for ``base``: O(1) per name however often a base repeats
        (trying ``base_1``, ``base_2``, ... from 1 made a trace quadratic)."""
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
        if not base or base[0].isdigit():
            base = "v_" + base
        name = base
        if name in self.names:
            i = self._next_suffix.get(base, 1)
            name = f"{base}_{i}"
            while name in self.names:     # taken by a name given explicitly
                i += 1
                name = f"{base}_{i}"
            self._next_suffix[base] = i + 1
        self.names.add(name)
        return name

    def _check_member(self, node: Node) -> None:
        if node.graph is not self or node not in self._g:
            raise EngineError(f"node {node.name} does not belong to graph {self.name}")

    # -- queries ------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        return list(self._g.nodes)

    def __len__(self) -> int:
        return self._g.number_of_nodes()

    def __contains__(self, node: object) -> bool:
        return node in self._g

    def users(self, node: Node) -> list[Node]:
        """Nodes that take ``node`` as a data input or run after it (control)."""
        return list(self._g.successors(node))

    def data_users(self, node: Node) -> list[Node]:
        return [u for u in self._g.successors(node) if any(i is node for i in u.inputs)]

    def topo_order(self) -> list[Node]:
        """Nodes in a topological order that keeps creation order where it can."""
        # Kahn's algorithm with the ready nodes in a heap by id: the order networkx's
        # lexicographical_topological_sort gives, without its per-node view objects.
        pred, succ = self._g.pred, self._g.succ
        waiting = {n: len(p) for n, p in pred.items()}
        ready = [(n.id, n) for n, k in waiting.items() if k == 0]   # ids are unique
        heapq.heapify(ready)
        order = []
        while ready:
            node = heapq.heappop(ready)[1]
            order.append(node)
            for user in succ[node]:
                waiting[user] -= 1
                if not waiting[user]:
                    heapq.heappush(ready, (user.id, user))
        if len(order) != len(waiting):
            raise EngineError(f"graph {self.name} has a cycle")
        return order

    # -- editing ------------------------------------------------------------
    def replace_all_uses_with(self, old: Node, new: Node) -> None:
        """Point every use of ``old`` (data inputs, control deps, outputs) at ``new``."""
        self._check_member(new)
        for user in list(self._g.successors(old)):
            user.inputs = [new if i is old else i for i in user.inputs]
            if old in user.control_deps:
                user.control_deps = [new if d is old else d for d in user.control_deps]
            self._g.remove_edge(old, user)
            if user is not new:
                self._g.add_edge(new, user)
        self.outputs = [new if o is old else o for o in self.outputs]

    def set_inputs(self, node: Node, inputs: Sequence[Node]) -> None:
        """Replace a node's data inputs, keeping the edges in step."""
        for inp in set(node.inputs):
            if inp not in node.control_deps:
                self._g.remove_edge(inp, node)
        node.inputs = list(inputs)
        for inp in node.inputs:
            self._check_member(inp)
            self._g.add_edge(inp, node)

    def drop_control_users(self, node: Node) -> None:
        """Remove ``node`` from its users' control deps, keeping the order it carried:
        each such user now runs after ``node``'s own control deps."""
        for user in list(self._g.successors(node)):
            if node in user.control_deps and not any(i is node for i in user.inputs):
                user.control_deps = [d for d in user.control_deps if d is not node]
                self._g.remove_edge(node, user)
                for dep in node.control_deps:
                    self.add_control_dep(user, dep)

    def erase(self, node: Node) -> None:
        """Remove a node that nothing uses any more."""
        if any(True for _ in self._g.successors(node)) or node in self.outputs:
            raise EngineError(f"cannot erase {node.name}: it still has users")
        if node in self.inputs:
            raise EngineError(f"cannot erase the graph input {node.name}")
        self._g.remove_node(node)
        self.names.discard(node.name)

    def copy(self, name: str | None = None,
             mapping: dict[Node, Node] | None = None) -> Graph:
        """A structurally identical graph with new nodes (params and meta copied shallowly).

        ``mapping``, if given, is filled with ``{old node: new node}``."""
        new = Graph(name or self.name)
        mapping = {} if mapping is None else mapping
        for node in self.topo_order():
            aval = node.avals if node.avals is not None else (node.shape, node.dtype)
            n = new.add(node.op, [mapping[i] for i in node.inputs], node.params, aval,
                        name=node.name, source=node.source)
            n.meta = dict(node.meta)
            for dep in node.control_deps:
                new.add_control_dep(n, mapping[dep])
            mapping[node] = n
        new.inputs = [mapping[n] for n in self.inputs]
        new.outputs = [mapping[n] for n in self.outputs]
        new.output_tree = self.output_tree
        new.written_inputs = list(self.written_inputs)
        new.variables = list(self.variables)
        return new

    def node_count(self) -> int:
        """Number of nodes, not counting inputs."""
        return len(self) - len(self.inputs)

    # -- checking -----------------------------------------------------------
    def lint(self) -> bool:
        """Check structure: a DAG, edges match inputs, arity, and each node's
        shape/dtype equals what its op's ``abstract_eval`` says. Raises EngineError."""
        if not nx.is_directed_acyclic_graph(self._g):
            raise EngineError(f"graph {self.name} has a cycle")
        for node in self._g.nodes:
            for inp in node.inputs + node.control_deps:
                if inp not in self._g or not self._g.has_edge(inp, node):
                    raise EngineError(f"lint: {node.name} uses {inp.name}, which is not wired in")
            n = node.op.n_inputs
            if n is not None and len(node.inputs) != n:
                raise EngineError(f"lint: {node.name} ({node.op.name}) has {len(node.inputs)} "
                                  f"inputs, expected {n}")
            if node.op.abstract_eval is not None and not node.meta.get("no_recheck"):
                avals = [i.aval for i in node.inputs]
                expect = node.op.abstract_eval(*avals, **node.params)
                if _norm(expect) != _norm(node.aval):
                    raise EngineError(
                        f"lint: {node.name} ({node.op.name}) records {node.aval} but its op "
                        f"gives {expect} for inputs {describe_inputs(avals) if avals else '()'}")
        for out in self.outputs:
            if out not in self._g:
                raise EngineError(f"lint: output {out.name} is not in the graph")
        return True

    def __str__(self) -> str:
        return graph_to_text(self)

    def to_dot(self) -> str:
        return graph_to_dot(self)

    def _repr_svg_(self) -> str | None:
        """The graph drawn by Graphviz's ``dot`` (None when it is not installed)."""
        return _display().graph_svg(self)

    def _repr_html_(self) -> str:
        """The drawing when ``dot`` is installed, else a table of the nodes."""
        return _display().graph_html(self)


def _norm(aval):
    """Canonical form of an aval or a tuple of avals, for comparison."""
    if len(aval) == 2 and isinstance(aval[1], np.dtype):
        return (tuple(aval[0]), aval[1])
    return tuple(_norm(a) for a in aval)


def _display():
    """The notebook display (graphviz SVG, HTML tables), imported the first time a notebook
    shows a graph: building, printing and running graphs never load it."""
    return importlib.import_module(DISPLAY_MODULE)


DISPLAY_MODULE = "engine.graph.ir.notebook"
