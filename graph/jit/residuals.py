"""Saving a taped call's intermediate values for its backward pass, so nothing runs twice.

A compiled function called under an eager ``GradientTape`` is recorded as one op
whose VJP is a backward graph. Traced as it first is, that graph re-runs the
forward computation from the call's inputs (and the values a re-run could not
reproduce: variable reads, random draws) before applying the ops' VJPs. This
module splits such a traced backward graph ``B`` in two, as JAX's partial
evaluation does:

* the *primal part*: the nodes that do not depend on the output cotangents. The
  forward graph computes them instead (they are mostly its own values: common
  subexpression elimination merges the copies) and returns the *cut*, the
  primal values that the rest reads, as extra results of the call;
* the *cotangent part*: the rest, a graph taking the cut values as inputs.

For an RNN cell called in an eager loop the backward then no longer repeats the
cell's matrix products. The cut values live until the tape's backward pass, as
a tape's saved activations do in PyTorch.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, w: en.sum(en.tanh(x @ w)))
    >>> x, w = en.ones((2, 3)), en.full((3, 4), 0.5)
    >>> for _ in range(4):   # the third backward splits its graph; the fourth call saves
    ...     with en.GradientTape() as tape:
    ...         tape.watch(w)
    ...         y = f(x, w)
    ...     g = tape.gradient(y, w)
    >>> round(float(g.numpy()[0, 0]), 6)
    0.361413
"""
from ..ir.graph_ops import constant_op, placeholder_op, read_variable_op
from ..ir.graph import Graph, Node
from ..ir.queries import is_view


class Split:
    """The two parts of a backward graph (see the module docstring).

    ``forward`` is the forward graph (unoptimized) with the cut values appended to
    its outputs; ``cotangent`` takes the backward's own inputs, then the cut
    values, and returns the backward's outputs; ``n_cut`` is the cut's length.
    """

    def __init__(self, forward, cotangent, n_cut):
        self.forward = forward
        self.cotangent = cotangent
        self.n_cut = n_cut


def _cotangent_dependent(backward, n_primal_inputs):
    """The nodes of ``backward`` that depend on an output cotangent (its inputs from
    position ``n_primal_inputs`` on)."""
    dependent = set(backward.inputs[n_primal_inputs:])
    for node in backward.topo_order():
        if node not in dependent and any(i in dependent for i in node.inputs):
            dependent.add(node)
    return dependent


def split_backward(forward, backward, input_sources):
    """Split ``backward`` for ``forward``, or return None where it cannot be split.

    ``forward``: the unoptimized forward graph with residual outputs (its own
    outputs, then the replayed values), a copy the caller owns: the primal part
    is added to it, and it is what ``Split.forward`` holds. ``backward``: the traced backward graph,
    whose inputs are the call's inputs, the variables' values, the replayed
    values, then the output cotangents. ``input_sources`` gives, for each
    backward input before the cotangents, the forward node holding the same
    value (an input, a replayed node), or None where no node does (the
    backward's primal part must then not read it).
    """
    n_primal = len(input_sources)
    dependent = _cotangent_dependent(backward, n_primal)
    order = backward.topo_order()
    primal = [n for n in order if n not in dependent and n.op is not placeholder_op]
    if any(n.side_effects or n.control_deps for n in primal):
        return None
    # Views of what the cotangent part has (its inputs, constants, other such views)
    # are made again there: keeping them would hand over a second reference per call.
    remade = set(n for n in backward.inputs)
    for node in primal:
        if node.op is constant_op or (is_view(node) and all(i in remade for i in node.inputs)):
            remade.add(node)
    outputs = set(backward.outputs)
    cut = [n for n in primal if n not in remade and n.avals is None and
           (n in outputs or any(u in dependent for u in backward.data_users(n)))]
    if not cut:
        return None
    new_forward = _forward_with_cut(forward, backward, primal, cut, input_sources)
    if new_forward is None:
        return None
    return Split(new_forward, _cotangent_graph(backward, dependent | remade, cut), len(cut))


def _forward_with_cut(graph, backward, primal, cut, input_sources):
    """``graph`` (the forward) made to compute the ``primal`` nodes of ``backward`` too
    and return the ``cut`` ones after its own outputs; None where a primal node reads
    a value the forward does not hold (checked before anything is added)."""
    at = {p: s for p, s in zip(backward.inputs, input_sources) if s is not None}
    available = set(at)
    for node in primal:
        if any(i not in available for i in node.inputs):
            return None
        available.add(node)
    for node in primal:
        at[node] = _copy_node(graph, node, [at[i] for i in node.inputs])
    graph.outputs = graph.outputs + [at[n] for n in cut]
    return graph


def _copy_node(graph, node, inputs):
    """A node of ``graph`` doing what ``node`` (of another graph) does, on ``inputs``."""
    aval = node.avals if node.avals is not None else (node.shape, node.dtype)
    copied = graph.add(node.op, inputs, node.params, aval, name=node.name, source=node.source)
    copied.meta = dict(node.meta)
    return copied


def _cotangent_graph(backward, kept, cut):
    """The nodes of ``backward`` in ``kept`` (those that depend on the cotangents, and
    the constants and views made again), with the ``cut`` values as inputs after the
    backward's own."""
    graph = Graph(f"{backward.name}_cotangent")
    graph.backend = backward.backend
    at = {}
    for node in backward.inputs:
        at[node] = graph.add(placeholder_op, (), {}, (node.shape, node.dtype), name=node.name)
    for node in cut:
        at[node] = graph.add(placeholder_op, (), {}, (node.shape, node.dtype),
                             name=f"saved_{node.name}")
    graph.inputs = [at[n] for n in backward.inputs] + [at[n] for n in cut]
    for node in backward.topo_order():
        if node in at:
            continue
        if node not in kept:
            continue         # primal: a cut value, or one the cotangents do not read
        at[node] = _copy_node(graph, node, [at[i] for i in node.inputs])
    graph.outputs = [at[o] for o in backward.outputs]
    graph.output_tree = backward.output_tree
    graph.variables = list(backward.variables)
    return graph


def variable_read_sources(forward, variables):
    """For each variable, the forward's node that read it (its first read), or None."""
    first: dict[int, Node] = {}     # id(variable) -> its first read
    for node in forward.topo_order():
        if node.op is read_variable_op:
            first.setdefault(id(node.params["var"].var), node)
    return [first.get(id(v)) for v in variables]
