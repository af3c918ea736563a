"""The ``Lowering`` interface and the registry of lowerings.

Fusion only finds regions (``graph/lowering/fusion.py``); a lowering says whether it can
write one, writes its source, builds it and estimates what ``calls`` calls of it cost,
building included. The policy (``graph/lowering/policy.py``) picks among the registered
lowerings under ``en.config.lowering``. The numpy lowering is the reference every other
one is measured against and the one that always works; each compiled lowering lives in
its own folder (``numba/``, ``c/``) and registers itself in ``graph/lowering/registry.py``.

A region is described by :class:`Region`: its members (elementwise nodes in topological
order), the values it reads, its results as ``(member, kind)`` pairs (kind None for a
value, ``"sum"``, ``"mean"`` or ``"rows"`` for a reduction the kernel finishes), and the
kernel threads the graph chose.

A lowering that ``writes_graphs`` also writes a whole graph, or each of its loops, as one
function: the policy hands it a :class:`~.graph_part.GraphPart` (``graph_source``,
``graph_pieces``, ``graph_cost``, ``build_graph``; ``loop_members`` names the loops it
writes where the whole graph is not written). By default a lowering writes no graphs.

Example:
    >>> class Doubler(Lowering):
    ...     name = "doubler"
    >>> lowering = Doubler()
    >>> lowering.available(), lowering.writes_graphs
    (True, False)
"""
import dataclasses
import math
from typing import Any

from engine import scalar_forms
from engine.errors import EngineError, InvalidArgumentError

__all__ = ["Declined", "Lowering", "Region", "Unsupported", "register", "unregister",
           "registered", "get"]


class Unsupported(EngineError):
    """A lowering cannot write the region (or graph); the numpy lowering runs it."""


class Declined(Unsupported):
    """A lowering could write the graph part but declines it (too large, or too long to
    build): the policy notes the reason on the graph, and warns too where ``warn`` is set
    and the lowering was asked for by name."""

    def __init__(self, why: str, warn: bool = False) -> None:
        super().__init__(why)
        self.warn = warn


@dataclasses.dataclass
class Region:
    """A fused region as a lowering sees it (see the module docstring).

    Example:
        >>> Region("k", [], [], [], None).size is None
        True
    """
    name: str
    members: list
    inputs: list
    outputs: list
    threads: object = None
    # Whether the region was lowered under bitwise numerics: a kernel built later (a hot
    # swap, on another thread) is built for these, whatever en.config.numerics is then.
    exact: bool | None = None

    @property
    def shape(self) -> tuple[Any, ...] | None:
        """The region's shape (every member has it); None when there are no members."""
        return tuple(self.members[-1].shape) if self.members else None

    @property
    def size(self) -> int | None:
        """Elements of the region's shape; 0 where a dim is unknown, None without members."""
        shape = self.shape
        if shape is None:
            return None
        return 0 if None in shape else math.prod(shape)

    @property
    def n_ops(self) -> int:
        """The numpy passes the region's members make (a member whose kernel is no
        ufunc makes one per step of its scalar form: ``scalar_forms.numpy_passes``)."""
        return sum(map(scalar_forms.numpy_passes, self.members))

    @property
    def one_value(self) -> bool:
        """Whether the region has one result, a value (not a reduction)."""
        return len(self.outputs) == 1 and self.outputs[0][1] is None


