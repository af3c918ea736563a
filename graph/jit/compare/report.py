"""What the comparison found: :class:`Divergence` (one node) and :class:`Report` (the run)."""
import dataclasses
from typing import Any

from engine.errors import InvalidArgumentError, format_location

from .judge import FACTOR, ULPS, Figures


@dataclasses.dataclass
class Divergence:
    """One node whose graph value is wrong by the criterion (``judge.py``).

    ``node``: the optimized graph's node name; ``op``: its op; ``traced``: the name of
    the traced node it stands for and ``traced_op`` that node's op; ``made_by``: the
    pass or lowering that made it (a fused region and its kernel, a C or numba kernel,
    a layout change, a rewrite, memory planning); ``members``: the traced nodes a fused
    region computes; ``source``: the user's line (``(file, line, function)``);
    ``figures``: the error figures against float64.
    """

    node: str
    op: str
    traced: str
    traced_op: str
    made_by: str
    source: Any
    figures: Figures
    members: tuple = ()
    traced_node: Any = dataclasses.field(default=None, repr=False)
    region_node: Any = dataclasses.field(default=None, repr=False)   # the region's result
    # Inside a loop or conditional: (body graph, its eager values in the call that diverged).
    body: Any = dataclasses.field(default=None, repr=False)
    # The lowering that wrote the node's whole-graph kernel ("c", "numba"), or None.
    lowering: Any = dataclasses.field(default=None, repr=False)

    @property
    def line(self):
        """``file:line in function`` of the user's code that made the node; for a node of
        a backward pass, the line of the forward op whose gradient it computes, said so."""
        where = format_location(self.source)
        of = getattr(self.traced_node, "meta", {}).get("gradient_of")
        return where if of is None else f"{where} (in the gradient of op '{of}' made there)"

    def __str__(self):
        f = self.figures
        lines = [f"node %{self.node} (op '{self.op}') for traced %{self.traced} "
                 f"(op '{self.traced_op}')",
                 f"  made by: {self.made_by}"]
        if self.members:
            lines.append(f"  region: {', '.join(self.members)}")
        lines.append(f"  at {self.line}")
        if f.shape_mismatch:
            lines.append(f"  {f.shape_mismatch}")
        else:
            lines.append(f"  graph vs float64: max abs {f.graph_abs:.3g}, max rel {f.graph_rel:.3g}; "
                         f"eager vs float64: max abs {f.eager_abs:.3g}, max rel {f.eager_rel:.3g} "
                         f"(allowed {f.tolerance:.3g})")
        return "\n".join(lines)


class Report:
    """The result of :func:`engine.debug.compare`: ``ok``, ``first`` (the first diverging
    node in the order the graph runs, a :class:`Divergence`, or None), ``divergences``
    (all of them), ``checked`` (nodes compared). ``write_repro(path)`` writes a script
    that reproduces the first divergence."""

    def __init__(self, name, divergences, checked, repro=None, notes=()):
        self.name = name
        self.divergences = list(divergences)
        self.checked = checked
        self.notes = list(notes)
        self._repro = repro

    @property
    def ok(self):
        return not self.divergences

    @property
    def first(self):
        return self.divergences[0] if self.divergences else None

    def write_repro(self, path):
        """Write a standalone script (and its inputs, ``np.save``d beside it) computing the
        smallest subgraph around the first divergence that still diverges; running it
        prints the comparison and exits with status 1 while the divergence is there.
        Returns the path."""
        if self.ok or self._repro is None:
            raise InvalidArgumentError(f"compare {self.name}: nothing diverges, nothing to "
                                       "reproduce")
        return self._repro(self.first, path)

    def __str__(self):
        head = (f"compare {self.name}: {self.checked} nodes checked against eager and float64 "
                f"(wrong: error > {FACTOR:g} x eager's + {ULPS:g} ulps of the largest value)")
        if self.ok:
            return head + ": all agree" + "".join(f"\n  note: {n}" for n in self.notes)
        body = [head + f": {len(self.divergences)} diverge; the first:", str(self.first)]
        rest = self.divergences[1:]
        if rest:
            body.append("then: " + ", ".join(f"%{d.node}" for d in rest[:8]) +
                        (" ..." if len(rest) > 8 else ""))
        body += [f"note: {n}" for n in self.notes]
        return "\n".join(body)

    __repr__ = __str__
