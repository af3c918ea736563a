"""Sums of per-step products: one product after the loop instead of one per step.

A scan's VJP computes each step's gradient of a captured weight, a product of two
per-step values (``h_t.T @ d_t``), and sums them over the steps; ``vmap`` of that
gradient carries per-example accumulators instead (``c' = c + h_t[:, :, None] *
d_t[:, None, :]``, a ``(32, 64, 64)`` outer product written and added each step).
Fifty products with an inner size of 32 run far below a matrix product's speed,
and the accumulator costs a read and a write of the product's size each step. The
same sum is one product over the stacked factors, with the steps as part of the
inner size (cuDNN computes an RNN's weight gradients this way)::

    sum_t h_t.T @ d_t             = reshape(H, (T*B, i)).T @ reshape(D, (T*B, j))
    sum_t h_t[:, :, None] * d_t[:, None, :] = transpose(H, (1, 2, 0)) @ transpose(D, (1, 0, 2))

This pass finds, in each scan, such a sum of a product ``P(a_t, b_t)``
(``step_products.bilinear``: ``matmul`` of two operands of two or more axes, or a
``mul`` broadcasting two values into a larger one) where

* a carry ``c`` is an accumulator, ``c' = c + P`` with ``c`` read by nothing else in
  the body and its stack by nothing outside (its final value is ``init + sum_t P_t``);
* or a per-step result ``P`` is read only by its sum over the steps (a ``sum`` over
  axis 0, or the ``summed`` param of ``scan_sums.py``).

The loop then returns ``a_t`` and ``b_t`` as per-step results (a stack the scan has
already, an ``x`` it reads or a carry's, is used as it is) and the product of the
stacks follows the loop. An accumulator of a term the loop now stacks anyway (a
bias's gradient, ``c' = c + d_t`` or ``c + sum(d_t, axis=0)``) becomes that stack's
sum. Whether it pays is ``scan_product_pays`` (its thresholds are
``engine/cost_model.py``'s): the elements the loop would newly stack per step against
the product's, the product's size, and the memory of the stacks; and each product
after the loop stays small enough for OpenBLAS not to thread it (``scan_product_chunks``).

The steps are added in another order (inside the matrix product), so the results
agree with the loop's to rounding: nothing changes under ``en.config.numerics =
"bitwise"``. It runs before ``compile_numba``: a compiled time loop writes the
smaller loop, and the product after it is a graph node like any other.

Example:
    >>> import engine as en
    >>> def f(w, hs):
    ...     step = lambda c, h: (c + en.expand_dims(h, 2) * en.expand_dims(h @ w, 1), h)
    ...     return en.scan(step, en.zeros((32, 64, 64)), hs)[0]
    >>> g = en.function(f).graph_for(en.ones((64, 64)), en.ones((50, 32, 64)))
    >>> [n.op.name for n in g.nodes if n.name.startswith("step_product")]
    ['matmul']
"""
import collections
import copy

import numpy as np

from engine import ops
from engine.cost_model import cost
from engine.numerics import bitwise
from engine.pytree import LEAF, TreeDef
from engine.shapes import normalize_axes

from ..ir.graph import Node
from ..ir.graph_ops import unpack_op
from ..ir.queries import all_equal_to, remove_node
from .dce import dce
from .step_products import Contraction, batched, bilinear, matrix_work, unpack

# One sum found: ``kind`` "carry" or "y" (a product), or "sum" (a carry adding a term
# that is no product); ``index`` the carry's or the result's, ``product`` the body node
# added up, ``factors`` from ``bilinear`` (for "sum", ``(value, axes)``: the term is
# ``value`` summed over ``axes``), ``target`` the outer node the sum replaces (the final
# carry's unpack, the sum over the steps, or a summed result's unpack), ``init`` the
# carry's initial value (None for a result).
Found = collections.namedtuple("Found", "kind index product factors target init")


