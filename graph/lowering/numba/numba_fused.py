"""Fused elementwise kernels compiled by numba: one pass over memory per kernel.

The numpy lowering runs a fused region (``graph/lowering/fusion.py``) block by
block, one numpy call per op per block: each op reads and writes a block-sized
buffer, and numpy's float32 ``exp`` is its slowest step (3 ns an element on the
benchmark machine, where ``exp32`` of ``numba_math`` takes about 1). Here the
region becomes one numba loop nest over its static shape: every member is a
scalar in a register, each value result is written once, and each full sum or
mean adds into one float64 accumulator per position of the last axis (added
into a float32 row of accumulators first and moved into float64 every
``FLUSH_ROWS`` rows, so the inner loop stays vectorized). The rows are split
among the kernel threads as the numpy kernels' blocks are
(``graph/lowering/parallel.py``); the parts' accumulators are added in part order.

A small region (one block, one value) is one call on the calling thread, its
aliasing of inputs by the result tested in a few hundred nanoseconds
(``_one_value``): there the saving is numpy's per-call cost, about 1.5 us an op.
Every kernel's function is named ``SOURCE_NAME``, so the fused steps of an
unrolled loop, alike in ops, shapes and dtypes, share one source and compile once.

Results agree with the numpy lowering to rounding, not bit for bit: ``exp32``
and ``tanh32`` are within a few ulp, and sums add in another order.

Example:
    >>> import engine as en
    >>> f = en.function(lambda x, y: en.sigmoid(x) * y, passes=["cleanup"])
    >>> g = f.graph_for(en.ones((2, 3), dtype="float32"), en.ones(3, dtype="float32"))
    >>> x, y, sig, mul = g.topo_order()
    >>> print(kernel_source(SOURCE_NAME, [sig, mul], [x, y], [(mul, None)]))
    def fused(x0, x1, out0, lo, hi):
        for i0 in range(lo, hi):
            for i1 in range(3):
                t0 = np.float32(np.float32(1) / (np.float32(1) + exp32(-(x0[i0, i1]))))
                t1 = np.float32((t0) * (x1[i1]))
                out0[i0, i1] = t1
        return 0
    <BLANKLINE>
"""
import functools

import numpy as np

from engine.cost_model import cost

from . import numba_cache
from .numba_emitter import Unsupported, check_writable, scalar_expression
from .. import loop_nest
from ..loop_nest import FLUSH_ROWS
from ..row_kernel import RowKernel

# The function's name in every kernel's source: regions of the same ops, shapes and dtypes
# (the steps of an unrolled loop) have the same source, compiled once.
SOURCE_NAME = "fused"


def _index(shape, region_shape, loops):
    """The index of an input of ``shape`` broadcast to ``region_shape`` at ``loops``."""
    lead = len(region_shape) - len(shape)
    return ", ".join("0" if d == 1 and region_shape[lead + k] != 1 else loops[lead + k]
                     for k, d in enumerate(shape))


class NumbaDialect(loop_nest.Dialect):
    """The loop nest (``graph/lowering/loop_nest.py``) spelled as numba-compiled Python."""

    def check(self, node):
        check_writable(node)

    def check_region(self, shape, members, values, sums):
        for m in members:
            if m.op.rules.get("scalar_form") is None:
                raise Unsupported(f"op {m.op.name} has no scalar form")

    def signature(self, name, inputs, values, sums):
        args = [f"x{k}" for k in range(len(inputs))] + \
            [f"out{j}" for j in range(len(values))] + [f"acc{j}" for j in range(len(sums))]
        return f"def {name}({', '.join(args + ['lo', 'hi'])}):"

    def partial(self, j, member, length):
        return [f"part{j} = np.zeros({length}, {_np(_partial_dtype(member))})"]

    def scalar(self, k, node):
        return f"s{k} = x{k}[()]", f"s{k}"

    def element(self, k, node, shape, loops):
        return f"x{k}[{_index(node.shape, shape, loops)}]"

    def store_target(self, j, shape, loops):
        return f"out{j}[{', '.join(loops)}]"

    def define(self, k, member, args):
        return f"t{k} = {scalar_expression(member, [f'({a})' for a in args])}"

    def store(self, j, shape, loops, value):
        return f"{self.store_target(j, shape, loops)} = {value}"

    def accumulate(self, j, loop, value):
        return f"part{j}[{loop}] += {value}"

    def open_loop(self, k, extent):
        return "for i0 in range(lo, hi):" if k == 0 else f"for i{k} in range({extent}):"

    def flush(self, n_sums, length):
        moves = [f"acc{j}[i] += part{j}[i]" for j in range(n_sums)] + \
            [f"part{j}[i] = 0" for j in range(n_sums)]
        return [f"        if (i0 - lo) % {FLUSH_ROWS} == {FLUSH_ROWS - 1}:",
                f"            for i in range({length}):"] + ["                " + m for m in moves]

    def finish(self, n_sums, length):
        return [f"    for i in range({length}):"] + \
            [f"        acc{j}[i] += part{j}[i]" for j in range(n_sums)]

    def end(self):
        return ["    return 0"]


def kernel_source(name, members, inputs, outputs, aliases=()):
    """numba source of ``name(x0, ..., out0, ..., acc0, ..., lo, hi)``: the region's
    rows ``lo:hi`` (of its first axis), writing each value result into its ``out``
    and adding each reduction into its float64 ``acc`` (one entry per position of
    the last axis). ``outputs`` lists ``(member, reduction)``, None for a value.
    ``aliases`` holds ``(k, j)`` where input ``k`` is the array of value result ``j``
    (memory planning wrote it in place): the loop then reads ``out{j}`` for it, since
    LLVM vectorizes a loop over one array read and written at the same index but not
    one over two arrays it cannot prove apart. The layout is the shared loop nest's
    (``graph/lowering/loop_nest.py``). Raises :class:`Unsupported` for what it cannot
    write."""
    return loop_nest.write(NumbaDialect(), name, members, inputs, outputs, aliases)


