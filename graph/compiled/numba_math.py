"""float32 ``exp`` and ``tanh`` for compiled regions, written so LLVM vectorizes them.

numba lowers ``np.exp``/``np.tanh`` on a float32 scalar to one libm call per
element, which no loop vectorizer can batch: on the benchmark machine 13-18 ns
an element against numpy's 0.6 (its SIMD loops). These forms use only float32
arithmetic, int32 shifts and a bit cast, so a loop over them runs 4-8 elements
per instruction (about 1.3 ns an element there). Accuracy: ``exp32`` is within
1.5 ulp of the exact value over float32's range (a degree-7 polynomial after
Cody-Waite reduction); ``tanh32`` within about 5 ulp (a Taylor polynomial to
x^15 below |x| = 0.5, ``1 - 2 / (exp(2|x|) + 1)`` above). NaN passes through,
+-inf, overflow and underflow (to subnormals and 0) behave as numpy's do. float64 keeps numba's libm calls.

Both are numba intrinsics: each call writes its instructions into the caller's
own IR. As njit functions they were calls, which LLVM inlined into some
region functions and not into others (a loop with the call left in cannot be
vectorized: 2.4x slower forward loops, measured); numba's ``inline="always"``
inlines them for certain, but costs about 0.6 s of compile time per call site.

Imported by the generated modules (graph/compiled/numba_cache.py), never by the
engine at import time (numba is optional).
"""
import math

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

_F32 = ir.FloatType()
_I32 = ir.IntType(32)


def _c(value):
    return ir.Constant(_F32, value)


def _pick(builder, cond, a, b):
    return builder.select(cond, a, b)


def _horner(builder, x, coefficients):
    """``c0 + x * (c1 + x * (c2 + ...))`` in float32, innermost first."""
    acc = _c(coefficients[-1])
    for k in reversed(coefficients[:-1]):
        acc = builder.fadd(_c(k), builder.fmul(x, acc))
    return acc


def _exp32_ir(builder, x):
    lt = builder.fcmp_ordered
    y = _pick(builder, lt(">", x, _c(-104.0)), x, _c(-104.0))
    y = _pick(builder, lt("<", y, _c(88.8)), y, _c(88.8))
    z = builder.fmul(y, _c(1.4426950408889634))
    # z rounded to the nearest integer by adding and taking away 1.5 * 2**23: the sum
    # keeps no fraction bits (|z| < 151), and its low mantissa bits are that integer
    # (two adds and an integer subtract, where a compare, two converts and a select
    # took 15-30% longer per exp).
    t = builder.fadd(z, _c(12582912.0))
    nf = builder.fsub(t, _c(12582912.0))
    n = builder.sub(builder.bitcast(t, _I32), ir.Constant(_I32, 0x4B400000))
    # ln 2 split in two (Cody-Waite), so r is exact enough for the polynomial.
    r = builder.fsub(builder.fsub(y, builder.fmul(nf, _c(0.693359375))),
                     builder.fmul(nf, _c(-2.12194440e-4)))
    p = _horner(builder, r, [1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0,
                             1.0 / 5040.0])
    # 2**n in two factors, each a normal float32 for every n in [-150, 128].
    half = builder.ashr(n, ir.Constant(_I32, 1))

    def power(k):
        bits = builder.shl(builder.add(k, ir.Constant(_I32, 127)), ir.Constant(_I32, 23))
        return builder.bitcast(bits, _F32)
    e = builder.fmul(builder.fmul(p, power(builder.sub(n, half))), power(half))
    e = _pick(builder, lt("<", x, _c(88.72284)), e, _c(math.inf))
    return _pick(builder, lt("==", x, x), e, x)


def _tanh32_ir(builder, x):
    cmp = builder.fcmp_ordered
    negative = builder.fsub(_c(-0.0), x)
    a = _pick(builder, cmp(">=", x, _c(0.0)), x, negative)
    s = builder.fmul(a, a)
    small = builder.fmul(a, _horner(builder, s, [
        1.0, -1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0, -1382.0 / 155925.0,
        21844.0 / 6081075.0, -929569.0 / 638512875.0]))
    b = _pick(builder, cmp("<", a, _c(10.0)), a, _c(10.0))
    big = builder.fsub(_c(1.0), builder.fdiv(
        _c(2.0), builder.fadd(_exp32_ir(builder, builder.fmul(_c(2.0), b)), _c(1.0))))
    t = _pick(builder, cmp("<", a, _c(0.5)), small, big)
    t = _pick(builder, cmp(">=", x, _c(0.0)), t, builder.fsub(_c(-0.0), t))
    return _pick(builder, cmp("==", x, x), t, x)


def _float32_intrinsic(write):
    def typer(typingctx, x):
        if not isinstance(x, types.Number):
            return None

        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[0], signature.args[0], types.float32)
            return write(builder, value)
        return types.float32(x), codegen
    return typer


@intrinsic
def exp32(typingctx, x):
    """``exp`` of a float32 scalar, as a float32 (see the module docstring)."""
    return _float32_intrinsic(_exp32_ir)(typingctx, x)


@intrinsic
def tanh32(typingctx, x):
    """``tanh`` of a float32 scalar, as a float32 (see the module docstring)."""
    return _float32_intrinsic(_tanh32_ir)(typingctx, x)
