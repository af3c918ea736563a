"""The mode-comparison runner: ``python -m bench [WORKLOAD ...] [options]``.

Runs the workloads of :mod:`bench.workloads` (all of them by default, each
with its default configurations), every mode side by side, and prints a
table of each mode's time (median, and min-max over the timed calls) with its
ratio to eager and to PyTorch. The table also goes to ``OUT/results.md``, the
results (with facts about the machine) to ``OUT/results.json`` and the plots
to ``OUT/*.png`` (``--out``, default ``bench_results/``). Without flags the
run fits a laptop (batches up to 10000, the engine's modes, numpy and
PyTorch); ``--full`` adds batch 60000 and the other frameworks' variants
(JAX, PyTorch's hand-written and scripted loops).

Examples:
    python -m bench                       # the main job: every workload, batches up to 10000
    python -m bench --full                # the whole sweep: batch 60000, every framework
    python -m bench --quick               # a smoke run, under a minute
    python -m bench --list                # workloads and their modes
    python -m bench lbfgs --batch 10000 --history 100 --modes eager,graph,torch
    python -m bench --threads 1           # every library on one thread
    python -m bench --kernel-threads 2    # fused kernels of graph mode on two threads

Optional frameworks (PyTorch, JAX, matplotlib) that are missing are reported
as skipped, never as errors. The exit status is 1 when a workload failed
(for example when a mode's loss left the reference's), else 0.
"""
import argparse
import os
import sys
import time
import traceback

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _threads_from_argv(argv):
    """``--threads N`` must act before numpy (and its BLAS) is first imported."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return None


if __name__ == "__main__":
    _n = _threads_from_argv(sys.argv[1:])
    if _n and _n.isdigit() and int(_n) > 0:
        for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                     "BENCH_THREADS"):
            os.environ[_var] = _n
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   f" --xla_cpu_multi_thread_eigen=false"
                                   f" intra_op_parallelism_threads={_n}").strip()

import engine as en  # noqa: E402
from bench import common, workloads  # noqa: E402
from bench.malloc import release_memory, steady_malloc  # noqa: E402
from engine.graph.lowering.parallel import kernel_threads  # noqa: E402


class _SharedOptions:
    """Lets each workload add its options to one parser: an option that two
    workloads both define (say ``--batch``) is added by the first and shared."""

    def __init__(self, target, parser=None):
        self._target = target                 # the parser or an argument group
        self._parser = parser or target       # the parser that knows every option

    def add_argument(self, *names, **kwargs):
        if any(n in self._parser._option_string_actions for n in names if n.startswith("-")):
            return None
        return self._target.add_argument(*names, **kwargs)

    def add_argument_group(self, *args, **kwargs):
        return _SharedOptions(self._parser.add_argument_group(*args, **kwargs), self._parser)

    def __getattr__(self, name):
        return getattr(self._target, name)


def build_parser(found):
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Compare the engine's modes (eager, graph, ...) with numpy, PyTorch and JAX "
                    "on the benchmark workloads.",
        epilog="Workload options apply to the workloads that define them.")
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help=f"workloads to run (default: all): {', '.join(found) or 'none found'}")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="a short smoke run of every workload (under a minute in all)")
    size.add_argument("--full", action="store_true",
                      help="the whole sweep: batch 60000 and every framework's modes (the "
                           "default run stops at batch 10000 and leaves out JAX and PyTorch's "
                           "loop variants, so it fits a laptop)")
    parser.add_argument("--list", action="store_true", help="list the workloads and their modes")
    parser.add_argument("--modes", default=None,
                        help="comma-separated modes to run (default: each workload's own)")
    parser.add_argument("--out", default="bench_results",
                        help="folder for results.json and the plots (default bench_results/)")
    parser.add_argument("--no-plots", action="store_true", help="write no PNG files")
    parser.add_argument("--threads", type=int, default=None,
                        help="limit BLAS, PyTorch and XLA to N threads each (default: their own "
                             "choice, usually one per core); steadier figures on a busy machine")
    parser.add_argument("--kernel-threads", type=int, default=None, metavar="N",
                        help="threads per large fused kernel and matrix product in graph "
                             "mode (en.config.fusion_threads; default: per graph, 2 where "
                             "its largest product has 2^29 multiply-adds or more, else 1; "
                             "README, 'Kernel threads')")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc's adaptive malloc thresholds as they are (default: "
                             "fixed, so no mode pays page faults for memory it frees and "
                             "makes again; see bench/malloc.py)")
    shared = _SharedOptions(parser)
    for name, mod in found.items():
        add = getattr(mod, "add_arguments", None)
        if add is not None:
            try:
                add(shared)
            except Exception as err:  # one workload's bad option must not stop the others
                print(f"bench: {name}.add_arguments failed: {err}", file=sys.stderr)
    return parser


def list_workloads(found):
    lines = ["workloads (python -m bench NAME ...):"]
    width = max((len(n) for n in found), default=4)
    for name, mod in found.items():
        full_only = set(getattr(mod, "FULL_ONLY_MODES", ()))
        modes = [m + (" (--full)" if m in full_only else "") for m in getattr(mod, "MODES", [])]
        lines.append(f"  {name.ljust(width)}  {getattr(mod, 'DESCRIPTION', '')}")
        lines.append(f"  {''.ljust(width)}  modes: {', '.join(modes)}")
    avail = []
    for fw, get in (("torch", common.torch_or_none), ("jax", common.jax_or_none)):
        avail.append(f"{fw}: {'available' if get() is not None else 'not installed (skipped)'}")
    plt = "available" if common.pyplot_or_none() is not None else "not installed (plots skipped)"
    lines.append("optional: " + "; ".join(avail + [f"matplotlib: {plt}"]))
    return "\n".join(lines)


def select_modes(mod, requested, full=False):
    """The modes to run: ``--modes`` (of this workload's), else its default ones
    (every one under ``--full``)."""
    own = list(getattr(mod, "MODES", []))
    if requested is None:
        full_only = () if full else getattr(mod, "FULL_ONLY_MODES", ())
        return [m for m in own if m not in full_only]
    return [m for m in own if m in requested]


def run_suite(found, names, args, progress):
    """Run the workloads ``names``; returns ``(results, errors)``."""
    requested = None if args.modes is None else [m.strip() for m in args.modes.split(",")
                                                 if m.strip()]
    plan = []
    for name in names:
        mod = found[name]
        modes = select_modes(mod, requested, getattr(args, "full", False))
        if not modes:
            print(f"bench: {name}: none of the modes {requested} (it has "
                  f"{', '.join(getattr(mod, 'MODES', []))}); skipped", file=sys.stderr)
            continue
        try:
            cfgs = list(mod.configs(args))
        except Exception as err:
            plan.append((name, mod, modes, None, err))
            continue
        for cfg in cfgs:
            plan.append((name, mod, modes, cfg, None))
    progress.add(len(plan))
    results, errors = [], []
    for name, mod, modes, cfg, err in plan:
        if err is not None:
            errors.append({"workload": name, "config": None, "error": f"configs: {err}"})
            progress.tick()
            continue
        label = f"{name} {common.config_label(cfg)}"
        reps = [0]

        def tick(label=label, reps=reps):
            reps[0] += 1
            progress.set_detail(f"({reps[0]} reps)")

        progress.set_label(label)
        release_memory()
        start = time.perf_counter()
        try:
            out = mod.run(cfg, modes, args, tick)
        except Exception as err:
            out = list(getattr(err, "results", []) or [])
            msg = f"{type(err).__name__}: {err}"
            errors.append({"workload": name, "config": cfg, "error": msg,
                           "traceback": traceback.format_exc()})
            progress.newline()
            print(f"bench: {label} FAILED: {msg}", file=sys.stderr)
        peak = common.peak_rss_mib()
        for r in out:
            r.setdefault("wall_s", time.perf_counter() - start)
            r.setdefault("peak_rss_mib", peak)
        results.extend(out)
        progress.tick()
    return results, errors


def write_plots(found, results, out_dir):
    """Each workload's own plots. Returns (paths, message or None)."""
    if common.pyplot_or_none() is None:
        return [], "plots skipped: matplotlib is not installed (pip install matplotlib, or '.[bench]')"
    paths, problems = [], []
    for name, mod in found.items():
        plot = getattr(mod, "plot", None)
        mine = [r for r in results if r.get("workload") == name]
        if plot is None or not mine:
            continue
        try:
            paths.extend(plot(mine, out_dir) or [])
        except Exception as err:
            problems.append(f"{name}: {type(err).__name__}: {err}")
    return paths, ("plot failures: " + "; ".join(problems)) if problems else None


def write_markdown(path, facts, size, elapsed, results, summaries, skipped, errors, plots,
                   out_dir):
    """The report as Markdown: machine, table (median, min-max), summaries, plots."""
    lines = [f"# python -m bench{size.replace('(', '--').replace(')', '')}", "",
             common.facts_line(facts) + f"; malloc: {facts.get('malloc')}", "",
             f"{len(results)} results in {elapsed:.0f} s. Milliseconds; min-max over the "
             "timed calls (their number in brackets); ratios of medians.", "",
             common.format_markdown_table(results), ""]
    notes = [line for text in summaries for line in text.splitlines()]
    notes += [f"skipped {mode}: {why}" for mode, why in skipped]
    if notes:   # the runner's own lines (aligned tables among them), as printed
        lines += ["```text", *notes, "```"]
    if errors:
        lines += ["", "## Failures", ""]
        lines += [f"- {e['workload']} {common.config_label(e['config'] or {})}: {e['error']}"
                  for e in errors]
    if plots:
        lines += ["", "## Plots", ""]
        lines += [f"![{os.path.basename(p)}]({os.path.relpath(p, out_dir)})" for p in plots]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main(argv=None):
    found = workloads.load()
    parser = build_parser(found)
    args = parser.parse_args(argv)
    if args.list:
        print(list_workloads(found))
        return 0
    unknown = [n for n in args.workloads if n not in found]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; available: {', '.join(found)}")
    # Workloads that start clusters (dask) run only when named.
    names = args.workloads or [n for n, m in found.items() if getattr(m, "IN_DEFAULT_RUN", True)]

    if args.kernel_threads is not None:
        if args.kernel_threads < 1:
            parser.error(f"--kernel-threads must be at least 1, got {args.kernel_threads}")
        en.config.fusion_threads = args.kernel_threads
    malloc = "default (adaptive)" if args.default_malloc else steady_malloc()
    facts = common.machine_facts()
    print(common.facts_line(facts))
    print(f"malloc: {malloc}")
    for fw, get in (("torch", common.torch_or_none), ("jax", common.jax_or_none)):
        if get() is None:
            print(f"{fw}: skipped ({common.skip_reason(fw)})")
    facts = common.machine_facts()   # again, now that the frameworks are imported
    facts["malloc"] = malloc
    facts["kernel_threads"] = en.config.fusion_threads or \
        f"auto (up to {kernel_threads()}: 2^29 multiply-adds in a product)"
    size = " (quick)" if args.quick else " (full)" if args.full else ""
    print(f"running {', '.join(names)}{size}; "
          f"results go to {args.out}/", flush=True)

    progress = common.Progress(enabled=not args.no_progress)
    start = time.perf_counter()
    results, errors = run_suite(found, names, args, progress)
    progress.close()
    elapsed = time.perf_counter() - start

    print()
    print(common.format_table(results))
    summaries = []
    for name in names:
        summary = getattr(found[name], "summary", None)
        if summary is not None:
            try:
                text = summary([r for r in results if r.get("workload") == name], args)
            except Exception as err:
                text = f"{name}: summary failed: {type(err).__name__}: {err}"
            if text:
                summaries.append(text)
                print(text)
    skipped = sorted({(r["mode"], r["skipped"]) for r in results if r.get("skipped")})
    for mode, why in skipped:
        print(f"skipped {mode}: {why}")

    os.makedirs(args.out, exist_ok=True)
    plots, plot_msg = ([], "plots skipped (--no-plots)") if args.no_plots else \
        write_plots(found, results, args.out)
    md = write_markdown(os.path.join(args.out, "results.md"), facts, size, elapsed, results,
                        summaries, skipped, errors, plots, args.out)
    payload = {
        "facts": facts,
        "argv": sys.argv[1:] if argv is None else list(argv),
        "quick": args.quick,
        "full": args.full,
        "workloads": names,
        "elapsed_s": elapsed,
        "results": results,
        "errors": errors,
        "plots": plots,
    }
    path = common.write_json(os.path.join(args.out, "results.json"), payload)
    print(f"results: {path}, {md}")
    if plots:
        print("plots: " + ", ".join(plots))
    if plot_msg:
        print(plot_msg)
    print(common.peak_memory_line(results))
    print(f"done in {elapsed:.1f} s")
    if errors:
        print(f"{len(errors)} failure(s):", file=sys.stderr)
        for e in errors:
            cfg = common.config_label(e["config"]) if e.get("config") else ""
            print(f"  {e['workload']} {cfg}: {e['error']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
