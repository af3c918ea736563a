"""Algebraic simplification: only rewrites that are exact for floats as numpy computes them.

* ``x * 1``, ``1 * x``, ``x / 1``, ``x + 0``, ``0 + x``, ``x - 0`` -> ``x`` when the
  result keeps x's shape and dtype; on floats the zero must have the right sign
  (``-0.0 + 0.0`` is ``+0.0``, so only ``x + (-0.0)`` and ``x - (+0.0)`` are ``x``);
* ``c1 * (c2 * x)`` -> ``(c1 * c2) * x`` for constants of x's dtype where one of them
  is a power of two (``2 * (r / n)`` of a mean's squared error) and ``c1 * c2`` is a
  normal float: scaling by a power of two commutes with rounding, so the one product
  gives the bits the two did wherever ``c2 * x`` is a normal float (a subnormal one
  rounds once less); the inner product must have no other reader (TensorFlow's arithmetic
  optimizer pushes constants down so too, without the power-of-two guard);
* ``x ** 0`` -> ones, ``x ** 1`` -> ``x``, ``x ** 2`` -> ``square(x)``; ``-(-x)`` -> ``x``; ``identity`` /
  ``stop_gradient`` -> their input (at run time they only matter to autodiff, which is
  done by the time a graph runs);
* ``logical_and`` with an all-False constant and ``logical_or`` with an all-True one ->
  that constant broadcast; ``where`` on a constant (or broadcast constant) condition
  that is all True or all False -> the chosen branch, broadcast to the result's shape
  (derivative rules guard singular points with masks like ``(x == 0) & (y == 0)``,
  which vanish once ``y`` is a known nonzero constant, as in ``(a - b) ** 2.0``);
* transpose of transpose -> one transpose (or nothing); reshape chains (of reshapes,
  ``expand_dims`` and ``squeeze``) -> one reshape (or nothing); casts and broadcasts to
  what the value already is -> nothing;
* a ``broadcast_to`` feeding an elementwise op whose own broadcasting gives the
  same result shape -> the op reads the unbroadcast value; an elementwise op on
  nothing but broadcasts and small constants runs on the small values and is
  broadcast afterwards.

Matmul with a transposed operand needs no rewrite here: ``transpose`` lowers
to a numpy view and ``np.matmul`` hands the strides to BLAS as a transpose
flag, without a copy.
"""
import numpy as np

from engine import ops
from engine.numerics import bitwise
from engine.shapes import broadcast_shapes

from ..ir.graph_ops import constant_op
from ..ir.queries import all_equal_to, constant_value, is_constant, remove_node, replace_node


def _same_type(node, x):
    return tuple(x.shape) == tuple(node.shape) and x.dtype == node.dtype


def _identity_element(value, left=True, right=True, zero_sign=None):
    """``x op value`` (and ``value op x`` when ``left``) is ``x``. For floats, ``zero_sign``
    says which signed zero is the identity (True: -0.0 for add; False: +0.0 for sub)."""
    def is_identity(node, result):
        if not all_equal_to(node, value):
            return False
        if zero_sign is None or np.dtype(result.dtype).kind not in "fc":
            return True
        v = constant_value(node)
        # An integer zero becomes +0.0 when it meets a float.
        return bool(np.all(np.signbit(v) == zero_sign)) if v.dtype.kind == "f" else not zero_sign

    def rule(graph, node):
        x, y = node.inputs
        if right and _same_type(node, x) and is_identity(y, node):
            return replace_node(graph, node, x)
        if left and _same_type(node, y) and is_identity(x, node):
            return replace_node(graph, node, y)
        return False
    return rule


def _power_of_two(value):
    """Every element of a float array is one power of two (of either sign)."""
    if value.size == 0 or value.dtype.kind != "f":
        return False
    first = value.flat[0]
    if not np.all(value == first) or first == 0 or not np.isfinite(first):
        return False
    mantissa, _ = np.frexp(first)
    return abs(float(mantissa)) == 0.5 and abs(first) >= np.finfo(value.dtype).tiny


def _constant_and_other(node):
    """``(constant, other input)`` of a product with exactly one constant input."""
    x, y = node.inputs
    if is_constant(x) and not is_constant(y):
        return x, y
    if is_constant(y) and not is_constant(x):
        return y, x
    return None, None