class Lowering:
    """A way of turning a fused region (and, where ``writes_graphs``, a whole graph) into
    code that runs. Subclasses set ``name`` and override what they support.

    ``priority``: under ``en.config.lowering = "auto"`` the policy tries the lowerings in
    increasing priority and takes the first whose estimated cost beats numpy's.
    ``auto``: whether "auto" may pick it at all (False: only when forced by name).
    ``groups_regions``: whether it writes regions with several results (fusion then
    groups regions that feed one another into one kernel).
    ``background``: whether a region that pays only over a long run may be built on a
    background thread once hot (``graph/lowering/hot_swap.py``).
    ``writes_graphs``: whether it writes whole graphs (and loops) as one function (the
    ``graph_*`` methods; the numpy lowering's writer, ``codegen``, runs where none does).
    ``bitwise_graphs``: whether those functions give eager mode's bits under
    ``en.config.numerics = "bitwise"`` (else none is written under it).
    ``hoists_scans``: whether, where the whole graph is not written, the scans' work that
    reads no carry moves before their loops (``scan_hoist``) before it writes them, its
    ``loop_members`` taking the hoisted products in (one large product before the loop);
    a per-step value whose products do fewer than ``hoist_min_step_work()``
    multiply-adds a step stays in the loop.
    ``starts_builds``: whether it builds several loops' sources at once when told of them
    (``start_graph_builds``); only then does the policy write them all first.
    """

    name: str | None = None
    priority: int = 100
    auto: bool = True
    groups_regions: bool = True
    writes_graphs: bool = False
    bitwise_graphs: bool = False
    hoists_scans: bool = False
    background: bool = False
    starts_builds: bool = False

    def available(self) -> bool:
        """Whether this lowering can run here (its compiler or library is found)."""
        return True

    def saved_per_call(self, region: Region) -> float:
        """Seconds one call of ``region`` saves over the numpy lowering (at most 0: nothing
        to gain, whatever the run's length; the policy then writes no source)."""
        return 0.0

    def build_seconds(self, region: Region, source: str) -> float:
        """Seconds building ``source`` costs (0 when it is on disk already)."""
        return 0.0

    def cost(self, region: Region, calls: int, source: str | None = None) -> float:
        """Estimated seconds that ``calls`` calls of ``region`` cost beyond the numpy
        lowering's, building included (negative: it pays). Without ``source`` the build
        is left out: a lower bound, so the policy writes no source for a region that can
        never pay."""
        build = 0.0 if source is None else self.build_seconds(region, source)
        return build - self.saved_per_call(region) * calls

    def region_source(self, region: Region) -> str:
        """The source of ``region``'s kernel; raises :class:`Unsupported` naming what it
        cannot write."""
        raise Unsupported(f"the {self.name} lowering writes no fused regions")

    def build_region(self, region: Region, source: str) -> Any:
        """The kernel for ``region`` from ``source``: an object with ``out_impl`` (inputs,
        then one output array per result, None to allocate), ``source`` and ``backend``;
        None where the build is refused (the numpy lowering then runs the region)."""
        return None

    def build_in_background(self, region: Region, source: str) -> Any:
        """The kernel built on the hot swap's thread (``background`` lowerings): may raise,
        and the hot swap then warns once and keeps the numpy kernel."""
        return self.build_region(region, source)

    # ---- whole graphs and loops (``writes_graphs``) -------------------------------------
    def loop_members(self, graph: Any) -> list[list[Any]]:
        """The loops of ``graph`` it writes as one function each where the whole graph is
        not written: each a list of members (the loop node, then the nodes unpacking its
        results). None by default."""
        return []

    def hoist_min_step_work(self) -> float:
        """The least multiply-adds a step of a scan's per-step products that it hoists
        (``hoists_scans``)."""
        return 0

    def graph_source(self, part: Any) -> str:
        """The source of a :class:`~.graph_part.GraphPart`'s function; raises
        :class:`Unsupported` naming what it cannot write, or :class:`Declined` where it
        could but will not."""
        raise Unsupported(f"the {self.name} lowering writes no whole graphs")

    def graph_pieces(self, part: Any, source: str) -> list[list[Any]] | None:
        """Consecutive runs of ``part``'s members to write one by one instead of ``part``
        (whose ``source`` is too long to build at once), or None: write it whole."""
        return None

    def graph_cost(self, part: Any, calls: int, source: str | None = None) -> float:
        """Estimated seconds that ``calls`` calls of ``part`` written by this lowering cost
        beyond the numpy lowering's, building included (negative: it pays; without
        ``source``, the build left out). By default it never pays."""
        return math.inf

    def build_graph(self, part: Any, source: str) -> Any:
        """The callable the compiled node runs (``part``'s inputs in, a tuple of its
        outputs' values back), built from ``source``; None where the build is refused."""
        return None

    def start_graph_builds(self, sources: list[str]) -> None:
        """A hint that ``build_graph`` will be asked for these sources next, one by one: a
        lowering that ``starts_builds`` starts building them all at once (on other cores)
        so the calls find them built. Nothing by default; never raises."""
        return None


_REGISTRY: dict[str, Lowering] = {}


def register(lowering: Lowering) -> Lowering:
    """Add ``lowering`` (a :class:`Lowering` instance) under its name; returns it.

    Example:
        >>> class Nothing(Lowering):
        ...     name = "nothing"
        >>> register(Nothing()).name in registered()
        True
        >>> unregister("nothing")
    """
    if not isinstance(lowering, Lowering) or not lowering.name:
        raise InvalidArgumentError(f"a lowering must be a named Lowering instance, got "
                                   f"{lowering!r}")
    if lowering.name == "auto":
        raise InvalidArgumentError("'auto' names the policy's choice, not a lowering")
    _REGISTRY[lowering.name] = lowering
    return lowering


def unregister(name: str) -> None:
    """Remove the lowering registered as ``name`` (nothing if there is none)."""
    _REGISTRY.pop(name, None)


def registered() -> dict[str, Lowering]:
    """``{name: lowering}``, in the order the policy tries them under "auto"."""
    return dict(sorted(_REGISTRY.items(), key=lambda item: item[1].priority))


def get(name: str) -> Lowering:
    """The lowering registered as ``name``; raises ``InvalidArgumentError`` naming those
    there are."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InvalidArgumentError(f"en.config.lowering must be 'auto' or a registered "
                                   f"lowering ({', '.join(registered())}), got {name!r}") \
            from None