def scan_product_pays(length, product_elements, new_elements, stacked_elements, itemsize):
    """Whether a scan's sum over its ``length`` steps of a per-step product of
    ``product_elements`` elements pays as one product after the loop, where the loop
    would stack ``new_elements`` more elements per step for it and ``stacked_elements``
    per step in all.

    Per step the loop then writes the factors' new stacks instead of reading and
    writing an accumulator of the product's size, and one matrix product of inner
    size ``length`` times the step's does the arithmetic of ``length`` small ones
    (whose inner size is small exactly where the factors are small beside the
    product: ``(m + n) k <= m n``). A small product is left alone (its accumulator
    stays in cache, the transposes and the call after the loop cost more than they
    save), and so are stacks beyond a memory bound.

    Example:
        >>> scan_product_pays(50, 32 * 64 * 64, 32 * 64, 32 * 64, 4)   # per example
        True
        >>> scan_product_pays(50, 64 * 64, 32 * 64, 32 * 64, 4)    # h_t.T @ d_t, batch 32
        False
    """
    return (length >= 2 and product_elements >= cost.scan_product_min_elements
            and new_elements <= cost.scan_product_stack_ratio * product_elements
            and length * stacked_elements * itemsize <= cost.scan_product_max_stack_bytes)


def scan_product_chunks(length, step_work):
    """How many runs of steps a sum over ``length`` steps of products of ``step_work``
    multiply-adds each (per matrix) is cut into, each run one product of at most
    ``cost.openblas_threaded_work`` multiply-adds: 0 where one step's product is larger.

    A product OpenBLAS threads leaves its workers spinning after the call, and on a
    loaded 2-core machine they take the cores from the loops that follow (the styles
    GRU's gradient went from 29 to 243 ms a call with its six weights' (64, 1600) @
    (1600, 64) products threaded); a larger product also keeps a graph from being
    compiled whole (``graph/lowering/graph_limits.py``). Runs of the calling thread's
    size keep most of the gain: (64, 64) @ (64, 64) products batched over 25 runs of
    two steps took 128 us against 146 for one (64, 1600) @ (1600, 64) product and 221
    for the 50 steps' products one at a time, on one thread.

    Example:
        >>> scan_product_chunks(50, 64 * 64 * 32)   # two steps a run
        25
        >>> scan_product_chunks(50, 64 * 64 * 1)    # per example: all 50 steps at once
        1
        >>> scan_product_chunks(50, 128 * 256 * 32)
        0
    """
    for steps in range(length, 0, -1):
        if length % steps == 0 and steps * step_work <= cost.openblas_threaded_work:
            return length // steps
    return 0


def _varying(body, n_carry, n_x):
    """The body's nodes that change from step to step (they read a carry or an x)."""
    graph = body.graph
    varying = set(graph.inputs[:n_carry + n_x])
    for n in graph.topo_order():
        if any(i in varying for i in n.inputs):
            varying.add(n)
    return varying


def _float_product(graph, p, varying):
    """``bilinear(p)`` if ``p`` is a float product of two per-step values, else None."""
    if p.op.multiple_results or np.dtype(p.dtype).kind != "f":
        return None
    found = bilinear(p)
    if found is None:
        return None
    (fa, _), (fb, _) = found
    if fa.dtype != p.dtype or fb.dtype != p.dtype or fa not in varying or fb not in varying:
        return None
    return found


def _accumulators(graph, node, varying, unpacks):
    """The carries of scan ``node`` that only add a product to themselves."""
    body = node.params["body"]
    bg, n_carry = body.graph, node.params["n_carry"]
    n_y = len(body.out_avals) - n_carry
    outs = bg.outputs
    found = []
    for j in range(n_carry):
        c, new = bg.inputs[j], outs[j]
        if new.op is not ops.add_op or outs.count(new) != 1 or bg.users(new) or \
                bg.users(c) != [new] or c in outs or new.inputs.count(c) != 1:
            continue
        p = new.inputs[1] if new.inputs[0] is c else new.inputs[0]
        finals = unpacks.get(j, [])
        # (an unread final carry is another pass's: dead carries)
        if p.shape != c.shape or p.dtype != c.dtype or np.dtype(p.dtype).kind != "f" or \
                p not in varying or unpacks.get(n_carry + n_y + j) or len(finals) != 1:
            continue
        factors = _float_product(bg, p, varying) \
            if bg.users(p) == [new] and p not in outs else None
        if factors:
            found.append(Found("carry", j, p, factors, finals[0], node.inputs[j]))
        else:   # a plain sum, taken where the loop stacks its terms anyway
            found.append(Found("sum", j, p, _summed_term(p), finals[0], node.inputs[j]))
    return found


