"""SciPy's BLAS for the compiled lowerings: one thread while a compiled region runs, and the
addresses of its ``sgemm``/``dgemm`` for generated C.

Shared by the numba lowering (its ``np.dot`` calls SciPy's BLAS) and the C lowering's
whole graphs (``graph/lowering/c/c_graph.py`` calls ``gemm`` through the pointers
:func:`gemm_pointers` gives, as numba does).

One thread:

numba's ``np.dot`` calls the BLAS that SciPy bundles (``scipy.linalg.cython_blas``;
in SciPy's wheels an OpenBLAS of its own, not numpy's). OpenBLAS runs a product
on all its threads once ``m * n * k`` exceeds
``en.config.cost.openblas_threaded_work`` (262,144 multiply-adds: its
``SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD``); below that, on the calling thread.
A region's per-step products (32x64x64 in the RNN workloads) stay below it, but the
products a scan's compiled loop runs once for all steps ((1600, 64) @ (64, 64)) do not, and on
the 2-core benchmark machine, with other processes running, the two-thread
product measured 2.5-3.5x slower than the one-thread one (the second thread
waits for a core, and OpenBLAS's workers spin after each call, taking the core
the region's own loops need). So a region with such a product runs with SciPy's
OpenBLAS set to one thread for the calling thread only
(``openblas_set_num_threads_local``, OpenBLAS 0.3.27+; a ctypes call, about a
microsecond), and back after.

Where that function is not found (another BLAS, an older OpenBLAS, no SciPy),
:func:`one_thread` returns the region's function as it is.

Example:
    >>> one_thread(abs)(-2)
    2
    >>> pointers = gemm_pointers()
    >>> pointers is None or all(p > 0 for p in pointers)
    True
"""
import ctypes
import functools
import importlib.machinery
import importlib.util
import os
import sys

_found: list = []


_CYTHON_BLAS = "scipy.linalg.cython_blas"


@functools.lru_cache(maxsize=1)
def cython_blas():
    """SciPy's ``scipy.linalg.cython_blas`` (which loads SciPy's BLAS), or None without
    SciPy.

    Where ``scipy.linalg`` is not imported yet, the module is loaded from its file alone:
    importing ``scipy.linalg`` takes 0.3 s (measured on the 2-core machine, SciPy 1.17),
    and a first compiled call that needs the BLAS addresses waits for it. Cython returns
    this same module object when ``scipy.linalg`` imports it later.
    """
    module = sys.modules.get(_CYTHON_BLAS)
    if module is not None:
        return module
    spec = importlib.util.find_spec("scipy")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "linalg", "cython_blas" + suffix)
            if os.path.exists(path):
                loader = importlib.machinery.ExtensionFileLoader(_CYTHON_BLAS, path)
                found = importlib.util.spec_from_file_location(_CYTHON_BLAS, path,
                                                               loader=loader)
                if found is not None:
                    module = importlib.util.module_from_spec(found)
                    loader.exec_module(module)
                    return module
    try:
        return importlib.import_module(_CYTHON_BLAS)
    except ImportError:
        return None


def _scipy_openblas_set_local():
    """``openblas_set_num_threads_local`` of the OpenBLAS SciPy loaded, or None."""
    module = cython_blas()
    if module is None:
        return None
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))))
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.rsplit(" ", 1)[-1] for line in f.read().splitlines()}
    except OSError:
        return None
    for path in sorted(paths):
        name = os.path.basename(path).lower()
        if "openblas" not in name or ".so" not in name or \
                not os.path.abspath(path).startswith(os.path.join(root, "scipy")):
            continue
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
        return fn
    return None


def _set_local():
    if not _found:
        _found.append(_scipy_openblas_set_local())
    return _found[0]


def one_thread(fn):
    """``fn`` run with SciPy's OpenBLAS on one thread for the calling thread (see the
    module docstring); ``fn`` itself where that cannot be set."""
    set_local = _set_local()
    if set_local is None:
        return fn

    @functools.wraps(fn)
    def run(*arrays):
        previous = set_local(1)
        try:
            return fn(*arrays)
        finally:
            set_local(previous)
    vars(run)["dispatcher"] = getattr(fn, "dispatcher", fn)   # as _caller's (whole_graph.py)
    return run


# ---- gemm for generated C ------------------------------------------------------------
# The Fortran gemm's prototype as the generated C declares it (scipy's int is C int).
GEMM_TYPEDEF = ("typedef void (*gemm_s)(const char *, const char *, const int *, const int *, "
                "const int *, const float *, const float *, const int *, const float *, "
                "const int *, const float *, float *, const int *);\n"
                "typedef void (*gemm_d)(const char *, const char *, const int *, const int *, "
                "const int *, const double *, const double *, const int *, const double *, "
                "const int *, const double *, double *, const int *);\n")


def _capsule_pointer(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


@functools.lru_cache(maxsize=1)
def gemm_pointers():
    """``(sgemm address, dgemm address)`` from SciPy's BLAS, or None without SciPy."""
    module = cython_blas()
    if module is None:
        return None
    capi = getattr(module, "__pyx_capi__", {})
    if "sgemm" not in capi or "dgemm" not in capi:
        return None
    return _capsule_pointer(capi["sgemm"]), _capsule_pointer(capi["dgemm"])
