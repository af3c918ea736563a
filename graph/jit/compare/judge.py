"""The criterion: when is a graph's value of a node wrong?

Each value is measured against the float64 reference of the same node (``evaluate.py``).
With ``R`` the reference, ``E`` eager's value and ``G`` the graph's, over the node's
elements:

    err(X) = max |X - R|
    scale  = max |R| over the node's value and its inputs' values
    wrong  when err(G) > FACTOR * err(E) + ULPS * eps(dtype) * scale + tiny(dtype)

A node whose graph value is within ULPS / 2 units in the last place of eager's (of the
largest magnitude eager saw there) meets the criterion whatever the reference (err(G) <=
err(E) + |G - E|), so the reference run is made only when some node is further off
(:func:`close`): a correct program costs the graph runs and one eager run.

So the graph may be off by FACTOR times what eager itself is off by (a float32 program's
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


def max_abs(values):
    """The largest finite magnitude in ``values`` (0 for none)."""
    values = np.asarray(values)
    if not values.size:
        return 0.0
    top = float(np.max(np.abs(values)))
    if np.isfinite(top):
        return top
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size else 0.0


def _error(x, r):
    """max |x - r| in float64 where ``r`` is finite everywhere (NaN in x: inf)."""
    if not x.size:
        return 0.0
    d = np.subtract(x, r, dtype=r.dtype)
    d = np.abs(d, out=d) if isinstance(d, np.ndarray) and d.dtype.kind == "f" else np.abs(d)
    top = float(np.max(d))
    return np.inf if np.isnan(top) else top


def close(graph_value, eager_value, input_scales, dtype, ulps=ULPS):
    """Whether the graph's value is within ``ulps / 2`` units in the last place of eager's
    (relative to the largest magnitude of eager's value and ``input_scales``): then it
    meets the criterion without a reference."""
    g, e = np.asarray(graph_value), np.asarray(eager_value)
    if g.shape != e.shape:
        return False
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        return bool(np.array_equal(g, e))
    if not e.size:
        return True
    wide = np.complex128 if dtype.kind == "c" else np.float64
    d = np.abs(np.subtract(g, e, dtype=wide))
    top = float(np.max(d))
    if not np.isfinite(top):    # non-finite somewhere: equal where eager's is
        same = np.isfinite(g) == np.isfinite(e)
        if not same.all() or not np.array_equal(g[~np.isfinite(e)], e[~np.isfinite(e)],
                                                equal_nan=True):
            return False
        top = float(np.max(d[np.isfinite(e)])) if np.isfinite(e).any() else 0.0
    info = np.finfo(dtype)
    scale = max([max_abs(e)] + list(input_scales))
    return top <= ulps / 2 * float(info.eps) * scale + float(info.tiny)


def judge(graph_value, eager_value, reference, input_scales, dtype, factor=FACTOR, ulps=ULPS):
    """The :class:`Figures` of one node (values: numpy arrays; ``input_scales``: the
    largest magnitudes of its inputs' reference values)."""
    g, e, r = np.asarray(graph_value), np.asarray(eager_value), np.asarray(reference)
    if g.shape != e.shape:
        return Figures(np.inf, 0.0, 0.0, 0.0, f"shape {g.shape} against eager's {e.shape}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "fc":
        same = bool(np.array_equal(g, e))
        return Figures(0.0 if same else np.inf, 0.0, 0.0, 0.0)
    r = np.broadcast_to(r, g.shape)
    if r.dtype.kind not in "fc":
        r = r.astype(np.float64)
    finite = np.isfinite(r)
    if finite.all():
        graph_abs, eager_abs = _error(g, r), _error(e, r)
    else:
        # Where the reference is not finite, the graph must be non-finite where eager is.
        if not np.array_equal(np.isfinite(g[~finite]), np.isfinite(e[~finite])):
            return Figures(np.inf, 0.0, 0.0, 0.0)
        graph_abs, eager_abs = _error(g[finite], r[finite]), _error(e[finite], r[finite])
    scale = max([max_abs(r)] + list(input_scales))
    info = np.finfo(dtype)
    tolerance = factor * eager_abs + ulps * float(info.eps) * scale + float(info.tiny)
    return Figures(graph_abs, eager_abs, scale, tolerance)
