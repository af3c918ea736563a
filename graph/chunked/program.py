"""The per-chunk part of a split graph, as plain data a worker process can unpickle.

A :class:`ChunkProgram` holds steps ``(op name, input slots, params, resize)``;
on a worker it is replayed through the engine's ops inside an ``en.function``
(traced once per chunk shape and cached in that process), so each chunk runs
the engine's own compiled, fused code, not one task per op.

Example:
    >>> import numpy as np
    >>> from engine.graph.jit.function import plain_function
    >>> p = ChunkProgram("f", 1, [("exp", [0], {}, ())], [1], [], "", plain_function)
    >>> partials, rows = p.run([np.zeros((2, 1))], [])
    >>> partials[0].tolist(), rows
    ([[1.0], [1.0]], [])
"""
import itertools
import threading

import numpy as np

from engine.errors import ChunkError, EngineError
from engine.modes import apply
from engine.op import lookup


_COMPILED: dict[tuple, object] = {}   # program token -> its en.function, in this process
_LOCK = threading.Lock()
_TOKENS = itertools.count()


class ChunkProgram:
    """Steps over numbered slots: slots ``0..n_rows-1`` are the chunks of the
    chunked inputs, the next ones the shared values, then one per step.
    ``outputs`` are the slots of the partial results (one per reduction),
    ``row_outputs`` those of results that stay per chunk."""

    def __init__(self, name, n_rows, steps, outputs, row_outputs, where, compile_function):
        self.name, self.n_rows, self.steps = name, n_rows, steps
        self.compile_function = compile_function   # en.function's maker (picklable)
        self.outputs, self.row_outputs, self.where = outputs, row_outputs, where
        self.check_numerics = False     # set per call, from en.debug.check_numerics
        self.token = (name, next(_TOKENS), id(self))

    def _replay(self, *args):
        values = list(args)     # the inputs, then each step's result
        rows = values[0].shape[0]
        for op_name, slots, params, resize in self.steps:
            if resize:
                params = dict(params)
                for key, pos in resize:
                    shape = list(params[key])
                    shape[pos] = rows
                    params[key] = tuple(shape)
            values.append(apply(lookup(op_name), *[values[s] for s in slots], **params))
        return tuple(values[s] for s in self.outputs + self.row_outputs)

    def compiled(self):
        fn = _COMPILED.get(self.token)
        if fn is None:
            with _LOCK:
                fn = _COMPILED.setdefault(self.token, self.compile_function(
                    self._replay, f"{self.name}_chunk"))
        return fn

    def run(self, chunks, shared, index=None):
        """``(partials, row results)`` as numpy arrays for one chunk."""
        try:
            outs = self.compiled()(*chunks, *shared)
        except Exception as err:     # noqa: BLE001 -- any failure is reported with its chunk
            what = str(err) if isinstance(err, EngineError) else f"{type(err).__name__}: {err}"
            raise ChunkError(f"{self.name}: chunk {index} ({chunks[0].shape[0]} rows) failed: "
                             f"{what}\n  the call was at {self.where}") from None
        outs = [np.asarray(o.numpy()) for o in outs]
        if self.check_numerics:
            for o in outs:
                if o.dtype.kind in "fc" and not np.isfinite(o).all():
                    raise ChunkError(f"{self.name}: chunk {index} ({chunks[0].shape[0]} rows) "
                                     "produced NaN or Inf (check_numerics)\n  the call was at "
                                     f"{self.where}")
        n = len(self.outputs)
        return outs[:n], outs[n:]
