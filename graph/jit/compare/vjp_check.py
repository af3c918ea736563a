"""The gradient rules a gradient function used, checked against finite differences.

A wrong VJP rule is wrong alike in eager mode and in the graph (both run it), so the
node-by-node comparison cannot see it. A gradient function's graph holds the forward
part too: the ancestors of each gradient seed (the ``ones_like`` of the value
differentiated, which the tape starts its backward pass from). For each differentiable
forward node (one per op, params and shapes) the rule is checked in float64 at the
node's eager inputs, widened, ``x``: with random directions ``u`` (one per float input) and
a random cotangent ``g``,

    sum_k <vjp(g)_k, u_k>   against   <g, (f(x + h u) - f(x)) / h>

(``h`` = ``STEP`` times the largest input value, or ``STEP``: in float64 the forward
difference is off by about ``h`` and ``eps / h``, both far below ``RTOL``); the rule is
wrong when they differ by more than ``RTOL`` of their size (plus ``ATOL``). The rules
are checked once per trace (the first comparison of it): they do not change between
calls. Ops with a kink (relu,
abs) are checked away from it: a random point lies within ``h`` of one with
probability about ``h``.
"""
import numpy as np

from engine.modes import apply, default_mode
from engine.recording import no_tapes
from engine.tensor import Tensor, wrap

from ...ir.graph import Node
from ...ir.graph_ops import constant_op, placeholder_op
from .evaluate import widen
from .judge import Figures

STEP = 1e-7
RTOL = 1e-4
ATOL = 1e-9


def forward_nodes(graph):
    """The nodes a gradient seed (``ones_like`` of a float scalar or tensor) depends on."""
    seeds = [n for n in graph.nodes if n.op.name == "ones_like" and n.inputs
             and n.inputs[0].avals is None and np.dtype(n.inputs[0].dtype).kind == "f"]
    found: dict[Node, None] = {}
    todo = [s.inputs[0] for s in seeds]
    while todo:
        n = todo.pop()
        if n in found:
            continue
        found[n] = None
        todo.extend(n.inputs)
    return sorted(found, key=lambda n: n.id)


def _checkable(node):
    op = node.op
    return (op.vjp is not None and node.avals is None and not op.multiple_results
            and not op.random and not node.side_effects and op not in (constant_op,
                                                                      placeholder_op)
            and np.dtype(node.dtype).kind == "f"
            and any(np.dtype(i.dtype).kind == "f" and i.op is not constant_op
                    for i in node.inputs if i.avals is None)
            and not any(hasattr(v, "graph") for v in node.params.values()))


def _key(node):
    return (node.op, repr(sorted(node.params.items(), key=lambda kv: kv[0])),
            tuple((tuple(i.shape or ()), str(i.dtype)) for i in node.inputs))


def _value(x):
    return np.asarray(x._value) if isinstance(x, Tensor) else np.asarray(x)


def _direction(rng, shape):
    """A random direction of ``shape``: a short random vector repeated (drawing a normal
    number per element cost more than the check's own products)."""
    return np.resize(rng.standard_normal(min(4099, max(1, int(np.prod(shape))))), shape)


def check_rule(node, values):
    """:class:`Figures` for ``node``'s VJP at its inputs' ``values`` (widened to float64),
    or None when it cannot be checked there."""
    xs = [widen(values[i]) for i in node.inputs]
    # Constants take no gradient (a power's exponent: its rule may be NaN there).
    floats = [k for k, (x, i) in enumerate(zip(xs, node.inputs))
              if x.dtype.kind == "f" and i.op is not constant_op]
    if not floats:
        return None
    rng = np.random.default_rng(node.id)
    us = {k: _direction(rng, xs[k].shape) for k in floats}
    scale = max([float(np.max(np.abs(xs[k]))) if xs[k].size else 0.0 for k in floats] + [1.0])
    h = STEP * scale
    params = node.params
    with no_tapes(), np.errstate(all="ignore"):
        out = apply(node.op, *[wrap(x) for x in xs], **params)
        g = _direction(rng, np.shape(out._value))
        moved = [x + h * us[k] if k in us else x for k, x in enumerate(xs)]
        ahead = _value(apply(node.op, *[wrap(x) for x in moved], **params))
        finite = float(np.vdot(g, ahead - out._value)) / h
        inputs = [wrap(x) for x in xs]
        if node.op.vjp_needs:
            grads = node.op.vjp(wrap(g), out, *inputs,
                                needs=tuple(k in us for k in range(len(xs))), **params)
        else:
            grads = node.op.vjp(wrap(g), out, *inputs, **params)
    rule = 0.0
    for k in floats:
        gk = grads[k] if k < len(grads) else None
        if gk is not None:
            rule += float(np.vdot(np.broadcast_to(_value(gk), xs[k].shape), us[k]))
    if not (np.isfinite(rule) and np.isfinite(finite)):
        return None
    size = abs(rule) + abs(finite)
    return Figures(abs(rule - finite), 0.0, size, RTOL * size + ATOL)


def check_vjps(graph, values, narrow=()):
    """``[(node, Figures)]`` of the forward nodes whose VJP rule is wrong, checked at their
    inputs' ``values`` (eager's: where a rule is checked matters not)."""
    wrong: list[tuple[Node, Figures]] = []
    seen: set[tuple] = set()
    if default_mode() is None:
        return wrong
    for node in forward_nodes(graph):
        if not _checkable(node) or node in narrow or any(i not in values
                                                         for i in node.inputs):
            continue
        key = _key(node)
        if key in seen:
            continue
        seen.add(key)
        try:
            figures = check_rule(node, values)
        except Exception:     # the op refuses float64 or moved inputs: no verdict
            continue
        if figures is not None and figures.wrong:
            wrong.append((node, figures))
    return wrong
