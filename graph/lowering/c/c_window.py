"""C kernels of the window ops: max pooling (forward, gradient, gather), col2im, and the
direct convolution loops (forward and filter gradient; ``engine/ops/conv.py`` picks them).

numpy runs these loops with inner loops only C channels long (a strided view per
window tap, an add per tap into (N, H, W, C) slices); in C each is one pass over
memory. Measured on the 2-core AMD EPYC VM for the CNN step's shapes (batch 64, one
thread, fastest of 25): the pooling gradient at 28x28x16 2.6 ms in numpy against 0.8
in C, max pooling 0.8 against 0.33; the input gradient of a 3x3 convolution from 32
back to 16 channels at 14x14 as one product and a C col2im 2.0 ms against 8.3 for the
full correlation's im2col and product. (im2col itself stays numpy's copy: a C loop
measured no faster.) A direct convolution loop sums blocks of 8 pixels times 16 outputs in
vector registers over each window's taps: conv2's forward (64x14x14, 16 -> 32, 3x3) 1.1 ms
against 2.3-2.9 for im2col and OpenBLAS's product, at the core's multiply-add peak.

One source per dtype (float32, float64) holds the kernels (shapes are arguments, so
each is compiled once per machine, about 0.2 s of CPU, then loaded from the disk cache of
``c_compiler`` in a millisecond). The kernels register in
``engine.ops.native.KERNELS`` when this module is imported (the registry of
lowerings imports it); a library not yet on disk is built on the background
compile thread from the first call on (numpy's kernels run until it is ready). A
build that fails warns once and drops the kernels: the numpy kernels run. Max pooling
and the direct loops run a whole batch, its images split in parts on the C pool's
threads (``c_pool.py``) where the caller asks for more than one thread.

The geometry every kernel takes, as int64s: ``N, H, W, C`` (the input), ``OH, OW``
(the windows), ``KH, KW`` (taps), ``SH, SW`` (strides), ``DH, DW`` (dilation),
``PT, PL`` (the pads before). A tap outside the input is a pad: skipped by col2im,
never the maximum for pooling unless it is its window's first tap (numpy's padded
kernels pad with the lowest value, which a later tap beats or ties).

Example:
    >>> import numpy as np
    >>> x = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> out = max_pool2d(x, (1, 4, 4, 1, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0)) if installed() else \\
    ...     np.array([5.0, 7.0, 13.0, 15.0]).reshape(1, 2, 2, 1)
    >>> out[0, :, :, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""
import ctypes
import string

import numpy as np

from engine.ops import native

from engine.cost_model import cost

from . import c_address, c_fused, c_pool
from .c_dtype_library import DtypeLibraries

_HEADER = """#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#define GEOMETRY \\
    const int64_t N = g[0], H = g[1], W = g[2], C = g[3], OH = g[4], OW = g[5]; \\
    const int64_t KH = g[6], KW = g[7], SH = g[8], SW = g[9], DH = g[10], DW = g[11]; \\
    const int64_t PT = g[12], PL = g[13]; \\
    (void)N; (void)OH; (void)OW;
enum { BLOCK = 64 };   /* channels whose running maxima live on the stack */
enum { OB = 16 };      /* outputs a direct convolution sums at once, in registers */
enum { PB = 8 };       /* pixels it sums at once (EACH_PIXEL names eight) */
"""

_KERNELS = string.Template("""
/* OB values of $T in one vector variable ($I: the lanes of a comparison's result). */
typedef $T vec_$S __attribute__((vector_size(OB * sizeof($T))));
typedef $I ivec_$S __attribute__((vector_size(OB * sizeof($T))));

static inline vec_$S load_$S(const $T* p) { vec_$S v; memcpy(&v, p, sizeof v); return v; }

static inline void store_$S($T* p, vec_$S v) { memcpy(p, &v, sizeof v); }

/* rel[t]: where tap t sits from its window's first value (KH*KW of them). */
static void tap_steps(int64_t* rel, const int64_t* g) {
    GEOMETRY
    for (int64_t a = 0; a < KH; a++)
    for (int64_t b = 0; b < KW; b++) rel[a * KW + b] = (a * DH * W + b * DW) * C;
}

