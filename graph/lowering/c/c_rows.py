"""C kernels reducing a C-contiguous float array over its last axis: max, min and sum of
each row (``engine/ops/reduce.py`` picks them for short rows).

numpy reduces over the last axis one row at a time, its reduce loop set up again for
each row: for rows of 32 float32 that costs more than the work (max over (32, 4, 32, 32)
float32 0.22-0.25 ms, 1.6 ns an element, on the 2-core AMD EPYC VM (Zen 5)). One C loop
over all the rows, with the call: max 0.018 ms, sum 0.017 against numpy's 0.094.

Results are numpy's. A sum is numpy's pairwise sum of a contiguous reduce
(``numpy/_core/src/umath/loops_utils.h.src``): fewer than 8 values added in order; up to
128 in eight running sums over the values stepping 8, folded as
``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, the rest added in order; longer
rows halved at a multiple of 8 and each half summed so; then added to numpy's identity,
``0.0 + s`` (so a row of -0.0 sums to +0.0, as numpy's does), bit for bit. A maximum or
minimum is NaN where its row holds a NaN, else the row's largest (smallest) value. Two
differences, neither in a value: where a row's extreme is a zero held with both signs,
numpy's sign depends on its SIMD width (which lanes its vector loop compares first) and
this kernel's may differ (the two zeros compare equal); and a NaN's sign and payload are
not promised (which NaN an inf - inf or a NaN + NaN gives is the compiler's choice of
operand order, numpy's as much as this kernel's).

One source per dtype (float32, float64), built and loaded as ``c_window``'s are: the
kernels register in ``engine.ops.native.KERNELS`` at import of the lowerings' registry;
a library not on disk is compiled on the background compile thread from the first call
on (numpy reduces until it is ready), then loaded from ``c_compiler``'s disk cache. A
build that fails warns once and drops the kernels.

Example:
    >>> import numpy as np
    >>> x = np.array([[1.0, 5.0, 2.0], [-1.0, -4.0, -3.0]])
    >>> out = reduce_last_max(x) if installed() else np.array([5.0, -1.0])
    >>> out.tolist()
    [5.0, -1.0]
"""
import ctypes
import string

import numpy as np

from engine.ops import native

from . import c_address
from .c_dtype_library import DtypeLibraries

_HEADER = """#include <stdint.h>
#include <string.h>
#include <math.h>
enum { PW_BLOCKSIZE = 128 };    /* numpy's pairwise block */
"""

_KERNELS = string.Template("""
/* Eight values in one vector variable: numpy's eight running sums side by side, so each
   step of 8 is one load and one add (lane j adds the values j, j + 8, ... as numpy's r[j]). */
typedef $T vec_$S __attribute__((vector_size(8 * sizeof($T))));

static inline vec_$S load_$S(const $T* p) { vec_$S v; memcpy(&v, p, sizeof v); return v; }

/* numpy's pairwise sum of the n values at a (its order of adds exactly). */
static $T pairwise_$S(const $T* a, int64_t n) {
    if (n < 8) {
        $T res = 0;
        for (int64_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= PW_BLOCKSIZE) {
        vec_$S r = load_$S(a);
        int64_t i = 8;
        for (; i < n - n % 8; i += 8) r += load_$S(a + i);
        $T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_$S(a, n2) + pairwise_$S(a + n2, n - n2);
}

/* out[r] = the sum of row r of x (rows, n), numpy's identity first. */
int reduce_last_sum_$S(const $T* restrict x, $T* restrict out, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) out[r] = ($T)0 + pairwise_$S(x + r * n, n);
    return 0;
}

""")

# The running extremes: one 32-byte vector of lanes (any order of comparisons gives the
# same value, so these need not be numpy's eight); ``$FOLD`` folds its lanes into each
# (lane j against lane j ^ s for s = half the lanes, a quarter, ... 1).
_EXTREME_TYPES = string.Template("""
typedef $T xvec_$S __attribute__((vector_size(32)));
typedef $I ixvec_$S __attribute__((vector_size(32)));
enum { XL_$S = 32 / sizeof($T) };
#if defined(__clang__)
#define LANES_$S(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define LANES_$S(v, ...) __builtin_shuffle(v, (ixvec_$S){__VA_ARGS__})
#endif
""")