def _constant_product(graph, node):
    """``c1 * (c2 * x)`` -> ``(c1 * c2) * x`` (see the module docstring for when)."""
    if bitwise():
        return False    # a subnormal inner product would round once less
    c1, inner = _constant_and_other(node)
    if c1 is None or None in node.shape or inner.op is not ops.mul_op:
        return False
    if inner in graph.outputs or len(graph.users(inner)) != 1:
        return False   # the inner product is read elsewhere: it stays, so nothing is saved
    c2, x = _constant_and_other(inner)
    if c2 is None or not all(n.dtype == node.dtype for n in (c1, c2, inner, x)):
        return False
    v1, v2 = constant_value(c1), constant_value(c2)
    if not (_power_of_two(v1) or _power_of_two(v2)):
        return False
    with np.errstate(all="ignore"):
        value = np.array(v1 * v2, dtype=node.dtype)
    if not np.all(np.abs(value) >= np.finfo(value.dtype).tiny) or \
            not np.all(np.isfinite(value)):
        return False   # an overflow or a subnormal product would round differently
    # Broadcasting is associative: (c1 * c2) with x has the shape c1 with (c2 with x) had.
    const = graph.add(constant_op, (), {"value": value}, (value.shape, value.dtype),
                      name=f"{c1.name}_times_{c2.name}", source=c1.source)
    graph.set_inputs(node, [const, x])
    remove_node(graph, inner)   # its one reader was node
    return True


_unit_product = _identity_element(1)


def _product_rule(graph, node):
    return _unit_product(graph, node) or _constant_product(graph, node)


def _double_negation(graph, node):
    (x,) = node.inputs
    if x.op is ops.neg_op:
        return replace_node(graph, node, x.inputs[0])
    return False


def _passthrough(graph, node):
    return replace_node(graph, node, node.inputs[0])


def _perm(axes, ndim):
    return tuple(range(ndim))[::-1] if axes is None else tuple(a % ndim for a in axes)


def _transpose_chain(graph, node):
    (x,) = node.inputs
    nd = len(node.shape)
    outer = _perm(node.params["axes"], nd)
    if outer == tuple(range(nd)):
        return replace_node(graph, node, x)
    if x.op is ops.transpose_op:
        inner = _perm(x.params["axes"], nd)
        composed = tuple(inner[a] for a in outer)
        if composed == tuple(range(nd)):
            return replace_node(graph, node, x.inputs[0])
        graph.set_inputs(node, [x.inputs[0]])
        node.params = {"axes": composed}
        return True
    return False


def _reshape_chain(graph, node):
    (x,) = node.inputs
    if None not in node.shape and tuple(x.shape) == tuple(node.shape):
        return replace_node(graph, node, x)
    # expand_dims and squeeze are reshapes too (a gradient's size-1 axes, added and
    # taken away again: expand_dims then reshape(-1, n))
    if x.op in (ops.reshape_op, ops.expand_dims_op, ops.squeeze_op):
        graph.set_inputs(node, [x.inputs[0]])
        _reshape_chain(graph, node)   # the shorter chain may now be a no-op
        return True
    return False


def _cast_noop(graph, node):
    (x,) = node.inputs
    if x.dtype == node.dtype:
        return replace_node(graph, node, x)
    return False


def _broadcast_noop(graph, node):
    x = node.inputs[0]
    if None not in node.shape and tuple(x.shape) == tuple(node.shape):
        return replace_node(graph, node, x)
    return False


def _power_of_constant(graph, node):
    """``x ** 0`` -> ones, ``x ** 1`` -> ``x`` and ``x ** 2`` -> ``square(x)`` (numpy
    computes all three exactly so: ``x ** 0`` is 1 for every x, NaN and infinities too)."""
    x, y = node.inputs
    if all_equal_to(y, 0) and None not in node.shape:
        # The second derivative of ``u ** 2`` (a Hessian-vector product of a squared
        # error) leaves ``u ** 0``: left alone, a compiled kernel calls pow() per element.
        one = np.ones((), node.dtype)
        const = graph.add(constant_op, (), {"value": one}, ((), one.dtype), name="const",
                          source=node.source)
        return _broadcast_as(graph, node, const)
    if not _same_type(node, x):
        return False
    if all_equal_to(y, 1):
        return replace_node(graph, node, x)
    if all_equal_to(y, 2):
        sq = graph.add(ops.square_op, [x], {}, (node.shape, node.dtype), name="square",
                       source=node.source)
        return replace_node(graph, node, sq)
    return False


def _constant_mask(node):
    """The one value (True or False) every element of a boolean ``node`` holds, when it is
    a constant or a broadcast constant; else None."""
    while node.op is ops.broadcast_to_op:
        node = node.inputs[0]
    if not is_constant(node) or node.dtype != np.bool_:
        return None
    v = constant_value(node)
    if v.size == 0:
        return None
    if v.all():
        return True
    return False if not v.any() else None


