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

Imported by the generated modules (graph/lowering/numba/numba_cache.py), never by the
engine at import time (numba is optional).
"""
import functools
import math
import platform

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from engine.errors import UnimplementedError

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


# ---- a minus LLVM cannot fold, for en.config.numerics = "bitwise" ------------------------------
# The register class of an empty asm statement that hands a float back unchanged, by
# machine (elsewhere no such barrier is written).
_FLOAT_REGISTER = {"x86_64": "x", "amd64": "x", "aarch64": "w", "arm64": "w"}.get(
    platform.machine().lower())


@intrinsic
def neg_(typingctx, x):
    """``-x``; for a float, a flip of its sign bit, as numpy's ``negative`` flips it (a
    NaN's too), that LLVM cannot see through. LLVM takes a float negation for a sign it
    may move: ``(-x) * 2`` became ``x * -2``, ``(-x) * (-x)`` became ``x * x``, which keep
    the NaN's sign; an integer xor of the bits it turns back into a negation. So the
    flipped value passes through an empty asm statement: a scalar loop (no vectorizing),
    written only under "bitwise" (graph/lowering/numba/numba_emitter.py; the C
    lowering's twin is ``neg_f``/``neg_d`` in c_source.py)."""
    if not isinstance(x, (types.Float, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        (value,) = args
        if not isinstance(signature.args[0], types.Float):
            return builder.neg(value)
        bits = ir.IntType(signature.args[0].bitwidth)
        flipped = builder.bitcast(builder.xor(builder.bitcast(value, bits),
                                              ir.Constant(bits, 1 << (bits.width - 1))),
                                  value.type)
        if _FLOAT_REGISTER is None:
            return flipped
        return builder.asm(ir.FunctionType(value.type, [value.type]), "",
                           f"={_FLOAT_REGISTER},0", [flipped], side_effect=False)
    return x(x), codegen


# ---- numpy's integer and float division, shifts, for the scalar forms ----------------------
# numba's own ``//``, ``%`` and shifts differ from numpy's ufuncs at the edges: a float
# floor division without numpy's correction (1.0 // 0.1 gave 10, numpy 9), the
# smallest integer divided by -1 (0, where numpy wraps to itself; its ``%`` by -1 a
# SIGFPE that ends the process), shift counts outside [0, bits) (taken modulo the
# width, where numpy gives 0, or -1 shifting a negative right). These stubs are
# written per type by their overloads; numpy's loops (npy_divmod) are the model.
_STUB = "a scalar-form helper of the compiled lowering: numba compiles it, Python does not run it"


def floor_divide_(a, b):
    """numpy's ``floor_divide`` of two scalars of one dtype (see the overload)."""
    raise UnimplementedError(_STUB)


def remainder_(a, b):
    """numpy's ``remainder`` of two scalars of one dtype (see the overload)."""
    raise UnimplementedError(_STUB)


def left_shift_(a, b):
    """numpy's ``left_shift``: 0 for a count outside [0, bits)."""
    raise UnimplementedError(_STUB)


def right_shift_(a, b):
    """numpy's ``right_shift``: 0, or -1 for a negative ``a``, for a count outside [0, bits)."""
    raise UnimplementedError(_STUB)


def _njit(fn):
    # numpy's error model: a float division by zero gives inf or nan, as in the regions.
    return numba.njit(fn, error_model="numpy")


def _float_divmod(kind):
    """``(floor_divide, remainder)`` for a float type: npy_divmod's steps in that type;
    floor division takes ``floor(a / b)`` where an operand is not finite, as the engine's
    kernel does (the Array API standard's value)."""
    zero, one, half = kind(0.0), kind(1.0), kind(0.5)

    def divmod_(a, b):
        mod = np.fmod(a, b)
        div = (a - mod) / b
        if mod:
            if (b < zero) != (mod < zero):
                mod += b
                div -= one
        else:
            mod = np.copysign(zero, b)
        if div:
            floordiv = np.floor(div)
            if div - floordiv > half:
                floordiv += one
        else:
            floordiv = np.copysign(zero, a / b)
        return kind(floordiv), kind(mod)
    divmod_ = _njit(divmod_)

    def floor_divide(a, b):
        if not (np.isfinite(a) and np.isfinite(b)):
            return kind(np.floor(a / b))
        if not b:
            return kind(a / b)
        return divmod_(a, b)[0]

    def remainder(a, b):
        if not b:
            return kind(np.fmod(a, b))
        return divmod_(a, b)[1]
    return _njit(floor_divide), _njit(remainder)


def _int_division(kind):
    """``(floor_divide, remainder)`` for an integer type: 0 for a zero divisor, and the
    smallest value divided by -1 wraps (numpy's results, without its warnings)."""
    zero, minus_one = kind(0), kind(-1) if np.dtype(kind).kind == "i" else None

    def floor_divide(a, b):
        if not b:
            return zero
        if minus_one is not None and b == minus_one:
            return kind(zero - a)   # wraps at the smallest value, as numpy does
        return kind(a // b)

    def remainder(a, b):
        if not b:
            return zero
        if minus_one is not None and b == minus_one:
            return zero
        return kind(a % b)
    return _njit(floor_divide), _njit(remainder)


def _shifts(kind, bits):
    zero = kind(0)
    minus_one = kind(-1) if np.dtype(kind).kind == "i" else zero

    def left(a, b):
        if b < 0 or b >= bits:
            return zero
        return kind(a << b)

    def right(a, b):
        if b < 0 or b >= bits:
            return minus_one if a < zero else zero
        return kind(a >> b)
    return _njit(left), _njit(right)


@functools.lru_cache(maxsize=None)
def _division(kind):
    """``(floor_divide, remainder)`` for numpy type ``kind``, made once a process."""
    return _float_divmod(kind) if np.dtype(kind).kind == "f" else _int_division(kind)


@functools.lru_cache(maxsize=None)
def _shifts_of(kind):
    """``(left, right)`` shifts for integer type ``kind``, made once a process."""
    return _shifts(kind, np.dtype(kind).itemsize * 8)


def _by_type(pair, index):
    """An overload implementation: function ``index`` of ``pair(numpy type)`` for the
    first argument's numba type (both arguments have the op's loop dtype)."""
    def typer(a, b):
        if not isinstance(a, (types.Integer, types.Float)) or a != b:
            return None
        fn = pair(np.dtype(str(a)).type)[index]
        return lambda a, b: fn(a, b)
    return typer


overload(floor_divide_)(_by_type(_division, 0))
overload(remainder_)(_by_type(_division, 1))
overload(left_shift_)(_by_type(_shifts_of, 0))
overload(right_shift_)(_by_type(_shifts_of, 1))