# out[r] = the maximum (``$K`` max, ``$C`` >) or minimum (min, <) of row r, NaN where the row
# holds one. Two running extremes (two chains of compares in flight) where each lane takes
# v where v beats it, and beside them a running sum of the values: a NaN met makes the sum
# NaN, and only then is the row searched for one (a NaN flag in the compares' chain cost
# twice the time; a sum NaN without a NaN, from inf - inf, only costs the search). The
# lanes are folded by shuffles (no trip through memory); a row shorter than a vector and
# the values left over one at a time (the select compiles to a max or min instruction).
_EXTREME = string.Template("""
static inline xvec_$S pick_${K}_$S(xvec_$S v, xvec_$S b) {
    const ixvec_$S take = v $C b;
    return (xvec_$S)(((ixvec_$S)v & take) | ((ixvec_$S)b & ~take));
}

int reduce_last_${K}_$S(const $T* restrict x, $T* restrict out, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const $T* a = x + r * n;
        int64_t i = 0;
        $T m = a[0];
        int bad = 0;
        if (n >= XL_$S) {
            xvec_$S b0, b1, s0, v;
            memcpy(&b0, a, sizeof b0);
            b1 = s0 = b0;
            for (i = XL_$S; i + 2 * XL_$S <= n; i += 2 * XL_$S) {
                memcpy(&v, a + i, sizeof v);
                b0 = pick_${K}_$S(v, b0);
                s0 += v;
                memcpy(&v, a + i + XL_$S, sizeof v);
                b1 = pick_${K}_$S(v, b1);
                s0 += v;
            }
            if (i + XL_$S <= n) {
                memcpy(&v, a + i, sizeof v);
                b0 = pick_${K}_$S(v, b0);
                s0 += v;
                i += XL_$S;
            }
            b0 = pick_${K}_$S(b1, b0);
$FOLD
            m = b0[0];
            if (s0[0] != s0[0])
                for (int64_t j = 0; j < i; j++) bad |= a[j] != a[j];
        }
        for (; i < n; i++) {
            m = a[i] $C m ? a[i] : m;
            bad |= a[i] != a[i];
        }
        out[r] = bad ? ($T)NAN : m;
    }
    return 0;
}
""")


def _fold(s, lanes, k):
    """The C lines folding the lanes of ``b0`` (the extremes) and ``s0`` (the sums) into
    each (see _EXTREME_TYPES)."""
    steps = []
    half = lanes // 2
    while half:
        order = ", ".join(str(j ^ half) for j in range(lanes))
        steps.append(f"            b0 = pick_{k}_{s}(LANES_{s}(b0, {order}), b0);")
        steps.append(f"            s0 += LANES_{s}(s0, {order});")
        half //= 2
    return "\n".join(steps)


_TYPES = {np.dtype(np.float32): ("float", "f32", "int32_t"),
          np.dtype(np.float64): ("double", "f64", "int64_t")}


def _source(dtype):
    t, s, i = _TYPES[dtype]
    lanes = 32 // dtype.itemsize
    extremes = "".join(_EXTREME.substitute(T=t, S=s, K=k, C=c, FOLD=_fold(s, lanes, k))
                       for k, c in (("max", ">"), ("min", "<")))
    return _HEADER + _KERNELS.substitute(T=t, S=s) + \
        _EXTREME_TYPES.substitute(T=t, S=s, I=i) + extremes


SOURCES = {dt: _source(dt) for dt in _TYPES}
NAMES = ("reduce_last_max", "reduce_last_min", "reduce_last_sum")


def _bind(lib, dtype):
    """The kernels of a loaded library by name."""
    fns = {}
    for name in NAMES:
        fn = getattr(lib, f"{name}_{_TYPES[dtype][1]}")
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        fns[name] = fn
    return fns


# dtype -> {name: C function}, or None where the library cannot be built.
LIBRARY = DtypeLibraries("C row reductions", "numpy reduces", SOURCES, _bind, NAMES)


def _rows(name, x, out):
    """Reduce the C-contiguous ``x`` (at least one value a row) over its last axis with
    the C function ``name``: an array of ``x.shape[:-1]``, or ``out`` (any shape of that
    many values, a keepdims result) filled; None where the library is not built."""
    fns = LIBRARY.get(x.dtype)
    if fns is None:
        return None
    n = x.shape[-1]
    rows = x.size // n
    direct = out is not None and out.dtype == x.dtype and out.flags.c_contiguous and \
        out.size == rows
    target = out if direct else np.empty(x.shape[:-1], x.dtype)
    fns[name](c_address.data(x), c_address.data(target), rows, n)
    if out is not None and not direct:
        out[...] = target.reshape(out.shape)
        return out
    return target


def reduce_last_max(x, out=None):
    """The maximum of each row of the C-contiguous float ``x`` (over its last axis), NaN
    where a row holds one; None where the library is not built."""
    return _rows("reduce_last_max", x, out)


def reduce_last_min(x, out=None):
    """The minimum of each row of ``x``, as :func:`reduce_last_max`."""
    return _rows("reduce_last_min", x, out)


def reduce_last_sum(x, out=None):
    """The sum of each row of ``x``, numpy's pairwise order (its bits), as
    :func:`reduce_last_max`."""
    return _rows("reduce_last_sum", x, out)


def installed():
    """Whether the kernels are registered and can be built (a C compiler is found)."""
    return "reduce_last_sum" in native.KERNELS and all(
        LIBRARY.get(dt, wait=True) is not None for dt in _TYPES)


def install():
    """Register the kernels in ``engine.ops.native`` (built on their first call)."""
    for dtype in _TYPES:
        for name, fn in zip(NAMES, (reduce_last_max, reduce_last_min, reduce_last_sum)):
            native.register(name, dtype, fn)