def _summed_term(v):
    """``(value, axes)``: ``v`` is ``value`` summed over ``axes`` (a bias's gradient
    ``sum(d_t, axis=0)``), or ``(v, ())``."""
    if v.op is ops.sum_op and not v.params["keepdims"] and len(v.inputs) == 1:
        x = v.inputs[0]
        return x, normalize_axes(v.params["axis"], len(x.shape), "sum")
    return v, ()


def _step_sums(graph, node, varying, unpacks):
    """The per-step results of scan ``node`` that only their sum over the steps reads."""
    body = node.params["body"]
    bg, n_carry = body.graph, node.params["n_carry"]
    n_y = len(body.out_avals) - n_carry
    summed = node.params.get("summed") or ()
    found = []
    for k in range(n_y):
        p = bg.outputs[n_carry + k]
        readers = unpacks.get(n_carry + k, [])
        if bg.outputs.count(p) != 1 or bg.users(p) or len(readers) != 1:
            continue
        target = readers[0]
        if k not in summed:     # the stack itself: read only by its sum
            users = graph.users(target)
            if target in graph.outputs or len(users) != 1 or users[0].op is not ops.sum_op:
                continue
            total = users[0]
            if total.params["keepdims"] or total.dtype != p.dtype or \
                    normalize_axes(total.params["axis"], len(target.shape), "sum") != (0,):
                continue
            target = total
        if tuple(target.shape) != tuple(p.shape):
            continue
        factors = _float_product(bg, p, varying)
        if factors is not None:
            found.append(Found("y", k, p, factors, target, None))
    return found


def _candidate_scans(graph):
    for node in graph.topo_order():
        if not node.op.rules.get("summed_results") or node.side_effects:
            continue
        p = node.params
        if not isinstance(p["length"], int) or p["length"] < 2 or p["body"].replay or \
                node.control_deps or any(o is node for o in graph.outputs):
            continue
        users = graph.users(node)
        if any(u.op is not unpack_op or u.control_deps for u in users):
            continue
        yield node, users


class _Stacks:
    """Where each factor's stack comes from: an ``x`` of the scan, a carry's stack, a
    result already stacked, or a new per-step result (``new``, in order)."""

    def __init__(self, node):
        p = node.params
        self.body = p["body"]
        self.n_carry, self.n_x = p["n_carry"], p["n_x"]
        bg = self.body.graph
        n_y = len(self.body.out_avals) - self.n_carry
        summed, unread = p.get("summed") or (), p.get("unread") or ()
        self.xs = {bg.inputs[self.n_carry + i]: node.inputs[self.n_carry + i]
                   for i in range(self.n_x)}
        self.carries = {bg.inputs[j]: j for j in range(self.n_carry) if j not in unread}
        self.ys = {bg.outputs[self.n_carry + k]: k for k in range(n_y) if k not in summed}
        self.new = []

    def cost(self, factor, dropped):
        """Elements per step a new stack of ``factor`` would add (0: it has one)."""
        if factor in self.xs or factor in self.new or \
                (factor in self.carries and self.carries[factor] not in dropped[0]) or \
                (factor in self.ys and self.ys[factor] not in dropped[1]):
            return 0
        return int(np.prod(factor.shape))

    def take(self, factor, dropped):
        if self.cost(factor, dropped):
            self.new.append(factor)


