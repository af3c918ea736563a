"""Running a graph node by node through ``apply`` in the current mode.

Used to inline a traced body into another trace (so tapes see every op and
the body can be differentiated), and to run a graph eagerly for debugging.
"""
from engine.modes import apply, current_mode
from engine.tensor import wrap

from .graph_ops import (assign_variable_op, constant_op, placeholder_op, read_variable_op,
                        unpack_op)


def interpret(graph, inputs):
    """Evaluate ``graph`` on ``inputs`` (tensors, one per graph input) op by op.

    Returns the flat list of outputs.
    """
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"interpret: graph {graph.name} takes {len(graph.inputs)} inputs, "
                         f"got {len(inputs)}")
    env = dict(zip(graph.inputs, inputs))
    mode = current_mode()
    for node in graph.topo_order():
        if node in env:
            continue
        op = node.op
        if op is constant_op:
            env[node] = wrap(node.params["value"])
        elif op is read_variable_op:
            env[node] = mode.read_variable(node.params["var"].var)
        elif op is assign_variable_op:
            var = node.params["var"].var
            mode.assign_variable(var, env[node.inputs[0]], node.params["kind"])
            env[node] = mode.read_variable(var)
        elif op is unpack_op:
            env[node] = env[node.inputs[0]][node.params["index"]]
        elif op is placeholder_op:
            raise ValueError(f"interpret: unbound input {node.name}")
        else:
            env[node] = apply(op, *[env[i] for i in node.inputs], **node.params)
    return [env[o] for o in graph.outputs]