/* off[t]: where tap t of window (n, oh, ow) sits in x, -1 at a pad. A window inside the
   input (most are) needs no bounds tested: its first value plus rel (testing each tap's
   bounds cost pooling three quarters of its time). */
static inline void window_taps(int64_t* off, const int64_t* rel, const int64_t* g,
                               int64_t n, int64_t oh, int64_t ow) {
    GEOMETRY
    const int64_t top = oh * SH - PT, left = ow * SW - PL, T = KH * KW;
    if (top >= 0 && top + (KH - 1) * DH < H && left >= 0 && left + (KW - 1) * DW < W) {
        const int64_t start = ((n * H + top) * W + left) * C;
        for (int64_t t = 0; t < T; t++) off[t] = start + rel[t];
        return;
    }
    for (int64_t a = 0; a < KH; a++) {
        const int64_t ih = top + a * DH;
        for (int64_t b = 0; b < KW; b++) {
            const int64_t iw = left + b * DW;
            off[a * KW + b] = ih >= 0 && ih < H && iw >= 0 && iw < W ?
                ((n * H + ih) * W + iw) * C : -1;
        }
    }
}

/* max_pool's modes 0 and 3 where C is whole vectors: a window's OB channels at a time in
   vector variables, the running maximum and its tap chosen lane by lane by a mask (the
   loops over a window's channels cost more than their work where C is a vector or two). */
static int max_pool_vec_$S(const $T* restrict x, const $T* restrict u, $T* restrict out,
                           int64_t mode, const int64_t* g) {
    GEOMETRY
    const int64_t T = KH * KW;
    int64_t* off = malloc((size_t)(2 * T) * sizeof(int64_t));
    if (!off) return 1;
    int64_t* rel = off + T;
    tap_steps(rel, g);
    const vec_$S lowest = (vec_$S){0} - ($T)INFINITY;
    for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < OH; oh++)
    for (int64_t ow = 0; ow < OW; ow++) {
        const int64_t o = ((n * OH + oh) * OW + ow) * C;
        window_taps(off, rel, g, n, oh, ow);
        for (int64_t c0 = 0; c0 < C; c0 += OB) {
            vec_$S best = off[0] >= 0 ? load_$S(x + off[0] + c0) : lowest;
            ivec_$S tap = {0};
            for (int64_t t = 1; t < T; t++) {
                if (off[t] < 0) continue;
                const vec_$S v = load_$S(x + off[t] + c0);
                const ivec_$S take = (v > best) | ((v != v) & (best == best));
                best = (vec_$S)(((ivec_$S)v & take) | ((ivec_$S)best & ~take));
                tap = (take & ($I)t) | (tap & ~take);
            }
            if (mode == 0) {
                store_$S(out + o + c0, best);
                continue;
            }
            const ivec_$S us = (ivec_$S)load_$S(u + o + c0);
            for (int64_t t = 0; t < T; t++)
                if (off[t] >= 0) store_$S(out + off[t] + c0, (vec_$S)(us & (tap == ($I)t)));
        }
    }
    free(off);
    return 0;
}

/* mode 0: out (N, OH, OW, C) = each window's maximum;
   mode 1: out (N, H, W, C), zeroed, += u (N, OH, OW, C) at each window's first maximum;
   mode 2: out (N, OH, OW, C) = u (N, H, W, C) at each window's first maximum (0 at a pad);
   mode 3: mode 1 for windows that never overlap: each tap is stored, u at the maximum and
           0 elsewhere, one vectorized store a tap rather than an add at a gathered
           offset (out need not be zeroed where the windows cover the input).
   The first maximum as numpy's argmax finds it: the first NaN, else the first largest.
   Channel loops stay loops, not calls to memcpy and memset: a window's are a few dozen
   bytes, where a call costs more than the copy. */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
