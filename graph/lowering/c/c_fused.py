"""Fused elementwise kernels compiled as C: one pass over memory, loaded in a millisecond.

The C twin of ``graph/lowering/numba/numba_fused.py`` for large fused regions: the region's
loop nest is written in C (``graph/lowering/c/c_source.py``), compiled by the system's C
compiler and kept on disk (``graph/lowering/c/c_compiler.py``), and called through
``ctypes``, which releases the GIL, so the kernel threads run its row parts at once
(``graph/lowering/row_kernel.py``). Where numba costs about 0.5 s a process before its
first cached kernel runs (importing it, then its compiler's set-up), a cached C kernel
loads in about a millisecond and a new one compiles in about 0.1 s: this is the
compiled lowering that pays over a short run. Measured on the 2-core AMD EPYC VM, the
autoencoder's loss tail at batch 1000 (7 ops and two sums over (1000, 784) float32):
2.4 ms as numpy kernels, 0.6 ms in C.

Arrays are passed by address: every input is made C-contiguous in its dtype first (a
view of another layout is copied), and a result buffer that is not C-contiguous is
computed into a fresh array and copied in.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, y: en.sigmoid(x) * y, passes=["cleanup"])
    >>> g = f.graph_for(en.ones((2, 3), dtype="float32"), en.ones(3, dtype="float32"))
    >>> x, y, sig, mul = g.topo_order()
    >>> kernel = CFusedKernel("k", [sig, mul], [x, y], [(mul, None)]) if available() else None
    >>> out = kernel.out_impl(np.zeros((2, 3), np.float32), np.ones(3, np.float32), None) \\
    ...     if kernel else np.full((2, 3), 0.5, np.float32)
    >>> out.tolist()
    [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
"""
import ctypes

import numpy as np

from engine.cost_model import cost
from engine.errors import EngineError

from . import c_address, c_compiler, c_pool, c_source
from ..parallel import row_bounds
from ..row_kernel import RowKernel

NAME = "fused"
# ---- when a fused region is compiled in C ------------------------------------------------
# Measured on the 2-core AMD EPYC VM: the numpy lowering spends about 0.4 ns an element
# an op on large float32 blocks (the autoencoder's loss tail: 2.4 ms over 784,000
# elements and 7 ops), the C loop 0.6 ms; a call through ctypes costs about 10 us (the
# addresses, the aliasing tests); gcc compiles such a kernel in 0.1-0.2 s. The figures
# are en.config.cost's c_saved_seconds_per_element_op, c_call_seconds and
# c_compile_seconds.


def available():
    """Whether the C lowering can run here (a C compiler was found)."""
    return c_compiler.available()


def saved_per_call(size, n_ops):
    """Seconds a call of a region of ``size`` elements and ``n_ops`` ops saves in C (at
    most 0: nothing to gain, whatever the run's length; no source need be written).

    Example:
        >>> saved_per_call(64, 1) <= 0                   # one small op: the call costs more
        True
    """
    return size * n_ops * cost.c_saved_seconds_per_element_op - cost.c_call_seconds


def pays(source, size, n_ops, calls):
    """Whether a region of ``size`` elements and ``n_ops`` ops saves time over ``calls``
    calls in C, compiling included (nothing to compile when on disk).

    Example:
        >>> pays("int fused(void) { return 0; }", 64, 1, 100)   # one small op: nothing saved
        False
    """
    saved = saved_per_call(size, n_ops)
    if saved <= 0:
        return False
    return c_compiler.is_cached(source) or saved * calls > cost.c_compile_seconds


class OutOfMemoryError(EngineError, MemoryError):
    """A C kernel could not allocate its partial sums."""


