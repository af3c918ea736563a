"""The one policy that picks a lowering, under the one switch ``en.config.lowering``.

- ``"auto"`` (the default): for a fused region, the registered lowerings that "auto"
  may pick are tried in priority order (C, then numba); the first that is available,
  can write the region and whose estimated cost over ``compile_calls`` calls (the cost
  model's, ``en.config.cost``), building included, beats the numpy lowering's is built. Where none pays, a lowering that
  builds in the background (C) is given the region as a hot swap when it pays over
  ``long_run_calls`` calls (``graph/lowering/hot_swap.py``). Whole small graphs and
  scans go to numba where it pays (the ``compile_numba`` pass).
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

from engine.config import config
from engine.cost_model import cost

from . import hot_swap, registry   # registry: the shipped lowerings register themselves
from .plugin import Unsupported, get

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


def groups_regions():
    """Whether fusion may group regions into kernels of several results: every lowering
    the switch may pick writes them (the numpy lowering always does)."""
    candidates, _ = _candidates(mode())
    return all(lowering.groups_regions for lowering in candidates)


def graph_mode():
    """How whole graphs and scans are compiled with numba: None (not at all), "auto"
    (where it pays) or "numba" (wherever it can be written)."""
    name = mode()
    if name == "auto":
        return "auto"
    return name if name == "numba" else None


def fused_kernel(region, numpy_out_impl):
    """``(kernel, hot)`` for a fused :class:`~.plugin.Region`: the chosen lowering's
    kernel, or a ``HotSwap`` that starts on ``numpy_out_impl``, or ``(None, None)``
    (the numpy kernel runs). See the module docstring."""
    name = mode()
    if name == "numpy" or not region.size:
        return None, None
    candidates, forced = _candidates(name)
    for lowering in candidates:
        if not lowering.available():
            continue
        if not forced and lowering.cost(region, cost.compile_calls) >= 0:
            continue   # can never pay: no source written
        try:
            source = lowering.region_source(region)
        except Unsupported as why:
            log.debug("%s lowering: fused region %s not written: %s", lowering.name,
                      region.name, why)
            continue
        if not forced and lowering.cost(region, cost.compile_calls, source) >= 0:
            continue
        kernel = lowering.build_region(region, source)
        if kernel is not None:
            return kernel, None
    if forced:
        return None, None
    return None, _hot_swap(candidates, region, numpy_out_impl)


def _hot_swap(candidates, region, numpy_out_impl):
    for lowering in candidates:
        if not lowering.background or not lowering.available() or \
                lowering.cost(region, cost.long_run_calls) >= 0:
            continue
        try:
            source = lowering.region_source(region)
        except Unsupported:
            continue
        if lowering.cost(region, cost.long_run_calls, source) >= 0:
            continue
        return hot_swap.HotSwap(numpy_out_impl, functools.partial(
            lowering.build_in_background, region, source))
    return None
