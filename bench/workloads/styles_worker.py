"""One framework timing one ``styles`` model, in a process of its own.

``python -m bench.workloads.styles_worker MODEL FRAMEWORK [--repeats N] [--quick]
[--grads PATH]`` prints one JSON line: ``first_call_s`` (from making the step
function to its first result: tracing, compiling and the first run; the parent
points the engine's and numba's caches at an empty folder), ``times_s`` (the
timed calls after the warm-ups: two, and for the engine past the call at which it
compiles hot kernels in the background, which it waits for), ``loss``; ``--grads`` saves the loss and the
gradients to an ``.npz`` for the parent to compare. FRAMEWORK is ``graph``
(``en.function``), ``eager`` (the engine), ``jax`` or ``torch``.
"""
import argparse
import json
import sys
import time

import numpy as np

from . import styles_data


def _maker(framework):
    if framework in ("graph", "eager"):
        from . import styles_engine as mod
        return (lambda m, p, i: mod.make_step(m, framework, p, i)), mod.to_numpy
    if framework == "jax":
        from . import styles_jax as mod
    elif framework == "torch":
        from . import styles_torch as mod
    else:
        raise SystemExit(f"styles_worker: unknown framework {framework!r}")
    return mod.make_step, mod.to_numpy


def measure(model, framework, repeats, quick=False, grads_path=None):
    """The record printed by the command line (a dict)."""
    make, to_numpy = _maker(framework)
    params, inputs = styles_data.make(model, quick=quick)
    start = time.perf_counter()
    step = make(model, params, inputs)
    loss, grads = to_numpy(step())
    if framework == "torch":
        from .styles_torch import engine_layout
        grads = engine_layout(model, grads)
    first = time.perf_counter() - start
    if grads_path:
        np.savez(grads_path, loss, *grads)
    # Steady state: the engine compiles a hot fused kernel in the background at its
    # hot_swap_calls-th call (graph/lowering/hot_swap.py); warm up past it and let the
    # compiles finish, so the timed calls run what a long training run runs.
    warm = 2
    if framework in ("graph", "eager"):
        import engine as en
        warm = max(warm, en.config.cost.hot_swap_calls + 2)
    for _ in range(warm):
        step()
    from bench.common import _wait_for_engine_compiles
    _wait_for_engine_compiles()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return {"model": model, "framework": framework, "first_call_s": first, "times_s": times,
            "loss": float(loss)}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.workloads.styles_worker")
    parser.add_argument("model", choices=styles_data.MODELS)
    parser.add_argument("framework", choices=("graph", "eager", "jax", "torch"))
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--grads", default=None)
    args = parser.parse_args(argv)
    from bench.malloc import steady_malloc
    steady_malloc()          # as the runner does in its own process (bench/malloc.py)
    rec = measure(args.model, args.framework, args.repeats, args.quick, args.grads)
    print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