int max_pool_$S(const $T* restrict x, const $T* restrict u, $T* restrict out, int64_t mode,
                const int64_t* g) {
    GEOMETRY
    if ((mode == 0 || mode == 3) && C % OB == 0) return max_pool_vec_$S(x, u, out, mode, g);
    const int64_t T = KH * KW;
    /* Per window, each tap's offset in x (-1 at a pad); per channel, the running maximum
       and the tap holding it, an int32 beside a float so that the loop vectorizes. */
    int64_t* off = malloc((size_t)(2 * T) * sizeof(int64_t));
    if (!off) return 1;
    int64_t* rel = off + T;
    tap_steps(rel, g);
    $T best[BLOCK];
    int32_t tap[BLOCK];
    for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < OH; oh++)
    for (int64_t ow = 0; ow < OW; ow++) {
        const int64_t o = ((n * OH + oh) * OW + ow) * C;
        window_taps(off, rel, g, n, oh, ow);
        for (int64_t c0 = 0; c0 < C; c0 += BLOCK) {
            const int64_t cb = C - c0 < BLOCK ? C - c0 : BLOCK;
            /* The first tap starts the maximum, a pad as the lowest value; a later pad
               never wins (it beats nothing and ties lose to the earlier tap). */
            if (off[0] >= 0) {
                const $T* xs = x + off[0] + c0;
                for (int64_t c = 0; c < cb; c++) best[c] = xs[c];
            } else {
                for (int64_t c = 0; c < cb; c++) best[c] = -($T)INFINITY;
            }
            for (int64_t c = 0; c < cb; c++) tap[c] = 0;
            for (int64_t t = 1; t < T; t++) {
                if (off[t] < 0) continue;
                const $T* xs = x + off[t] + c0;
                for (int64_t c = 0; c < cb; c++) {
                    const $T v = xs[c], m = best[c];
                    const int take = (v > m) | ((v != v) & (m == m));
                    best[c] = take ? v : m;
                    tap[c] = take ? (int32_t)t : tap[c];
                }
            }
            if (mode == 0) {
                for (int64_t c = 0; c < cb; c++) out[o + c0 + c] = best[c];
            } else if (mode == 3) {
                for (int64_t t = 0; t < T; t++) {
                    if (off[t] < 0) continue;
                    $T* dst = out + off[t] + c0;
                    const $T* us = u + o + c0;
                    for (int64_t c = 0; c < cb; c++) dst[c] = tap[c] == t ? us[c] : ($T)0;
                }
            } else if (mode == 1) {
                for (int64_t c = 0; c < cb; c++) {
                    const int64_t p = off[tap[c]];
                    if (p >= 0) out[p + c0 + c] += u[o + c0 + c];
                }
            } else {
                for (int64_t c = 0; c < cb; c++) {
                    const int64_t p = off[tap[c]];
                    out[o + c0 + c] = p >= 0 ? u[p + c0 + c] : ($T)0;
                }
            }
        }
    }
    free(off);
    return 0;
}

/* Direct convolution, on an input padded beforehand (PT = PL = 0: no bounds to test).
   out (N, OH, OW, O) = each window's K = KH*KW*C taps times the filters w (K, O). Tap k
   of a window sits at off[k] from the window's first value, so a block of PB pixels (any
   pixels of an image: a row's end and the next row's start together) runs one loop over
   k, the PB sums of OB outputs each in vector registers (PB chains of multiply-adds in
   flight at once); the O % OB trailing outputs take a scalar loop. */
/* off[k], k = (a * KW + b) * C + c: where tap (a, b), channel c sits from a window's start. */
static int64_t* tap_offsets_$S(const int64_t* g) {
    GEOMETRY
    int64_t* off = malloc((size_t)(KH * KW * C + 1) * sizeof(int64_t));   /* (+1: never 0) */
    if (!off) return NULL;
    for (int64_t a = 0; a < KH; a++)
    for (int64_t b = 0; b < KW; b++)
    for (int64_t c = 0; c < C; c++) off[(a * KW + b) * C + c] = (a * DH * W + b * DW) * C + c;
    return off;
}

#define EACH_PIXEL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

