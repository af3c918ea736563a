"""C kernels compiled once per dtype and built in the background on first use.

The window kernels (``c_window.py``), the row reductions (``c_rows.py``) and the
leading-axes sum (``c_colsum.py``) each keep one C source per dtype whose kernels take
their shapes as arguments: compiled once per machine, then loaded from the disk cache of
``c_compiler`` in about a millisecond. A library not yet on disk is built on the
background compile thread (``hot_swap``) from its first look, while the numpy kernels
run; a build that fails warns once and drops the kernels from ``engine.ops.native``
(numpy's run from then on); without a C compiler nothing is said.

Example:
    >>> import numpy as np
    >>> lib = DtypeLibraries("example kernels", "numpy runs", {}, lambda lib, dt: {}, ())
    >>> lib.built == {} and lib.pending == {}
    True
"""
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from engine.ops import native

from . import c_compiler, c_pool
from .. import hot_swap


class DtypeLibraries:
    """The kernels of one C source per dtype: ``sources`` (dtype -> source), ``bind(lib,
    dtype)`` giving the kernels a loaded library holds, ``names`` the native kernels to
    drop where the build fails; ``what`` and ``fallback`` word that warning.
    ``splits``: the kernels run parts on the C pool, whose library is then built beside
    theirs."""

    def __init__(self, what: str, fallback: str, sources: dict, bind: Callable[..., Any],
                 names: Iterable[str], splits: bool = False):
        self.what, self.fallback = what, fallback
        self.sources, self.bind, self.names = sources, bind, tuple(names)
        self.splits = splits
        self.built: dict[np.dtype, Any] = {}    # dtype -> the kernels, or None (cannot build)
        self.pending: dict[np.dtype, Any] = {}  # dtype -> the background build's future

    def get(self, dtype, wait=False):
        """The kernels of ``dtype``, or None: where they cannot be built, or, unless
        ``wait``, while a library not yet on disk compiles in the background."""
        dtype = np.dtype(dtype)
        if dtype in self.built:
            return self.built[dtype]
        if not c_compiler.available():
            self._drop(dtype)
            return None
        if dtype not in self.pending:
            if self.splits:
                c_pool.ready()
            if c_compiler.is_cached(self.sources[dtype]):
                return self._load(dtype)        # from the disk cache: about a millisecond
            self.pending[dtype] = hot_swap.submit(self._load, dtype)
        return self.pending[dtype].result() if wait else None

    def _load(self, dtype):
        try:
            lib = c_compiler.load(self.sources[dtype])
        except (c_compiler.CompileError, OSError) as err:
            warnings.warn(f"{self.what} were not built ({err}); {self.fallback}",
                          RuntimeWarning, stacklevel=2)
            self._drop(dtype)
            return None
        kernels = self.bind(lib, dtype)
        self.built[dtype] = kernels
        return kernels

    def _drop(self, dtype):
        for name in self.names:
            native.drop(name)
        self.built[dtype] = None
