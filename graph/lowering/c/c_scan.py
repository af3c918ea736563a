"""The C form of a ``scan``: its time loop written out, the body's ops inlined inside it.

The ``"time_loop"`` pattern of the whole-graph C writer (``c_graph.py``). The carries
live in workspace slots, set from their initial values before the loop and updated in
place at the end of each step (a new value that is a view of a carry, or of anything
not made in this step, is copied aside first, so no carry is overwritten before another
reads it); a step reads its slice of each stacked input through a pointer; each ``y``
is copied into its stack, and a ``y`` whose one use is its sum over the steps (a
scan's VJP summing the per-step gradients of captured weights) is added into a double
accumulator instead of being stacked. Every slot the body needs is laid out once, so a
step allocates nothing.
"""
import math
from typing import Any

import numpy as np

from engine.numerics import bitwise

from ...ir.graph_ops import placeholder_op, unpack_op
from ..graph_limits import writable_scan
from ..plugin import Unsupported
from . import c_bitwise, c_graph_ops
from .c_graph_emit import CVal, check_node


def _needed(graph, wanted):
    """The body's nodes (topological order) that ``wanted`` needs."""
    need, stack = set(), list(wanted)
    while stack:
        n = stack.pop()
        if n in need or n.op is placeholder_op:
            continue
        need.add(n)
        stack.extend(n.inputs)
    return [n for n in graph.topo_order() if n in need]


def _summed(em, node, n_carry, n_y):
    """``{y index: sum node}`` for the stacked ys read only by their float sum over the
    steps (and not returned)."""
    found = {}
    unpacks = [u for u in em.users.get(node, []) if u.op is unpack_op]
    for u in unpacks:
        k = u.params["index"] - n_carry
        if not 0 <= k < n_y or u in em.out_index or \
                sum(1 for v in unpacks if v.params["index"] == u.params["index"]) != 1:
            continue
        readers = em.users.get(u, [])
        if len(readers) != 1:
            continue
        total = readers[0]
        if not _is_step_sum(total, u):
            continue
        found[k] = total
    return found


def with_sums(graph, members):
    """A scan's ``members`` (the scan, its unpacks) with the float sums over the steps
    that are the one reader of an unpacked stack (a weight's or bias's gradient in a
    scan's VJP): written in the loop part, the loop adds them up (``_summed``; a summed
    ``a_t.T @ b_t`` is one product after the loop) instead of writing a stack of every
    step's value for numpy to add (the concat LSTM's (50, 128, 256) weight gradients)."""
    more = []
    for u in members[1:]:
        readers = graph.users(u)
        if len(readers) == 1 and readers[0] not in more and _is_step_sum(readers[0], u):
            more.append(readers[0])
    return members + more


def _is_step_sum(total, u):
    """``total`` is a float sum over axis 0 of the stack ``u`` in its dtype."""
    return (total.op.rules.get("numba_form") == "reduce_sum" and total.inputs == [u] and
            total.params.get("axis") in (0, (0,)) and not total.params.get("keepdims") and
            np.dtype(total.dtype) in (np.float32, np.float64) and
            np.dtype(total.dtype) == np.dtype(u.dtype) and len(u.shape) >= 2)


def _summed_in_order(em, node, n_carry, n_y):
    """``{y index: sum node}`` under bitwise numerics: the sums over the steps that add
    the steps in the loop's order (``c_bitwise.step_sum``); a reversing getitem between
    is marked done (its sum reads the accumulator)."""
    found = {}
    for u in em.users.get(node, []):
        k = u.params["index"] - n_carry if u.op is unpack_op else -1
        if not 0 <= k < n_y or u in em.out_index:
            continue
        hit = c_bitwise.step_sum(lambda n: em.users.get(n, []), u, node.params["reverse"],
                                 node.params["length"])
        if hit is None or hit[1] in em.out_index or k in found:
            continue
        found[k] = hit[0]
        if hit[1] is not None:
            em.values[hit[1]] = []     # never written: only the sum read it
    return found


def _is_swap(node):
    """A transpose of a matrix."""
    if node.op.rules.get("numba_form") != "view_transpose" or len(node.shape) != 2:
        return False
    axes = node.params.get("axes")
    return axes is None or tuple(a % 2 for a in axes) == (1, 0)


def _summed_products(graph, outs, n_carry, summed):
    """``{y index: (a, b)}`` for the summed ys that are ``a.T @ b`` of two matrices of
    the body (a weight's gradient in a scan's VJP) and are read by nothing else: ``a``
    and ``b`` are stacked over the steps, and the sum is one product after the loop
    (one large BLAS call instead of one small one a step)."""
    readers = set()
    for n in graph.nodes:
        readers.update(n.inputs)
    found = {}
    for k in summed:
        o = outs[n_carry + k]
        if o.op.rules.get("numba_form") != "dot" or len(o.shape) != 2 or o in readers or \
                outs.count(o) != 1:
            continue
        t, b = o.inputs
        if not _is_swap(t) or len(b.shape) != 2:
            continue
        a = t.inputs[0]
        if not np.dtype(a.dtype) == np.dtype(b.dtype) == np.dtype(o.dtype):
            continue
        found[k] = (_column_blocks(a), b)
    return found


