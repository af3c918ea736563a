"""The engine's one place for global switches.

Example:
    >>> import engine as en
    >>> en.config.check_numerics
    False
"""
import contextvars
import warnings

from .errors import InvalidArgumentError

from .cost_model import cost as _cost
from . import numerics as _numerics


class _Config:
    """Settings read by the modes. Flags that differ per thread are contextvars."""

    def __init__(self):
        self._check_numerics = contextvars.ContextVar("check_numerics", default=False)
        # None: this context has no setting of its own (the global switch decides).
        self._run_eagerly: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
            "run_functions_eagerly", default=None)
        self.run_functions_eagerly_global = False
        # Default optimization passes for en.function (filled in by graph.lowering.pipeline).
        self.default_passes = None
        # Which lowering turns a graph into code, the one switch: "auto" (the default:
        # the policy picks, for each fused region and each whole small graph or scan,
        # a compiled lowering where it pays over 100 calls, compile time included: C
        # where a C compiler is found, else numba where it is installed; a fused kernel
        # that pays only over a longer run moves to C in the background once hot; see
        # graph/lowering/policy.py), or a registered lowering's name, used wherever it
        # can write and the numpy lowering elsewhere: "numpy" (no compiled code),
        # "c", "numba" (fused regions and whole graphs) or "numba_ufunc" (each
        # single-result fused region as one numba ufunc).
        self.lowering = "auto"
        # Threads that walk a large fused kernel's rows, and split a large matrix
        # product's rows, at once (and a large convolution's images, where None means
        # the machine's but at most OpenBLAS's own count: engine/ops/batch_split.py).
        # None (the default): per graph, 2 where its largest
        # matrix product has at least 2^29 multiply-adds, beside elementwise work over
        # more than 2^18 elements (and the process may run on two
        # cores, with numpy's OpenBLAS held at one thread while the engine's pool runs
        # its products), else 1: two measured faster on the idle 2-core machine at batch
        # 10000 and 60000, one at batch 1000 (README, "Kernel threads";
        # graph/lowering/parallel.py's threads_for). A number: that many in every graph.
        self.fusion_threads = None
        # True: numpy's OpenBLAS runs a threaded product's parts on the C kernel pool's
        # threads (graph/lowering/c/c_pool.py) rather than the pool's kernels running on
        # OpenBLAS's threads (the default, where numpy's OpenBLAS allows it). Off: the
        # pool's threads then poll without yielding, and the hook set while OpenBLAS's
        # own worker still polls from a product left that worker polling beside the
        # pool's, every threaded product twice as slow (docs/limits.md). Read once, when
        # the pool's library loads (at the first compiled kernel): it cannot be undone.
        self.blas_on_kernel_pool = False
        # Traces each en.function keeps, least recently used dropped first (None:
        # all). Each holds its graphs, generated code and planned buffers; 32 covers
        # the shapes a training loop alternates between (last batch, eval batch).
        self.max_cached_traces = 32
        # Eager mode recycles large freed arrays up to this many bytes (0: off).
        self.eager_cache_bytes = 2 << 30
        # ... and only for this many of the shapes (and dtypes) eager ops asked for
        # most recently: a shape left behind gives its arrays back (see
        # eager/buffer_cache.py for why 8).
        self.eager_cache_shapes = 8
        # A traced function writes each large output (128 KiB and up) into the array its
        # previous call returned, once nothing refers to that array any more; it keeps
        # that array until its next call (graph/lowering/output_recycling.py). Read when a graph
        # is lowered.
        self.recycle_graph_outputs = True
        # Compare every call of each en.function trace made while this is True against
        # eager mode, node by node (en.function(shadow=True) for one function; read when
        # a trace is made; see en.debug.compare).
        self.shadow = False
        # Kernels borrow one per-thread scratch buffer (im2col patches) up to
        # this many bytes; bigger temporaries are allocated per call (0: off).
        self.workspace_bytes = 1 << 30
        # Constant folding never creates a constant bigger than this.
        self.fold_size_limit_bytes = 1 << 20
        # ...and all the folding in one graph (one trace, one en.load) does at most this
        # many element operations (a multiply-add counts one; tens of milliseconds of
        # numpy) and allocates at most this many bytes of results and temporaries;
        # nodes past either limit run with the graph (graph/passes/fold_cost.py).
        self.fold_work_limit = 1 << 26
        self.fold_bytes_limit = 64 << 20
        # The dtype of floats made without an explicit dtype (en.set_default_dtype; see
        # engine/default_dtype.py). None: numpy's float64 for data, float32 for random
        # draws and layer parameters.
        self.default_float_dtype = None
        # The measured thresholds that choose kernels, lowerings and passes, each
        # overridable: en.config.cost.fused_block_elements = 1 << 14 (see
        # engine/cost_model.py and docs/guide/cost-model.md).
        self.cost = _cost

    # ---- the two switches ``lowering`` replaced (deprecated: they warn, and go) ----
    @property
    def compiled_lowering(self):
        """Deprecated: ``en.config.lowering`` (the same values)."""
        _deprecated("compiled_lowering", "en.config.lowering")
        return self.lowering

    @compiled_lowering.setter
    def compiled_lowering(self, value):
        _deprecated("compiled_lowering", "en.config.lowering")
        self.lowering = value

    @property
    def fusion_backend(self):
        """Deprecated: ``"numba"`` is ``en.config.lowering = "numba_ufunc"``."""
        _deprecated("fusion_backend", 'en.config.lowering = "numba_ufunc"')
        return "numba" if self.lowering == "numba_ufunc" else "numpy"

    @fusion_backend.setter
    def fusion_backend(self, value):
        _deprecated("fusion_backend", 'en.config.lowering = "numba_ufunc"')
        if value == "numba":
            self.lowering = "numba_ufunc"
        elif value == "numpy":
            if self.lowering == "numba_ufunc":
                self.lowering = "auto"
        else:
            raise InvalidArgumentError(
                f'en.config.fusion_backend must be "numpy" or "numba", got {value!r}')

    @property
    def numerics(self):
        """``"fast"`` (the default) or ``"bitwise"``: whether every lowering must give
        eager mode's bits exactly (engine/numerics.py, docs/guide/numerics.md)."""
        return _numerics.NUMERICS.value

    @numerics.setter
    def numerics(self, value):
        _numerics.NUMERICS.set(value)

    @property
    def check_numerics(self):
        return self._check_numerics.get()

    @property
    def run_functions_eagerly(self):
        local = self._run_eagerly.get()
        return self.run_functions_eagerly_global if local is None else local


def _deprecated(old, new):
    warnings.warn(f"en.config.{old} is deprecated and will be removed; use {new}",
                  DeprecationWarning, stacklevel=3)


config = _Config()
