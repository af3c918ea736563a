"""Batch small matrix products: many BLAS calls on small blocks become one on a tall block.

An unrolled loop repeats its products once per step. Each small product (a 32x64
block times a 64x64 weight) costs a numpy call and a BLAS call, 4 us here, about
as much as its arithmetic; 50 of them as one product on the stacked blocks take
less than half the time. Three rewrites, on 2-D float products of at most
``batched_product_max_work`` multiply-adds whose copied blocks hold at most
``batched_block_max_elements`` elements (thresholds of ``en.config.cost``; a copy must
cost less than the call it saves):

* **A shared right operand.** ``a_1 @ W, ..., a_k @ W`` where no ``a_j`` depends on
  another of the products (the inputs of every step, ``x_t @ W``) ->
  ``concat(a_1, ..., a_k) @ W``, each result a slice of rows (a view; BLAS may
  round a taller product's rows differently, by an ulp or so). Products
  that depend on one another (``h_t @ U``, carried from step to step) stay apart.
* **A sum of products.** ``a_1.T @ g_1 + ... + a_k.T @ g_k`` summed by a tree of
  ``add`` (a weight's gradient, accumulated over the steps) ->
  ``concat(a_i).T @ concat(g_i)``. It reorders a float sum the way a longer BLAS
  product would: the result agrees to rounding, not bit for bit. (A sum of
  ``g_i @ W_i`` over different weights is left alone: it would copy the weights.)
* **A sum of column sums.** ``sum(g_1, axis=0) + ... + sum(g_k, axis=0)`` (a
  bias's gradient over the steps) -> ``sum(concat(g_i), axis=0)``, reading the
  concatenation the weight's gradient made.

A concatenation of ``x[0], ..., x[T-1]`` (a sequence split into steps) is written
as a reshape of ``x``: the common cases copy only blocks made inside the graph.
Where a product could join a sum and a batch sharing its operand (``x_t.T @ g_t``
shares ``g_t`` with ``h_t.T @ g_t``), it goes to the larger.

Example (three steps, printed by ``print(en.function(f).graph_for(...))``)::

    %matmul = matmul(%getitem, %w)          %reshape = reshape(%xs, shape=(96, 64))
    %matmul_1 = matmul(%getitem_1, %w)  ->  %matmul_3 = matmul(%reshape, %w)
    %matmul_2 = matmul(%getitem_2, %w)      %getitem_3 = getitem(%matmul_3, rows 0:32) ...
"""
import functools
import math

from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise

from .batched_bias import fold_bias
from ..ir.graph import Node
from ..ir.queries import remove_node

# The thresholds are en.config.cost's: batched_product_max_work (multiply-adds of one
# product; above, a BLAS call's fixed cost is small), batched_block_max_elements (a block
# that may be copied into a concatenation) and batched_min_products (fewer stay apart:
# batching two or three saves a call or two against a copy, and an ordinary expression, a
# layer's two-term gradient, keeps its exact sums).


def batch_products(graph):
    """Batch small products sharing an operand or summed together. Returns True if any were.
    Not under ``en.config.numerics = "bitwise"``: BLAS may block a batched product's sums
    otherwise, and a batched sum of products adds in another order."""
    if bitwise():
        return False
    order = graph.topo_order()
    position = {n: k for k, n in enumerate(order)}
    outputs = set(graph.outputs)
    # A product in a sum may share an operand too; it goes to the larger batch.
    sharing = {m: len(g) for g in _shared_groups(graph, order) for m in g}
    summed = 0
    stacks: dict[tuple[int, ...], Node] = {}     # the concatenations made here, by their parts in any order
    trees = _sum_trees(graph, order, outputs)
    for root, leaves, inner in trees:
        products = [x for x in leaves if _weight_gradient_term(x) and x not in outputs and
                    len(graph.users(x)) == 1 and x.dtype == root.dtype]
        products = [x for x in products if sharing.get(x, 1) <= len(products)]
        if len(products) >= cost.batched_min_products:
            _batch_sum(graph, root, leaves, inner, products, position, stacks)
            summed += len(products)
    # Then sums of column sums (a bias's gradient over the steps): one sum of the
    # stacked blocks, which the weight's gradient has often stacked already.
    for root, leaves, inner in _sum_trees(graph, graph.topo_order(), outputs) if summed else trees:
        columns = [x for x in leaves if _small_column_sum(x) and x not in outputs and
                   len(graph.users(x)) == 1 and x.dtype == root.dtype]
        if len(columns) >= cost.batched_min_products and \
                len({tuple(c.inputs[0].shape[1:]) for c in columns}) == 1:
            _batch_column_sums(graph, root, leaves, inner, columns, position, stacks)
            summed += len(columns)
    # One batch at a time, each found on the graph the last one left: a batch makes its
    # results depend on all its inputs, so two batches chosen together could feed each
    # other (p1 -> q1 and q2 -> p2 batched as (p1, p2) and (q1, q2)).
    shared = 0
    groups = _shared_groups(graph, graph.topo_order() if summed else order)
    while groups:
        group = max(groups, key=len)
        _batch_shared(graph, group)
        shared += len(group)
        groups = _shared_groups(graph, graph.topo_order())
    if shared or summed:
        graph.notes.append(f"batched {shared} products sharing an operand, "
                           f"{summed} summed products and column sums")
    return bool(shared or summed)


