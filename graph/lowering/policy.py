"""The one policy that picks a lowering, under the one switch ``en.config.lowering``.

- ``"auto"`` (the default): for a fused region, the registered lowerings that "auto"
  may pick are tried in priority order (C, then numba); the first that is available,
  can write the region and whose estimated cost over ``compile_calls`` calls (the cost
  model's, ``en.config.cost``), building included, beats the numpy lowering's is built. Where none pays, a lowering that
  builds in the background (C) is given the region as a hot swap when it pays over
  ``long_run_calls`` calls (``graph/lowering/hot_swap.py``). Whole graphs and loops
  (the ``compile_numba`` pass) are asked of the lowerings that write graphs the same way
  (C, then numba): the first that writes the whole graph, or else its loops, and pays
  over ``compile_calls`` calls replaces them by compiled nodes (a lowering that
  ``hoists_scans`` first moves each scan's carry-independent products before its loop).
- a lowering's name (``"numpy"``, ``"c"``, ``"numba"``, ``"numba_ufunc"`` or one
  registered later): that lowering wherever it can write, the numpy lowering elsewhere;
  ``"numpy"`` compiles nothing.

Example:
    >>> import engine as en
    >>> en.config.lowering
    'auto'
    >>> groups_regions()
    True
"""
import functools
import logging
import warnings

from engine.backend import NUMPY
from engine.config import config
from engine.cost_model import cost
from engine.numerics import bitwise

from ..passes.scan_hoist import block_hoisted_products, hoist_scans
from . import hot_swap, registry   # registry: the shipped lowerings register themselves
from .graph_part import GraphPart
from .plugin import Declined, Unsupported, get

log = logging.getLogger("engine.graph")


def mode():
    """``en.config.lowering``, checked: "auto" or a registered lowering's name."""
    name = config.lowering
    if name != "auto":
        get(name)   # raises, naming the registered ones
    return name


def _candidates(name):
    if name == "auto":
        return [lw for lw in registry.registered().values() if lw.auto], False
    return [get(name)], True


def compiles_regions():
    """Whether a lowering the switch may pick can compile a fused region here (one is
    available: a C compiler found, numba installed); False under ``"numpy"``.

    Example:
        >>> isinstance(compiles_regions(), bool)
        True
    """
    name = mode()
    if name == "numpy":
        return False
    candidates, _ = _candidates(name)      # (under "auto", the compiled ones only)
    return any(lowering.available() for lowering in candidates)


def groups_regions():
    """Whether fusion may group regions into kernels of several results: every lowering
    the switch may pick writes them (the numpy lowering always does)."""
    candidates, _ = _candidates(mode())
    return all(lowering.groups_regions for lowering in candidates)


def compile_graph(graph):
    """Replace ``graph``, or each of its loops, by one compiled node where a lowering that
    writes graphs can and it pays (forced by name: wherever it can); True if anything was
    replaced. The graph's back end must allow compiled lowerings."""
    name = mode()
    if name == "numpy" or not getattr(graph, "backend", NUMPY).compiled_lowerings:
        return False
    candidates, forced = _candidates(name)
    for lowering in candidates:
        if not lowering.writes_graphs or not lowering.available() or \
                (bitwise() and not lowering.bitwise_graphs):
            continue
        whole = GraphPart.whole(graph)
        done = _write_part(lowering, whole, forced) if whole is not None else 0
        if not done:
            hoisted = lowering.hoists_scans and \
                hoist_scans(graph, row_blocks=False, min_step_work=lowering.hoist_min_step_work())
            loops = lowering.loop_members(graph)
            _start_builds(lowering, graph, loops, forced)
            done = sum(_write_part(lowering, GraphPart(graph, members, "scan"), forced)
                       for members in loops)
            if hoisted:     # the products no loop took in run in numpy: in row blocks
                block_hoisted_products(graph)
        if done:
            graph.notes.append(f"compiled {done} region{'s' if done != 1 else ''} with "
                               f"{lowering.name}")
            return True
    return False