def _column_blocks(a):
    """``[(part, first column)]``: the pieces of matrix ``a`` whose stacks the summed
    product ``sum_t a_t.T @ b_t`` reads. A concat of matrices along their columns is its
    parts (``[x_t, h_t].T @ d_t`` is ``x_t.T @ d_t`` over ``h_t.T @ d_t``: the result's
    row blocks, one product each, from the stacks the scan already reads, where the
    concat was stacked anew every step); any other ``a`` is itself."""
    if a.op.rules.get("numba_form") != "concat_rows" or len(a.shape) != 2 or \
            a.params.get("axis") not in (1, -1) or \
            any(len(p.shape) != 2 or np.dtype(p.dtype) != np.dtype(a.dtype) or
                0 in p.shape for p in a.inputs):
        return [(a, 0)]
    blocks, start = [], 0
    for p in a.inputs:
        blocks.append((p, start))
        start += p.shape[1]
    return blocks


def _stack_slot(em, node, index, shape, dtype):
    """Where the stack of result ``index`` of scan ``node`` is written: the part's output
    array where an unpack of it is one (no copy of the whole stack after the loop: a
    forward LSTM's eight stacks of 50 steps were 3.2 MB copied a call), else a new slot."""
    for u in em.users.get(node, []):
        if u.op is unpack_op and u.params["index"] == index:
            j = em.out_index.get(u)
            if j is not None and not em.loop_depth and u not in em.values:
                return CVal(f"o{j}", tuple(shape), dtype, root=f"o{j}")
    return em.slot(shape, dtype)


def _homes(em, t, stacked):
    """``{body node: (its row of step t, the stack)}`` for the ``(node, stack)`` pairs:
    the rows set as the emitter's ``homes``, so a node's writer writes it straight into
    its stack (a forward LSTM's six stacked gates and states were each written to a
    slot and copied, every step); a node stacked twice gets the first. A node written as
    a view (reshape, split piece) never asks for its home and is copied as before."""
    homes = {}
    for n, stack in stacked:
        if n not in homes:
            size = max(1, math.prod(n.shape))
            homes[n] = (CVal(f"({stack.ptr} + {t} * {size})", tuple(n.shape), n.dtype,
                             root=stack.root), stack)
    em.homes = {**em.homes, **{n: row for n, (row, _) in homes.items()}}  # (outer rows kept)
    return homes


def _written_in(homes, node, value, stack):
    """Whether ``node``'s writer wrote ``value`` straight into its row of ``stack`` (a
    node stacked twice, a y and a product's factor, is copied into the other stack)."""
    row, its_stack = homes.get(node, (None, None))
    return row is value and its_stack is stack