def _small_product(node):
    if node.op is not ops.matmul_op or node.side_effects:
        return False
    a, b = node.inputs
    if len(a.shape) != 2 or len(b.shape) != 2 or None in a.shape or None in b.shape:
        return False
    if not (a.dtype == b.dtype == node.dtype) or node.dtype.kind != "f":
        return False
    return a.shape[0] * a.shape[1] * b.shape[1] <= cost.batched_product_max_work


def _small_block(node):
    return math.prod(node.shape) <= cost.batched_block_max_elements


def _weight_gradient_term(node):
    """A small ``a.T @ g`` whose ``a`` and ``g`` may be copied."""
    if not _small_product(node):
        return False
    left, right = node.inputs
    a = _untransposed(left)
    return a is not left and _small_block(a) and _small_block(right)


# ---- a shared right operand ----------------------------------------------------------------
def _shared_groups(graph, order):
    """Lists (``cost.batched_min_products`` or more) of small products ``a_i @ W`` of one
    ``W`` and one shape of ``a_i`` that can run as one product."""
    candidates: dict[tuple[Node, tuple], list[Node]] = {}    # (W, a's shape) -> products
    for node in order:
        if _small_product(node) and _small_block(node.inputs[0]):
            a, w = node.inputs
            candidates.setdefault((w, tuple(a.shape)), []).append(node)
    groups = []
    for members in candidates.values():
        if len(members) < cost.batched_min_products:
            continue
        chosen = _independent(graph, members)
        if len(chosen) >= cost.batched_min_products:
            groups.append(_sequence_order(chosen, lambda m: m.inputs[0]))
    return groups


def _batch_shared(graph, group):
    w = group[0].inputs[1]
    rows = _stacked(graph, [m.inputs[0] for m in group], axis=0, source=group[0].source)
    product = _add(graph, ops.matmul_op, [rows, w], {}, group[0])
    start = 0
    parts = []
    for m in group:
        n = m.shape[0]
        part = _add(graph, ops.getitem_op, [product],
                    {"spec": (("slice", start, start + n, None),)}, m)
        graph.replace_all_uses_with(m, part)
        remove_node(graph, m)
        parts.append(part)
        start += n
    # A bias every step adds to its rows is added once, to the whole product.
    fold_bias(graph, product, parts, functools.partial(_add, graph))


def _independent(graph, members):
    """The members (in topological order) that can run as one node: taken greedily, a
    member joins unless one of its inputs depends on a member already taken (the
    joined node would then feed itself)."""
    chosen, downstream = [], set()
    for m in members:
        if any(i in downstream for i in m.inputs):
            continue
        chosen.append(m)
        downstream.add(m)
        stack = [m]
        while stack:
            n = stack.pop()
            for user in graph.users(n):
                if user not in downstream:
                    downstream.add(user)
                    stack.append(user)
    return chosen


# ---- a sum of products ---------------------------------------------------------------------
def _sum_trees(graph, order, outputs):
    """``(root, leaves, inner adds)`` of every sum computed by a tree of adds."""
    trees = []
    for root in reversed(order):
        if _summing_add(root) and not _inner_add(graph, root, outputs):
            trees.append((root,) + _tree(graph, root, outputs))
    return trees


def _batch_sum(graph, root, leaves, inner, products, position, stacks):
    rest = [x for x in leaves if not any(x is p for p in products)]
    # Pairs in the order of their left operands' sources (the forward's steps), so two
    # sums over the same steps concatenate their shared blocks alike (cse merges them).
    products = sorted(products, key=lambda p: (position[_untransposed(p.inputs[0])],
                                               position[p.inputs[1]]))
    products = _sequence_order(products, lambda p: _untransposed(p.inputs[0]))
    rows = _stacked(graph, [_untransposed(p.inputs[0]) for p in products], axis=0,
                    source=products[0].source)
    lefts = _add(graph, ops.transpose_op, [rows], {"axes": (1, 0)}, None,
                 source=products[0].source, name="stacked_t")
    rights = _stacked(graph, [p.inputs[1] for p in products], axis=0, source=products[0].source)
    stacks[_parts_key(p.inputs[1] for p in products)] = rights
    _replace_sum(graph, root, inner, products, rest,
                 _add(graph, ops.matmul_op, [lefts, rights], {}, products[0]))


