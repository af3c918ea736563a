"""The C lowering as a plug-in: large fused regions as C loop nests (``c_source``),
built by the system's C compiler (``c_compiler``) and run by ``c_fused.CFusedKernel``;
and whole graphs, or each scan with its time loop, as one C function (``c_graph``).

Example:
    >>> from engine.graph.lowering.plugin import get
    >>> get("c").background, get("c").writes_graphs
    (True, True)
"""
import math
import warnings

from engine.cost_model import cost
from engine.numerics import bitwise

from . import c_bitwise, c_compiler, c_fused, c_graph, c_scan
from .. import graph_limits
from ..plugin import Declined, Lowering


class CLowering(Lowering):
    """Fused regions in C: first choice under "auto" where a compiler is found and it
    pays (a cached kernel loads in a millisecond, a new one compiles in a fraction of a
    second); a region that pays only over a long run is compiled once hot."""

    name = "c"
    priority = 10
    background = True
    writes_graphs = True
    bitwise_graphs = True
    # One product of every step's rows before the loop, on the loop's one BLAS thread.
    hoists_scans = True
    # Several scans' sources compiled at once (c_compiler.start).
    starts_builds = True

    def available(self):
        return c_fused.available()

    def saved_per_call(self, region):
        return c_fused.saved_per_call(region.size, region.n_ops)

    def build_seconds(self, region, source):
        return 0.0 if c_compiler.is_cached(source) else cost.c_compile_seconds

    def region_source(self, region):
        return c_fused.region_source(region.members, region.inputs, region.outputs)

    def build_in_background(self, region, source):
        """The kernel, raising what the compiler says (the hot swap warns once)."""
        return c_fused.CFusedKernel(region.name, region.members, region.inputs,
                                    region.outputs, region.threads, source, region.exact)

    def build_region(self, region, source):
        try:
            return self.build_in_background(region, source)
        except (c_compiler.CompileError, OSError) as err:
            # A source the compiler refuses is a fault of the C lowering: said, not
            # hidden, and the numpy kernel runs.
            warnings.warn(f"C lowering: fused region {region.name} was not compiled ({err}); "
                          "the numpy lowering runs it", RuntimeWarning, stacklevel=2)
            return None

    # ---- whole graphs and scans (graph/lowering/c/c_graph.py) ----------------------------
    def loop_members(self, graph):
        loops = graph_limits.loop_members(graph)
        if bitwise():   # each loop adds up its sums over the steps (c_bitwise.step_sum)
            return [c_bitwise.with_step_sums(graph, members) for members in loops]
        return [_with_hoisted(graph, c_scan.with_sums(graph, members)) for members in loops]

    def hoist_min_step_work(self):
        return cost.c_scan_hoist_min_work

    def graph_source(self, part):
        """The part's C function; a whole graph of large values is declined (numpy's
        threaded BLAS and the fused kernels serve it: ``graph_limits.too_large``)."""
        if part.kind == "graph":
            why = graph_limits.too_large(part.members)
            if why:
                raise Declined("compiled lowering: the graph is not written whole: " + why)
        source, em = c_graph.emit(part.members, part.inputs, part.outputs)
        part.meta.update(compiled_ops=graph_limits.op_count(part.members),
                         largest_product=em.largest_product, workspace_bytes=em.ws_bytes,
                         uses_blas=em.uses_blas,
                         ufunc_loops=tuple(em.ufunc_loops) if bitwise() else None)
        return source

    def graph_cost(self, part, calls, source=None):
        """What ``calls`` calls cost beyond the numpy lowering's: the build (none when
        on disk) less the numpy calls saved (each op a call, a scan's body once a step),
        less one call of the compiled function each. A C compile takes well under a
        second, so the build is weighed over at least ``cost.c_graph_compile_calls``
        calls (a training loop's length), where the policy's horizon is shorter."""
        # A scan is judged by the values a step computes: the stacks of its results are
        # written by the loop (a weight gradient summed over the steps never is).
        judged = [m for m in part.members if m.op.rules.get("numba_form") == "time_loop"] \
            if part.kind == "scan" else part.members
        if not graph_limits.small_enough(judged):
            return math.inf   # numpy's threaded BLAS and fused kernels serve it better
        ops = part.meta.get("compiled_ops")
        if ops is None:
            ops = graph_limits.op_count(part.members)
        saved = ops * cost.numpy_call_seconds - cost.c_graph_call_seconds
        build = 0.0
        if source is not None and not c_compiler.is_cached(source):
            build = cost.c_graph_compile_seconds + \
                cost.c_graph_compile_seconds_per_line * source.count("\n")
        return build - saved * max(calls, cost.c_graph_compile_calls)

    def start_graph_builds(self, sources):
        """Several scans' sources compiled at once, on threads (``c_compiler.start``), each
        as ``c_graph.CGraphFunction`` builds it first (quickly where not on disk)."""
        c_compiler.start(sources, quick=True)

    def build_graph(self, part, source):
        try:
            run = c_graph.build(source, part, part.meta, cost.openblas_threaded_work)
        except (c_compiler.CompileError, OSError) as err:
            warnings.warn(f"C lowering: a {part.kind} of {len(part.members)} nodes was not "
                          f"compiled ({err}); the numpy lowering runs it", RuntimeWarning,
                          stacklevel=2)
            return None
        part.meta["from_cache"] = run is not None and c_compiler.is_cached(source)
        return run


def _with_hoisted(graph, members):
    """A scan's ``members`` with the nodes ``scan_hoist`` made for it that nothing else
    reads (its hoisted products: one gemm before the loop), in topological order."""
    scan = members[0]
    order = graph.topo_order()
    taken = {scan}
    for n in reversed(order[:order.index(scan)]):    # users first
        if n.meta.get("scan_hoisted") and graph.users(n) and \
                all(u in taken for u in graph.users(n)):
            taken.add(n)
    if len(taken) == 1:
        return members
    return [n for n in order if n in taken and n is not scan] + members