def _partial_dtype(member):
    return np.float32 if np.dtype(member.dtype) == np.float32 else np.float64


def _np(dtype):
    return f"np.{np.dtype(dtype).name}"


class CompiledFusedKernel(RowKernel):
    """A fused region's ``out_impl`` running its numba loop nest, rows split among the
    kernel threads (``threads``: the graph's "auto" choice; ``graph/lowering/row_kernel.py``).
    ``outputs`` lists ``(member, kind)``: kind None for the member's value, ``"sum"`` or
    ``"mean"`` for that reduction over every element, ``"rows"`` for its sums over the
    first axis (a 2-D member). ``source``: the region's :func:`kernel_source`, if
    already made."""

    backend = "numba"   # what the fused node's meta["backend"] says

    def __init__(self, name, members, inputs, outputs, threads=None, source=None):
        self.source = source or kernel_source(SOURCE_NAME, members, inputs, outputs)
        shape = tuple(members[-1].shape)
        signature = [_array_type(len(i.shape), i.dtype) for i in inputs] + \
            [_array_type(len(shape), m.dtype) for m, r in outputs if r is None] + \
            [_array_type(1, np.float64) for _, r in outputs if r is not None]
        import numba   # optional (the caller checked it is installed)
        self.signature = tuple(signature + [numba.types.intp, numba.types.intp])
        fn, self.from_cache = numba_cache.load(self.source, SOURCE_NAME, self.signature)
        super().__init__(name, members, inputs, outputs, threads, fn)
        if self.shape[0] <= self.rows and len(outputs) == 1 and outputs[0][1] is None:
            # One block and one value: the per-call work is a few microseconds, so the
            # call takes the short path (``_one_value``), on this thread.
            self._loose = [k for k, i in enumerate(inputs) if not i.shape]
            self._arrays = [k for k, i in enumerate(inputs) if i.shape]
            # Per instance (RowKernel.out_impl stays the general path); mypy refuses
            # assigning to a method, which is meant here.
            self.out_impl = self._one_value  # type: ignore[method-assign]
        self._numba_same_start = _same_start(len(self.shape), members[-1].dtype)

    def _same_start(self, a, b):
        return self._numba_same_start(a, b)

    def _one_value(self, *args):
        n = self.n_inputs
        arrays = list(args[:n])
        for k in self._loose:   # 0-d: may come as a numpy scalar from another kernel
            arrays[k] = np.asarray(arrays[k], self.input_dtypes[k])
        out = args[n]
        if out is None:
            out = np.empty(self.shape, self.outputs[0][0])
            fn = self.fn
        else:
            fn = self._variant(arrays, [out], self._arrays)
        fn(*arrays, out, 0, self.shape[0])
        return out

    def _compile_variant(self, aliases):
        source = kernel_source(SOURCE_NAME, *self._region, aliases=aliases)
        return numba_cache.load(source, SOURCE_NAME, self.signature)[0]


# Whether two arrays begin at one address: numba reads both pointers in about 0.3 us
# (``ndarray.ctypes.data`` costs over 1 us each). Compiled through the cache like a
# region, so a second process loads it.
_SAME_START = "def same_start(x, y):\n    return x.ctypes.data == y.ctypes.data\n"


@functools.lru_cache(maxsize=None)
def _same_start(rank, dtype):
    """The ``same_start`` dispatcher for two C arrays of ``rank`` and ``dtype`` (one for
    every kernel of them: an unrolled graph builds hundreds)."""
    value = _array_type(rank, dtype)
    return numba_cache.load(_SAME_START, "same_start", (value, value))[0]


def _array_type(rank, dtype):
    import numba   # optional (the caller checked it is installed)
    return numba.types.Array(numba.from_dtype(np.dtype(dtype)), rank, "C")


# ---- when a fused region is compiled -----------------------------------------------------
# Measured on the benchmark machine: a numpy-lowered fused region spends about 0.8 ns per
# element per op on large float32 arrays (the autoencoder's 7-op loss tail over (1000, 784):
# 4.6 ms), its compiled loop nest less than half of that (1.9 ms); importing numba costs
# about 1 s (en.config.cost's numba_saved_seconds_per_element_op, numba_import_seconds).
# On small regions the calls count: numpy's take about 1.5 us each (numpy_call_seconds,
# which compile_numba counts for whole regions too), a compiled kernel's own about
# 2 (its numba dispatch and the aliasing tests of ``_one_value``; measured on the 2-core
# AMD machine: 5.1 us against 3.7 for the bare loop of tanh(a + b) over (32, 64), numpy's
# two calls 6.7: numba_call_seconds).


def pays(mode, source, size, n_ops, calls, compile_seconds):
    """Whether a region of ``size`` elements and ``n_ops`` ops is worth compiling: always
    under ``"numba"``; under ``"auto"`` when it saves time a call and what it saves over
    ``calls`` calls exceeds importing numba (unless imported already) and compiling
    (unless on disk).

    Example:
        >>> pays("auto", "def fused(): pass", 64, 1, 100, 1.0)   # one small op: nothing saved
        False
    """
    if mode == "numba":
        return True
    import sys
    saved = size * n_ops * cost.numba_saved_seconds_per_element_op + \
        n_ops * cost.numpy_call_seconds - cost.numba_call_seconds
    if saved <= 0:
        return False
    spent = 0.0 if "numba" in sys.modules else cost.numba_import_seconds
    if not numba_cache.is_cached(source):
        spent += compile_seconds
    return saved * calls > spent
