"""How tracing and compiling grow with a function's op count.

Each program is a Python loop unrolled into a graph of about ``ops`` traced nodes;
for each size the table gives the seconds spent tracing (running the Python body
on placeholders), in the optimization passes (each pass's time from the
optimization report), and lowering (generated source, compiled), with the total
in microseconds per traced op. Linear growth keeps the per-op figure flat as
the size grows; the last column is it divided by the smallest size's.

Programs:
    chain         ``x = tanh(x @ w + 0.1) * 0.5 + x`` repeated (a deep residual stack)
    grad          the value and gradient of the same stack's ``sum(x * x)``
    elementwise   ``x = tanh(x) * 0.5 + 0.1`` repeated: one long elementwise chain
                  (the compiled lowerings once wrote it as one expression, n * n
                  characters)

Run it as ``python -m bench.trace_scaling`` (2,000 / 8,000 / 20,000 ops);
``--ops 500,1000``, ``--programs chain,elementwise`` and ``--lowering numpy``
(``en.config.lowering``) choose others.

Example:
    >>> rows = measure("chain", [50])      # doctest: +SKIP
    >>> rows[0]["traced_ops"] >= 50        # doctest: +SKIP
    True
"""
import argparse
import contextlib
import gc
import os
import sys
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np

import engine as en
from engine.graph.jit import concrete

def _stack(x, w, layers):
    for _ in range(layers):
        x = en.tanh(x @ w + 0.1) * 0.5 + x
    return x


def _chain(layers):
    return lambda x, w: en.sum(_stack(x, w, layers))


def _grad(layers):
    def value_and_grad(x, w):
        return en.value_and_grad(lambda w: en.sum(en.square(_stack(x, w, layers))))(w)
    return value_and_grad


def _elementwise(layers):
    def run(x, w):
        for _ in range(layers):
            x = en.tanh(x) * 0.5 + 0.1
        return en.sum(x)
    return run


# Builder and traced nodes per layer (the chain's five ops and two constants;
# the gradient's forward and backward nodes; three ops and two constants).
PROGRAMS = {"chain": (_chain, 7), "grad": (_grad, 18), "elementwise": (_elementwise, 5)}


@contextlib.contextmanager
def _timed_phases(times):
    """Adds the seconds of tracing and lowering inside ``ConcreteFunction`` to ``times``."""
    trace, compiled = concrete.ConcreteFunction._trace, concrete.CompiledGraph

    def timed_trace(self, graph):
        start = time.perf_counter()
        try:
            return trace(self, graph)
        finally:
            times["trace"] += time.perf_counter() - start

    def timed_compile(graph, **kwargs):
        start = time.perf_counter()
        try:
            return compiled(graph, **kwargs)
        finally:
            times["lower"] += time.perf_counter() - start
    concrete.ConcreteFunction._trace = timed_trace
    concrete.CompiledGraph = timed_compile
    try:
        yield times
    finally:
        concrete.ConcreteFunction._trace = trace
        concrete.CompiledGraph = compiled


def measure(program, sizes):
    """One row per size: traced and optimized node counts and the seconds per phase."""
    build, per_layer = PROGRAMS[program]
    x = en.tensor(np.full((4, 8), 0.1, np.float32))
    w = en.tensor(np.eye(8, dtype=np.float32) * 0.1)
    rows = []
    for ops in sizes:
        layers = max(1, ops // per_layer)
        f = en.function(build(layers))
        gc.collect()
        times = {"trace": 0.0, "lower": 0.0}
        with _timed_phases(times):
            start = time.perf_counter()
            c = f.get_concrete_function(x, w)
            total = time.perf_counter() - start
        passes = sum(r["seconds"] for r in c.report.as_data())
        traced = c.unoptimized_graph.node_count()
        rows.append({"program": program, "ops": ops, "traced_ops": traced,
                     "optimized_ops": c.graph.node_count(), "trace_s": times["trace"],
                     "passes_s": passes, "lower_s": times["lower"], "total_s": total,
                     "us_per_op": total / traced * 1e6})
        del f, c
    return rows


def format_rows(rows):
    head = (f"{'program':8} {'ops':>7} {'traced':>7} {'after':>6} {'trace s':>8} "
            f"{'passes s':>9} {'lower s':>8} {'total s':>8} {'us/op':>7} {'x first':>7}")
    lines = [head, "-" * len(head)]
    first = {}
    for r in rows:
        base = first.setdefault(r["program"], r["us_per_op"])
        lines.append(f"{r['program']:8} {r['ops']:>7} {r['traced_ops']:>7} "
                     f"{r['optimized_ops']:>6} {r['trace_s']:>8.2f} {r['passes_s']:>9.2f} "
                     f"{r['lower_s']:>8.2f} {r['total_s']:>8.2f} {r['us_per_op']:>7.0f} "
                     f"{r['us_per_op'] / base:>7.2f}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.trace_scaling",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default="2000,8000,20000",
                        help="comma-separated op counts (default 2000,8000,20000)")
    parser.add_argument("--programs", default="chain,grad",
                        help=f"comma-separated, from {', '.join(PROGRAMS)}")
    parser.add_argument("--lowering", default=None,
                        help="en.config.lowering while tracing (default: as configured)")
    args = parser.parse_args(argv)
    previous = en.config.lowering
    if args.lowering is not None:
        en.config.lowering = args.lowering
    try:
        return _run(parser, args)
    finally:
        en.config.lowering = previous


def _run(parser, args):
    sizes = [int(s) for s in args.ops.split(",")]
    rows = []
    for program in args.programs.split(","):
        if program not in PROGRAMS:
            parser.error(f"unknown program {program!r}; known: {', '.join(PROGRAMS)}")
        rows += measure(program, sizes)
    print(format_rows(rows))
    return rows


if __name__ == "__main__":
    main()