def _chosen(node, found):
    """The sums worth rewriting (``scan_product_pays``), factors stacked once for all."""
    stacks = _Stacks(node)
    length = node.params["length"]
    sums = [f for f in found if f.kind == "sum"]
    found = [f for f in found if f.kind != "sum"]
    dropped: tuple[set[int], set[int]] = (set(), set())   # carries, results
    chosen = []
    def factors_of(f):   # each factor once (h_t * h_t has one)
        return list(dict.fromkeys((f.factors[0][0], f.factors[1][0])))
    # Sums whose factors are stacked already come first: later ones may share theirs.
    for f in sorted(found, key=lambda f: sum(stacks.cost(x, dropped) for x in factors_of(f))):
        factors = factors_of(f)
        trial = (dropped[0] | {f.index} if f.kind == "carry" else dropped[0],
                 dropped[1] | {f.index} if f.kind == "y" else dropped[1])
        added = sum(stacks.cost(x, trial) for x in factors)
        stacked_so_far = sum(int(np.prod(x.shape)) for x in stacks.new)
        if not scan_product_pays(length, int(np.prod(f.product.shape)), added,
                                 stacked_so_far + added, np.dtype(f.product.dtype).itemsize):
            continue
        chunks = scan_product_chunks(length, matrix_work(*f.factors[0], *f.factors[1]))
        # A weight's gradient (no batch) stays one 2-d product, which the compiled
        # lowerings write in a whole graph; cut into runs it would be a 3-d one.
        if not chunks or chunks > 1 and not batched(f.factors[0][1], f.factors[1][1]):
            continue
        dropped = trial
        for x in factors:
            stacks.take(x, dropped)
        chosen.append(f)
    # c' = c + v_t where v_t is stacked for a product: init + the stack's sum (a loop
    # with no product rewritten is left as it is)
    for f in sums if chosen else ():
        trial = (dropped[0] | {f.index}, dropped[1])
        if stacks.cost(f.factors[0], trial) == 0:
            dropped = trial
            chosen.append(f)
    return chosen, stacks, dropped


def _new_body(body, n_carry, kept_carries, kept_ys, new):
    """A copy of ``body`` without the dropped carries and results, returning ``new``
    (body nodes) as extra per-step results after its own."""
    mapping: dict[Node, Node] = {}
    graph = body.graph.copy(mapping=mapping)
    graph.backend = body.graph.backend
    old_in, old_out = body.graph.inputs, body.graph.outputs
    n_real = len(body.out_avals)
    graph.inputs = [mapping[old_in[j]] for j in kept_carries] + \
        [mapping[n] for n in old_in[n_carry:]]
    outs = [mapping[old_out[j]] for j in kept_carries] + \
        [mapping[old_out[n_carry + k]] for k in kept_ys] + [mapping[n] for n in new]
    graph.outputs = outs + [mapping[n] for n in old_out[n_real:]]
    graph.output_tree = TreeDef(tuple, None, tuple(LEAF for _ in outs))
    graph.notes = []
    dce(graph)     # the products and the dropped carries' adds and inputs
    sub = copy.copy(body)
    sub.graph = graph
    sub.out_avals = tuple((o.shape, o.dtype) for o in outs)
    sub.out_tree = graph.output_tree
    sub.replay = [mapping[n] for n in body.replay]
    sub.captures = list(body.captures)
    sub.variables = list(body.variables)
    sub.assigned = list(body.assigned)
    sub._compiled = None
    return sub


def _renumbered(node, kept_carries, kept_ys, n_new):
    """``(params, {old output index: new one})`` of the rewritten scan."""
    p = node.params
    n_carry = p["n_carry"]
    n_y = len(p["body"].out_avals) - n_carry
    n_c, n_ys = len(kept_carries), len(kept_ys) + n_new
    index = {j: i for i, j in enumerate(kept_carries)}
    index.update({n_carry + k: n_c + i for i, k in enumerate(kept_ys)})
    index.update({n_carry + n_y + j: n_c + n_ys + i for i, j in enumerate(kept_carries)})
    n_res = len(node.avals) - 2 * n_carry - n_y
    index.update({2 * n_carry + n_y + r: 2 * n_c + n_ys + r for r in range(n_res)})
    params = {**p, "n_carry": n_c}
    summed = tuple(kept_ys.index(k) for k in p.get("summed") or () if k in kept_ys)
    unread = tuple(kept_carries.index(j) for j in p.get("unread") or ()
                   if j < n_carry and j in kept_carries) + \
        tuple(n_c + j - n_carry for j in p.get("unread") or () if j >= n_carry)
    for key, value in (("summed", summed), ("unread", unread)):
        params.pop(key, None)
        if value:
            params[key] = value
    return params, index


