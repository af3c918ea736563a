"""What a loaded control-flow node must satisfy before its shape rule runs: the
bodies are bodies, the counts are counts, and the node's inputs match what the
bodies take. Declared as the ``load_check`` rules of ``cond``, ``while_loop``
and ``scan`` (see :mod:`graph.control.control_flow`); read by :mod:`graph.export.load`, which
passes ``where`` (the node's place in the file) for the error.
"""
import numpy as np

from engine import dtypes
from engine.errors import LoadError

from .subgraph import SubGraph

# The file format's largest dimension (graph.export.native.MAX_DIM, which imports the modes
# this module's ops are part of; tests/ops/test_rule_coverage.py checks the two agree).
MAX_LENGTH = 1 << 62


def norm_aval(aval):
    """Canonical form of an aval or a tuple of avals, for comparison."""
    if len(aval) == 2 and isinstance(aval[1], np.dtype):
        return (tuple(aval[0]), aval[1])
    return tuple(norm_aval(a) for a in aval)


def _body_inputs(sub):
    return [(n.shape, n.dtype) for n in sub.graph.inputs]


def _same(a, b):
    return [norm_aval(x) for x in a] == [norm_aval(x) for x in b]


# The scan params that graph passes set (graph/passes/scan_sums.py, scan_unread.py).
OPTIMIZER_PARAMS = ("summed", "unread")


def _need(cond, where, what):
    if not cond:
        raise LoadError(f"{where}: {what}")


def check_cond(in_avals, params, declared, where):
    true, false, n_ops = params["true"], params["false"], params["n_ops"]
    _need(isinstance(true, SubGraph) and isinstance(false, SubGraph), where,
          "true and false must be bodies")
    _need(type(n_ops) is int and n_ops >= 0, where, "n_ops must be a non-negative integer")
    rest = in_avals[1:]
    n_t, n_f = len(true.captures), len(false.captures)
    _need(len(rest) == n_ops + n_t + n_f, where, "the inputs do not match the operands and "
          "the branches' captures")
    _need(_same(_body_inputs(true), rest[:n_ops + n_t]), where,
          "the true branch's inputs do not match the node's")
    _need(_same(_body_inputs(false), rest[:n_ops] + rest[n_ops + n_t:]), where,
          "the false branch's inputs do not match the node's")
    _need(_same(true.out_avals, false.out_avals), where, "the branches' outputs differ")
    _need(not true.replay and not false.replay, where, "cond branches replay nothing")


def check_while(in_avals, params, declared, where):
    cond, body, n_vars = params["cond"], params["body"], params["n_vars"]
    _need(isinstance(cond, SubGraph) and isinstance(body, SubGraph), where,
          "cond and body must be bodies")
    _need(type(n_vars) is int and n_vars >= 0, where, "n_vars must be a non-negative integer")
    n_c, n_b = len(cond.captures), len(body.captures)
    _need(len(in_avals) == n_vars + n_c + n_b, where,
          "the inputs do not match the loop variables and the bodies' captures")
    loop = list(in_avals[:n_vars])
    _need(_same(_body_inputs(cond), loop + in_avals[n_vars:n_vars + n_c]), where,
          "the condition's inputs do not match the node's")
    _need(_same(_body_inputs(body), loop + in_avals[n_vars + n_c:]), where,
          "the body's inputs do not match the node's")
    _need(_same(cond.out_avals, [((), dtypes.bool_)]), where,
          "the condition must give one bool scalar")
    _need(_same(body.out_avals, loop), where, "the body must keep the loop variables' types")
    _need(not cond.replay and not body.replay, where, "while_loop bodies replay nothing")


def check_scan(in_avals, params, declared, where):
    body, n_carry, n_x = params["body"], params["n_carry"], params["n_x"]
    length, reverse = params["length"], params["reverse"]
    _need(isinstance(body, SubGraph), where, "body must be a body")
    for k, v in (("n_carry", n_carry), ("n_x", n_x)):
        _need(type(v) is int and v >= 0, where, f"{k} must be a non-negative integer")
    _need(length is None or (type(length) is int and 0 <= length <= MAX_LENGTH), where,
          "length must be null or a non-negative integer")
    _need(type(reverse) is bool, where, "reverse must be true or false")
    _need(length is not None or n_x > 0, where, "a scan without xs needs a length")
    _need(len(in_avals) >= n_carry + n_x, where, "fewer inputs than carries and xs")
    carry = list(in_avals[:n_carry])
    xs = in_avals[n_carry:n_carry + n_x]
    for s, _ in xs:
        _need(len(s) >= 1 and (s[0] is None or length is None or s[0] == length), where,
              f"every x needs a leading dimension of length {length}")
    x_t = [(tuple(s[1:]), d) for s, d in xs]
    _need(len(in_avals) == n_carry + n_x + len(body.captures), where,
          "the inputs do not match the carries, xs and the body's captures")
    _need(_same(_body_inputs(body), carry + x_t + list(in_avals[n_carry + n_x:])), where,
          "the body's inputs do not match the node's")
    _need(len(body.out_avals) >= n_carry and _same(body.out_avals[:n_carry], carry), where,
          "the body must keep the carries' types")
    # Set by optimization passes on a traced graph (scan_sums, scan_unread); a file holds
    # the unoptimized graph, so a scan from a file never carries them.
    for key in OPTIMIZER_PARAMS:
        _need(key not in params, where, f"{key} is set by the optimizer and is never saved")