class CFusedKernel(RowKernel):
    """A fused region's ``out_impl`` running its C loop nest (see the module docstring;
    ``outputs`` as :class:`~graph.lowering.row_kernel.RowKernel` takes them).
    ``source``: the region's :func:`~graph.lowering.c.c_source.kernel_source`, if made;
    ``exact``: build for bitwise numerics (None: ``en.config.numerics`` now), as the
    region was lowered, when the build runs later on another thread (a hot swap)."""

    backend = "c"   # what the fused node's meta["backend"] says

    def __init__(self, name, members, inputs, outputs, threads=None, source=None,
                 exact=None):
        self.source = source or region_source(members, inputs, outputs)
        self.from_cache = c_compiler.is_cached(self.source, exact)
        self._pointers = len(inputs) + len(outputs)   # x..., out..., acc...
        super().__init__(name, members, inputs, outputs, threads,
                         self._function(self.source, exact))
        row = self.size // self.shape[0] if self.shape[0] else 1
        # Rows of a part on the C pool: about cost.kernel_pool_part_elements elements.
        self._pool_rows = max(1, int(cost.kernel_pool_part_elements) // max(row, 1))

    def _function(self, source, exact=None):
        lib = c_compiler.load(source, exact=exact)
        fn = getattr(lib, NAME)
        fn.restype = ctypes.c_int
        # Addresses as pointers: ctypes would pass a bare int as a 32-bit C int.
        fn.argtypes = [ctypes.c_void_p] * self._pointers + [ctypes.c_int64] * 2
        fn.parts_entry = ctypes.cast(getattr(lib, NAME + "_parts"), ctypes.c_void_p).value
        return fn

    def _bounds(self, n):
        # The C pool's threads start a part within microseconds (c_pool.py), so a kernel
        # splits into parts of cost.kernel_pool_part_elements over c_pool.threads(). The
        # same parts while the pool's library builds (run on the Python pool): a region's
        # sums keep their order.
        return row_bounds(n, self._pool_rows, c_pool.threads())

    def _run_parts(self, fn, arrays, values, accs, bounds):
        if len(bounds) > 2:
            inputs = [c_address.data(a) for a in arrays] + [c_address.data(v) for v in values]
            code = c_pool.run_parts(fn.parts_entry,
                                    [inputs + [c_address.data(a) for a in acc] for acc in accs],
                                    bounds)
            if code is not None:
                if code != 0:
                    raise OutOfMemoryError(f"fused kernel {self.name}: no memory for its "
                                           "partial sums")
                return
        super()._run_parts(fn, arrays, values, accs, bounds)

    def _inputs(self, arrays):
        return [np.ascontiguousarray(a, dt) for a, dt in zip(arrays, self.input_dtypes)]

    def out_impl(self, *args):
        n = self.n_inputs
        outs = list(args[n:])
        strided = [j for j, out in enumerate(outs)
                   if out is not None and not out.flags.c_contiguous]
        if not strided:
            return super().out_impl(*args)
        # A strided result buffer: computed into fresh arrays, then copied in.
        fresh = [None if j in strided else out for j, out in enumerate(outs)]
        results = super().out_impl(*args[:n], *fresh)
        results = list(results) if isinstance(results, tuple) else [results]
        for j in strided:
            outs[j][...] = results[j]
            results[j] = outs[j]
        return results[0] if len(results) == 1 else tuple(results)

    def _call(self, fn, arrays, values, accs, lo, hi):
        pointers = [a.ctypes.data for a in arrays] + [v.ctypes.data for v in values] + \
            [a.ctypes.data for a in accs]
        if fn(*pointers, lo, hi) != 0:
            raise OutOfMemoryError(f"fused kernel {self.name}: no memory for its partial sums")

    def _compile_variant(self, aliases):
        return self._function(region_source(*self._region, aliases=aliases))


def region_source(members, inputs, outputs, aliases=()):
    """The C source of a fused region's kernel (``c_source.kernel_source``) with the entry
    the C pool calls (``c_pool.parts_entry``)."""
    c_pool.ready()     # builds the pool's library (in the background) as regions are written
    return c_source.kernel_source(NAME, members, inputs, outputs, aliases) + \
        c_pool.parts_entry(NAME, len(inputs) + len(outputs))
