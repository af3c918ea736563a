"""The ``scalar_form`` rule of an elementwise op, resolved for one node.

A ``scalar_form`` is a format string over the op's inputs, or a callable choosing one by
the input types, ``f(input_avals, out_dtype)``. An op whose scalar meaning depends on its
params (``gelu``'s ``approximate``) declares a callable with a third argument named
``params``: it gets the node's params, and a consumer that has none to give gets the
callable's answer for ``params=None`` (None: not compiled). Every compiled lowering asks
through :func:`resolve`, so the rule is read one way.

Example:
    >>> import engine as en
    >>> resolve(en.REGISTRY["gelu"], [((3,), "float32")], "float32", {"approximate": "none"})
    '(((math.erf({0} * 0.7071067811865475) + ONE) * {0}) * HALF)'
    >>> resolve(en.REGISTRY["gelu"], [((3,), "float32")], "float32") is None
    True
"""
import ast
import functools
import inspect

import numpy as np

__all__ = ["numpy_passes", "resolve", "takes_params"]

# The parts of a scalar form that each cost a numpy kernel one pass over memory.
_STEPS = (ast.Call, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.BoolOp)


@functools.lru_cache(maxsize=None)
def takes_params(form):
    """Whether the callable ``form`` has a ``params`` argument."""
    try:
        return "params" in inspect.signature(form).parameters
    except (TypeError, ValueError):   # a builtin without a signature: it takes none
        return False


def resolve(op, in_avals, out_dtype, params=None):
    """``op``'s scalar form (a format string) for inputs ``in_avals`` (``(shape, dtype)``
    pairs), result ``out_dtype`` and the node's ``params``; None where it has none."""
    form = op.rules.get("scalar_form")
    if callable(form):
        if takes_params(form):
            return form(in_avals, out_dtype, params=params)
        return form(in_avals, out_dtype)
    return form


def numpy_passes(node):
    """About how many passes over memory ``node``'s numpy kernel makes: one for a ufunc,
    else one per step of its scalar form (gelu's exact form: five; its kernel makes
    ten numpy calls, erf's own among them), at least one.

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.exp(en.gelu(x)), passes=["cleanup"]).graph_for(
        ...     en.ones(3))
        >>> [(n.op.name, numpy_passes(n)) for n in g.topo_order()[1:]]
        [('gelu', 5), ('exp', 1)]
    """
    if isinstance(node.op.out_impl, np.ufunc):
        return 1
    form = resolve(node.op, [(tuple(i.shape), i.dtype) for i in node.inputs], node.dtype,
                   node.params)
    if form is None:
        return 1
    try:
        tree = ast.parse(form.format(*[f"_a{k}" for k in range(len(node.inputs))]),
                         mode="eval")
    except (SyntaxError, IndexError, KeyError):
        return 1
    return max(1, sum(isinstance(part, _STEPS) for part in ast.walk(tree)))