def scan_loop(em, node):
    """Writes ``node`` (a scan) as a time loop; its values are the final carries, the
    stacked ys and the stacked carries (None for those nobody reads)."""
    body, n_carry, n_x, length = writable_scan(node)
    graph = body.graph
    ins = [em.get(i) for i in node.inputs]
    carries, xs, caps = ins[:n_carry], ins[n_carry:n_carry + n_x], ins[n_carry + n_x:]
    outs = list(graph.outputs)
    n_y = len(outs) - n_carry
    for o in outs:
        check_node(o)
    used = {u.params["index"] for u in em.users.get(node, []) if u.op is unpack_op}
    exact = bitwise()
    summed = _summed_in_order(em, node, n_carry, n_y) if exact else \
        _summed(em, node, n_carry, n_y)
    xs = [em.contig(x) for x in xs]
    if any(not x.shape for x in xs):
        raise Unsupported("scan over a scalar")

    # Before the loop: the carries' slots, the stacks, the accumulators.
    carry_slots = []
    for c in carries:
        slot = em.slot(c.shape, c.dtype)
        em.copy_into(slot.ptr, c)
        carry_slots.append(slot)
    products = _summed_products(graph, outs, n_carry, summed) if em.blas is not None else {}
    x_of = dict(zip(graph.inputs[n_carry:n_carry + n_x], xs))
    factors = {}    # body node -> its stack over the steps (a summed product's factor)
    for blocks, b in products.values():
        for f in [p for p, _ in blocks] + [b]:
            if f not in factors:
                factors[f] = x_of[f] if f in x_of else \
                    em.slot((length,) + tuple(f.shape), f.dtype)
    ys, accs = {}, {}
    for k, o in enumerate(outs[n_carry:]):
        if k in products:
            continue
        if k in summed:
            # (bitwise: in the dtype, as numpy adds the stack's rows: c_bitwise.step_sum)
            accs[k] = em.slot(tuple(o.shape), o.dtype if exact else np.float64)
            size = max(1, math.prod(o.shape))
            i = em.fresh()
            em.line(f"for (int64_t {i} = 0; {i} < {size}; {i}++) {accs[k].ptr}[{i}] = 0;")
        elif n_carry + k in used:
            ys[k] = _stack_slot(em, node, n_carry + k, (length,) + tuple(o.shape), o.dtype)
    stacked = {j: _stack_slot(em, node, n_carry + n_y + j, (length,) + c.shape, c.dtype)
               for j, c in enumerate(carries) if n_carry + n_y + j in used}

    t = em.fresh("t")
    if node.params["reverse"]:
        em.open(f"for (int64_t {t} = {length - 1}; {t} >= 0; {t}--)")
    else:
        em.open(f"for (int64_t {t} = 0; {t} < {length}; {t}++)")
    first_slot = em.slots
    saved = dict(em.values)
    saved_users = em.users
    em.loop_depth += 1
    for j, slot in stacked.items():
        size = max(1, math.prod(carries[j].shape))
        em.copy_into(f"({slot.ptr} + {t} * {size})", carry_slots[j])
    for ph, slot in zip(graph.inputs[:n_carry], carry_slots):
        em.values[ph] = slot
    for ph, x in zip(graph.inputs[n_carry:n_carry + n_x], xs):
        step = max(1, math.prod(x.shape[1:]))
        em.values[ph] = CVal(f"({x.ptr} + {t} * {step})", x.shape[1:], x.dtype, root=x.root)
    for ph, c in zip(graph.inputs[n_carry + n_x:], caps):
        em.values[ph] = c
    wanted = outs[:n_carry] + [outs[n_carry + k] for k in list(ys) + list(accs)] + \
        [f for f in factors if f not in x_of]
    saved_homes = em.homes
    homes = _homes(em, t, [(outs[n_carry + k], slot) for k, slot in ys.items()] +
                   [(f, stack) for f, stack in factors.items() if f not in x_of])
    order = _needed(graph, wanted)
    em.users = {}
    for n in order:
        for i in n.inputs:
            em.users.setdefault(i, []).append(n)
    saved_keep = em.keep
    em.keep = saved_keep | set(outs) | set(factors)    # copied into stacks: stored
    em.emit_nodes(order)
    em.keep = saved_keep
    em.homes = saved_homes
    results: list[Any] = [em.values.get(o) if o in em.values else None for o in outs]
    if any(v is None for v in results[:n_carry]) or \
            any(results[n_carry + k] is None for k in accs):
        raise Unsupported("scan: a carry or summed result the body does not compute")
    for k, slot in ys.items():
        v = results[n_carry + k]
        if not _written_in(homes, outs[n_carry + k], v, slot):
            size = max(1, math.prod(outs[n_carry + k].shape))
            em.copy_into(f"({slot.ptr} + {t} * {size})", v)
    for f, stack in factors.items():
        if f not in x_of and not _written_in(homes, f, em.get(f), stack):
            size = max(1, math.prod(f.shape))
            em.copy_into(f"({stack.ptr} + {t} * {size})", em.get(f))
    at_home = {id(row) for row, _ in homes.values()}
    for k, acc in accs.items():
        v = results[n_carry + k]
        v = em.contig(v) if v.trans is not None else v
        em.copy_into(acc.ptr, v, op="+=")
    # The new carries: copied aside first where they are not this step's own values.
    news = []
    for slot, v in zip(carry_slots, results[:n_carry]):
        if v.literal is None and v.trans is None and \
                (em.owned_since(v, first_slot) or id(v) in at_home):
            news.append(v)
        else:
            aside = em.slot(slot.shape, slot.dtype)
            em.copy_into(aside.ptr, v)
            news.append(aside)
    for slot, v in zip(carry_slots, news):
        em.copy_into(slot.ptr, v)
    em.loop_depth -= 1
    em.values, em.users = saved, saved_users
    em.close()

    values = list(carry_slots)
    for k in range(n_y):
        values.append(ys.get(k))
    for j in range(n_carry):
        values.append(stacked.get(j))
    em.values[node] = values
    for k, total in summed.items():
        out = em.dest(total)
        if k in products:     # the sum over t of a_t.T @ b_t: one product of the stacks
            blocks, b = products[k]     # (a block of a's columns: a block of the rows)
            for a, start in blocks:
                rows = length * a.shape[0]
                c_graph_ops.gemm(em, factors[a].ptr, True, factors[b].ptr, False,
                                 f"({out.ptr} + {start * b.shape[1]})",
                                 a.shape[1], rows, b.shape[1], total.dtype)
            em.values[total] = out
            continue
        size = max(1, math.prod(total.shape))
        i = em.fresh()
        t_out = "float" if np.dtype(total.dtype) == np.float32 else "double"
        em.line(f"for (int64_t {i} = 0; {i} < {size}; {i}++) "
                f"{out.ptr}[{i}] = ({t_out}){accs[k].ptr}[{i}];")
        em.values[total] = out
