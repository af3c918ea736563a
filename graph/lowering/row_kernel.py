"""Running a compiled fused region: its rows split among the kernel threads, its sums finished.

A compiled region (numba's ``graph/lowering/numba/numba_fused.py``, C's
``graph/lowering/c/c_fused.py``) is one function ``fn(x..., out..., acc..., lo, hi)``
over rows ``lo:hi`` of the region's first axis: it writes each value result and
adds each reduction into its float64 accumulators (one per position of the last
axis). :class:`RowKernel` is the ``out_impl`` both lowerings share: it allocates
missing results, splits the rows among the kernel threads as the numpy kernels'
blocks are (``graph/lowering/parallel.py``), adds the parts' accumulators in part order,
and picks the function compiled for the call's aliasing of inputs by results
(memory planning writes a result over a dying input; each pattern is compiled
once). A subclass says how a function is compiled for an aliasing pattern
(``_compile_variant``), how it is called (``_call``) and how two arrays' start
addresses are compared (``_same_start``).
"""
import math
from typing import Any

import numpy as np

from engine.cost_model import cost
from engine.errors import UnimplementedError

from .parallel import kernel_threads, row_bounds, run_split


class RowKernel:
    """The shared ``out_impl`` of compiled fused regions (see the module docstring).
    ``outputs`` lists ``(member, kind)``: kind None for the member's value, ``"sum"``
    or ``"mean"`` for that reduction over every element, ``"rows"`` for its sums over
    the first axis (a 2-D member)."""

    def __init__(self, name, members, inputs, outputs, threads, fn):
        self.name, self._region = name, (members, inputs, outputs)
        self.threads = threads   # what "auto" kernel threads chose for the graph
        self.shape = tuple(members[-1].shape)
        self.size = math.prod(self.shape)
        self.n_inputs = len(inputs)
        self.outputs = [(np.dtype(m.dtype), kind) for m, kind in outputs]
        self.input_dtypes = [np.dtype(i.dtype) for i in inputs]
        self.fn = fn
        # (input, output) pairs that alias -> the kernel compiled for them
        self._variants: dict[tuple[tuple[int, int], ...], Any] = {(): fn}
        row = self.size // self.shape[0] if self.shape[0] else 1
        # Rows of one part of a split: about cost.row_kernel_block_elements elements.
        self.rows = max(1, cost.row_kernel_block_elements // max(row, 1))

    def _inputs(self, arrays):
        # A 0-d value may come as a numpy scalar from another kernel.
        return [a if isinstance(a, np.ndarray) and a.dtype == dt else np.asarray(a, dt)
                for a, dt in zip(arrays, self.input_dtypes)]

    def _call(self, fn, arrays, values, accs, lo, hi):
        fn(*arrays, *values, *accs, lo, hi)

    def out_impl(self, *args):
        arrays = self._inputs(args[:self.n_inputs])
        outs = list(args[self.n_inputs:])
        values, sums = [], []
        for j, (dtype, kind) in enumerate(self.outputs):
            if kind is None:
                if outs[j] is None:
                    outs[j] = np.empty(self.shape, dtype)
                values.append(outs[j])
            else:
                if outs[j] is None:
                    outs[j] = np.empty(self.shape[1:] if kind == "rows" else (), dtype)
                sums.append(j)
        fn = self._variant(arrays, values)
        bounds = self._bounds(self.shape[0])
        parts = len(bounds) - 1
        accs = [[np.zeros(self.shape[-1]) for _ in sums] for _ in range(parts)]
        self._run_parts(fn, arrays, values, accs, bounds)
        for s, j in enumerate(sums):
            kind = self.outputs[j][1]
            if kind == "rows":   # the sums over the rows: one per position of the last axis
                outs[j][...] = sum((accs[p][s] for p in range(1, parts)), accs[0][s])
                continue
            total = 0.0
            for p in range(parts):
                total += float(accs[p][s].sum())
            if kind == "mean":
                total /= self.size
            outs[j][...] = total
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _bounds(self, n):
        """Where the row parts of a call over ``n`` rows begin and end: blocks of
        ``self.rows`` over the kernel threads."""
        return row_bounds(n, self.rows, kernel_threads(self.threads))

    def _run_parts(self, fn, arrays, values, accs, bounds):
        """Runs ``fn`` over each part of ``bounds`` (part ``k`` adding into ``accs[k]``), the
        parts after the first on the Python pool's workers."""
        part_of = {bounds[p]: p for p in range(len(bounds) - 1)}
        run_split(lambda lo, hi: self._call(fn, arrays, values, accs[part_of[lo]], lo, hi),
                  bounds)

    def prepare(self, *args):
        """Compiles, without running, the function for the aliasing of these arguments
        (``out_impl``'s)."""
        arrays = self._inputs(args[:self.n_inputs])
        values = [out for (_, kind), out in zip(self.outputs, args[self.n_inputs:])
                  if kind is None and out is not None]
        self._variant(arrays, values)

    def _variant(self, arrays, values, candidates=None):
        """The function for this call's aliasing of inputs by value results (each pattern
        compiled once: a graph's memory plan gives the same one every call).
        ``candidates``: the indices of the inputs that may alias (all by default); an
        input overlapping a result in part is replaced in ``arrays`` by a copy."""
        aliases = []
        for k in range(len(arrays)) if candidates is None else candidates:
            a = arrays[k]
            for j, out in enumerate(values):
                if a is out:   # written in place by the memory plan: the cheap test first
                    aliases.append((k, j))
                elif not np.may_share_memory(a, out):
                    continue
                elif a.shape == out.shape and a.strides == out.strides and \
                        a.dtype == out.dtype and self._same_start(a, out):
                    aliases.append((k, j))
                else:   # a partial overlap (never planned): read a copy, as numpy would
                    arrays[k] = a = a.copy()
        if not aliases:
            return self.fn
        key = tuple(aliases)
        fn = self._variants.get(key)
        if fn is None:
            fn = self._variants[key] = self._compile_variant(key)
        return fn

    def _same_start(self, a, b):
        return a.__array_interface__["data"][0] == b.__array_interface__["data"][0]

    def _compile_variant(self, aliases):
        raise UnimplementedError(f"{type(self).__name__} compiles no aliased variants")