def _broadcast_as(graph, node, x):
    """``x`` standing for ``node`` (same dtype): itself, or broadcast to ``node``'s shape."""
    if tuple(x.shape) == tuple(node.shape):
        return replace_node(graph, node, x)
    if None in node.shape:
        return False
    big = graph.add(ops.broadcast_to_op, [x], {"shape": tuple(node.shape)},
                    (node.shape, node.dtype), name="broadcast_to", source=node.source)
    return replace_node(graph, node, big)


def _absorbing(value):
    """``logical_and`` (value False) / ``logical_or`` (value True): an input that is all
    ``value`` decides the result, which is that input broadcast."""
    def rule(graph, node):
        if node.dtype != np.bool_:
            return False
        for x in node.inputs:
            if _constant_mask(x) is value and x.dtype == node.dtype:
                return _broadcast_as(graph, node, x)
        return False
    return rule


def _constant_condition(graph, node):
    """``where(c, a, b)`` with ``c`` all True (all False) -> ``a`` (``b``), broadcast."""
    cond, a, b = node.inputs
    chosen = {True: a, False: b}.get(_constant_mask(cond))
    if chosen is None or chosen.dtype != node.dtype:
        return False
    return _broadcast_as(graph, node, chosen)


_SMALL = 64   # constants up to this many elements are cheap to compute on directly


def _hoist_broadcast(graph, node):
    """``f(broadcast_to(a), c)`` with only broadcasts and small constants as inputs ->
    ``broadcast_to(f(a, c))``: the op runs on the small values, once (exact: elementwise
    ops commute with broadcasting). Constant folding then often removes ``f`` entirely."""
    if not any(i.op is ops.broadcast_to_op for i in node.inputs):
        return False
    sources = []
    for i in node.inputs:
        if i.op is ops.broadcast_to_op:
            sources.append(i.inputs[0])
        elif is_constant(i) and i.params["value"].size <= _SMALL:
            sources.append(i)
        else:
            return False
    try:
        aval = node.op.abstract_eval(*[(s.shape, s.dtype) for s in sources], **node.params)
    except Exception:
        return False
    if None in node.shape or aval[1] != node.dtype:
        return False
    small = graph.add(node.op, sources, node.params, aval, name=node.name, source=node.source)
    big = graph.add(ops.broadcast_to_op, [small], {"shape": tuple(node.shape)},
                    (node.shape, node.dtype), name="broadcast_to", source=node.source)
    return replace_node(graph, node, big)


def _fold_broadcast_into_consumer(graph, node):
    """An elementwise op can broadcast an input itself when that keeps its shape."""
    changed = False
    for k, inp in enumerate(node.inputs):
        if inp.op is not ops.broadcast_to_op:
            continue
        src = inp.inputs[0]
        shapes = [tuple(i.shape) for j, i in enumerate(node.inputs) if j != k] + [tuple(src.shape)]
        try:
            shape = broadcast_shapes(*shapes)
        except Exception:
            continue
        if shape == tuple(node.shape) and None not in shape:
            new_inputs = list(node.inputs)
            new_inputs[k] = src
            graph.set_inputs(node, new_inputs)
            changed = True
    return changed


RULES = {
    ops.mul_op: _product_rule,
    ops.div_op: _identity_element(1, left=False),
    ops.add_op: _identity_element(0, zero_sign=True),
    ops.sub_op: _identity_element(0, left=False, zero_sign=False),
    ops.neg_op: _double_negation,
    ops.pow_op: _power_of_constant,
    ops.identity_op: _passthrough,
    ops.stop_gradient_op: _passthrough,
    ops.transpose_op: _transpose_chain,
    ops.reshape_op: _reshape_chain,
    ops.cast_op: _cast_noop,
    ops.broadcast_to_op: _broadcast_noop,
    ops.logical_and_op: _absorbing(False),
    ops.logical_or_op: _absorbing(True),
    ops.where_op: _constant_condition,
}


def simplify(graph):
    """Apply the rewrite rules until none applies. Returns True if the graph changed."""
    count = 0
    for node in graph.topo_order():
        if node not in graph:
            continue
        rule = RULES.get(node.op)
        if rule is not None and rule(graph, node):
            count += 1
            continue
        if node.op.elementwise and node.op.out_impl is not None and not node.op.multiple_results:
            if _hoist_broadcast(graph, node) or _fold_broadcast_into_consumer(graph, node):
                count += 1
    if count:
        graph.notes.append(f"applied {count} rewrites")
    return bool(count)
