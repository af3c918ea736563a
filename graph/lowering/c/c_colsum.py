"""A C kernel summing a C-contiguous float array over its leading axes (column sums of a
(rows, t) block: a bias gradient, ``sum(x, axis=(0, 1))``), picked by
``engine/ops/reduce.py`` for sums over two or more leading axes.

numpy sums down the leading axes of a C-ordered array one row at a time with an inner loop
only t long, and its result adds row after row (error growing like the row count). Here:

- Order. The rows are cut into ``parts`` ranges (``k * rows // parts`` on), a count the
  caller takes from the shape alone. Each part sums its rows in float64: blocks of up to
  ``BLOCK_ROWS`` (32) rows added in two, four or eight interleaved chains (rows 2i and
  2i + 1, ...; each chain in order, then the chains in order), a longer range halved and
  its halves summed so and added (numpy's pairwise scheme, run down the rows), so the
  error grows like ``BLOCK_ROWS + log2(rows)`` float64 roundings. The parts' float64 sums
  are then added in part order and rounded once to the input's dtype. A float32 result is
  so the exact sum rounded once (but where the exact sum lies within about 1e-13 of a
  float32 tie), and a float32 sum that overflows only midway is finite; a float64 one's
  error bound is below numpy's row after row sum's (rows - 1 roundings) past a few dozen
  rows. NaN and infinities propagate as in any order.
- Threads. Where the C pool (``c_pool.py``) runs, its threads take the parts; otherwise
  one call runs the same parts in turn. The bits never depend on the threads.

Measured on the 2-core AMD EPYC VM: see ``engine/cost_model.py`` (``colsum_*``).

One source per dtype (float32, float64), built and loaded as ``c_rows``'s are: numpy (the
caller's path) sums while a library not yet on disk compiles on the background thread.

Example:
    >>> import numpy as np
    >>> x = np.arange(12.0).reshape(4, 3)
    >>> out = sum_leading(x, 1) if installed() else x.sum(axis=0)
    >>> out.tolist()
    [18.0, 22.0, 26.0]
"""
import ctypes
import string

import numpy as np

from engine.ops import native

from . import c_address, c_pool
from .c_dtype_library import DtypeLibraries

_HEADER = """#include <stdint.h>
#include <string.h>
enum { BLOCK_ROWS = 32 };   /* rows a part adds in order before it halves a range */
#define LANES 4             /* doubles in a vector of sums (one AVX register) */
#if defined(__AVX__)
#include <immintrin.h>
#endif
typedef double dvec __attribute__((vector_size(LANES * 8)));
"""

