"""C source of a fused elementwise region: one loop nest, every member a scalar in a register.

The ops' ``scalar_form`` rules (the numba lowering's scalar expressions, written in
Python over numpy names) are parsed and written in C: arithmetic, comparisons,
``and``/``or``/``not``, conditional expressions, and the maths functions below.
float32 ``exp`` and ``tanh`` are ``exp32``/``tanh32`` (``C_MATH``: the algorithms of
``numba_math``, within 1.5 and about 5 ulp) and ``erf`` is ``erf32`` (within 3 ulp), which
a C compiler vectorizes; the others are libm's. Values are float32, float64 or bool; a region with another dtype (integers,
complex), or an op whose form uses anything else, raises :class:`Unsupported` and
keeps the numpy lowering. The loop nest and its sums follow ``numba_fused``: each
value result written once, each full sum or sum over the rows added into a row of
partial sums (float32 for float32 members, moved into the float64 accumulators every
``FLUSH_ROWS`` rows).

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, y: en.sigmoid(x) * y, passes=["cleanup"])
    >>> g = f.graph_for(en.ones((2, 3), dtype="float32"), en.ones(3, dtype="float32"))
    >>> x, y, sig, mul = g.topo_order()
    >>> print(kernel_source("fused", [sig, mul], [x, y], [(mul, None)]).split("int fused")[1])
    (const float *restrict x0, const float *restrict x1, float *restrict out0, int64_t lo, int64_t hi) {
        for (int64_t i0 = lo; i0 < hi; i0++) {
            for (int64_t i1 = 0; i1 < 3; i1++) {
                const float t0 = (float)((1.0f / (1.0f + exp32((-x0[i0 * 3 + i1])))));
                const float t1 = (float)((t0 * x1[i1]));
                out0[i0 * 3 + i1] = t1;
            }
        }
        return 0;
    }
    <BLANKLINE>
"""
import ast
import math

import numpy as np

from engine import scalar_forms

from engine.numerics import bitwise

from .. import loop_nest
from ..loop_nest import FLUSH_ROWS, loop_dtype
from ..plugin import Unsupported

# The longest 1-D region with a sum written in C (see kernel_source).
MAX_FLAT_SUM = 4096
_CTYPES = {np.dtype("float32"): "float", np.dtype("float64"): "double",
           np.dtype("bool"): "unsigned char"}
_FLOATS = (np.dtype("float32"), np.dtype("float64"))