int conv_direct_$S(const $T* restrict x, const $T* restrict w, $T* restrict out, int64_t O,
                   const int64_t* g) {
    GEOMETRY
    const int64_t K = KH * KW * C, P = OH * OW, OV = O - O % OB;
    int64_t* off = tap_offsets_$S(g);
    if (!off) return 1;
    for (int64_t n = 0; n < N; n++)
    for (int64_t p0 = 0, oh = 0, ow = 0; p0 < P; p0 += PB) {
        const int64_t pb = P - p0 < PB ? P - p0 : PB;
        const $T* base[PB];
        for (int64_t i = 0; i < PB; i++) {     /* past the last pixel: the first again */
            base[i] = x + ((n * H + oh * SH) * W + ow * SW) * C;
            if (i + 1 < pb && ++ow == OW) { ow = 0; oh++; }
        }
        if (pb == PB && ++ow == OW) { ow = 0; oh++; }
        $T* dst = out + (n * P + p0) * O;
#define LOAD_BASE(i) const $T* b##i = base[i];
        EACH_PIXEL(LOAD_BASE)
        for (int64_t o0 = 0; o0 < OV; o0 += OB) {
#define ZERO(i) vec_$S s##i = {0};
            EACH_PIXEL(ZERO)
            for (int64_t k = 0; k < K; k++) {
                const vec_$S wv = load_$S(w + k * O + o0);
                const int64_t d = off[k];
#define FMA(i) s##i += b##i[d] * wv;
                EACH_PIXEL(FMA)
            }
#define STORE(i) if (i < pb) store_$S(dst + i * O + o0, s##i);
            EACH_PIXEL(STORE)
        }
        for (int64_t i = 0; i < pb; i++)
        for (int64_t o = OV; o < O; o++) {
            $T s = 0;
            for (int64_t k = 0; k < K; k++) s += base[i][off[k]] * w[k * O + o];
            dst[i * O + o] = s;
        }
    }
    free(off);
    return 0;
}

/* The filter gradient of conv_direct (the same padded input): dw (K, O) = the sum over every
   window of its taps times its cotangent u (N, OH, OW, O). Four filter taps at a time, over
   an image's pixels in two alternating sums each (eight vector sums in flight), added to
   dw per image: a float32 sum is never more than half an image's pixels long. */
int conv_filter_direct_$S(const $T* restrict x, const $T* restrict u, $T* restrict dw,
                          int64_t O, const int64_t* g) {
    GEOMETRY
    const int64_t K = KH * KW * C, OV = O - O % OB;
    int64_t* off = tap_offsets_$S(g);
    if (!off) return 1;
    for (int64_t k = 0; k < K * O; k++) dw[k] = 0;
    for (int64_t n = 0; n < N; n++)
    for (int64_t k0 = 0; k0 < K; k0 += 4) {
        const int64_t kb = K - k0 < 4 ? K - k0 : 4;
        /* past the last tap: the first again (summed, never stored) */
        const int64_t d0 = off[k0], d1 = off[k0 + (kb > 1)], d2 = off[k0 + 2 * (kb > 2)],
                      d3 = off[k0 + 3 * (kb > 3)];
        for (int64_t o0 = 0; o0 < OV; o0 += OB) {
            vec_$S s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
            vec_$S t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
            for (int64_t oh = 0; oh < OH; oh++) {
                const $T* xr = x + (n * H + oh * SH) * W * C;
                const $T* ur = u + ((n * OH + oh) * OW) * O + o0;
                int64_t ow = 0;
                for (; ow + 2 <= OW; ow += 2) {
                    const $T* p = xr + ow * SW * C;
                    const $T* q = p + SW * C;
                    const vec_$S uv = load_$S(ur + ow * O), vv = load_$S(ur + (ow + 1) * O);
                    s0 += p[d0] * uv; s1 += p[d1] * uv; s2 += p[d2] * uv; s3 += p[d3] * uv;
                    t0 += q[d0] * vv; t1 += q[d1] * vv; t2 += q[d2] * vv; t3 += q[d3] * vv;
                }
                if (ow < OW) {
                    const $T* p = xr + ow * SW * C;
                    const vec_$S uv = load_$S(ur + ow * O);
                    s0 += p[d0] * uv; s1 += p[d1] * uv; s2 += p[d2] * uv; s3 += p[d3] * uv;
                }
            }
            const vec_$S sums[4] = {s0 + t0, s1 + t1, s2 + t2, s3 + t3};
            for (int64_t i = 0; i < kb; i++) {
                $T* d = dw + (k0 + i) * O + o0;
                store_$S(d, load_$S(d) + sums[i]);
            }
        }
        for (int64_t i = 0; i < kb; i++)
        for (int64_t o = OV; o < O; o++) {
            $T s = 0;
            for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                s += x[((n * H + oh * SH) * W + ow * SW) * C + off[k0 + i]] *
                     u[((n * OH + oh) * OW + ow) * O + o];
            dw[(k0 + i) * O + o] += s;
        }
    }
    free(off);
    return 0;
}