def _small_column_sum(node):
    """``sum(x, axis=0)`` of a small 2-D or larger ``x`` of static shape."""
    if node.op is not ops.sum_op or node.side_effects or node.params.get("keepdims"):
        return False
    x = node.inputs[0]
    axis = node.params.get("axis")
    axes = (axis,) if isinstance(axis, int) else tuple(axis) if axis is not None else None
    return len(x.shape) >= 2 and None not in x.shape and axes in ((0,), (-len(x.shape),)) \
        and x.dtype == node.dtype and _small_block(x)


def _batch_column_sums(graph, root, leaves, inner, columns, position, stacks):
    rest = [x for x in leaves if not any(x is c for c in columns)]
    blocks = [c.inputs[0] for c in columns]
    rows = stacks.get(_parts_key(blocks))      # in any order: a sum does not care
    if rows is None:
        rows = _stacked(graph, sorted(blocks, key=lambda b: position.get(b, len(position))),
                        axis=0, source=columns[0].source)
    total = _add(graph, ops.sum_op, [rows], dict(columns[0].params), columns[0])
    _replace_sum(graph, root, inner, columns, rest, total)


def _parts_key(parts):
    return tuple(sorted(p.id for p in parts))


def _replace_sum(graph, root, inner, batched, rest, total):
    """Make ``total`` (the batched leaves' sum) plus the ``rest`` stand for ``root``."""
    for x in rest:
        total = _add(graph, ops.add_op, [total, x], {}, root)
    graph.replace_all_uses_with(root, total)
    for node in [root] + inner + batched:     # users first
        remove_node(graph, node)


def _summing_add(node):
    """An ``add`` of two values of its own shape and dtype (no broadcasting)."""
    return node.op is ops.add_op and not node.side_effects and len(node.inputs) == 2 and \
        all(tuple(i.shape) == tuple(node.shape) and i.dtype == node.dtype for i in node.inputs)


def _inner_add(graph, node, outputs):
    """A summing add whose only use is inside a larger sum (its root is elsewhere)."""
    users = graph.users(node)
    return node not in outputs and len(users) == 1 and _summing_add(users[0]) and \
        users[0].dtype == node.dtype


def _tree(graph, root, outputs):
    """``(leaves, inner adds)`` of the sum ``root`` computes (inner adds users first)."""
    leaves, inner, stack = [], [], list(reversed(root.inputs))
    while stack:
        x = stack.pop()
        if _summing_add(x) and _inner_add(graph, x, outputs):
            inner.append(x)
            stack.extend(reversed(x.inputs))
        else:
            leaves.append(x)
    return leaves, inner


# ---- building the stacked operands --------------------------------------------------------
def _untransposed(node):
    if node.op is ops.transpose_op and tuple(node.params["axes"] or (1, 0)) == (1, 0) and \
            len(node.shape) == 2:
        return node.inputs[0]
    return node


def _step_of(node):
    """``(x, t)`` for ``x[t]`` (an integer index into the leading axis), else None."""
    if node.op is ops.getitem_op and len(node.inputs) == 1:
        spec = node.params["spec"]
        if len(spec) == 1 and spec[0][0] == "int":
            return node.inputs[0], spec[0][1]
    return None


def _one_sequence(parts):
    """``(x, steps)`` when every part is a step ``x[t]`` of one ``x`` of static shape
    (``steps``: each part's ``t``, from 0), else None."""
    steps = [_step_of(p) for p in parts]
    if None in steps or len({id(x) for x, _ in steps}) != 1 or None in steps[0][0].shape:
        return None
    x = steps[0][0]
    return x, [t % x.shape[0] for _, t in steps]


def _sequence_order(members, operand):
    """``members`` sorted by step when every ``operand(m)`` is a step of one sequence
    (so their concatenation can be a reshape of it); else as they are."""
    sequence = _one_sequence([operand(m) for m in members])
    if sequence is None:
        return members
    return [m for _, m in sorted(zip(sequence[1], members), key=lambda p: p[0])]


def _stacked(graph, parts, axis, source):
    """``concat(parts, axis)``; ``reshape(x)`` when ``parts`` (along axis 0) are
    ``x[0], ..., x[T-1]`` in order."""
    sequence = _one_sequence(parts) if axis == 0 else None
    if sequence is not None and sequence[1] == list(range(sequence[0].shape[0])):
        x = sequence[0]
        shape = (x.shape[0] * x.shape[1],) + tuple(x.shape[2:])
        return _add(graph, ops.reshape_op, [x], {"shape": shape}, None, source=source,
                    name="steps")
    return _add(graph, ops.concat_op, parts, {"axis": axis}, None, source=source, name="stacked")


def _add(graph, op, inputs, params, like, source=None, name=None):
    aval = op.abstract_eval(*[(i.shape, i.dtype) for i in inputs], **params)
    return graph.add(op, inputs, params, aval, name=name or (like.name if like else op.name),
                     source=source if like is None else like.source)
