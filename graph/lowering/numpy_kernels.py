"""numpy's own kernels as C function addresses, for compiled code that must give eager's bits.

Under ``en.config.numerics = "bitwise"`` a compiled scan may compute only what numpy
computes. Two of numpy's kernels cannot be rewritten in C with the same bits, so the
generated C calls numpy's own, through addresses found here (``graph/lowering/c/c_bitwise.py``):

- a ufunc's inner loop (``np.tanh``, ``np.exp`` ...): the ``functions`` and ``data``
  arrays of the built-in ufunc object (``PyUFuncObject``), which numpy fills at import
  with the loops its CPU dispatch chose (its SIMD ``exp`` and ``tanh``); eager calls the
  same loop over a contiguous array. :func:`ufunc_loop`.
- the BLAS product ``np.dot`` calls: the ``cblas_sgemm``/``cblas_dgemm`` of the BLAS
  library numpy loaded (its bundled OpenBLAS, 64-bit integers in numpy's wheels), not
  SciPy's, which may be another OpenBLAS version with other kernels. :func:`cblas_gemm`.

Each address is checked once against numpy on a small array before it is handed out;
where the layout, the library or the check differs, None is returned and the numpy
lowering keeps the work.

Example:
    >>> import numpy as np
    >>> found = ufunc_loop(np.tanh, np.float32)
    >>> found is None or found[0] > 0
    True
"""
import ctypes
import functools
import os

import numpy as np

# The C prototype of a ufunc's inner loop (numpy's PyUFuncGenericFunction).
LOOP = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_ssize_t),
                        ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p)
LOOP_TYPEDEF = "typedef void (*ufunc_loop)(char **, const int64_t *, const int64_t *, void *);\n"


class _UFuncHead(ctypes.Structure):
    """The leading fields of numpy's ``PyUFuncObject`` (numpy/ufuncobject.h, 1.x and 2.x)."""

    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int), ("functions", ctypes.c_void_p),
                ("data", ctypes.c_void_p), ("ntypes", ctypes.c_int),
                ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p),
                ("types", ctypes.c_void_p)]


def _head(ufunc):
    """The ufunc's head, or None where its fields do not read as ``ufunc`` says they are."""
    if type(ufunc) is not np.ufunc:
        return None
    head = _UFuncHead.from_address(id(ufunc))
    if (head.nin, head.nout, head.nargs, head.ntypes) != \
            (ufunc.nin, ufunc.nout, ufunc.nargs, ufunc.ntypes) or \
            head.name != ufunc.__name__.encode() or not head.functions or not head.types:
        return None
    return head


@functools.lru_cache(maxsize=None)
def ufunc_loop(ufunc, dtype):
    """``(loop address, data address)`` of ``ufunc``'s inner loop taking and giving
    ``dtype`` only (``ff->f`` for float32), checked against ``ufunc`` itself; None where
    there is none or it cannot be read."""
    head = _head(ufunc)
    dtype = np.dtype(dtype)
    if head is None:
        return None
    n = head.nargs
    types = (ctypes.c_char * (head.ntypes * n)).from_address(head.types).raw
    functions = (ctypes.c_void_p * head.ntypes).from_address(head.functions)
    data = (ctypes.c_void_p * head.ntypes).from_address(head.data) if head.data else None
    for k in range(head.ntypes):
        if types[k * n:(k + 1) * n] != bytes([dtype.num]) * n or not functions[k]:
            continue
        found = (functions[k], (data[k] or 0) if data is not None else 0)
        return found if _loop_agrees(ufunc, dtype, found) else None
    return None


def _loop_agrees(ufunc, dtype, found):
    """Whether the loop at ``found`` computes what ``ufunc`` computes, on a few values."""
    args = [np.linspace(0.25, 3.0, 17).astype(dtype) for _ in range(ufunc.nin)]
    out = np.empty(17, dtype)
    pointers = (ctypes.c_void_p * ufunc.nargs)(*[a.ctypes.data for a in args], out.ctypes.data)
    steps = (ctypes.c_ssize_t * ufunc.nargs)(*[dtype.itemsize] * ufunc.nargs)
    size = (ctypes.c_ssize_t * 1)(out.size)
    with np.errstate(all="ignore"):
        LOOP(found[0])(pointers, size, steps, found[1] or None)
        want = ufunc(*args)
    return np.array_equal(out, want, equal_nan=True)


def _numpy_blas_paths():
    """The shared libraries this process mapped from numpy's folders with BLAS in the name."""
    root = os.path.dirname(os.path.abspath(np.__file__))
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.rsplit(" ", 1)[-1] for line in f.read().splitlines()}
    except OSError:
        return []
    return sorted(p for p in paths if "blas" in os.path.basename(p).lower() and
                  ".so" in p and (p.startswith(root + os.sep) or p.startswith(root + ".libs")))


def _ilp64():
    """Whether numpy's BLAS takes 64-bit integers (numpy's wheels: scipy-openblas64)."""
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    return "64" in str(blas.get("name", "")) or "USE64BITINT" in \
        str(blas.get("openblas configuration", ""))


@functools.lru_cache(maxsize=1)
def cblas_gemm():
    """``(cblas_sgemm address, cblas_dgemm address, C integer type)`` of the BLAS numpy's
    ``np.dot`` calls, checked against ``np.dot``; None where not found."""
    int_type = "int64_t" if _ilp64() else "int"
    for path in _numpy_blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for suffix in ("64_", ""):
            for prefix in ("scipy_", ""):
                s = getattr(lib, f"{prefix}cblas_sgemm{suffix}", None)
                d = getattr(lib, f"{prefix}cblas_dgemm{suffix}", None)
                if s is None or d is None:
                    continue
                found = (ctypes.cast(s, ctypes.c_void_p).value,
                         ctypes.cast(d, ctypes.c_void_p).value, int_type)
                if _gemm_agrees(found):
                    return found
    return None


def _gemm_agrees(found):
    """Whether the cblas products at ``found`` give ``np.dot``'s bits on a small product."""
    integer = ctypes.c_int64 if found[2] == "int64_t" else ctypes.c_int
    rng = np.random.default_rng(0)
    for address, dtype, scalar in ((found[0], np.float32, ctypes.c_float),
                                   (found[1], np.float64, ctypes.c_double)):
        a, b = rng.standard_normal((2, 6, 5)).astype(dtype)
        b = b.T            # read transposed, as np.dot reads it
        out = np.empty((6, 6), dtype)
        fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer,
                              integer, scalar, ctypes.c_void_p, integer, ctypes.c_void_p,
                              integer, scalar, ctypes.c_void_p, integer)(address)
        row_major, no_trans, trans = 101, 111, 112
        fn(row_major, no_trans, trans, 6, 6, 5, 1.0, a.ctypes.data, 5, b.ctypes.data, 5, 0.0,
           out.ctypes.data, 6)
        if not np.array_equal(out, np.dot(a, b)):
            return False
    return True
