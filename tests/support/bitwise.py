"""Helpers of the bitwise-mode suites: the same bits, and one function run by every lowering.

Example:
    >>> import numpy as np
    >>> same_bits(np.array([0.0, np.nan]), np.array([0.0, np.nan]))
    True
    >>> same_bits(np.array([0.0]), np.array([-0.0]))
    False
"""
import contextlib

import numpy as np

import engine as en

from support.programs import flat

# The lowerings each bitwise check runs besides eager mode.
LOWERINGS = ("numpy", "c", "numba")


def same_bits(got, want):
    """Equal dtype, shape and values, NaN where NaN (np.array_equal with equal_nan) and
    the same sign of every zero."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    return bool(np.array_equal(got, want, equal_nan=True)) and \
        bool(np.array_equal(np.signbit(got.real), np.signbit(want.real)))


def assert_same_bits(got, want, what):
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} results, eager gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g.numpy() if hasattr(g, "numpy") else g), \
            np.asarray(w.numpy() if hasattr(w, "numpy") else w)
        if not same_bits(g, w):
            diff = np.nanmax(np.abs(g.astype(float) - w.astype(float))) if g.size and \
                g.shape == w.shape else "shape"
            raise AssertionError(f"{what}: result {k} differs from eager ({g.dtype}{g.shape} "
                                 f"against {w.dtype}{w.shape}, largest difference {diff})")


@contextlib.contextmanager
def numerics(mode, lowering=None):
    """``en.config.numerics = mode`` (and ``en.config.lowering``) while the block runs."""
    old = en.config.numerics, en.config.lowering
    en.config.numerics = mode
    if lowering is not None:
        en.config.lowering = lowering
    try:
        yield
    finally:
        en.config.numerics, en.config.lowering = old


def fused_backends(fn, tensors):
    """The back ends of the fused kernels of ``fn``'s graph for ``tensors``."""
    graph = fn.graph_for(*tensors)
    return [n.meta.get("backend") for n in graph.nodes if n.op.name.startswith("fused")]


def compiled_backends(fn, tensors):
    """The lowerings that wrote ``fn``'s graph for ``tensors``, or its scans, as one
    compiled function each (``compiled_region`` nodes)."""
    graph = fn.graph_for(*tensors)
    return [n.meta.get("backend") for n in graph.nodes if n.op.name == "compiled_region"]