# exp32 and tanh32 as numba_math writes them (graph/lowering/numba/numba_math.py), and numpy's
# maximum/minimum (a NaN in either gives NaN).
C_MATH = r"""#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float f_of_bits(int32_t b) { float f; memcpy(&f, &b, 4); return f; }
static inline int32_t bits_of_f(float f) { int32_t b; memcpy(&b, &f, 4); return b; }

static inline float exp32(float x) {
    float y = x > -104.0f ? x : -104.0f;
    y = y < 88.8f ? y : 88.8f;
    float t = y * 1.4426950408889634f + 12582912.0f;
    float nf = t - 12582912.0f;
    int32_t n = bits_of_f(t) - 0x4B400000;
    float r = (y - nf * 0.693359375f) - nf * -2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = 1.0f / 720.0f + r * p;
    p = 1.0f / 120.0f + r * p;
    p = 1.0f / 24.0f + r * p;
    p = 1.0f / 6.0f + r * p;
    p = 0.5f + r * p;
    p = 1.0f + r * p;
    p = 1.0f + r * p;
    int32_t half = n >> 1;
    float e = (p * f_of_bits((n - half + 127) << 23)) * f_of_bits((half + 127) << 23);
    e = x < 88.72284f ? e : INFINITY;
    return x == x ? e : x;
}

static inline float tanh32(float x) {
    float a = x >= 0.0f ? x : -x;
    float s = a * a;
    float q = -929569.0f / 638512875.0f;
    q = 21844.0f / 6081075.0f + s * q;
    q = -1382.0f / 155925.0f + s * q;
    q = 62.0f / 2835.0f + s * q;
    q = -17.0f / 315.0f + s * q;
    q = 2.0f / 15.0f + s * q;
    q = -1.0f / 3.0f + s * q;
    q = 1.0f + s * q;
    float small = a * q;
    float b = a < 10.0f ? a : 10.0f;
    float big = 1.0f - 2.0f / (exp32(2.0f * b) + 1.0f);
    float t = a < 0.5f ? small : big;
    t = x >= 0.0f ? t : -t;
    return x == x ? t : x;
}

/* erf in float32 without branches (so a loop of it vectorizes), within 3 ulp of the
   correctly rounded value: erf(x) = x P(x^2) for |x| < 0.921875, else
   1 - exp(Q(|x|)) with its sign, Q fitted to log(erfc) on [0.921875, 4] (from 4 on,
   erf rounds to 1). The coefficients are least-squares fits in float64 on Chebyshev
   points, rounded to float32. */
static inline float erf32(float x) {
    float a = x >= 0.0f ? x : -x;
    float s = x * x;
    float p = 8.392696e-05f;
    p = -0.0008148506f + s * p;
    p = 0.0052015916f + s * p;
    p = -0.026859647f + s * p;
    p = 0.112837f + s * p;
    p = -0.37612635f + s * p;
    p = 1.1283792f + s * p;
    float small = x * p;
    float u = (a < 4.0f ? a : 4.0f) - 2.4609375f;
    float q = -5.145243e-08f;
    q = -3.9904887e-08f + u * q;
    q = 1.9177921e-06f + u * q;
    q = -1.3600564e-05f + u * q;
    q = 8.047545e-05f + u * q;
    q = -0.00043909575f + u * q;
    q = 0.0022495477f + u * q;
    q = -0.011203077f + u * q;
    q = -0.94260126f + u * q;
    q = -5.2789893f + u * q;
    q = -7.599166f + u * q;
    float big = 1.0f - exp32(q);
    big = x >= 0.0f ? big : -big;
    float r = a < 0.921875f ? small : big;
    return x == x ? r : x;
}

/* numpy's negative flips the sign bit, a NaN's too. Under en.config.numerics = "bitwise"
   a minus is written as this flip, which the compiler cannot fold into a constant: it
   vectorizes (-x) * 2 as x * -2, which keeps a NaN's sign. */
static inline float neg_f(float x) { int32_t b; memcpy(&b, &x, 4); b ^= INT32_MIN; memcpy(&x, &b, 4); return x; }
static inline double neg_d(double x) { int64_t b; memcpy(&b, &x, 8); b ^= INT64_MIN; memcpy(&x, &b, 8); return x; }
static inline float max_f(float a, float b) { return (a >= b || a != a) ? a : b; }
static inline float min_f(float a, float b) { return (a <= b || a != a) ? a : b; }
static inline double max_d(double a, double b) { return (a >= b || a != a) ? a : b; }
static inline double min_d(double a, double b) { return (a <= b || a != a) ? a : b; }
/* numpy's npy_logaddexp: equal arguments (infinities too) give x + log 2. */
static inline float logaddexp_f(float x, float y) {
    if (x == y) return x + 0.693147180559945309417f;
    float d = x - y;
    return d > 0 ? x + log1pf(expf(-d)) : (d <= 0 ? y + log1pf(expf(d)) : d);
}
static inline double logaddexp_d(double x, double y) {
    if (x == y) return x + 0.693147180559945309417;
    double d = x - y;
    return d > 0 ? x + log1p(exp(-d)) : (d <= 0 ? y + log1p(exp(d)) : d);
}
"""

# The callee as the scalar forms write it (np.exp, math.erf, abs) -> (float32 C function,
# float64 C function).
_FUNCTIONS = {"np.exp": ("exp32", "exp"), "np.tanh": ("tanh32", "tanh"),
              "np.maximum": ("max_f", "max_d"), "np.minimum": ("min_f", "min_d"),
              "np.logaddexp": ("logaddexp_f", "logaddexp_d"), "abs": ("fabsf", "fabs"),
              "np.rint": ("rintf", "rint"), "np.isfinite": ("isfinite",) * 2,
              "np.isinf": ("isinf",) * 2, "np.isnan": ("isnan",) * 2,
              "np.signbit": ("signbit",) * 2, "math.erf": ("erf32", "erf"),
              "math.erfc": ("erfcf", "erfc")}
