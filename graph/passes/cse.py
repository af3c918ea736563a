"""Common subexpression elimination by a structural key (op, params, inputs).

The operands of an op whose result does not depend on their order are keyed as a set:
forward mode writes the tangent of ``h * h`` as ``dh * h + h * dh``, two equal products.

Example:
    >>> import engine as en
    >>> f = en.function(lambda a, b: a * b + b * a, passes=["cse", "dce"])
    >>> g = f.graph_for(en.ones(3), en.ones(3))
    >>> sorted(n.op.name for n in g.nodes if n.op.name in ("mul", "add"))
    ['add', 'mul']
"""
from engine import ops
from engine.numerics import bitwise
from engine.op import freeze_params

from ..ir.queries import is_constant, replace_node
from ..ir.graph import Node
from ..ir.graph_ops import placeholder_op

_CONST_BYTES = 4096   # small constants are merged by value
# Ops whose two operands may swap without changing a bit of any result (IEEE adds and
# multiplies commute; maximum's signed zeros and logaddexp's rounding do not). Only a
# NaN's payload may differ (x86 keeps the first operand's of two NaNs): not under
# bitwise numerics.
_SYMMETRIC = (ops.add_op, ops.mul_op, ops.equal_op, ops.not_equal_op, ops.logical_and_op,
              ops.logical_or_op)


def _key(node, symmetric):
    if is_constant(node):
        v = node.params["value"]
        if v.nbytes > _CONST_BYTES:
            return None
        return ("constant", v.dtype.str, v.shape, v.tobytes())
    try:
        params = freeze_params(node.params)
        hash(params)
    except TypeError:
        return None
    inputs = tuple(i.id for i in node.inputs)
    if symmetric and node.op in _SYMMETRIC and len(inputs) == 2:
        inputs = tuple(sorted(inputs))
    return (node.op, params, inputs, tuple(d.id for d in node.control_deps))


def cse(graph):
    """Merge nodes that compute the same thing from the same inputs. Returns True if any were."""
    seen: dict[tuple, Node] = {}
    merged = 0
    symmetric = not bitwise()     # operands keyed as a set (see _SYMMETRIC)
    for node in graph.topo_order():
        if node.op is placeholder_op or node.side_effects:
            continue
        key = _key(node, symmetric)
        if key is None:
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        replace_node(graph, node, first)
        merged += 1
    if merged:
        graph.notes.append(f"merged {merged} duplicate nodes")
    return bool(merged)
