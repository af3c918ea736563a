"""Numpy's BLAS (OpenBLAS) on one thread while a kernel of the engine's own pool runs.

With kernel threads (``en.config.fusion_threads`` above 1) a graph's large
matrix products are split by rows over the engine's pool (``graph/lowering/parallel.py``),
each part a one-thread BLAS call. OpenBLAS's own threads must then stay out of
it: left at its thread count, each part would start OpenBLAS's workers too
(four threads on two cores), and after any call those workers spin for about
0.1 s, taking the cores from the fused elementwise kernels that follow. So the
split product sets OpenBLAS to one thread for its length and back after; its
workers get no work, go to sleep and stay asleep while graphs run. Lowering
the count does not stop workers that are already spinning (OpenBLAS only lets
them time out), which is why limiting BLAS threads around the elementwise
kernels alone does not help.

The count is set through ``openblas_set_num_threads`` of the OpenBLAS that numpy
loaded (found in ``/proc/self/maps``; numpy's wheels bundle it as
``scipy_openblas``), by ctypes: about a microsecond, where threadpoolctl's
``threadpool_limits`` looks the libraries up again on each use. Where no
OpenBLAS is found (another BLAS, another system) :func:`available` is False and
products are not split.

Example:
    >>> with one_blas_thread():
    ...     pass
"""
import ctypes
import os
import threading

_PREFIXES = ("", "scipy_")
_SUFFIXES = ("", "64_", "_64")


def _openblas_paths():
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    paths = []
    for line in lines:
        path = line.rsplit(" ", 1)[-1]
        name = path.rsplit("/", 1)[-1].lower()
        if "openblas" in name and ".so" in name and path not in paths:
            paths.append(path)
    return paths


def _numpy_first(paths):
    """``paths`` with numpy's own OpenBLAS first: a process may hold several (SciPy's
    wheels bundle another, which numba's ``np.dot`` loads), and holding the wrong one
    at one thread leaves numpy's threaded, so two split parts of a product would each
    run OpenBLAS's threaded path, one after the other (its level-3 lock).

    Example:
        >>> import os, numpy
        >>> site = os.path.dirname(os.path.dirname(numpy.__file__))
        >>> _numpy_first([site + "/scipy.libs/libscipy_openblas.so",
        ...               site + "/numpy.libs/libscipy_openblas64_.so"])[0].endswith("64_.so")
        True
    """
    import numpy
    package = os.path.dirname(os.path.abspath(numpy.__file__))
    own = (package + os.sep, package + ".libs" + os.sep)
    site = os.path.dirname(package)
    others = tuple(os.path.join(site, d) + os.sep for d in ("scipy", "scipy.libs"))

    def rank(path):
        path = os.path.abspath(path)
        return 0 if path.startswith(own) else 2 if path.startswith(others) else 1
    return sorted(paths, key=rank)


def _numpy_openblas(*names):
    """The functions ``names`` (C names without their prefix and suffix) of the OpenBLAS
    numpy loaded, under the first prefix and suffix that has them all; None where none has
    (another BLAS, or not loaded: numpy, imported by the engine, has loaded its BLAS)."""
    for path in _numpy_first(_openblas_paths()):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                found = [getattr(lib, f"{prefix}{name}{suffix}", None) for name in names]
                if all(f is not None for f in found):
                    return found
        return None
    return None


def _find_functions():
    """``(get, set)`` of numpy's OpenBLAS thread count, or None."""
    found = _numpy_openblas("openblas_get_num_threads", "openblas_set_num_threads")
    if found is None:
        return None
    get, set_ = found
    get.restype, get.argtypes = ctypes.c_int, []
    set_.restype, set_.argtypes = None, [ctypes.c_int]
    return get, set_


_functions: list = []   # [(get, set) or None], found on first use
_lock = threading.Lock()
_depth = [0]
_saved = [1]


def _lookup():
    if not _functions:
        with _lock:
            if not _functions:
                _functions.append(_find_functions())
    return _functions[0]


def available():
    """Whether numpy's BLAS thread count can be set here (an OpenBLAS was found)."""
    return _lookup() is not None


class _OneThread:
    """Holds OpenBLAS at one thread while any thread is inside; the outermost exit
    restores the count found on the outermost entry."""

    __slots__ = ()

    def __enter__(self):
        functions = _lookup()
        if functions is None:
            return self
        get, set_ = functions
        with _lock:
            if _depth[0] == 0:
                _saved[0] = get()
                if _saved[0] != 1:
                    set_(1)
            _depth[0] += 1
        return self

    def __exit__(self, *exc):
        functions = _lookup()
        if functions is None:
            return False
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0 and _saved[0] != 1:
                functions[1](_saved[0])
        return False


_ONE = _OneThread()


def one_blas_thread():
    """A context manager: numpy's BLAS on one thread inside it (nesting and threads
    count; nothing happens where :func:`available` is False)."""
    return _ONE


def blas_threads():
    """Numpy's BLAS thread count now (None where it cannot be read)."""
    functions = _lookup()
    return None if functions is None else functions[0]()


def openblas_runner():
    """The address of numpy's OpenBLAS's ``gotoblas_pthread(n, fn, args, stride)``
    (runs ``fn(args + k * stride)`` for ``k < n`` on the caller and OpenBLAS's own
    threads), or None where numpy's BLAS is not such an OpenBLAS."""
    found = _numpy_openblas("gotoblas_pthread")
    return None if found is None else ctypes.cast(found[0], ctypes.c_void_p).value


def threads_hook():
    """numpy's OpenBLAS's ``openblas_set_threads_callback_function``: called with the
    address of a C ``openblas_threads_callback``, OpenBLAS runs its threaded calls
    through it instead of its own threads. None where that OpenBLAS has no such hook
    (before 0.3.27, or another BLAS)."""
    found = _numpy_openblas("openblas_set_threads_callback_function")
    if found is None:
        return None
    hook = found[0]
    hook.restype, hook.argtypes = None, [ctypes.c_void_p]
    return hook