# The rest are libm's, named alike (float32: with an f), numpy's arc- names as C's a-.
for _name in ("log", "log1p", "log2", "log10", "expm1", "exp2", "sqrt", "sin", "cos", "tan",
              "sinh", "cosh", "floor", "ceil", "trunc", "copysign", "hypot", "nextafter", "cbrt",
              "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "arctan2"):
    _c = "a" + _name[3:] if _name.startswith("arc") else _name
    _FUNCTIONS["np." + _name] = (_c + "f", _c)
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def ctype(dtype):
    """The C type of a value of ``dtype``; raises :class:`Unsupported` for others."""
    try:
        return _CTYPES[np.dtype(dtype)]
    except KeyError:
        raise Unsupported(f"dtype {np.dtype(dtype).name} has no C form here") from None


def literal(value, dtype):
    """``value`` as a C literal of ``dtype`` (float32, float64 or bool)."""
    value = float(value)
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "-INFINITY"
    else:
        text = repr(value)
        if "e" not in text and "." not in text:
            text += ".0"
    if np.dtype(dtype) == np.float32:
        return f"{text}f" if text[-1].isdigit() else f"((float){text})"
    if np.dtype(dtype) == np.bool_:
        return "1" if value else "0"
    return text


class _ToC(ast.NodeVisitor):
    """Writes one parsed scalar form in C, its inputs ``_a0, _a1, ...`` given as C text."""

    def __init__(self, dtype, args):
        self.dtype, self.args = np.dtype(dtype), args
        self.single = self.dtype == np.float32

    def generic_visit(self, node):
        raise Unsupported(f"no C form for {ast.dump(node)[:60]}")

    def visit_Name(self, node):
        words = {"ONE": 1.0, "ZERO": 0.0, "HALF": 0.5}
        if node.id in words:
            return literal(words[node.id], self.dtype)
        if node.id.startswith("_a"):
            return self.args[int(node.id[2:])]
        raise Unsupported(f"no C form for the name {node.id}")

    def visit_Constant(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise Unsupported(f"no C form for the constant {node.value!r}")
        return literal(node.value, self.dtype)

    def visit_BinOp(self, node):
        a, b = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            return f"{'powf' if self.single else 'pow'}({a}, {b})"
        op = _BINARY.get(type(node.op))
        if op is None:
            raise Unsupported(f"no C form for the operator {type(node.op).__name__}")
        return f"({a} {op} {b})"

    def visit_UnaryOp(self, node):
        a = self.visit(node.operand)
        ops = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!"}
        if type(node.op) not in ops:
            raise Unsupported(f"no C form for the operator {type(node.op).__name__}")
        if isinstance(node.op, ast.USub) and bitwise() and self.dtype in _FLOATS:
            return f"{'neg_f' if self.single else 'neg_d'}({a})"
        return f"({ops[type(node.op)]}{a})"

    def visit_Compare(self, node):
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
            raise Unsupported("no C form for a chained or identity comparison")
        a, b = self.visit(node.left), self.visit(node.comparators[0])
        return f"({a} {_COMPARE[type(node.ops[0])]} {b})"

    def visit_BoolOp(self, node):
        op = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + op.join(f"({self.visit(v)} != 0)" for v in node.values) + ")"

    def visit_IfExp(self, node):
        return f"({self.visit(node.test)} ? {self.visit(node.body)} : {self.visit(node.orelse)})"

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id in ("np", "math"):
            name = f"{f.value.id}.{f.attr}"
        elif isinstance(f, ast.Name) and f.id in ("abs", "bool"):
            name = f.id
        else:
            raise Unsupported(f"no C form for the call {ast.dump(f)[:60]}")
        args = [self.visit(a) for a in node.args]
        if name == "bool" and len(args) == 1:
            return f"({args[0]} != 0)"
        if name not in _FUNCTIONS or node.keywords:
            raise Unsupported(f"no C form for {name}")
        return f"{_FUNCTIONS[name][0 if self.single else 1]}({', '.join(args)})"


def c_expression(node, args):
    """The C expression computing elementwise ``node`` from the C expressions ``args`` of
    its inputs, in ``node``'s C type. Raises :class:`Unsupported` where there is none.

    Example:
        >>> import engine as en
        >>> g = en.function(lambda x: en.exp(x), passes=["cleanup"]).graph_for(
        ...     en.ones(3, dtype="float32"))
        >>> c_expression(g.outputs[0], ["a"])
        '(float)(exp32(a))'
    """
    op = node.op
    in_dtypes = [np.dtype(i.dtype) for i in node.inputs]
    form = scalar_forms.resolve(op, [(tuple(i.shape), i.dtype) for i in node.inputs],
                                node.dtype, node.params)
    if form is None:
        raise Unsupported(f"{node.name}: {op.name} has no scalar form")
    out = ctype(node.dtype)
    dt = np.dtype(node.dtype) if op.name in ("where", "cast") else \
        loop_dtype(op, in_dtypes, node.dtype)
    if dt not in _CTYPES:
        raise Unsupported(f"{node.name}: {op.name} computes in {dt.name}")
    # Inputs converted to the loop dtype first, as numpy's loop converts them (a cast
    # converts by itself; where's condition stays a condition).
    cast = [a if op.name == "cast" or d == dt or (op.name == "where" and k == 0)
            else f"(({ctype(dt)}){a})" for k, (a, d) in enumerate(zip(args, in_dtypes))]
    try:
        tree = ast.parse(form.format(*[f"_a{k}" for k in range(len(args))]), mode="eval")
    except (SyntaxError, IndexError, KeyError) as why:
        raise Unsupported(f"{node.name}: its scalar form does not parse: {why}") from None
    text = _ToC(dt, cast).visit(tree.body)
    if np.dtype(node.dtype) == np.bool_:
        return f"({out})({text} != 0)"
    return f"({out})({text})"


def _offset(shape, region_shape, loops):
    """The linear offset in a C-contiguous array of ``shape``, broadcast to
    ``region_shape``, at the loop indices ``loops``."""
    lead = len(region_shape) - len(shape)
    terms, stride = [], 1
    for k in range(len(shape) - 1, -1, -1):
        if not (shape[k] == 1 and region_shape[lead + k] != 1):
            terms.append(loops[lead + k] if stride == 1 else f"{loops[lead + k]} * {stride}")
        stride *= shape[k]
    return " + ".join(reversed(terms)) or "0"


class CDialect(loop_nest.Dialect):
    """The loop nest (``graph/lowering/loop_nest.py``) spelled in C over flat arrays."""

    def check(self, node):
        if node.shape is None or any(d is None for d in node.shape):
            raise Unsupported(f"{node.name}: unknown dims")
        ctype(node.dtype)

    def check_region(self, shape, members, values, sums):
        if any(np.dtype(m.dtype) not in _FLOATS for m in sums):
            raise Unsupported("a sum of a non-float member")
        if sums and len(shape) == 1 and shape[0] > MAX_FLAT_SUM:
            # The partial sums are one per position of the last axis, flushed every
            # FLUSH_ROWS rows: over one long axis that is quadratic.
            raise Unsupported("a sum over one long axis")

    def signature(self, name, inputs, values, sums):
        params = [f"const {ctype(i.dtype)} *restrict x{k}" for k, i in enumerate(inputs)] + \
            [f"{ctype(m.dtype)} *restrict out{j}" for j, m in enumerate(values)] + \
            [f"double *restrict acc{j}" for j in range(len(sums))] + ["int64_t lo", "int64_t hi"]
        return f"int {name}({', '.join(params)}) {{"

    def partial(self, j, member, length):
        # On the heap: a long last axis would not fit on the stack.
        t = ctype(member.dtype)
        return [f"{t} *restrict part{j} = calloc({length}, sizeof({t}));",
                f"if (!part{j}) return -1;"]

    def scalar(self, k, node):
        return f"const {ctype(node.dtype)} s{k} = x{k}[0];", f"s{k}"

    def element(self, k, node, shape, loops):
        return f"x{k}[{_offset(tuple(node.shape), shape, loops)}]"

    def store_target(self, j, shape, loops):
        return f"out{j}[{_offset(shape, shape, loops)}]"

    def define(self, k, member, args):
        return f"const {ctype(member.dtype)} t{k} = {c_expression(member, args)};"

    def store(self, j, shape, loops, value):
        return f"{self.store_target(j, shape, loops)} = {value};"

    def accumulate(self, j, loop, value):
        return f"part{j}[{loop}] += {value};"

    def open_loop(self, k, extent):
        if k == 0:
            return "for (int64_t i0 = lo; i0 < hi; i0++) {"
        return f"for (int64_t i{k} = 0; i{k} < {extent}; i{k}++) {{"

    def close_loop(self):
        return "}"

    def flush(self, n_sums, length):
        moves = " ".join(f"acc{j}[i] += part{j}[i]; part{j}[i] = 0;" for j in range(n_sums))
        return [f"        if ((i0 - lo) % {FLUSH_ROWS} == {FLUSH_ROWS - 1}) {{",
                f"            for (int64_t i = 0; i < {length}; i++) {{ {moves} }}",
                "        }"]

    def finish(self, n_sums, length):
        add = " ".join(f"acc{j}[i] += part{j}[i];" for j in range(n_sums))
        return [f"    for (int64_t i = 0; i < {length}; i++) {{ {add} }}"] + \
            [f"    free(part{j});" for j in range(n_sums)]

    def end(self):
        return ["    return 0;", "}"]


def kernel_source(name, members, inputs, outputs, aliases=()):
    """C source of ``int name(x0, ..., out0, ..., acc0, ..., lo, hi)`` over rows ``lo:hi``
    of the region, with :data:`C_MATH` before it: the contract of
    ``numba_fused.kernel_source`` (``outputs`` as ``(member, reduction)``; ``aliases`` as
    ``(k, j)`` where input ``k`` is value result ``j``'s array, read through ``out{j}``,
    so every pointer may be ``restrict``), laid out by the shared loop nest
    (``graph/lowering/loop_nest.py``). Raises :class:`Unsupported`."""
    return C_MATH + "\n" + loop_nest.write(CDialect(), name, members, inputs, outputs, aliases)
