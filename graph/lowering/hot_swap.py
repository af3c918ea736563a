"""A fused kernel that starts as numpy's and moves to its compiled form once it is hot.

Compiling a kernel costs time before its first call; a run that calls it only a few
times never earns that back. So under ``en.config.lowering = "auto"`` a
region that would pay compiled over a long run but not over ``compile_calls`` calls
starts with the numpy lowering, and :class:`HotSwap` counts its calls: at the
``hot_swap_calls``-th (both in ``en.config.cost``) it
hands the compile to one background thread (the C compiler runs as a separate
process, so the calls go on meanwhile) and keeps calling the numpy kernel until the
compiled one is ready, then calls that. A run shorter than that many calls is the
numpy lowering's; a longer one pays a compile in the background once, and the next
process finds the library on disk (``graph/lowering/c/c_compiler.py``) and starts
compiled. Results move from numpy's rounding to the compiled kernel's at the swap
(both within the op database's tolerances of each other). A compile that fails leaves
the numpy kernel for good, with a warning.

Example:
    >>> swap = HotSwap(lambda *a, **k: "numpy", lambda: None, hot_calls=2)
    >>> [swap.out_impl() for _ in range(3)]
    ['numpy', 'numpy', 'numpy']
"""
import concurrent.futures
import os
import threading
import warnings

from engine.cost_model import cost

_pool: list = []
_pool_lock = threading.Lock()


def _executor():
    with _pool_lock:
        if not _pool:
            _pool.append(concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="engine-compile"))
        return _pool[0]


def submit(fn, *args):
    """Run ``fn(*args)`` on the background compile thread; its future (a kernel built
    outside a HotSwap, such as graph/lowering/c/c_window.py's, waits its turn there and
    :func:`wait_for_compiles` waits for it too)."""
    return _executor().submit(fn, *args)


def wait_for_compiles(timeout=None):
    """Returns once every background compile started so far is done (at most ``timeout``
    seconds): the compiles run one after another, so the last one queued ends last. A
    benchmark waits here before timing another mode, so that no compiler runs beside it.

    Example:
        >>> wait_for_compiles()
    """
    with _pool_lock:
        pool = _pool[0] if _pool else None
    if pool is not None:
        pool.submit(lambda: None).result(timeout)


def _forget_pool():
    # A forked child has none of the parent's threads.
    _pool.clear()


os.register_at_fork(after_in_child=_forget_pool)


class HotSwap:
    """Calls ``numpy_out_impl`` (the numpy kernel's ``out_impl``: results positional, or
    a single one as ``out=``) until ``build()`` has made the compiled kernel, whose
    ``out_impl`` takes every result positionally; ``build`` runs on the background
    thread after ``hot_calls`` calls (None: ``en.config.cost.hot_swap_calls``) and
    returns the kernel (its ``prepare`` is given that call's arrays), or None to stay
    numpy."""

    def __init__(self, numpy_out_impl, build, hot_calls=None):
        self.numpy_out_impl, self._build = numpy_out_impl, build
        # A kernel called this many times is in a loop: worth compiling (when it pays over
        # a long run, see graph/lowering/policy.py's fused_kernel).
        self.hot_calls = cost.hot_swap_calls if hot_calls is None else hot_calls
        self.calls = 0
        self.compiled = None
        self.future = None

    def out_impl(self, *args, **kwargs):
        compiled = self.compiled
        if compiled is not None:
            return compiled.out_impl(*args, *kwargs.values())
        self.calls += 1
        if self.calls == self.hot_calls and self.future is None:
            self.future = _executor().submit(self._swap, args + tuple(kwargs.values()))
        return self.numpy_out_impl(*args, **kwargs)

    def _swap(self, args):
        try:
            kernel = self._build()
            if kernel is not None:
                # The loop for this call's aliasing (memory planning's, the same every
                # call) is compiled here too, not on the first compiled call.
                kernel.prepare(*args)
        except Exception as err:   # noqa: BLE001 - any failure leaves the numpy kernel
            warnings.warn(f"a hot fused kernel was not compiled ({type(err).__name__}: "
                          f"{err}); the numpy lowering keeps running it", RuntimeWarning, stacklevel=1)
            return None
        self.compiled = kernel
        return kernel

    def wait(self, timeout=None):
        """The compiled kernel once its background compile is done (None if none was
        started or it failed)."""
        return None if self.future is None else self.future.result(timeout)
