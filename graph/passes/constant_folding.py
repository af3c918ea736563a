"""Constant folding: compute, at compile time, nodes whose inputs are all constants.

Uses the registry's ``impl``. A folded constant may not exceed
``en.config.fold_size_limit_bytes``; random and side-effecting ops never fold.
Ops whose result depends only on an input's shape (their ``shape_only`` rule,
declared beside the op) fold as soon as that shape is static. All the folding in one
graph shares one budget of work and bytes (:mod:`.fold_cost`); kernel scratch
grown while folding is given back afterwards.
"""
import numpy as np

from engine import workspace
from engine.config import config
from ..ir.graph_ops import constant_op, read_variable_op, placeholder_op
from ..ir.queries import is_constant, nbytes, replace_node, static_shape
from .fold_cost import FoldBudget


def _foldable(node):
    op = node.op
    if op in (constant_op, placeholder_op, read_variable_op) or op.multiple_results:
        return False
    if node.side_effects or op.random or op.impl is None:
        return False
    if not static_shape(node.shape) or nbytes(node.shape, node.dtype) > config.fold_size_limit_bytes:
        return False
    if op.rules.get("shape_only"):
        return all(static_shape(i.shape) for i in node.inputs)
    return all(is_constant(i) for i in node.inputs)


def _input_value(node):
    if is_constant(node):
        return node.params["value"]
    # Shape-only ops read nothing but shape and dtype: a zero-stride stand-in.
    return np.broadcast_to(np.zeros((), node.dtype), node.shape)


def constant_folding(graph):
    """Replace foldable nodes by constants. Returns True if any were folded."""
    folded = 0
    budget = FoldBudget.of(graph)
    refused = budget.refused
    scratch = workspace.held_bytes()
    try:
        for node in graph.topo_order():
            if not _foldable(node) or not budget.take(node):
                continue
            value = node.op.impl(*[_input_value(i) for i in node.inputs], **node.params)
            value = np.array(value, dtype=node.dtype, copy=True)   # own its memory
            const = graph.add(constant_op, (), {"value": value}, (value.shape, value.dtype),
                              name=f"{node.name}_c", source=node.source)
            replace_node(graph, node, const)
            folded += 1
    finally:
        if workspace.held_bytes() > scratch:   # grown for a folded kernel: not needed now
            workspace.release()
    if folded:
        graph.notes.append(f"folded {folded} nodes into constants")
    if budget.refused > refused:
        graph.notes.append(f"left {budget.refused - refused} foldable nodes unfolded: the "
                           "graph's folding budget (en.config.fold_work_limit, "
                           "fold_bytes_limit) is spent")
    return bool(folded)
