"""The criterion: when is a graph's value of a node wrong?

Each value is measured against the float64 reference of the same node (``evaluate.py``).
With ``R`` the reference, ``E`` eager's value and ``G`` the graph's, over the node's
elements:

    err(X) = max |X - R|
    scale  = max |R| over the node's value and its inputs' values
    wrong  when err(G) > FACTOR * err(E) + ULPS * eps(dtype) * scale + tiny(dtype)

so the graph may be off by FACTOR times what eager itself is off by (a float32 program's
eager values are off by their rounding), plus ULPS units in the last place of the
largest value the op saw (a float64 program has no wider reference: its eager error is
0 and this floor alone decides; it also covers sums whose terms cancel), plus the
smallest normal number for values near 0. Where the reference is NaN or infinite the
graph must be non-finite exactly where eager is. Integer and boolean values must equal
eager's.
"""
import dataclasses

import numpy as np

FACTOR = 4.0
ULPS = 64.0


@dataclasses.dataclass
class Figures:
    """The error figures of one node: graph and eager against the float64 reference."""

    graph_abs: float        # max |G - R|
    eager_abs: float        # max |E - R|
    scale: float            # max |R| over the node and its inputs
    tolerance: float        # what graph_abs may reach
    shape_mismatch: str | None = None

    @property
    def graph_rel(self):
        return self.graph_abs / self.scale if self.scale else float(self.graph_abs > 0) * np.inf

    @property
    def eager_rel(self):
        return self.eager_abs / self.scale if self.scale else float(self.eager_abs > 0) * np.inf

    @property
    def wrong(self):
        return self.shape_mismatch is not None or not self.graph_abs <= self.tolerance


def _max_abs(values):
    finite = np.abs(values[np.isfinite(values)]) if values.size else values
    return float(finite.max()) if finite.size else 0.0


def judge(graph_value, eager_value, reference, input_refs, dtype, factor=FACTOR, ulps=ULPS):
    """The :class:`Figures` of one node (all values numpy arrays)."""
    g, e, r = np.asarray(graph_value), np.asarray(eager_value), np.asarray(reference)
    if g.shape != e.shape:
        return Figures(np.inf, 0.0, 0.0, 0.0, f"shape {g.shape} against eager's {e.shape}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        same = bool(np.array_equal(g, e))
        return Figures(0.0 if same else np.inf, 0.0, 0.0, 0.0)
    r = np.broadcast_to(r, g.shape)
    g64, e64 = g.astype(r.dtype), e.astype(r.dtype)
    finite = np.isfinite(r)
    # Where the reference is not finite, the graph must be non-finite where eager is.
    if not finite.all() and not np.array_equal(np.isfinite(g64[~finite]),
                                              np.isfinite(e64[~finite])):
        return Figures(np.inf, 0.0, 0.0, 0.0)
    g_err = np.abs(g64[finite] - r[finite])
    e_err = np.abs(e64[finite] - r[finite])
    graph_abs = float(g_err.max()) if g_err.size else 0.0
    if g_err.size and not np.isfinite(g_err).all():
        graph_abs = np.inf
    if np.isnan(g64[finite]).any():
        graph_abs = np.inf
    eager_abs = float(np.nan_to_num(e_err, nan=np.inf).max()) if e_err.size else 0.0
    scale = max([_max_abs(r)] + [_max_abs(np.asarray(i)) for i in input_refs
                                 if np.asarray(i).dtype.kind in "fc"])
    info = np.finfo(dtype)
    tolerance = factor * eager_abs + ulps * float(info.eps) * scale + float(info.tiny)
    return Figures(graph_abs, eager_abs, scale, tolerance)
