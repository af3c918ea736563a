"""Running a graph node by node through ``apply`` in the current mode.

Used to inline a traced body into another trace (so tapes see every op and
the body can be differentiated), and to run a graph eagerly for debugging.
"""
from engine.autodiff.custom import CUSTOM_GRADIENT
from engine.modes import apply, current_mode, read_variable
from engine.recording import active_tapes, record
from engine.tensor import wrap

from ..ir.graph_ops import (assign_variable_op, constant_op, placeholder_op, read_variable_op,
                        unpack_op)
from .subgraph import SubGraph
from engine.errors import InvalidArgumentError


def replay_nodes(graph, variables=None):
    """Nodes whose values a re-run could not reproduce, in schedule order.

    Random draws, values produced by side effects, and reads of variables
    (all of them, or only those in ``variables``). A backward pass that
    re-evaluates a graph feeds these from the forward pass instead (see
    ``interpret(..., replay=...)``), so it draws no new numbers and repeats
    no effects.
    """
    out = []
    for node in graph.topo_order():
        if node.op is read_variable_op:
            if variables is None or any(v is node.params["var"].var for v in variables):
                out.append(node)
        elif node.op.random:
            out.append(node)
        elif node.op is unpack_op and node.inputs[0].side_effects:
            out.append(node)
        elif node.side_effects and not node.op.multiple_results and graph.data_users(node):
            out.append(node)
    return out


def interpret(graph, inputs, replay=None):
    """Evaluate ``graph`` on ``inputs`` (tensors, one per graph input) op by op.

    With ``replay`` (a dict ``{node: tensor}``) the graph is re-evaluated for a
    backward pass: those nodes take the given values and side effects are not
    run again. Returns the flat list of outputs.
    """
    if len(inputs) != len(graph.inputs):
        raise InvalidArgumentError(f"interpret: graph {graph.name} takes {len(graph.inputs)} inputs, "
                         f"got {len(inputs)}")
    env = dict(zip(graph.inputs, inputs))
    if replay:
        env.update(replay)
    mode = current_mode()
    # Under a tape a traced custom-gradient call runs again, so its rule is recorded.
    taped = bool(active_tapes())
    for node in graph.topo_order():
        if node in env:
            continue
        if replay is not None and node.side_effects:
            # It ran in the forward pass; its values come from ``replay``.
            if taped and node.op.multiple_results:
                _record_replayed(graph, node, env)
            continue
        call = node.meta.get(CUSTOM_GRADIENT) if taped else None
        if call is not None and all(i in env for i in call.inputs):
            env.update(zip(call.outputs, call.rerun([env[i] for i in call.inputs])))
            continue
        env[node] = evaluate(mode, node, [env[i] for i in node.inputs])
    return [env[o] for o in graph.outputs]


def _record_replayed(graph, node, env):
    """Record on the tapes a construct with effects (a loop whose body writes a variable)
    whose results the forward pass gave (``env``), so gradients still flow through it:
    its VJP reads what it needs (its stacked carries and reads) from those results."""
    outs = {u.params["index"]: env.get(u) for u in graph.data_users(node)
            if u.op is unpack_op}
    n_out = len(node.avals)
    if sorted(outs) != list(range(n_out)) or any(v is None for v in outs.values()):
        return    # a result nothing unpacked: no gradient through it, as before
    record(node.op, [env[i] for i in node.inputs], tuple(outs[k] for k in range(n_out)),
           node.params)


def evaluate(mode, node, args, params=None):
    """``node`` run in ``mode`` on ``args`` (its inputs' values), with ``params``
    in place of the node's own when given."""
    op = node.op
    params = node.params if params is None else params
    if op is constant_op:
        if hasattr(mode, "constant"):   # tracing: the graph's own constant, of no back end
            return mode.constant(params["value"], name=node.name)
        return wrap(params["value"])
    if op is read_variable_op:
        return read_variable(params["var"].var, mode)
    if op is assign_variable_op:
        var = params["var"].var
        mode.assign_variable(var, args[0], params["kind"], *args[1:])
        return read_variable(var, mode)
    if op is unpack_op:
        return args[0][params["index"]]
    if op is placeholder_op:
        raise InvalidArgumentError(f"interpret: unbound input {node.name}")
    outs = apply(op, *args, **params)
    if op.multiple_results and not mode.is_concrete:   # a control-flow node was traced
        _inline_effects(mode, node, outs)
    return outs


def _inline_effects(mode, node, outs):
    """What tracing a control-flow construct does beyond adding its node: the enclosing
    graph learns the bodies' variables, and the node is ordered by the variables its
    bodies read and assign."""
    subs = [p for p in node.params.values() if isinstance(p, SubGraph)]
    for sub in subs:
        for var in sub.variables:
            mode._use_variable(var)
    if not len(outs):
        return
    # The new node's effects come from its bodies (its params): it was ordered when added.
    mode.order_body_variables(outs[0]._node.inputs[0], subs)