_KERNELS = string.Template("""
/* LANES values of $T, and the doubles they convert to. */
typedef $T tvec_$S __attribute__((vector_size(LANES * sizeof($T))));

static inline dvec load_$S(const $T* p) {
$LOAD
}

/* acc[c] = the sum of column c over the n rows (of t) at x, in double: 4 * LANES columns
   at a time, then 2 * LANES, then LANES (tile*_: two, four or eight rows' sums in flight,
   so no chain of dependent adds holds the loop up, added in order at the end), then the
   last few one at a time in four chains (rows 4i, 4i+1, 4i+2, 4i+3, the leftover rows
   into the first; the chains added in order). */
static void in_order_$S(const $T* restrict x, int64_t n, int64_t t, double* restrict acc) {
    int64_t c0 = 0;
    for (; c0 + 4 * LANES <= t; c0 += 4 * LANES) tile4_$S(x + c0, n, t, acc + c0);
    for (; c0 + 2 * LANES <= t; c0 += 2 * LANES) tile2_$S(x + c0, n, t, acc + c0);
    for (; c0 + LANES <= t; c0 += LANES) tile1_$S(x + c0, n, t, acc + c0);
    for (int64_t c = c0; c < t; c++) {
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t r = 0;
        for (; r + 4 <= n; r += 4) {
            s0 += (double)x[r * t + c];
            s1 += (double)x[(r + 1) * t + c];
            s2 += (double)x[(r + 2) * t + c];
            s3 += (double)x[(r + 3) * t + c];
        }
        for (; r < n; r++) s0 += (double)x[r * t + c];
        acc[c] = ((s0 + s1) + s2) + s3;
    }
}

/* acc = the column sums of n rows at x: BLOCK_ROWS rows in order, longer ranges halved
   and the halves' sums added (scratch: t doubles a level of halving). */
static void pairwise_$S(const $T* restrict x, int64_t n, int64_t t, double* restrict acc,
                        double* restrict scratch) {
    if (n <= BLOCK_ROWS) {
        in_order_$S(x, n, t, acc);
        return;
    }
    const int64_t h = n / 2;
    pairwise_$S(x, h, t, acc, scratch + t);
    pairwise_$S(x + h * t, n - h, t, scratch, scratch + t);
    for (int64_t c = 0; c < t; c++) acc[c] += scratch[c];
}

/* One part, rows lo:hi, the C pool's entry: a = {x, its sums (t doubles), its scratch,
   &t}. */
int sum_leading_parts_$S(void** a, int64_t lo, int64_t hi) {
    const int64_t t = *(const int64_t*)a[3];
    pairwise_$S((const $T*)a[0] + lo * t, hi - lo, t, (double*)a[1], (double*)a[2]);
    return 0;
}

/* out[c] = the parts' sums (parts rows of t in sums) added in part order, rounded once. */
int sum_leading_fold_$S(const double* restrict sums, $T* restrict out, int64_t t,
                        int64_t parts) {
    for (int64_t c = 0; c < t; c++) {
        double s = sums[c];
        for (int64_t k = 1; k < parts; k++) s += sums[k * t + c];
        out[c] = ($T)s;
    }
    return 0;
}

/* The whole sum on the calling thread, the same parts in turn (work: parts rows of t
   doubles for the sums, then depth * t of scratch). */
int sum_leading_$S(const $T* restrict x, $T* restrict out, double* restrict work,
                   int64_t rows, int64_t t, int64_t parts) {
    for (int64_t k = 0; k < parts; k++) {
        const int64_t lo = k * rows / parts, hi = (k + 1) * rows / parts;
        pairwise_$S(x + lo * t, hi - lo, t, work + k * t, work + parts * t);
    }
    return sum_leading_fold_$S(work, out, t, parts);
}
""")

_TYPES = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}
# How a vector of sums takes LANES values: float32 converted by AVX's one instruction where
# the compiler targets it (gcc's generic conversion of a vector took 1.6x the time: it
# split each into halves), float64 as it is.
_LOADS = {"f32": """#if defined(__AVX__)
    return (dvec)_mm256_cvtps_pd(_mm_loadu_ps(p));
#else
    tvec_f32 v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, dvec);
#endif""", "f64": """    dvec v;
    memcpy(&v, p, sizeof v);
    return v;"""}


def _tile(t, s, width, chains):
    """C of ``tile{width}_{s}``: the sums of LANES * ``width`` columns over n rows, ``chains``
    rows at a time, row r + k into its own ``width`` vectors of sums (k < chains; the rows
    left over into the first), those added in order at the end."""
    names = [[f"a{k}_{w}" for w in range(width)] for k in range(chains)]
    lines = [f"static inline void tile{width}_{s}(const {t}* restrict x, int64_t n, "
             "int64_t t, double* restrict acc) {",
             "    dvec " + ", ".join(f"{v} = {{0}}" for row in names for v in row) + ";",
             "    int64_t r = 0;",
             f"    for (; r + {chains} <= n; r += {chains}) {{",
             f"        const {t}* p = x + r * t;"]
    lines += [f"        {names[k][w]} += load_{s}(p + {k} * t + {w} * LANES);"
              for k in range(chains) for w in range(width)]
    lines += ["    }", "    for (; r < n; r++) {"]
    lines += [f"        {names[0][w]} += load_{s}(x + r * t + {w} * LANES);" for w in range(width)]
    lines += ["    }"]
    for w in range(width):
        total = names[0][w]
        for k in range(1, chains):
            total = f"({total} + {names[k][w]})" if k < chains - 1 else f"{total} + {names[k][w]}"
        lines += [f"    const dvec s{w} = {total};",
                  f"    memcpy(acc + {w} * LANES, &s{w}, sizeof s{w});"]
    return "\n".join(lines + ["}", "", ""])


