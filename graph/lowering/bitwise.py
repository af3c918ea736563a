"""What the compiled lowerings may write under ``en.config.numerics = "bitwise"``.

A compiled kernel gives eager mode's bits only where each op is computed as numpy
computes it: IEEE arithmetic (``+ - * /``, comparisons, ``sqrt``, ``floor``, ``abs``,
numpy's ``maximum``), in the same dtype, one rounding per operation. The C lowering is
then built with ``-ffp-contract=off`` (``c_compiler.flags``) and numba without fast
maths (``numba_cache.fastmath``). What they cannot match is left to the numpy lowering,
which calls eager's own kernels:

- transcendental functions (``exp``, ``tanh``, ``erf``, ``log``, ``pow`` ...): numpy has
  its own SIMD versions, which no libm (nor ``numba_math``'s ``exp32``) reproduces;
- sums written in a kernel (partial sums per row, blocks): another order of additions;
- whole graphs and loops as one numba function: its products and reductions are
  numba's loops, not numpy's BLAS and pairwise sums.

The C lowering's whole graphs and scans are written under "bitwise" with numpy's own
kernels instead (``graph/lowering/c/c_bitwise.py``): numpy's ufunc loops for the
transcendental functions, numpy's BLAS for products, and numpy's order for the sums
over rows they write.

Example:
    >>> import engine as en
    >>> g = en.function(lambda x: en.exp(x) * 2.0, passes=["cleanup"]).graph_for(en.ones(3))
    >>> why_inexact(g.topo_order()[1:])
    'exp computes np.exp, which the compiled lowerings do not compute as numpy does'
"""
import ast

from engine.numerics import bitwise

# The calls in scalar forms whose result is the correctly rounded (or exact) value, the
# same in C, numba and numpy.
EXACT_CALLS = frozenset({
    "abs", "bool", "np.maximum", "np.minimum", "np.sqrt", "np.floor", "np.ceil",
    "np.trunc", "np.rint", "np.copysign", "np.isfinite", "np.isnan", "np.isinf",
    "np.signbit", "np.nextafter"})
_EXACT_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub, ast.UAdd, ast.Not)


def _form(node):
    form = node.op.rules.get("scalar_form")
    if callable(form):
        form = form([(tuple(i.shape), i.dtype) for i in node.inputs], node.dtype)
    return form


def _call_name(func):
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return func.id if isinstance(func, ast.Name) else ast.dump(func)


def why_form_inexact(node):
    """Why a compiled lowering's scalar form of ``node`` may differ from numpy's bits,
    or None when it computes exactly what numpy computes."""
    form = _form(node)
    if form is None:
        return f"{node.op.name} has no scalar form"
    try:
        tree = ast.parse(form.format(*[f"_a{k}" for k in range(len(node.inputs))]),
                         mode="eval")
    except (SyntaxError, IndexError, KeyError):
        return f"{node.op.name}'s scalar form does not parse"
    for part in ast.walk(tree):
        if isinstance(part, ast.Call):
            name = _call_name(part.func)
            if name not in EXACT_CALLS:
                return (f"{node.op.name} computes {name}, which the compiled lowerings do "
                        "not compute as numpy does")
        elif isinstance(part, (ast.BinOp, ast.UnaryOp)) and \
                not isinstance(part.op, _EXACT_OPERATORS):
            return f"{node.op.name} uses {type(part.op).__name__}, not IEEE arithmetic"
    return None


def why_inexact(members, outputs=()):
    """Why a fused region (its ``members``, its ``outputs`` as ``(member, reduction)``)
    may not give eager's bits when compiled, or None."""
    if any(reduction is not None for _, reduction in outputs):
        return "its sums are added in another order than numpy's"
    for m in members:
        why = why_form_inexact(m)
        if why:
            return why
    return None


def region_allowed(region):
    """Whether a compiled lowering may take ``region`` under the current setting."""
    return not bitwise() or why_inexact(region.members, region.outputs) is None