/* dx (N, H, W, C), zeroed, += each window's cols (N, OH, OW, KH, KW, C) at its taps. */
int col2im_$S(const $T* restrict cols, $T* restrict dx, const int64_t* g) {
    GEOMETRY
    const $T* src = cols;
    for (int64_t n = 0; n < N; n++)
    for (int64_t oh = 0; oh < OH; oh++)
    for (int64_t ow = 0; ow < OW; ow++)
    for (int64_t a = 0; a < KH; a++) {
        const int64_t ih = oh * SH + a * DH - PT;
        for (int64_t b = 0; b < KW; b++, src += C) {
            const int64_t iw = ow * SW + b * DW - PL;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            $T* dst = dx + ((n * H + ih) * W + iw) * C;
            for (int64_t c = 0; c < C; c++) dst[c] += src[c];
        }
    }
    return 0;
}

/* Images lo:hi of a batch, a part the C pool runs (graph/lowering/c/c_pool.py):
   a = {x, other, out, &number, geometry, steps}, each array advanced by steps[k]
   elements an image (0: the part has its own, or shares it). */
typedef int (*window_kernel_$S)(const $T*, const $T*, $T*, int64_t, const int64_t*);
static int images_$S(window_kernel_$S kernel, void** a, int64_t lo, int64_t hi) {
    int64_t g[14];
    memcpy(g, a[4], sizeof g);
    g[0] = hi - lo;
    const int64_t* step = (const int64_t*)a[5];
    return kernel((const $T*)a[0] + lo * step[0], (const $T*)a[1] + lo * step[1],
                  ($T*)a[2] + lo * step[2], *(const int64_t*)a[3], g);
}
int max_pool_parts_$S(void** a, int64_t lo, int64_t hi) {
    return images_$S(max_pool_$S, a, lo, hi);
}
int conv_direct_parts_$S(void** a, int64_t lo, int64_t hi) {
    return images_$S(conv_direct_$S, a, lo, hi);
}
int conv_filter_direct_parts_$S(void** a, int64_t lo, int64_t hi) {
    return images_$S(conv_filter_direct_$S, a, lo, hi);
}
""")

_TYPES = {np.dtype(np.float32): ("float", "f32", "int32_t"),
          np.dtype(np.float64): ("double", "f64", "int64_t")}
# One library per dtype: a float32 program compiles only its own kernels (about half the
# compile of both, on the first call of a fresh cache).
SOURCES = {dt: _HEADER + _KERNELS.substitute(T=t, S=s, I=i) for dt, (t, s, i) in _TYPES.items()}
NAMES = ("max_pool2d", "max_pool2d_grad", "max_pool2d_gather", "col2im", "conv_direct",
         "conv_filter_direct")
# kernel -> its array arguments and whether an int64 (a mode, or O) follows them
_KINDS = {"max_pool": (3, True), "col2im": (2, False), "conv_direct": (3, True),
          "conv_filter_direct": (3, True)}
# The kernels that run a batch's images in parts on the C pool (c_pool.py).
_IN_PARTS = ("max_pool", "conv_direct", "conv_filter_direct")
def _bind(lib, dtype):
    """The kernels of a loaded library by kind, each with its C pool entry where it has one."""
    fns = {}
    for kind, (arrays, number) in _KINDS.items():
        fn = getattr(lib, f"{kind}_{_TYPES[dtype][1]}")
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * arrays + \
            ([ctypes.c_int64] if number else []) + [ctypes.c_void_p]
        if kind in _IN_PARTS:      # its entry for the C pool: images lo:hi of a batch
            fn.parts_entry = ctypes.cast(getattr(lib, f"{kind}_parts_{_TYPES[dtype][1]}"),
                                         ctypes.c_void_p).value
        fns[kind] = fn
    return fns


# dtype -> {kind: C function}: a first call runs numpy's kernels rather than wait for the
# compiler.
LIBRARY = DtypeLibraries("C window kernels", "numpy's kernels run", SOURCES, _bind, NAMES,
                         splits=True)


def _function(kind, dtype):
    fns = LIBRARY.get(dtype)
    return None if fns is None else fns[kind]


def _geometry(geo):
    return np.asarray(geo, dtype=np.int64)


def _target(out, shape, dtype, zeroed):
    """Where a kernel writes: ``out`` when it is a C-contiguous array of ``dtype`` (a
    buffer the graph's memory planning gives), else a fresh array."""
    if out is not None and out.dtype == dtype and out.flags.c_contiguous:
        if zeroed:
            out.fill(0)
        return out
    return np.zeros(shape, dtype) if zeroed else np.empty(shape, dtype)


def _delivered(target, out):
    """The kernel's result: ``out`` (``target`` copied in where the kernel could not write
    ``out`` itself), or ``target`` when no ``out`` was given."""
    if out is not None and target is not out:
        out[...] = target
        return out
    return target


def _run(fn, arrays, number, geo, threads, filters=False, own=False):
    """The kernel ``fn`` over the batch of ``arrays`` (x, other, out: C-contiguous, their
    first axis the images, but for ``filters``: other is the filters every image reads):
    one call, or where ``threads`` > 1 and the C pool runs,
    ``cost.window_split_native_chunks`` parts of images on it. ``own``: each part has its
    own result (a filter gradient's sum over its images), summed into out in part order.
    The kernel's return code (0: done)."""
    g = _geometry(geo)          # held: a temporary's address would outlive it
    n = int(geo[0])
    if threads > 1 and n > 1 and c_pool.ready():
        chunks = min(n, int(cost.window_split_native_chunks))
        bounds = [k * n // chunks for k in range(chunks + 1)]
        steps = np.array([a[:1].size for a in arrays], np.int64)
        if filters:
            steps[1] = 0
        parts = None
        if own:
            steps[2] = 0
            parts = np.empty((chunks,) + arrays[2].shape, arrays[2].dtype)
        count = np.array([number], np.int64)
        shared = [c_address.data(a) for a in arrays] + [c_address.data(count),
                                                        c_address.data(g),
                                                        c_address.data(steps)]
        pointers = [shared if parts is None else
                    shared[:2] + [c_address.data(parts[k])] + shared[3:]
                    for k in range(chunks)]
        code = c_pool.run_parts(fn.parts_entry, pointers, bounds, threads)
        if code is not None:
            if code == 0 and parts is not None:
                np.add.reduce(parts, axis=0, out=arrays[2])
            return code
    return fn(*[c_address.data(a) for a in arrays], number, c_address.data(g))


def _pool(mode, x, u, shape, geo, out, threads):
    fn = _function("max_pool", x.dtype)
    if fn is None:
        return None
    x = np.ascontiguousarray(x)
    u = x if u is None else np.ascontiguousarray(u, dtype=x.dtype)
    zeroed = mode == 1
    if mode == 1 and _apart(geo):
        mode, zeroed = 3, not _covering(geo)
    target = _target(out, shape, x.dtype, zeroed=zeroed)
    if _run(fn, (x, u, target), mode, geo, threads) != 0:
        raise c_fused.OutOfMemoryError("max pooling's C kernel: no memory for its window "
                                       "offsets")
    return _delivered(target, out)


def _apart(geo):
    """Whether no two windows share an input position (each spans at most its stride):
    the gradient then stores each tap (mode 3) rather than adding into zeros, 0.22
    against 1.1 ms for the CNN step's 2x2 pool of 64x28x28x16 float32."""
    kh, kw, sh, sw, dh, dw = geo[6:12]
    return (kh - 1) * dh + 1 <= sh and (kw - 1) * dw + 1 <= sw


def _covering(geo):
    """Whether windows that never overlap also cover every input position (dense windows,
    each a stride wide, reaching the last row and column): nothing is left to zero."""
    h, w, _, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = geo[1:14]
    return dh == dw == 1 and (kh, kw) == (sh, sw) and oh * sh - pt >= h and \
        ow * sw - pl >= w


def max_pool2d(x, geo, out=None, threads=1):
    """Each window's maximum, (N, OH, OW, C) (into ``out`` if given); None where the
    library is not built. ``threads`` > 1: the images in parts on the C pool."""
    n, _, _, c, oh, ow = geo[:6]
    return _pool(0, x, None, (n, oh, ow, c), geo, out, threads)


def max_pool2d_grad(x, g, geo, out=None, threads=1):
    """``g`` (N, OH, OW, C) added at each window's first maximum of ``x``, (N, H, W, C)."""
    return _pool(1, x, g, x.shape, geo, out, threads)


def max_pool2d_gather(x, u, geo, out=None, threads=1):
    """The values of ``u`` (shaped like ``x``) at each window's first maximum of ``x``."""
    n, _, _, c, oh, ow = geo[:6]
    return _pool(2, x, u, (n, oh, ow, c), geo, out, threads)


def col2im(cols, geo, out=None):
    """The input cotangent (N, H, W, C) summed from each window's ``cols`` (C-contiguous
    (N, OH, OW, KH, KW, C)), into ``out`` if given."""
    fn = _function("col2im", cols.dtype)
    if fn is None:
        return None
    dx = _target(out, tuple(geo[:4]), cols.dtype, zeroed=True)
    g = _geometry(geo)
    fn(np.ascontiguousarray(cols).ctypes.data, dx.ctypes.data, g.ctypes.data)
    return _delivered(dx, out)


def _padded(x, geo):
    """``x`` with the zero pads its windows reach, C-contiguous, and the geometry on it
    (no pads before: the direct kernels test no bounds)."""
    n, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl = geo
    bottom = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - h - pt)
    right = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - w - pl)
    if pt or pl or bottom or right:
        x = np.pad(x, ((0, 0), (pt, bottom), (pl, right), (0, 0)))
    x = np.ascontiguousarray(x)
    return x, (n, x.shape[1], x.shape[2], c, oh, ow, kh, kw, sh, sw, dh, dw, 0, 0)