def _source(dtype):
    t, s = _TYPES[dtype]
    kernels = _KERNELS.substitute(T=t, S=s, LOAD=_LOADS[s])
    at = kernels.index("/* acc[c] = the sum of column c")
    tiles = "".join(_tile(t, s, w, c) for w, c in ((4, 2), (2, 4), (1, 8)))
    return _HEADER + kernels[:at] + tiles + "\n" + kernels[at:]


SOURCES = {dt: _source(dt) for dt in _TYPES}
NAME = "sum_leading"


def _bind(lib, dtype):
    """The kernels of a loaded library: the whole sum, the fold of parts, the pool entry."""
    s = _TYPES[dtype][1]
    whole = getattr(lib, f"sum_leading_{s}")
    whole.restype = ctypes.c_int
    whole.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3
    fold = getattr(lib, f"sum_leading_fold_{s}")
    fold.restype = ctypes.c_int
    fold.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2
    parts = ctypes.cast(getattr(lib, f"sum_leading_parts_{s}"), ctypes.c_void_p).value
    fns = {"whole": whole, "fold": fold, "parts": parts}
    return fns


# dtype -> {"whole", "fold": C functions, "parts": the pool entry's address}, or None
# where the library cannot be built.
LIBRARY = DtypeLibraries("the C leading-axes sum", "numpy sums", SOURCES, _bind, (NAME,),
                         splits=True)


def _depth(rows):
    """How many levels of halving a part of at most ``rows`` rows may need (a bound)."""
    return max(1, int(rows).bit_length())


def sum_leading(x, parts, out=None, threads=True):
    """The column sums of the C-contiguous float ``x`` (rows, t): an array of (t,), or
    ``out`` (t values of x's dtype, C-contiguous, any shape) filled; its rows summed in
    ``parts`` ranges (at most ``rows``), on the C pool's threads where ``threads``, the
    pool runs and ``c_pool.threads()`` (the rule its other kernels follow) gives more than
    one, else in turn (the same bits). None where the library is not built."""
    fns = LIBRARY.get(x.dtype)
    if fns is None:
        return None
    rows, t = x.shape
    parts = max(1, min(int(parts), rows))
    direct = out is not None and out.dtype == x.dtype and out.flags.c_contiguous and \
        out.size == t
    target = out if direct else np.empty(t, x.dtype)
    depth = _depth(-(-rows // parts))
    data, into = c_address.data(x), c_address.data(target)
    done = None
    if parts > 1 and threads and c_pool.threads() > 1:
        sums = np.empty((parts, t))                 # each part's sums
        scratch = np.empty((parts, depth, t))
        count = np.array([t], np.int64)             # held: the parts read t through it
        pointers = [[data, sums[k].ctypes.data, scratch[k].ctypes.data, count.ctypes.data]
                    for k in range(parts)]
        bounds = [k * rows // parts for k in range(parts + 1)]
        if c_pool.run_parts(fns["parts"], pointers, bounds) == 0:
            fns["fold"](c_address.data(sums), into, t, parts)
            done = True
    if done is None:
        work = np.empty((parts + depth) * t)
        fns["whole"](data, into, c_address.data(work), rows, t, parts)
    if out is not None and not direct:
        out[...] = target.reshape(out.shape)
        return out
    return target


def installed():
    """Whether the kernel is registered and can be built (a C compiler is found)."""
    return NAME in native.KERNELS and all(
        LIBRARY.get(dt, wait=True) is not None for dt in _TYPES)


def install():
    """Register the kernel in ``engine.ops.native`` (built on its first call)."""
    for dtype in _TYPES:
        native.register(NAME, dtype, sum_leading)
