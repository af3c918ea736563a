"""Render a ``python -m bench`` results file (``results.json``) as the performance page's
Markdown: the machine facts the runner recorded, then one table per workload.

The docs build calls :func:`render` through ``docs/hooks.py``; run it alone to print the
Markdown of any results file::

    python docs/gen_performance.py bench_results/results.json

Example:
    >>> payload = {"facts": {"cpu": "x86", "cores": 2, "python": "3.11", "numpy": "2.4",
    ...                      "torch": None, "jax": None}, "argv": ["--quick"],
    ...            "elapsed_s": 3.0, "results": [], "errors": []}
    >>> print(render(payload).splitlines()[0])
    Measured with `python -m bench --quick`, 0 results in 3 s.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:          # bench/ is not installed: it runs from the repository
    sys.path.insert(0, ROOT)

from bench import common  # noqa: E402

# Where the page's figures come from, first found first: a fresh local run, else the
# snapshot kept in the repository (so the site builds on a machine that never ran it).
SOURCES = (os.path.join(ROOT, "bench_results", "results.json"),
           os.path.join(ROOT, "docs", "bench", "results.json"))


def find_results(env=os.environ):
    """The results file the page is built from: ``$BENCH_RESULTS``, else the first of
    :data:`SOURCES` that exists, else ``None``."""
    if env.get("BENCH_RESULTS"):
        return env["BENCH_RESULTS"]
    return next((path for path in SOURCES if os.path.exists(path)), None)


def _facts_table(facts):
    skip = {"threadpools"}     # the BLAS line already names the library and its threads
    rows = ["| fact | value |", "|---|---|"]
    for key, value in facts.items():
        if key not in skip:
            rows.append(f"| {key} | {'not installed' if value is None else value} |")
    return "\n".join(rows)


def render(payload, source=None):
    """Markdown for one results payload (the dict ``python -m bench`` writes as JSON)."""
    results = payload.get("results", [])
    command = " ".join(["python -m bench", *payload.get("argv", [])])
    lines = [f"Measured with `{command}`, {len(results)} results in "
             f"{payload.get('elapsed_s', 0):.0f} s."]
    if payload.get("recorded"):
        lines[0] += f" Recorded: {payload['recorded']}."
    if source:
        lines[0] += f" Source: `{os.path.relpath(source, ROOT)}`."
    lines += ["", "### The machine", "", common.facts_line(payload.get("facts", {})), "",
              _facts_table(payload.get("facts", {}))]
    workloads = list(dict.fromkeys(r.get("workload") for r in results))
    for name in workloads:
        mine = [r for r in results if r.get("workload") == name]
        lines += ["", f"### {name}", "", common.format_markdown_table(mine)]
    if payload.get("errors"):
        lines += ["", "### Failures", ""]
        lines += [f"- {e.get('workload')}: {e.get('error')}" for e in payload["errors"]]
    return "\n".join(lines) + "\n"


def render_file(path):
    """:func:`render` of the JSON file at ``path``."""
    with open(path, encoding="utf-8") as f:
        return render(json.load(f), source=path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else find_results()
    if path is None:
        print("no results: run `python -m bench` first", file=sys.stderr)
        return 1
    sys.stdout.write(render_file(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