def _rewrite(graph, node, users, chosen, stacks, dropped):
    """Replace scan ``node`` by one without the ``chosen`` sums, and each sum by the
    product of its factors' stacks after the loop."""
    p = node.params
    n_carry, body = p["n_carry"], p["body"]
    n_y = len(body.out_avals) - n_carry
    kept_carries = [j for j in range(n_carry) if j not in dropped[0]]
    kept_ys = [k for k in range(n_y) if k not in dropped[1]]
    new_body = _new_body(body, n_carry, kept_carries, kept_ys, stacks.new)
    params, index = _renumbered(node, kept_carries, kept_ys, len(stacks.new))
    params["body"] = new_body
    inputs = [node.inputs[j] for j in kept_carries] + node.inputs[n_carry:]
    avals = node.op.abstract_eval(*[(i.shape, i.dtype) for i in inputs], **params)
    scan = graph.add(node.op, inputs, params, avals, name=node.name, source=node.source)
    results = {}

    def result(i):   # the rewritten scan's output i, one unpack each
        if i not in results:
            results[i] = unpack(graph, scan, i, node.source)
        return results[i]

    n_first_new = len(kept_carries) + len(kept_ys)

    def stack_of(factor):
        if factor in stacks.xs:
            return stacks.xs[factor]
        if factor in stacks.new:
            return result(n_first_new + stacks.new.index(factor))
        if factor in stacks.carries and stacks.carries[factor] in kept_carries:
            return result(index[n_carry + n_y + stacks.carries[factor]])
        return result(index[n_carry + stacks.ys[factor]])

    contraction = Contraction(graph, node.source)
    for f in chosen:
        if f.kind == "sum":
            term, axes = f.factors
            total = contraction.add(ops.sum_op, [stack_of(term)],
                                    {"axis": (0,) + tuple(a + 1 for a in axes),
                                     "keepdims": False}, name="step_sum")
        else:
            (fa, la), (fb, lb) = f.factors
            chunks = scan_product_chunks(p["length"], matrix_work(fa, la, fb, lb))
            total = contraction.summed(stack_of(fa), la, stack_of(fb), lb, f.product.shape,
                                       chunks)
        if f.kind != "y" and not all_equal_to(f.init, 0):
            total = contraction.add(ops.add_op, [f.init, total], {}, name="step_sum")
        graph.replace_all_uses_with(f.target, total)
        remove_node(graph, f.target)
    for u in users:
        if u not in graph:
            continue                # a final carry a sum replaced
        if u.params["index"] in index:
            graph.replace_all_uses_with(u, result(index[u.params["index"]]))
        remove_node(graph, u)       # (a dropped result's unpack: its sum is replaced)
    remove_node(graph, node)


def scan_products(graph):
    """Turn each scan's sums over its steps of per-step products into one product after
    the loop, where the cost model says it pays (see the module docstring). Returns True
    if any scan changed. Not under ``en.config.numerics = "bitwise"``: the steps are
    added in another order."""
    if bitwise():
        return False
    count = 0
    for node, users in list(_candidate_scans(graph)):
        p = node.params
        unpacks = collections.defaultdict(list)
        for u in users:
            unpacks[u.params["index"]].append(u)
        varying = _varying(p["body"], p["n_carry"], p["n_x"])
        found = _accumulators(graph, node, varying, unpacks) + \
            _step_sums(graph, node, varying, unpacks)
        chosen, stacks, dropped = _chosen(node, found) if found else ([], None, None)
        if chosen:
            _rewrite(graph, node, users, chosen, stacks, dropped)
            count += len(chosen)
    if count:
        graph.notes.append(f"summed {count} per-step product{'s' if count != 1 else ''} "
                           f"after their loops")
    return bool(count)