def _start_builds(lowering, graph, loops, forced):
    """Has ``lowering`` start building every loop's source at once where there are several
    (each is then built while the others are, not one after another). Each part is made
    and written here before any is replaced; ``_write_part`` makes and writes it again
    after the earlier ones' replacement, which gives the same source (the unpacked results
    take the replaced values' places among its inputs), so its build finds this one."""
    if len(loops) < 2 or not lowering.starts_builds:
        return
    sources = []
    for members in loops:
        part = GraphPart(graph, members, "scan")
        try:
            source = lowering.graph_source(part)
        except Unsupported:     # Declined among them: said when the part is written
            continue
        if lowering.graph_pieces(part, source) is None and \
                (forced or lowering.graph_cost(part, cost.compile_calls, source) < 0):
            sources.append(source)
    if len(sources) > 1:
        lowering.start_graph_builds(sources)


def _write_part(lowering, part, forced):
    """The number of compiled nodes ``part`` was replaced by (0: none)."""
    try:
        source = lowering.graph_source(part)
    except Declined as why:
        part.graph.notes.append(str(why))
        log.debug("%s", why)
        if forced and why.warn:
            warnings.warn(str(why), stacklevel=2)
        return 0
    except Unsupported as why:
        log.debug("%s lowering: %s of %d nodes not written: %s", lowering.name, part.kind,
                  len(part.members), why)
        if part.kind == "scan":
            # Said in the optimization report too: a loop left to the numpy lowering is
            # the costly kind to miss (a whole graph is often not written, as it should).
            part.graph.notes.append(f"{lowering.name} lowering: a scan stays with the numpy "
                                    f"lowering: {why}")
        return 0
    pieces = lowering.graph_pieces(part, source)
    if pieces is not None:
        # Each piece is made when its turn comes: it reads what the earlier ones became.
        return sum(_write_part(lowering, GraphPart(part.graph, members, "piece"), forced)
                   for members in pieces)
    if not forced and lowering.graph_cost(part, cost.compile_calls, source) >= 0:
        return 0
    run = lowering.build_graph(part, source)
    if run is None:
        return 0
    part.replace(run, source, lowering.name)
    return 1


def fused_kernel(region, numpy_out_impl):
    """``(kernel, hot)`` for a fused :class:`~.plugin.Region`: the chosen lowering's
    kernel, or a ``HotSwap`` that starts on ``numpy_out_impl``, or ``(None, None)``
    (the numpy kernel runs). See the module docstring."""
    name = mode()
    if name == "numpy" or not region.size:
        return None, None
    candidates, forced = _candidates(name)
    # Each lowering writes the region once (the hot swap reads them again).
    sources: dict[str, str | None] = {}
    for lowering in candidates:
        if not lowering.available():
            continue
        if not forced and lowering.cost(region, cost.compile_calls) >= 0:
            continue   # can never pay: no source written
        source = _region_source(lowering, region, sources)
        if source is None:
            continue
        if not forced and lowering.cost(region, cost.compile_calls, source) >= 0:
            continue
        kernel = lowering.build_region(region, source)
        if kernel is not None:
            return kernel, None
    if forced:
        return None, None
    return None, _hot_swap(candidates, region, numpy_out_impl, sources)


def _region_source(lowering, region, sources):
    """``lowering``'s source for ``region`` (None where it cannot write it), written once
    per region: ``sources`` keeps what was written."""
    if lowering.name not in sources:
        try:
            sources[lowering.name] = lowering.region_source(region)
        except Unsupported as why:
            log.debug("%s lowering: fused region %s not written: %s", lowering.name,
                      region.name, why)
            sources[lowering.name] = None
    return sources[lowering.name]


def _hot_swap(candidates, region, numpy_out_impl, sources):
    for lowering in candidates:
        if not lowering.background or not lowering.available() or \
                lowering.cost(region, cost.long_run_calls) >= 0:
            continue
        source = _region_source(lowering, region, sources)
        if source is None:
            continue
        if lowering.cost(region, cost.long_run_calls, source) >= 0:
            continue
        return hot_swap.HotSwap(numpy_out_impl, functools.partial(
            lowering.build_in_background, region, source))
    return None
