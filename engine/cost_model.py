"""The cost model: every measured threshold that picks a kernel, a lowering or a pass.

Each threshold is declared once, in ``THRESHOLDS``, with what it counts, the
machine and date it was measured on and the commit whose message (and the
measurements log, ``docs/measurements.md``) holds the figures. The code that
decides reads the current value from ``cost``, which the public API shows as
``en.config.cost``, so a user on another machine can re-tune a threshold
without editing the engine. Kernels read their threshold at each call; passes
and lowerings when a graph is lowered, so a function traced before a change
keeps its lowering (as with ``en.config.lowering``).

Example:
    >>> import engine as en
    >>> en.config.cost.fused_block_elements
    65536
    >>> with en.config.cost.override(fused_block_elements=1 << 12):
    ...     en.config.cost.fused_block_elements
    4096
    >>> en.config.cost.fused_block_elements
    65536
"""
import contextlib
import dataclasses
import numbers
from typing import TYPE_CHECKING, Any

from .errors import ArgumentTypeError, InvalidArgumentError

# The machines the figures were measured on (docs/measurements.md names each section's).
EPYC = "2-core AMD EPYC VM (AVX2)"
EPYC_512 = "2-core AMD EPYC VM (Zen 5, AVX-512)"
XEON = "2-core Intel Xeon VM (AVX-512)"
NOT_MEASURED = "not measured"


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One measured threshold: its name in ``en.config.cost``, its default, what it
    counts (``unit``), where it was measured (``machine``, ``date``, ``commit``),
    what it decides (``meaning``) and the file that reads it (``used_in``)."""
    name: str
    default: float
    unit: str
    machine: str
    date: str
    commit: str
    meaning: str
    used_in: str


THRESHOLDS = (
    # ---- eager kernels (engine/ops, engine/optim) --------------------------------------
    Threshold("einsum_blas_min_work", 8192, "multiply-adds", EPYC, "2026-12-01", "bd0a089",
              "an einsum contraction with at least this much work runs as one BLAS product; "
              "below, np.einsum in one call (on 3x3: 16 us against the BLAS path's 24)",
              "engine/ops/einsum.py"),
    Threshold("reciprocal_divide_min_elements", 1024, "elements", EPYC, "2026-11-29",
              "9d8f1ad",
              "reciprocal (and sigmoid) of at least this many elements runs divide(1, x), "
              "twice as fast as numpy's unvectorized reciprocal loop; below, the plain ufunc",
              "engine/ops/elementwise.py"),
    Threshold("conv_input_grad_scatter_ratio", 4, "output channels per input channel",
              EPYC, "2026-12-05", "f9d828d",
              "conv2d_backprop_input scatters each window's input cotangent (col2im) where "
              "the filters have more than this many times as many output as input channels "
              "(16 back to 1 at 64x28x28: 1.1 against 13.5 ms); else the full correlation",
              "engine/ops/conv.py"),
    Threshold("conv_direct_max_taps", 576, "values per window", EPYC_512, "2026-12-05",
              "41af0b2",
              "conv2d and its stride-1 input gradient run the native direct loop (no im2col, "
              "no BLAS) where a window holds at most this many values (KH*KW*C; KH*KW*O for "
              "the input gradient); one thread, 3x3, float32: faster at every size measured "
              "up to 576 (64x14x14, 16 -> 32: forward 2.1 against 3.1 ms, input gradient 1.5 "
              "against 2.5; 16x14x14, 64 -> 64: 3.3 against 3.9)",
              "engine/ops/conv.py"),
    Threshold("conv_direct_filter_max_sums", 1 << 14, "values per window times outputs",
              EPYC_512, "2026-12-05", "41af0b2",
              "conv2d_backprop_filter runs the direct loop where also KH*KW*C*O is at most "
              "this (the loop reads the cotangent again for every four taps): 144*32 2.3 "
              "against 3.0 ms, 288*32 2.4 against 2.9; 576*64 5.2 against 4.4, 288*64 at "
              "28x28 10.7 against 8.7)",
              "engine/ops/conv.py"),
    Threshold("conv_input_grad_native_scatter_ratio", 2, "input channels per output channel",
              EPYC, "2026-12-05", "6183535",
              "with the C col2im (engine/ops/native.py), conv2d_backprop_input makes every "
              "window's input cotangent in one product and adds it in place unless the "
              "filters have more than this many times as many input as output channels, "
              "where the full correlation's im2col of the cotangent is the smaller copy "
              "(3x3, batch 64 at 14x14, one thread: 16 from 32 channels 2.0 against 5.1 ms, "
              "32 from 16 2.4 against 2.5, 64 from 16 10.3 against 8.4)",
              "engine/ops/conv.py"),
    Threshold("wide_sum_max_trailing", 256, "elements", EPYC, "2026-12-05", "6183535",
              "a float sum over two or more leading axes onto at most this many trailing "
              "elements lays rows side by side and folds the sums (numpy's inner loop "
              "would run only that long: (64, 28, 28, 16) float32 to 16, 1.03 against "
              "0.085 ms); larger trailing blocks are np.add.reduce's",
              "engine/ops/reduce.py"),
    Threshold("wide_sum_min_elements", 1 << 14, "elements", NOT_MEASURED, "2026-12-05",
              "6183535",
              "below this many elements the leading-axes sum stays one np.add.reduce "
              "(the reshapes cost a few microseconds)",
              "engine/ops/reduce.py"),
    Threshold("wide_sum_row_elements", 1024, "elements", EPYC, "2026-12-05", "6183535",
              "how many elements the side-by-side rows of a leading-axes sum span "
              "(whole rows of the trailing block; inner loops this long run at memory speed)",
              "engine/ops/reduce.py"),
    Threshold("colsum_part_elements", 1 << 18, "elements", EPYC_512, "2026-12-05",
              "4035b24",
              "the native leading-axes sum (graph/lowering/c/c_colsum.py) of a float32 or "
              "float64 array takes one row range per this many values, each summed on its "
              "own (on the C pool's threads where it runs) and the ranges' sums added in "
              "order: a count from the shape alone, so the bits never depend on threads "
              "(float32, medians of 15: (64, 28, 28, 16) 56 us in two parts on two threads "
              "against 74 in one; (64, 14, 14, 32) 36 against 37; (32, 32, 256) 28 against "
              "25)",
              "engine/ops/reduce.py"),
    Threshold("colsum_max_parts", 2, "parts", EPYC_512, "2026-12-05", "4035b24",
              "... in at most this many row ranges (two cores: a third part only waits)",
              "engine/ops/reduce.py"),
    Threshold("row_reduce_min_elements", 2048, "elements", EPYC_512, "2026-12-05", "d16d609",
              "max, min, sum and mean over the last axis of a C-contiguous float32 or float64 "
              "array of at least this many values run the native row kernel "
              "(graph/lowering/c/c_rows.py; numpy sets its reduce loop up again per row); "
              "below, numpy's call is cheaper. One thread: a sum over 2048 values 3.0-3.6 "
              "against numpy's 2.9-7.3 us (rows of 256 to 8), over 1024 2.9-3.2 against "
              "2.7-4.8; a max over 512 already 2.8-3.0 against 3.3-5.9",
              "engine/ops/reduce.py"),
    Threshold("row_extreme_max_length", 512, "elements", EPYC_512, "2026-12-05", "d16d609",
              "... for max and min where the last axis is at most this long (65536 values, "
              "float64: rows of 512 14.8 against numpy's 17.8 us, of 1024 15.7 against 13.3; "
              "float32 still 1.26x faster at 1024, 0.92x at 2048)",
              "engine/ops/reduce.py"),
    Threshold("row_sum_max_length", 1 << 20, "elements", EPYC_512, "2026-12-05", "d16d609",
              "... for sum and mean where it is at most this long (the kernel's eight "
              "pairwise sums sit in one vector: 1.3-2.2x faster than numpy's at every length "
              "measured, up to 2^20 values a row)",
              "engine/ops/reduce.py"),
    Threshold("dot_out_max_work", 1 << 19, "multiply-adds", EPYC_512, "2026-12-02", "a22c4d0",
              "matmul's out= kernel calls np.dot below this work; above, np.matmul is "
              "faster ((1000, 196) @ (196, 784)^T: 0.95 against 1.09 ms)",
              "engine/ops/linalg.py"),
    Threshold("segment_sum_block_elements", 1 << 22, "elements", NOT_MEASURED, "2026-12-01",
              "9880c50",
              "segment_sum's and index_update's generic (Array API) kernels compare targets "
              "with positions in blocks of about this many elements, bounding the temporary",
              "engine/ops/index_generic.py, engine/ops/index_update.py"),
    Threshold("topk_select_from", 64, "elements", NOT_MEASURED, "2026-12-05", "27fcf80",
              "from this axis length on, topk with a small k selects with a partition (O(n)) "
              "before sorting the k chosen, rather than sorting the whole axis",
              "engine/ops/rank_select.py"),
    Threshold("lbfgs_chunk_bytes", 16 << 20, "bytes", EPYC, "2026-11-29", "b929598",
              "L-BFGS multiplies its history in chunks of rows of about this many bytes (a "
              "traced step skips the empty ones)",
              "engine/optim/lbfgs.py"),
    Threshold("recycle_min_bytes", 1 << 17, "bytes", EPYC, "2026-11-29", "1b3b67a",
              "eager ops recycle freed arrays, and traced functions write outputs into their "
              "previous call's, from this size (from 1 MiB: an eager autoencoder step at "
              "batch 100 took 3.7 ms with 917 page faults a call; from 128 KiB 1.7-2.2 ms)",
              "eager/buffer_cache.py, eager/mode.py, graph/lowering/output_recycling.py"),
    # ---- fused kernels (graph/lowering) ------------------------------------------------
    Threshold("fused_whole_array_elements", 1 << 18, "elements", XEON, "2026-12-04", "56deb44",
              "a fused region of at most this many elements runs one numpy call per op over "
              "whole arrays; a larger one walks blocks of fused_block_elements",
              "graph/lowering/fusion.py"),
    Threshold("fused_block_elements", 1 << 16, "elements", XEON, "2026-12-04", "56deb44",
              "the block a large fused region walks (its buffers fit L2: the autoencoder's "
              "loss tail at batch 1000 4.8 -> 3.7 ms)",
              "graph/lowering/fusion.py"),
    Threshold("row_kernel_block_elements", 1 << 18, "elements", EPYC, "2026-11-29", "68b6ede",
              "the block of rows a fused kernel split over threads hands each call (2^18 "
              "against 2^15: 3.5-5% off the autoencoder step at batch 10000 and 60000)",
              "graph/lowering/row_kernel.py"),
    Threshold("kernel_pool_part_elements", 1 << 15, "elements", EPYC_512, "2026-12-05",
              "45f6da9",
              "a compiled fused kernel hands the C pool's threads parts of about this many "
              "elements (a part starts within microseconds: the transformer's exact GELU over "
              "262,144 float32 0.31 ms on one thread, 0.16 in two parts)",
              "graph/lowering/c/c_fused.py, graph/lowering/row_regions.py"),
    Threshold("kernel_pool_spin_microseconds", 200, "microseconds", EPYC_512, "2026-12-05",
              "45f6da9",
              "a C pool thread polls this long for the next kernel before it sleeps (a "
              "sleeping thread takes 0.08-0.13 ms to wake)",
              "graph/lowering/c/c_pool.py"),
    Threshold("kernel_pool_late_microseconds", 200, "microseconds", EPYC_512, "2026-12-06",
              "e0540ee",
              "a split on numpy's OpenBLAS's threads that waits this long after its parts "
              "are done for an OpenBLAS thread to run its (empty) share counts as late: the "
              "thread was descheduled (a part of the styles transformer's kernels takes "
              "20-90 us; a late thread 0.3-12 ms under a load of two busy processes)",
              "graph/lowering/c/c_pool.py"),
    Threshold("kernel_pool_own_milliseconds", 100, "milliseconds", EPYC_512, "2026-12-06",
              "e0540ee",
              "after a late split (kernel_pool_late_microseconds), splits go to the C pool's "
              "own workers for this long, then to OpenBLAS's threads again (the load "
              "average the engine reads elsewhere moves over seconds)",
              "graph/lowering/c/c_pool.py"),
    Threshold("kernel_pool_blas_spin_microseconds", 2000, "microseconds", EPYC_512,
              "2026-12-05", "de8919c",
              "with numpy's products on the C pool (en.config.blas_on_kernel_pool), its "
              "threads poll this long before they sleep (waking one costs a product split "
              "in two more than running it whole: 1024x64 @ 64x256 with 1 ms between calls "
              "0.38-0.41 ms polling 200 us, 0.20 polling 2 ms, 0.20 on OpenBLAS's own "
              "threads)",
              "graph/lowering/c/c_pool.py"),
    # ---- compiled lowerings: when compiling pays ---------------------------------------
    Threshold("compile_calls", 100, "calls", EPYC, "2026-12-01", "ddc16f9",
              "under en.config.lowering 'auto' code is compiled where what it saves over "
              "this many calls exceeds its compile time",
              "graph/lowering/policy.py"),
    Threshold("long_run_calls", 1000, "calls", EPYC_512, "2026-12-04", "6b051de",
              "a fused kernel that pays in C only over this many calls starts with numpy and "
              "moves to C in the background once hot",
              "graph/lowering/policy.py"),
    Threshold("hot_swap_calls", 20, "calls", EPYC_512, "2026-12-04", "6b051de",
              "the call of a hot-swappable kernel at which its C build starts",
              "graph/lowering/hot_swap.py"),
    Threshold("whole_graph_small_elements", 1 << 16, "elements", EPYC, "2026-12-01", "ddc16f9",
              "a graph (or scan) whose values hold at most this many elements each is "
              "compiled whole with numba: numpy's per-call overhead is its cost",
              "graph/lowering/graph_limits.py"),
    Threshold("whole_graph_max_elements", 1 << 18, "elements", EPYC_512, "2026-12-02",
              "e291c14",
              "a graph with values up to this many elements and no product OpenBLAS would "
              "thread is compiled whole too ((400, 300) elementwise: 549 against 705 us)",
              "graph/lowering/graph_limits.py"),
    Threshold("numba_max_source_lines", 600, "lines", EPYC, "2026-12-01", "bda1d27",
              "a region over this many lines of numba source is compiled in parts (numba's "
              "compile time grows faster than its length)",
              "graph/lowering/numba/whole_graph.py"),
    Threshold("numba_compile_seconds", 1.0, "seconds", EPYC, "2026-12-01", "ddc16f9",
              "the fixed part of numba's estimated compile time for a region",
              "graph/lowering/numba/whole_graph.py, graph/lowering/numba/lowering.py"),
    Threshold("numba_compile_seconds_per_line", 0.1, "seconds", EPYC, "2026-12-01", "ddc16f9",
              "numba's estimated compile time per line of source",
              "graph/lowering/numba/whole_graph.py, graph/lowering/numba/lowering.py"),
    Threshold("numba_import_seconds", 1.0, "seconds", EPYC, "2026-12-01", "9bfc43a",
              "the cost of importing numba, counted when it is not imported yet",
              "graph/lowering/numba/lowering.py, graph/lowering/numba/numba_fused.py"),
    Threshold("numba_saved_seconds_per_element_op", 3e-10, "seconds", EPYC, "2026-12-01",
              "9bfc43a",
              "what a numba loop nest saves per element per op over numpy's calls (the "
              "autoencoder's 7-op loss tail over (1000, 784): 4.6 against 1.9 ms)",
              "graph/lowering/numba/lowering.py, graph/lowering/numba/numba_fused.py"),
    Threshold("numpy_call_seconds", 1.5e-6, "seconds", EPYC_512, "2026-12-02", "e9b2465",
              "the overhead of one numpy call, saved per op by a compiled kernel or graph",
              "graph/lowering/c/lowering.py, graph/lowering/numba/lowering.py, "
              "graph/lowering/numba/numba_fused.py"),
    Threshold("numba_call_seconds", 2e-6, "seconds", EPYC_512, "2026-12-02", "e9b2465",
              "the overhead of one call of a numba-compiled fused kernel (tanh(a + b) over "
              "(32, 64): 5.1 us against numpy's two calls 6.7)",
              "graph/lowering/numba/lowering.py, graph/lowering/numba/numba_fused.py"),
    Threshold("c_saved_seconds_per_element_op", 3e-10, "seconds", EPYC_512, "2026-12-04",
              "6b051de",
              "what a C loop nest saves per element per op over numpy's calls",
              "graph/lowering/c/c_fused.py, graph/lowering/fusion.py"),
    Threshold("c_call_seconds", 1e-5, "seconds", EPYC_512, "2026-12-04", "6b051de",
              "the overhead of one call of a C fused kernel (ctypes and the row split)",
              "graph/lowering/c/c_fused.py, graph/lowering/fusion.py"),
    Threshold("row_region_min_work", 16384, "element-ops", EPYC_512, "2026-12-06", "d4e3bb6",
              "a row region (elementwise ops and last-axis reductions of one row geometry) "
              "becomes one C kernel when its elements times its members reach this",
              "graph/lowering/row_regions.py"),
    Threshold("row_region_max_row", 4096, "elements", EPYC_512, "2026-12-06", "d4e3bb6",
              "the longest row a row region's C kernel keeps in its stack buffers",
              "graph/lowering/row_regions.py"),
    Threshold("c_compile_seconds", 0.3, "seconds", EPYC_512, "2026-12-04", "6b051de",
              "the estimated time the system's C compiler takes for one kernel",
              "graph/lowering/c/c_fused.py, graph/lowering/c/lowering.py"),
    Threshold("c_graph_compile_seconds", 0.05, "seconds", EPYC_512, "2026-12-05", "9da0065",
              "the fixed part of the system's C compiler's estimated time for a whole graph "
              "or scan written in C (cc -O3: 81 lines 0.14 s, 313 lines 0.51 s, loaded)",
              "graph/lowering/c/lowering.py"),
    Threshold("c_graph_compile_seconds_per_line", 1.5e-3, "seconds", EPYC_512, "2026-12-05",
              "9da0065", "the C compiler's estimated time per line of a whole graph's source",
              "graph/lowering/c/lowering.py"),
    Threshold("c_graph_compile_calls", 1000, "calls", EPYC_512, "2026-12-05", "7d7e3f7",
              "a whole graph or scan in C is compiled where what it saves over at least this "
              "many calls exceeds its compile time (a 50-step tanh RNN's loss and gradient: "
              "0.74 against 1.68 ms a call, compiled in 0.55 s)",
              "graph/lowering/c/lowering.py"),
    Threshold("c_compile_units", 2, "units", EPYC_512, "2026-12-05", "f776049",
              "the most translation units one whole-graph C source is cut into and "
              "compiled side by side (never more than the cores the last minute's load "
              "leaves idle; gru_gates' 430 lines: 0.44 s of one compiler against 0.16 "
              "and 0.22 s, plus 0.04 s to link, in two)",
              "graph/lowering/c/c_compiler.py"),
    Threshold("c_split_min_lines", 100, "lines", EPYC_512, "2026-12-05", "f776049",
              "the fewest lines of a whole-graph C function's body each unit of a split "
              "build holds (a unit costs about 35 ms of the compiler's start, headers and "
              "link; a line about 1 ms)",
              "graph/lowering/c/c_compiler.py"),
    Threshold("c_quick_build_min_lines", 50, "lines", EPYC_512, "2026-12-05", "dd3b382",
              "a whole-graph C function with at least this many lines from its header on is "
              "first built at -O1 and swapped for its -O2 build made in the background "
              "(-O2 against -O1 CPU: the concat LSTM's 91-line backward 0.178 against 0.087 "
              "s, tanh_ln's 268 lines 0.286 against 0.156; an 11-line graph 0.041 against "
              "0.039, the compiler's start)",
              "graph/lowering/c/c_compiler.py"),
    Threshold("c_graph_call_seconds", 7e-6, "seconds", EPYC_512, "2026-12-05", "9da0065",
              "the overhead of one call of a whole graph in C (ctypes, the output arrays: "
              "tanh(x) * 2 on 4 elements 7.0 us against the numpy lowering's 1.5)",
              "graph/lowering/c/lowering.py"),
    # ---- threads and BLAS --------------------------------------------------------------
    Threshold("openblas_threaded_work", 65536 * 4, "multiply-adds", NOT_MEASURED,
              "2026-12-01", "adf85fd",
              "OpenBLAS runs a product on all its threads above this work (its "
              "SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD, read from its source)",
              "graph/lowering/c/lowering.py, graph/lowering/chunked_products.py, "
              "graph/lowering/graph_limits.py, "
              "graph/lowering/numba/lowering.py, graph/passes/scan_hoist.py, "
              "graph/passes/scan_products.py"),
    Threshold("parallel_matmul_min_work", 1 << 25, "multiply-adds", EPYC, "2026-12-01",
              "91623f5",
              "a graph matrix product of at least this work is split by rows over the "
              "engine's kernel threads",
              "graph/lowering/chunked_products.py, graph/lowering/parallel_matmul.py"),
    Threshold("chunked_product_min_work", 1 << 21, "multiply-adds", NOT_MEASURED, "2026-12-05",
              "34ac74a",
              "in a graph without kernel-thread products, a matrix product (by a matrix) of "
              "at least this work is cut into chunks the kernel threads take in turn, "
              "OpenBLAS at one thread (about 50 us of one core; waking a worker costs tens)",
              "graph/lowering/chunked_products.py"),
    Threshold("chunked_product_chunk_work", 1 << 23, "multiply-adds", EPYC_512, "2026-12-05",
              "1e7db99",
              "a chunked product gets one chunk per this much work (the engine's workers "
              "overlap little with the caller on chunks of ~100 us, the GIL handed back and "
              "forth: the transformer step 8.0 ms at 2^23, 8.4 at 2^22, load 2.3)",
              "graph/lowering/chunked_products.py"),
    Threshold("busy_machine_max_idle_cores", 0.25, "cores", EPYC_512, "2026-12-05",
              "04a74b3",
              "the machine is busy while the last minute's load leaves fewer idle cores than "
              "this: then mid-sized products run in chunks and convolutions split their "
              "images on the kernel threads, else OpenBLAS threads them (transformer step: "
              "14.3 ms against chunks' 8.0 at load 1.8-2.3; idle, 5.2-5.7 against 7.5; CNN "
              "step idle: split 11.6-11.9 ms against 9.0)",
              "graph/lowering/machine_load.py"),
    Threshold("chunked_product_min_rows", 16, "rows", NOT_MEASURED, "2026-12-05", "34ac74a",
              "each chunk of a chunked product at least this many rows (or columns) wide "
              "(OpenBLAS's float32 kernels work in blocks of 16 rows)",
              "graph/lowering/chunked_products.py"),
    Threshold("window_split_min_work", 1 << 22, "multiply-adds", NOT_MEASURED, "2026-12-05",
              "659706b",
              "a convolution (or either of its gradients) of at least this work splits its "
              "images over the kernel threads, OpenBLAS at one thread in each chunk (about "
              "40 us of one core's product, where waking a worker costs tens; the boundary "
              "is not tuned: the CNN step's six kernels, 7-58M, measured at load 8-12)",
              "engine/ops/batch_split.py"),
    Threshold("shared_columns_max_bytes", 1 << 25, "bytes", NOT_MEASURED, "2026-12-05",
              "8b7027d",
              "a convolution and its filter gradient share one im2col matrix (computed once, "
              "kept alive from the forward to the backward) where it takes at most this many "
              "bytes (the styles CNN step's are 1.8 and 7.2 MB)",
              "graph/lowering/shared_columns.py"),
    Threshold("window_block_bytes", 1 << 21, "bytes", EPYC_512, "2026-12-05", "9f2390b",
              "a convolution on one thread (or either gradient) runs in blocks of images "
              "whose im2col matrix takes at most this many bytes, so that its product reads "
              "the matrix from the cache (64x14x14, 16 -> 32 channels, caches cold: forward "
              "2.8 ms whole, 2.15 in blocks of 16 images, 2.35 of 8, 2.8 of 4)",
              "engine/ops/batch_split.py"),
    Threshold("window_split_chunks", 8, "chunks", NOT_MEASURED, "2026-12-05", "659706b",
              "a split convolution's images in this many chunks, handed out in turn (more "
              "balance a loaded machine; fewer keep each chunk's product large)",
              "engine/ops/batch_split.py"),
    Threshold("window_split_native_chunks", 2, "chunks", EPYC_512, "2026-12-05", "9907587",
              "a split native window loop (a direct convolution) takes its images in this "
              "many chunks (the styles CNN step on two threads, load 0.9, interleaved: 2 "
              "chunks 5.78 ms, 4 6.5, 8 7.49, not split 6.35)",
              "engine/ops/batch_split.py, graph/lowering/c/c_window.py"),
    Threshold("pool_split_min_taps", 1 << 18, "window values read", EPYC_512, "2026-12-05",
              "235cb62",
              "max pooling's C kernels (and their gradients) split their images over the "
              "C pool's threads where the windows read at least this many values (the "
              "styles CNN step's pools read 0.4-0.8M: split, the step 4.23-4.26 ms against "
              "4.62-4.89 unsplit, load 1.4, interleaved in one process)",
              "engine/ops/pooling.py"),
    Threshold("two_threads_min_product_work", 1 << 29, "multiply-adds", EPYC, "2026-12-01",
              "80fe26f",
              "with fusion_threads None, a graph gets two kernel threads where its largest "
              "product has at least this work (faster at batch 10000 and 60000, not 1000)",
              "graph/lowering/parallel.py"),
    Threshold("two_threads_min_elements", 1 << 18, "elements", EPYC_512, "2026-12-02",
              "411db2e",
              "... and elementwise work over more than this many elements (a graph of "
              "products alone keeps OpenBLAS's threads: big_ops matmul 23.0 -> 11.6 ms)",
              "graph/lowering/parallel.py"),
    # ---- passes ------------------------------------------------------------------------
    Threshold("batched_product_max_work", 1 << 20, "multiply-adds", EPYC_512, "2026-12-02",
              "050b693",
              "products of at most this work sharing an operand are batched into one; above, "
              "a BLAS call's fixed cost is small",
              "graph/passes/batch_products.py, graph/passes/scan_wide_products.py"),
    Threshold("batched_block_max_elements", 1 << 15, "elements", EPYC_512, "2026-12-02",
              "050b693",
              "a block of at most this many elements may be copied into a batched product's "
              "concatenation",
              "graph/passes/batch_products.py, graph/passes/scan_wide_products.py"),
    Threshold("batched_min_products", 4, "products", EPYC_512, "2026-12-02", "050b693",
              "products are batched only where at least this many share an operand",
              "graph/passes/batch_products.py"),
    Threshold("scan_hoist_max_bytes", 1 << 26, "bytes", NOT_MEASURED, "2026-12-05",
              "6d041fe",
              "a scan's per-step value computed for every step before the loop (its product "
              "one GEMM over all steps' rows) is stacked only up to this many bytes; a "
              "larger stack stays in the loop (a memory bound); likewise the stacks a scan "
              "keeps of the values a later scan would recompute (scan_residuals)",
              "graph/passes/scan_hoist.py, graph/passes/scan_residuals.py"),
    Threshold("c_scan_hoist_min_work", 1 << 18, "multiply-adds", EPYC_512, "2026-12-05",
              "a18d145",
              "a scan the C lowering writes alone computes its per-step products of at least "
              "this work a step for all steps before its loop, one gemm in its C function "
              "(the styles concat LSTM's (32, 64) @ (64, 256): 9.0 -> 6.7 ms a training step "
              "with its step sums in C; the per-example scan's (32, 16) @ (16, 64) and "
              "(32, 64) @ (64, 64) hoisted: 1.07 -> 1.11-1.18 ms)",
              "graph/lowering/c/lowering.py"),
    Threshold("layout_small_product_work", 1 << 20, "multiply-adds", XEON, "2026-12-04",
              "2399b2f",
              "a transposed right operand of products under this work is copied to C order "
              "(OpenBLAS runs small NT products at about half speed: (256, 64) @ (64, 64) "
              "10.4 against 15.0 us)",
              "graph/passes/layout.py"),
    Threshold("layout_min_readers", 2, "products", XEON, "2026-12-04", "2399b2f",
              "... where at least this many small products read it",
              "graph/passes/layout.py"),
    Threshold("scan_product_min_elements", 1024, "elements", NOT_MEASURED, "2026-12-05",
              "72042c5",
              "a scan's sum over its steps of per-step products of at least this many "
              "elements each becomes one product after the loop (scan_product_pays)",
              "graph/passes/scan_products.py"),
    Threshold("scan_product_stack_ratio", 0.25, "elements", EPYC_512, "2026-12-05",
              "72042c5",
              "... where the loop newly stacks at most this many elements per step per "
              "element of the product (the factors against the product it no longer "
              "writes; per-example RNN gradients, 1/64: 30.9 -> 10.9 ms; the styles GRU's "
              "weights, 1/2: 13.5 -> 19.0 ms, its graph no longer compiled whole in C)",
              "graph/passes/scan_products.py"),
    Threshold("scan_product_max_stack_bytes", 1 << 28, "bytes", NOT_MEASURED, "2026-12-05",
              "72042c5",
              "... and the factors' stacks, over all the steps, hold at most this many bytes "
              "(a memory bound: the accumulator holds one step's product)",
              "graph/passes/scan_products.py"),
    Threshold("sliced_product_max_fraction", 0.75, "fraction of a side", NOT_MEASURED,
              "2026-12-05", "efc616b",
              "a matrix product whose readers take only part of its rows or columns becomes "
              "the product of the factor's part where that part is at most this fraction of "
              "the side (sliced_products)",
              "graph/passes/sliced_products.py"),
    Threshold("sliced_product_min_saved_work", 4096, "multiply-adds", NOT_MEASURED,
              "2026-12-05", "efc616b",
              "... and the narrower product saves at least this many multiply-adds (a smaller "
              "one saves less than running the factor's slice costs)",
              "graph/passes/sliced_products.py"),
    # ---- layers -------------------------------------------------------------------------
    Threshold("attention_block_elements", 1 << 22, "elements", NOT_MEASURED, "2026-12-05",
              "36e4e3f",
              "scaled_dot_product_attention forms the scores of at most this many entries at "
              "once, in blocks of query rows (a memory bound: L = S = 2048, batch 2, 4 heads, "
              "float32 peaked eagerly at 70 MiB in blocks against 388 MiB in one)",
              "engine/nn/sdpa.py"),
    # ---- the function front end --------------------------------------------------------
    Threshold("split_backward_after", 3, "calls", NOT_MEASURED, "2026-12-01", "554181a",
              "a function's backward is split into its own graphs after it has run this many "
              "times by recomputing (the split compiles three more graphs)",
              "graph/jit/concrete.py"),
)

_BY_NAME = {t.name: t for t in THRESHOLDS}


class CostModel:
    """The current value of every threshold, as attributes named as in ``THRESHOLDS``;
    setting one checks its name and type.

    Example:
        >>> model = CostModel()
        >>> model.compile_calls = 10
        >>> model.compile_calls
        10
        >>> model.reset("compile_calls"); model.compile_calls
        100
        >>> model.compile_cals = 10
        Traceback (most recent call last):
        ...
        AttributeError: no threshold named 'compile_cals' (did you mean 'compile_calls'?)
    """

    def __init__(self):
        for t in THRESHOLDS:
            object.__setattr__(self, t.name, t.default)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, _checked(name, value))

    if TYPE_CHECKING:
        # The thresholds are set from THRESHOLDS in __init__, so the type checker cannot
        # see their names. Each is an int or a float as its default is (_checked makes
        # sure), which a per-name type could say only by listing them twice: Any.
        def __getattr__(self, name: str) -> Any: ...

    def __delattr__(self, name):
        raise AttributeError(f"threshold {name!r} cannot be deleted; reset it instead")

    def reset(self, *names):
        """Give ``names`` (every threshold when none) their measured defaults."""
        for name in names or _BY_NAME:
            setattr(self, name, _lookup(name).default)

    @contextlib.contextmanager
    def override(self, **values):
        """Set thresholds for a ``with`` block, then restore the values they had."""
        old = {name: getattr(self, _lookup(name).name) for name in values}
        try:
            for name, value in values.items():
                setattr(self, name, value)
            yield self
        finally:
            for name, value in old.items():
                setattr(self, name, value)

    def changed(self):
        """``{name: value}`` of the thresholds that differ from their defaults."""
        return {t.name: getattr(self, t.name) for t in THRESHOLDS
                if getattr(self, t.name) != t.default}

    def __repr__(self):
        changed = self.changed()
        return f"CostModel({len(THRESHOLDS)} thresholds, changed: {changed or 'none'})"


def _lookup(name):
    try:
        return _BY_NAME[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(name, _BY_NAME, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise AttributeError(f"no threshold named {name!r}{hint}") from None


def _checked(name, value):
    """``value`` if it suits threshold ``name``: a non-negative number, an integer where the
    default is one (an element count is never fractional)."""
    threshold = _lookup(name)
    integral = isinstance(threshold.default, int)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or (
            integral and not isinstance(value, numbers.Integral)):
        kind = "an integer" if integral else "a number"
        raise ArgumentTypeError(f"threshold {name!r} takes {kind} ({threshold.unit}), "
                        f"not {value!r}")
    if value < 0:
        raise InvalidArgumentError(f"threshold {name!r} cannot be negative, got {value!r}")
    if integral and isinstance(value, numbers.Integral):    # integral: always (checked above)
        return int(value)
    return float(value)


# The one instance every decision reads (en.config.cost).
cost = CostModel()