def _direct(kind, name, x, other, geo, out, sizes, threads):
    """Run the direct loop ``kind`` on ``x`` padded beforehand and ``other`` (filters or
    cotangent, whose last axis is the O outputs); the result has the padded geometry's
    ``sizes`` (indices into it) then O. None where the library is not built."""
    fn = _function(kind, x.dtype)
    if fn is None:
        return None
    o = other.shape[3]
    x, geo = _padded(x, geo)
    other = np.ascontiguousarray(other, dtype=x.dtype)
    target = _target(out, tuple(geo[k] for k in sizes) + (o,), x.dtype, zeroed=False)
    if _run(fn, (x, other, target), o, geo, threads, filters=kind == "conv_direct",
            own=kind == "conv_filter_direct"):
        raise c_fused.OutOfMemoryError(f"{name}'s direct C kernel: no memory for its tap "
                                       "offsets")
    return _delivered(target, out)


def conv_direct(x, w, geo, out=None, threads=1):
    """conv2d of ``x`` (N, H, W, C) with filters ``w`` (KH, KW, C, O) by the direct loop,
    (N, OH, OW, O) (into ``out`` if given); None where the library is not built.
    ``threads`` > 1: the images in parts on the C pool."""
    return _direct("conv_direct", "conv2d", x, w, geo, out, (0, 4, 5), threads)


def conv_filter_direct(x, u, geo, out=None, threads=1):
    """The filter gradient (KH, KW, C, O) of ``conv_direct`` for input ``x`` and cotangent
    ``u`` (N, OH, OW, O), into ``out`` if given; None where the library is not built.
    ``threads`` > 1: the images in parts on the C pool, each part's sum its own, added
    in part order."""
    return _direct("conv_filter_direct", "conv2d_backprop_filter", x, u, geo, out, (6, 7, 3),
                   threads)


# Outputs the direct loops sum per vector (OB in the C source): conv.runs_direct takes
# them only for whole blocks (a partial one runs a scalar loop).
conv_direct.block = conv_filter_direct.block = 16       # type: ignore[attr-defined]


def installed():
    """Whether the kernels are registered and can be built (a C compiler is found)."""
    return "max_pool2d" in native.KERNELS and all(
        LIBRARY.get(dt, wait=True) is not None for dt in _TYPES)


def install():
    """Register the kernels in ``engine.ops.native`` (built on their first call)."""
    for dtype in _TYPES:
        for name, fn in zip(NAMES, (max_pool2d, max_pool2d_grad, max_pool2d_gather, col2im,
                                    conv_direct, conv_filter_direct)):
            native.register(name, dtype, fn)
