"""A bias added to every step of a batched product is added once, to the whole product.

After ``batch_products`` has made the steps' products ``x_t @ W`` one product ``P``
(each step's result a slice of rows of it), a cell that adds a bias at every step,
``x_t @ W + h @ U + b``, still pays one broadcasting add per step; at a (32, 64)
block that add costs 1.8 us, twice a plain one. Where every step adds the same
``b`` (a vector over the columns), either to its slice (``p_t + b``) or to the
slice plus one other term (``(p_t + y_t) + b``, as Python's left-to-right sum
traces it), the steps instead read slices of ``P + b`` (one add over all rows)
and add ``y_t`` to them: ``(p_t + b) + y_t``. The sum is reassociated, so results
agree to rounding, as the batched product's own do.

Example::

    %s = add(%getitem, %matmul_1)               %biased = add(%matmul_3, %b)
    %pre = add(%s, %b)                 ->       %getitem_4 = getitem(%biased, rows 0:32)
                                                %pre = add(%getitem_4, %matmul_1)
"""
from engine import ops

from ..ir.queries import remove_node


def fold_bias(graph, product, parts, add_node):
    """Fold a bias every one of ``parts`` (row slices of ``product``) is added into
    ``product``; ``add_node(op, inputs, params, like)`` makes nodes as the caller does.
    Returns True if it was folded."""
    plans = [_bias_use(graph, part) for part in parts]
    if None in plans or len({id(plan[0]) for plan in plans}) != 1:
        return False
    # Each step's adds are its own, and its other term is no step of this product (that
    # one would be rewritten too).
    adds = [a for _, inner, outer, _ in plans for a in (inner, outer) if a is not None]
    if len(set(adds)) != len(adds) or any(other in parts for *_, other in plans):
        return False
    bias = plans[0][0]       # one row of the product's columns and dtype (_broadcast_row)
    if _depends_on(bias, set(parts) | {product}):
        return False
    biased = add_node(ops.add_op, [product, bias], {}, product)
    for part, (_, inner, outer, other) in zip(parts, plans):
        step = add_node(ops.getitem_op, [biased], dict(part.params), part)
        if inner is None:             # p_t + b
            graph.replace_all_uses_with(outer, step)
        else:                         # (p_t + y_t) + b  ->  (p_t + b) + y_t
            graph.replace_all_uses_with(outer, add_node(ops.add_op, [step, other], {}, outer))
        for node in (outer, inner, part):     # each one's only user is gone now
            if node is not None:
                remove_node(graph, node)
    return True


def _bias_use(graph, part):
    """``(b, inner, outer, y)`` where ``part``'s one use ``outer`` adds ``b`` to it
    (``inner`` and ``y`` None), or where its one use ``inner`` adds ``y`` and the one
    use of that, ``outer``, adds ``b``; else None."""
    add = _only_add_user(graph, part)
    if add is None:
        return None
    other = add.inputs[1] if add.inputs[0] is part else add.inputs[0]
    if _broadcast_row(other, part):
        return other, None, add, None
    if tuple(other.shape) != tuple(part.shape) or other.dtype != part.dtype:
        return None
    outer = _only_add_user(graph, add)
    if outer is None:
        return None
    bias = outer.inputs[1] if outer.inputs[0] is add else outer.inputs[0]
    if not _broadcast_row(bias, part):
        return None
    return bias, add, outer, other


def _only_add_user(graph, node):
    users = graph.users(node)
    if len(users) != 1 or node in graph.outputs:
        return None
    user = users[0]
    if user.op is not ops.add_op or len(user.inputs) != 2 or user.side_effects or \
            user.inputs[0] is user.inputs[1] or tuple(user.shape) != tuple(node.shape) or \
            user.dtype != node.dtype:
        return None
    return user


def _broadcast_row(bias, part):
    """Whether ``bias`` is one row added to every row of ``part`` (its shape (n,) or (1, n))."""
    return bias.shape is not None and bias.dtype == part.dtype and \
        tuple(bias.shape) in ((part.shape[-1],), (1, part.shape[-1]))


def _depends_on(node, targets):
    """Whether ``node`` is computed from any of ``targets`` (walking its inputs)."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n in targets:
            return True
        for i in n.inputs:
            if id(i) not in seen:
                seen.add(id(i))
                stack.append(i)
    return False
